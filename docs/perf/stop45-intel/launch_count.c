/* The callgrind driver of PERFORMANCE.md section 22: N launches of the user kernel or of
 * accel_scale over one 64-float tensor, counted with
 *   valgrind --tool=callgrind --toggle-collect=run_user|run_builtin ./launch_count user|builtin N
 * (built with: gcc -O2 -Iinclude launch_count.c -Lbuild -laccel). Not part of the build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "accel/accel.h"
#include "accel/accel_kernels.h"
#include "accel/accel_module.h"
static const char src[] =
    "ACC_INLINE void ub_elem(acc_idx i, ACC_GPTR(acc_f32) t, acc_f32 s) { t[i] = t[i] * s; }\n"
    "ACC_KERNEL(ub_k_scale, ub_params_t, P) {\n"
    "  const acc_f32 s = ACC_PTR(const acc_f32, P.s)[0];\n"
    "  ACC_GPTR(const acc_chunk_t) c = ACC_PTR(const acc_chunk_t, P.chunks);\n"
    "  ACC_FOR_BLOCKS(b, P.num_chunks)\n"
    "  ACC_ELEM_MAP(c[b].count, ub_elem, ACC_PTR(acc_f32, c[b].ptr[0]), s);\n"
    "}\n"
    "ACCEL_KERNEL(UB_SCALE, ub_k_scale, ub_params_t, ACC_OP(\"ub_scale\", ACC_TABLE_SHARED),\n"
    "             (ACC_LIST(\"t\", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS)),\n"
    "             (ACC_SCALAR(\"s_dev\", ACC_FIELD(s), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS)))\n";
__attribute__((noinline)) void run_user(accel_stream_t *s, const accel_kernel_t *k, const accel_tensor_t **lists, const void **sc, int n) {
  for (int i = 0; i < n; i++) if (accel_launch(s, k, lists, 1, 1, sc, 1)) abort();
  accel_stream_synchronize(s);
}
__attribute__((noinline)) void run_builtin(accel_stream_t *s, const accel_tensor_t *t, float *sd, int n) {
  for (int i = 0; i < n; i++) if (accel_scale(s, t, 1, sd)) abort();
  accel_stream_synchronize(s);
}
int main(int argc, char **argv) {
  int user = argc > 1 && !strcmp(argv[1], "user");
  int n = argc > 2 ? atoi(argv[2]) : 20000;
  accel_device_t *d; accel_stream_t *s; float *buf;
  if (accel_device_open("cpu", &d)) return 1;
  accel_stream_create_ex(d, ACCEL_STREAM_EAGER, &s);
  accel_malloc(d, 65 * 4, (void **)&buf);
  for (int i = 0; i < 65; i++) buf[i] = 1.0f;
  accel_module_t *m; accel_kernel_t *k;
  if (accel_module_load_source(d, src, NULL, &m) || accel_module_get_kernel(m, "ub_scale", &k)) { fprintf(stderr, "%s\n", accel_last_error()); return 1; }
  const accel_tensor_t t = {buf, 64, ACCEL_F32};
  const accel_tensor_t *lists[1] = {&t};
  const void *sc[1] = {buf + 64};
  run_user(s, k, lists, sc, 100); run_builtin(s, &t, buf + 64, 100);
  if (user) run_user(s, k, lists, sc, n); else run_builtin(s, &t, buf + 64, n);
  printf("ok %s\n", user ? "user" : "builtin");
  return 0;
}
