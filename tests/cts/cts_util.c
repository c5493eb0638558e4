/*
 * accel CTS: result reporting, blocking transfers, test data and error metrics (cts.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cts_internal.h"

cts_result_t cts_fail(cts_ctx_t *ctx, const char *file, int line, const char *fmt, ...) {
  const char *base = strrchr(file, '/');
  int n = snprintf(ctx->message, sizeof(ctx->message), "%s:%d: ", base ? base + 1 : file, line);
  if (n < 0 || (size_t)n >= sizeof(ctx->message)) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->message + n, sizeof(ctx->message) - (size_t)n, fmt, ap);
  va_end(ap);
  return CTS_FAIL;
}

cts_result_t cts_skip(cts_ctx_t *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->message, sizeof(ctx->message), fmt, ap);
  va_end(ap);
  return CTS_SKIP;
}

accel_status_t cts_upload(cts_ctx_t *ctx, void *dst_dev, const void *src, size_t size) {
  return accel_memcpy(ctx->dev, dst_dev, src, size);
}

accel_status_t cts_download(cts_ctx_t *ctx, void *dst, const void *src_dev, size_t size) {
  return accel_memcpy(ctx->dev, dst, src_dev, size);
}

/* splitmix64: every state (including 0) gives a well mixed sequence. */
uint64_t cts_rand_u64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float cts_rand_uniform(uint64_t *state, float lo, float hi) {
  /* 24 random bits: exactly representable in a float, so the result is in [lo, hi). */
  float u = (float)(cts_rand_u64(state) >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

float cts_rand_normal(uint64_t *state) {
  /* Box-Muller; u1 in (0, 1] keeps log() finite. */
  double u1 = ((double)(cts_rand_u64(state) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  double u2 = (double)(cts_rand_u64(state) >> 11) * (1.0 / 9007199254740992.0);
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

double cts_nmse(const float *got, const double *ref, size_t n) {
  double err = 0.0, norm = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)got[i] - ref[i];
    err += d * d;
    norm += ref[i] * ref[i];
  }
  if (norm == 0.0) return n ? err / (double)n : 0.0;
  return err / norm;
}
