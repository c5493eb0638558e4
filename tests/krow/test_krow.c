/*
 * A kernel = its body + one row (issue 33): the test kernel accel_test_axpby (axpby.h, its row
 * axpby_row.h) is built into libaccel-krow with no other edit. Checks that the row alone gave it
 *  - its ids and its generated parameter struct (the ABI entry: id after every real kernel, its
 *    symbol, the struct's fields in the ABI's order, no padding);
 *  - validation like the built-ins: NULL and destroyed stream, NULL list, wrong dtype, lists of
 *    different sizes, overlapping x and y, a missing or dead device scalar, each refused with a
 *    message naming accel_test_axpby and the argument, nothing written;
 *  - the CPU backend's access table entry (graph fusion proves launches independent with it);
 *  - results on the CPU, and on OpenCL (PoCL) when the plugin opens (its OpenCL C has the body
 *    too): y = alpha * x + beta * y + gamma (gamma a host value, ACC_VALUE) bitwise equal to an
 *    f32 emulation (each product rounded, then the sums) and within 1e-6 of a double
 *    reference, x F32 and BF16, tensors across a chunk boundary, n = 0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/krow_ops.h"
#include "accel_cpu_kernels.h"
#include "accel_kernel_abi_host.h"
#include "accel_kernel_ids.h"
#include "check.h"
#include "require.h"

/* A call the rest of the test builds on: the test stops at its failure. */
#define MUST(call) REQUIRE_OK(call, exit(1))

static void check_abi(void) {
  CHECK(ACCEL_KERNEL_TEST_AXPBY == ACCEL_KERNEL_COUNT - 1, "the row is not the last id");
  CHECK(strcmp(accel_kernel_names[ACCEL_KERNEL_TEST_AXPBY], "accel_k_test_axpby") == 0,
        "symbol %s", accel_kernel_names[ACCEL_KERNEL_TEST_AXPBY]);
  CHECK(sizeof(acc_test_axpby_params_t) == 40, "params size %zu", sizeof(acc_test_axpby_params_t));
  CHECK(offsetof(acc_test_axpby_params_t, chunks) == 0 &&
            offsetof(acc_test_axpby_params_t, alpha) == 8 &&
            offsetof(acc_test_axpby_params_t, beta) == 16 &&
            offsetof(acc_test_axpby_params_t, num_chunks) == 24 &&
            offsetof(acc_test_axpby_params_t, x_dtype) == 28 &&
            offsetof(acc_test_axpby_params_t, gamma) == 32,
        "params layout");
}

/* The CPU backend's access table entry of a launch: x (BF16) read, y (F32) read and written,
 * alpha and beta read by every block. */
static void check_cpu_access(void) {
  acc_chunk_t chunk = {{0x1000, 0x2000}, 7, 0};
  const acc_test_axpby_params_t p = {(acc_u64)(uintptr_t)&chunk, 0x3000, 0x3004, 1, ACC_DT_BF16,
                                     0.5f, 0};
  accel_cpu_kernel_access_t a;
  accel_cpu_kernel_access(ACCEL_KERNEL_TEST_AXPBY, &p, &a);
  CHECK(a.chunks == &chunk && a.num_chunks == 1, "chunks");
  CHECK(a.elem_bytes[0] == 2 && a.slot_mode[0] == ACCEL_CPU_SLOT_READ, "x slot %u/%u",
        a.elem_bytes[0], a.slot_mode[0]);
  CHECK(a.elem_bytes[1] == 4 && a.slot_mode[1] == (ACCEL_CPU_SLOT_READ | ACCEL_CPU_SLOT_WRITE),
        "y slot %u/%u", a.elem_bytes[1], a.slot_mode[1]);
  CHECK(a.elem_bytes[2] == 0, "a third slot");
  CHECK(a.num_scalars == 2 && a.scalars[0].addr == 0x3000 && a.scalars[1].addr == 0x3004 &&
            !a.scalars[0].write && !a.scalars[1].write && a.scalars[0].size == 4,
        "scalars %u", a.num_scalars);
  CHECK(accel_cpu_kernel_lookup(ACCEL_KERNEL_TEST_AXPBY) != NULL, "no CPU kernel");
}

/* The call is refused with status want and a message naming the function and sub. */
static void refused(accel_status_t st, accel_status_t want, const char *sub, int line) {
  const char *msg = accel_last_error();
  CHECK(st == want && strstr(msg, "accel_test_axpby") && strstr(msg, sub),
        "line %d: status %d '%s', want %d naming '%s'", line, (int)st, msg, (int)want, sub);
}
#define REFUSED(call, want, sub) refused((call), (want), (sub), __LINE__)

static void check_validation(accel_device_t *dev, accel_stream_t *s, float *mem) {
  /* mem: x at 0..63, y at 64..127, alpha at 128, beta at 129 */
  const float y0 = mem[64];
  accel_tensor_t x = {mem, 64, ACCEL_F32}, y = {mem + 64, 64, ACCEL_F32};
  const float *al = mem + 128, *be = mem + 129, g = 1.0f; /* g: gamma, a host value */
  REFUSED(accel_test_axpby(NULL, &x, &y, 1, al, be, g), ACCEL_ERROR_INVALID_HANDLE, "stream");
  REFUSED(accel_test_axpby(s, NULL, &y, 1, al, be, g), ACCEL_ERROR_INVALID_ARGUMENT, "x");
  REFUSED(accel_test_axpby(s, &x, &y, 1, NULL, be, g), ACCEL_ERROR_INVALID_ARGUMENT, "alpha_dev");
  float host = 1.0f; /* not device memory */
  REFUSED(accel_test_axpby(s, &x, &y, 1, al, &host, g), ACCEL_ERROR_INVALID_ARGUMENT, "beta_dev");
  accel_tensor_t y16 = {mem + 64, 64, ACCEL_F16};
  REFUSED(accel_test_axpby(s, &x, &y16, 1, al, be, g), ACCEL_ERROR_INVALID_ARGUMENT, "y");
  accel_tensor_t ybad = {mem + 64, 64, (accel_dtype_t)7};
  REFUSED(accel_test_axpby(s, &x, &ybad, 1, al, be, g), ACCEL_ERROR_INVALID_ARGUMENT, "dtype");
  accel_tensor_t yshort = {mem + 64, 63, ACCEL_F32};
  REFUSED(accel_test_axpby(s, &x, &yshort, 1, al, be, g), ACCEL_ERROR_INVALID_ARGUMENT, "y");
  accel_tensor_t xover = {mem + 32, 64, ACCEL_F32}; /* [32, 96) overlaps y [64, 128) */
  REFUSED(accel_test_axpby(s, &xover, &y, 1, al, be, g), ACCEL_ERROR_INVALID_ARGUMENT, "overlap");
  REFUSED(accel_test_axpby(s, &x, &y, 1, mem + 70, be, g), ACCEL_ERROR_INVALID_ARGUMENT, "overlap");
  MUST(accel_stream_synchronize(s));
  CHECK(mem[64] == y0, "a refused call wrote y");
  accel_stream_t *gone;
  MUST(accel_stream_create(dev, &gone));
  MUST(accel_stream_destroy(gone));
  REFUSED(accel_test_axpby(gone, &x, &y, 1, al, be, g), ACCEL_ERROR_INVALID_HANDLE, "stream");
  MUST(accel_test_axpby(s, &x, &y, 0, al, be, g)); /* n = 0: nothing to do */
}

static uint16_t to_bf16(float f) { /* exact for the values used (8 significant bits) */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

/* Three tensors (1, ACC_CHUNK + 3, 5 elements) of x (dtype dt) and y; y compared with the
 * references afterwards. */
static void check_results(accel_device_t *dev, accel_stream_t *s, accel_dtype_t dt) {
  enum { NT = 3 };
  const size_t numel[NT] = {1, ACC_CHUNK + 3u, 5};
  const size_t esz = dt == ACCEL_F32 ? 4 : 2;
  accel_tensor_t xs[NT], ys[NT];
  float *yh[NT], *xh[NT], *scal;
  MUST(accel_malloc(dev, 2 * sizeof(float), (void **)&scal));
  const float ab[2] = {0.75f, -1.5f};
  MUST(accel_memcpy(dev, scal, ab, sizeof ab));
  for (int t = 0; t < NT; ++t) {
    xh[t] = malloc(numel[t] * 4);
    yh[t] = malloc(numel[t] * 4);
    unsigned char *xb = malloc(numel[t] * esz);
    for (size_t i = 0; i < numel[t]; ++i) {
      xh[t][i] = (float)((int)((i * 37u + (unsigned)t) % 255u) - 127) / 8.0f;
      yh[t][i] = (float)((int)((i * 11u + 3u) % 199u) - 99) / 7.0f;
      const uint16_t b = to_bf16(xh[t][i]);
      if (esz == 4) memcpy(xb + 4 * i, &xh[t][i], 4);
      else memcpy(xb + 2 * i, &b, 2);
    }
    MUST(accel_malloc(dev, numel[t] * esz, &xs[t].data));
    MUST(accel_malloc(dev, numel[t] * 4, &ys[t].data));
    MUST(accel_memcpy(dev, xs[t].data, xb, numel[t] * esz));
    MUST(accel_memcpy(dev, ys[t].data, yh[t], numel[t] * 4));
    free(xb);
    xs[t].numel = ys[t].numel = numel[t];
    xs[t].dtype = dt;
    ys[t].dtype = ACCEL_F32;
  }
  const float gamma = 0.3f;
  MUST(accel_test_axpby(s, xs, ys, NT, scal, scal + 1, gamma));
  MUST(accel_stream_synchronize(s));
  size_t bad = 0;
  for (int t = 0; t < NT; ++t) {
    float *out = malloc(numel[t] * 4);
    MUST(accel_memcpy(dev, out, ys[t].data, numel[t] * 4));
    for (size_t i = 0; i < numel[t]; ++i) {
      volatile float ax = ab[0] * xh[t][i], by = ab[1] * yh[t][i];
      volatile float sum = ax + by;
      const float want = sum + gamma;
      const double ref = (double)ab[0] * xh[t][i] + (double)ab[1] * yh[t][i] + (double)gamma;
      if (memcmp(&out[i], &want, 4) != 0 || fabs(out[i] - ref) > 1e-6 * (1.0 + fabs(ref)))
        if (bad++ < 3)
          fprintf(stderr, "dtype %d tensor %d [%zu]: %a, want %a (double %.9g)\n", (int)dt, t,
                  i, (double)out[i], (double)want, ref);
    }
    free(out);
    MUST(accel_free(dev, xs[t].data));
    MUST(accel_free(dev, ys[t].data));
    free(xh[t]);
    free(yh[t]);
  }
  CHECK(bad == 0, "dtype %d: %zu wrong elements", (int)dt, bad);
  MUST(accel_free(dev, scal));
}

int main(void) {
  check_abi();
  check_cpu_access();
  accel_device_t *dev;
  accel_stream_t *s;
  MUST(accel_device_open("cpu", &dev));
  MUST(accel_stream_create(dev, &s));
  float *mem;
  MUST(accel_malloc(dev, 130 * sizeof(float), (void **)&mem));
  for (int i = 0; i < 130; ++i) mem[i] = (float)i;
  check_validation(dev, s, mem);
  check_results(dev, s, ACCEL_F32);
  check_results(dev, s, ACCEL_BF16);
  MUST(accel_free(dev, mem));
  MUST(accel_stream_destroy(s));
  MUST(accel_device_close(dev));
  if (accel_device_open("opencl", &dev) == ACCEL_OK) {
    MUST(accel_stream_create(dev, &s));
    check_results(dev, s, ACCEL_F32);
    check_results(dev, s, ACCEL_BF16);
    MUST(accel_stream_destroy(s));
    MUST(accel_device_close(dev));
    printf("opencl: checked\n");
  } else {
    printf("opencl: not here (%s)\n", accel_last_error());
  }
  return CHECK_EXIT("test_krow: accel_test_axpby from its body and its row");
}
