#include "kernels_adam_flat.h"

#include <stdlib.h>

#include "bench_tensors.h"
#include "optstep_model.h"

typedef struct adam_call {
  accel_stream_t *s;
  const accel_tensor_t *l[4];
  size_t n;
  const accel_adam_args_t *args;
} adam_call_t;

static double sample(void *ctx) {
  const adam_call_t *c = ctx;
  uint64_t t0 = bench_now_ns();
  BENCH_TRY(accel_fused_adam(c->s, c->l[0], c->l[1], c->l[2], c->l[3], c->n, c->args));
  BENCH_TRY(accel_stream_synchronize(c->s));
  return (double)(bench_now_ns() - t0) / 1e6;
fail:
  return -1.0;
}

int bench_adam_flat(accel_stream_t *s, float *const pgmv[4], size_t cap,
                    const accel_adam_args_t *args_dev, int rounds, adam_flat_t *out) {
  os_model_t md;
  accel_tensor_t *lists = NULL;
  size_t *offs = NULL;
  double *buf = NULL;
  int rc = 1;
  if (!os_model_sizes(&md, "many-small", 0, 0)) goto done;
  /* scaled down when the buffers are smaller than many-small (small test runs) */
  size_t total = 0;
  for (size_t i = 0; i < md.n; i++) total += md.sizes[i];
  const size_t room = cap - md.n * BENCH_TENSOR_ALIGN;
  for (size_t i = 0; total > room && i < md.n; i++)
    md.sizes[i] = md.sizes[i] * room / total ? md.sizes[i] * room / total : 1;
  out->tensors = md.n;
  out->numel = 0;
  for (size_t i = 0; i < md.n; i++) out->numel += md.sizes[i];
  lists = calloc(4 * (md.n + 1), sizeof *lists);
  offs = calloc(md.n, sizeof *offs);
  buf = calloc(4 * (size_t)rounds, sizeof *buf);
  if (!lists || !offs || !buf) {
    fprintf(stderr, "accel-bench: out of host memory\n");
    goto done;
  }
  bench_layout(md.sizes, md.n, offs);
  adam_call_t list = {s, {0}, md.n, args_dev}, flat = {s, {0}, 1, args_dev};
  for (int k = 0; k < 4; k++) {
    accel_tensor_t *l = lists + (size_t)k * (md.n + 1);
    bench_make_list(pgmv[k], ACCEL_F32, md.sizes, offs, md.n, l);
    l[md.n] = (accel_tensor_t){pgmv[k], out->numel, ACCEL_F32};
    list.l[k] = l;
    flat.l[k] = l + md.n;
  }
  if (bench_rounds_ab(rounds, sample, &list, sample, &flat, buf, &out->list_ms, &out->flat_ms))
    goto done;
  out->ratio = bench_ratio_stats(buf, buf + rounds, rounds, 1.0, buf + 2 * rounds);
  rc = 0;
done:
  free(lists);
  free(offs);
  free(buf);
  os_model_free(&md);
  return rc;
}

void bench_adam_flat_print(FILE *f, const adam_flat_t *r) {
  fprintf(f,
          "fused AdamW, %zu tensors vs 1 flat tensor (%zu params): %.3f ms vs %.3f ms, "
          "list / flat %.3f [%.3f..%.3f]",
          r->tensors, r->numel, r->list_ms.median, r->flat_ms.median, r->ratio.median,
          r->ratio.min, r->ratio.max);
  if (r->judged)
    fprintf(f, "  <= %.2f: %s", ADAM_FLAT_TARGET,
            r->ratio.median <= ADAM_FLAT_TARGET ? "met" : "MISSED");
  fputc('\n', f);
}

void bench_adam_flat_json(bench_json_t *j, const char *key, const adam_flat_t *r) {
  bench_json_begin_object(j, key);
  bench_json_int(j, "tensors", (long long)r->tensors);
  bench_json_int(j, "numel", (long long)r->numel);
  bench_json_stats(j, "list_ms", &r->list_ms);
  bench_json_stats(j, "flat_ms", &r->flat_ms);
  bench_json_stats(j, "list_over_flat", &r->ratio);
  if (r->judged) {
    bench_json_num(j, "target", ADAM_FLAT_TARGET);
    bench_json_bool(j, "met", r->ratio.median <= ADAM_FLAT_TARGET);
  }
  bench_json_end_object(j);
}
