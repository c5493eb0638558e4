/*
 * accel CTS: device buffers with guard bytes on both sides, to catch out-of-bounds writes by
 * kernels and copies. Guards are written with a blocking upload and checked with a download,
 * so they work on devices whose memory the host cannot dereference.
 */
#include <stdlib.h>
#include <string.h>

#include "cts_internal.h"

/* Different seeds for the two guards so that a shifted copy of one does not look intact. */
enum { CTS_GUARD_SEED_LO = 0x6A1Du, CTS_GUARD_SEED_HI = 0x7E2Bu };

static accel_status_t write_guard(cts_ctx_t *ctx, void *dst, size_t size, uint32_t seed) {
  unsigned char *pattern = malloc(size);
  if (!pattern) return ACCEL_ERROR_OUT_OF_MEMORY;
  cts_fill_pattern(pattern, size, seed);
  accel_status_t st = cts_upload(ctx, dst, pattern, size);
  free(pattern);
  return st;
}

static int guard_intact(cts_ctx_t *ctx, const void *src, size_t size, uint32_t seed) {
  unsigned char *got = malloc(size);
  if (!got) return 0;
  int ok = cts_download(ctx, got, src, size) == ACCEL_OK && cts_check_pattern(got, size, seed) == size;
  free(got);
  return ok;
}

accel_status_t cts_dev_alloc(cts_ctx_t *ctx, size_t size, size_t guard, cts_buf_t *out) {
  memset(out, 0, sizeof(*out));
  if (guard > (SIZE_MAX - size) / 2) return ACCEL_ERROR_INVALID_ARGUMENT;
  void *base = NULL;
  accel_status_t st = accel_malloc(ctx->dev, size + 2 * guard, &base);
  if (st != ACCEL_OK) return st;
  if (guard) {
    st = write_guard(ctx, base, guard, CTS_GUARD_SEED_LO);
    if (st == ACCEL_OK) st = write_guard(ctx, (char *)base + guard + size, guard, CTS_GUARD_SEED_HI);
    if (st != ACCEL_OK) {
      accel_free(ctx->dev, base);
      return st;
    }
  }
  out->base = base;
  out->data = (char *)base + guard;
  out->size = size;
  out->guard = guard;
  return ACCEL_OK;
}

int cts_dev_guard_ok(cts_ctx_t *ctx, const cts_buf_t *buf) {
  if (!buf->guard) return 1;
  return guard_intact(ctx, buf->base, buf->guard, CTS_GUARD_SEED_LO) &&
         guard_intact(ctx, (const char *)buf->data + buf->size, buf->guard, CTS_GUARD_SEED_HI);
}

void cts_dev_free(cts_ctx_t *ctx, cts_buf_t *buf) {
  if (buf->base) accel_free(ctx->dev, buf->base);
  memset(buf, 0, sizeof(*buf));
}
