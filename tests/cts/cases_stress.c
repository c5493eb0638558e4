/*
 * accel CTS: stress — many streams and events, thousands of tiny operations, allocator churn.
 * Sized to finish in well under 10 s on the CPU backend.
 */
#include <stdlib.h>
#include <string.h>

#include "cts_internal.h"

/* A chain across many streams: stream i waits for stream i-1's event, then copies the previous
 * stream's slot into its own and bumps one byte; the last slot proves the whole chain ran in
 * order. */
CTS_CASE(stress_stream_chain, CTS_TAG_STRESS) {
  enum { STREAMS = 32, ROUNDS = 8, SLOT = 64 };
  accel_stream_t *s[STREAMS] = {0};
  accel_event_t *e[STREAMS] = {0};
  unsigned char *dev = NULL;
  unsigned flags = cts_stream_flags(ctx);
  for (int i = 0; i < STREAMS; i++) {
    CTS_OK(accel_stream_create_ex(ctx->dev, flags, &s[i]));
    CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DISABLE_TIMING, &e[i]));
  }
  CTS_OK(accel_malloc(ctx->dev, (size_t)STREAMS * SLOT, (void **)&dev));
  CTS_OK(accel_memset_async(s[0], dev, 0, (size_t)STREAMS * SLOT));
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < STREAMS; i++) {
      int prev = (i + STREAMS - 1) % STREAMS;
      if (r > 0 || i > 0) CTS_OK(accel_stream_wait_event(s[i], e[prev]));
      CTS_OK(accel_memcpy_async(s[i], dev + i * SLOT, dev + prev * SLOT, SLOT));
      CTS_OK(accel_memset_async(s[i], dev + i * SLOT + (r * STREAMS + i) % SLOT,
                                (r * STREAMS + i) & 0xFF, 1));
      CTS_OK(accel_event_record(e[i], s[i]));
      CTS_OK(accel_stream_flush(s[i]));
    }
  }
  CTS_OK(accel_event_synchronize(e[STREAMS - 1]));
  /* Host model of the same chain. */
  static unsigned char model[STREAMS][SLOT], got[SLOT];
  memset(model, 0, sizeof(model));
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < STREAMS; i++) {
      int prev = (i + STREAMS - 1) % STREAMS;
      memcpy(model[i], model[prev], SLOT);
      model[i][(r * STREAMS + i) % SLOT] = (unsigned char)((r * STREAMS + i) & 0xFF);
    }
  CTS_OK(cts_download(ctx, got, dev + (STREAMS - 1) * SLOT, SLOT));
  for (int k = 0; k < SLOT; k++)
    CTS_CHECK(got[k] == model[STREAMS - 1][k], "byte %d: 0x%02x, want 0x%02x (chain order broken)",
              k, got[k], model[STREAMS - 1][k]);
  for (int i = 0; i < STREAMS; i++) {
    CTS_OK(accel_event_destroy(e[i]));
    CTS_OK(accel_stream_destroy(s[i]));
  }
  CTS_OK(accel_free(ctx->dev, dev));
  return CTS_PASS;
}

/* Thousands of tiny dependent operations in one body (so graph mode captures them all). */
enum { TINY_OPS = 4000, TINY_BYTES = 256 };

static accel_status_t tiny_body(accel_stream_t *s, void *user) {
  unsigned char *dev = user;
  accel_status_t st = ACCEL_OK;
  for (int i = 0; i < TINY_OPS && st == ACCEL_OK; i += 2) {
    /* memset one byte, then shift the window by copying it one byte up */
    st = accel_memset_async(s, dev + (i / 2) % (TINY_BYTES - 1), i & 0xFF, 1);
    if (st == ACCEL_OK)
      st = accel_memcpy_async(s, dev + TINY_BYTES + (i / 2) % TINY_BYTES,
                              dev + (i / 2) % (TINY_BYTES - 1), 1);
  }
  return st;
}

CTS_CASE(stress_tiny_ops, CTS_TAG_STRESS) {
  unsigned char *dev = NULL;
  unsigned char zeros[2 * TINY_BYTES] = {0}, got[2 * TINY_BYTES], model[2 * TINY_BYTES] = {0};
  CTS_OK(accel_malloc(ctx->dev, 2 * TINY_BYTES, (void **)&dev));
  CTS_OK(cts_upload(ctx, dev, zeros, sizeof(zeros)));
  CTS_OK(cts_exec(ctx, tiny_body, dev, 2));
  for (int i = 0; i < TINY_OPS; i += 2) {
    model[(i / 2) % (TINY_BYTES - 1)] = (unsigned char)(i & 0xFF);
    model[TINY_BYTES + (i / 2) % TINY_BYTES] = model[(i / 2) % (TINY_BYTES - 1)];
  }
  CTS_OK(cts_download(ctx, got, dev, sizeof(got)));
  for (size_t k = 0; k < sizeof(got); k++)
    CTS_CHECK(got[k] == model[k], "byte %zu: 0x%02x, want 0x%02x", k, got[k], model[k]);
  CTS_OK(accel_free(ctx->dev, dev));
  return CTS_PASS;
}

/* Random allocation sizes, a window of live blocks freed in random order, both through the
 * blocking and the stream-ordered API; statistics return to the baseline. */
CTS_CASE(stress_alloc_churn, CTS_TAG_STRESS) {
  enum { ITER = 3000, LIVE = 64 };
  void *live[LIVE] = {0};
  int live_async[LIVE] = {0};
  uint64_t rng = 0x5EED;
  accel_stream_t *s = NULL;
  accel_memory_stats_t base, end;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_memory_stats(ctx->dev, &base));
  for (int i = 0; i < ITER; i++) {
    int slot = (int)(cts_rand_u64(&rng) % LIVE);
    if (live[slot]) {
      if (live_async[slot])
        CTS_OK(accel_free_async(s, live[slot]));
      else
        CTS_OK(accel_free(ctx->dev, live[slot]));
      live[slot] = NULL;
      continue;
    }
    /* Mostly small blocks, sometimes up to 4 MiB. */
    uint64_t r = cts_rand_u64(&rng);
    size_t size = (r & 15) == 0 ? (size_t)(r >> 8) % (4u << 20) + 1 : (size_t)(r >> 8) % 65536 + 1;
    live_async[slot] = (int)((r >> 4) & 1);
    if (live_async[slot]) {
      CTS_OK(accel_malloc_async(s, size, &live[slot]));
      CTS_OK(accel_memset_async(s, live[slot], slot, size < 64 ? size : 64));
    } else {
      CTS_OK(accel_malloc(ctx->dev, size, &live[slot]));
    }
  }
  for (int slot = 0; slot < LIVE; slot++) {
    if (!live[slot]) continue;
    if (live_async[slot])
      CTS_OK(accel_free_async(s, live[slot]));
    else
      CTS_OK(accel_free(ctx->dev, live[slot]));
  }
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_stream_destroy(s));
  CTS_OK(accel_memory_stats(ctx->dev, &end));
  CTS_CHECK(end.allocated_bytes == base.allocated_bytes && end.active_blocks == base.active_blocks,
            "after churn: allocated %llu (was %llu), active blocks %llu (was %llu)",
            (unsigned long long)end.allocated_bytes, (unsigned long long)base.allocated_bytes,
            (unsigned long long)end.active_blocks, (unsigned long long)base.active_blocks);
  CTS_CHECK(end.alloc_count - base.alloc_count == end.free_count - base.free_count,
            "%llu allocations but %llu frees", (unsigned long long)(end.alloc_count - base.alloc_count),
            (unsigned long long)(end.free_count - base.free_count));
  CTS_OK(accel_empty_cache(ctx->dev));
  return CTS_PASS;
}

/* Host functions on several streams at once, each stream counting in order. */
CTS_CASE(stress_host_funcs_many_streams, CTS_TAG_STRESS) {
  enum { STREAMS = 4, PER = 1000 };
  accel_stream_t *s[STREAMS] = {0};
  static int values[STREAMS][PER];
  static cts_seq_item_t items[STREAMS][PER];
  static cts_seq_log_t logs[STREAMS];
  unsigned flags = cts_stream_flags(ctx);
  for (int k = 0; k < STREAMS; k++) {
    logs[k].values = values[k];
    logs[k].capacity = PER;
    atomic_init(&logs[k].count, 0);
    CTS_OK(accel_stream_create_ex(ctx->dev, flags, &s[k]));
  }
  for (int i = 0; i < PER; i++)
    for (int k = 0; k < STREAMS; k++) {
      items[k][i] = (cts_seq_item_t){&logs[k], i};
      CTS_OK(accel_launch_host_func(s[k], cts_seq_host_fn, &items[k][i]));
    }
  for (int k = 0; k < STREAMS; k++) CTS_OK(accel_stream_flush(s[k]));
  CTS_OK(accel_device_synchronize(ctx->dev));
  for (int k = 0; k < STREAMS; k++) {
    size_t n = atomic_load(&logs[k].count);
    CTS_CHECK(n == PER, "stream %d ran %zu of %d host functions", k, n, PER);
    for (int i = 0; i < PER; i++)
      CTS_CHECK(values[k][i] == i, "stream %d position %d ran %d", k, i, values[k][i]);
    CTS_OK(accel_stream_destroy(s[k]));
  }
  return CTS_PASS;
}
