/*
 * accel CTS: lazy streams (ACCEL_STREAM_LAZY) — nothing runs before a flush or sync point,
 * everything runs after it, and a repeated flushed sequence is replayed from the cache.
 * These cases create lazy streams explicitly, so they run in every suite mode.
 */
#include <string.h>

#include "cts_internal.h"

CTS_CASE(lazy_nothing_before_flush, CTS_TAG_NONE) {
  enum { N = 4096 };
  accel_stream_t *s = NULL;
  unsigned char *dev = NULL;
  static unsigned char host[N];
  atomic_int flag;
  atomic_init(&flag, 0);
  memset(host, 0, N);
  CTS_OK(accel_stream_create_ex(ctx->dev, ACCEL_STREAM_LAZY, &s));
  int lazy = 0;
  CTS_OK(accel_stream_is_lazy(s, &lazy));
  CTS_CHECK(lazy == 1, "ACCEL_STREAM_LAZY stream is not lazy");
  CTS_OK(accel_malloc(ctx->dev, N, (void **)&dev));
  accel_lazy_stats_t before, queued, after;
  CTS_OK(accel_stream_lazy_stats(s, &before));
  CTS_OK(accel_memset_async(s, dev, 0x71, N));
  CTS_OK(accel_memcpy_async(s, host, dev, N));
  CTS_OK(accel_launch_host_func(s, cts_flag_host_fn, &flag));
  /* Give an eager implementation every chance to run the work. */
  cts_sleep_ms(20);
  CTS_CHECK(atomic_load(&flag) == 0, "a host function on a lazy stream ran before the flush");
  CTS_CHECK(host[0] == 0 && host[N - 1] == 0, "a copy on a lazy stream ran before the flush");
  CTS_OK(accel_stream_lazy_stats(s, &queued));
  CTS_CHECK(queued.ops_queued >= before.ops_queued + 3, "ops_queued %llu -> %llu for 3 ops",
            (unsigned long long)before.ops_queued, (unsigned long long)queued.ops_queued);
  CTS_CHECK(queued.flushes == before.flushes, "a flush happened without being asked for");
  CTS_OK(accel_stream_flush(s));
  CTS_OK(accel_stream_synchronize(s));
  CTS_CHECK(atomic_load(&flag) == 1, "host function did not run after flush + synchronize");
  size_t bad = cts_find_not_byte(host, N, 0x71);
  CTS_CHECK(bad == N, "after flush: byte %zu is 0x%02x", bad, host[bad]);
  CTS_OK(accel_stream_lazy_stats(s, &after));
  CTS_CHECK(after.flushes == before.flushes + 1, "flushes %llu -> %llu",
            (unsigned long long)before.flushes, (unsigned long long)after.flushes);
  CTS_OK(accel_free(ctx->dev, dev));
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

CTS_CASE(lazy_everything_after_flush, CTS_TAG_NONE) {
  enum { OPS = 300 };
  accel_stream_t *s = NULL;
  static int values[OPS];
  static cts_seq_item_t items[OPS];
  cts_seq_log_t log = {.values = values, .capacity = OPS};
  atomic_init(&log.count, 0);
  CTS_OK(accel_stream_create_ex(ctx->dev, ACCEL_STREAM_LAZY, &s));
  for (int i = 0; i < OPS; i++) {
    items[i] = (cts_seq_item_t){&log, i};
    CTS_OK(accel_launch_host_func(s, cts_seq_host_fn, &items[i]));
  }
  CTS_OK(accel_stream_flush(s));
  CTS_OK(accel_stream_synchronize(s));
  size_t n = atomic_load(&log.count);
  CTS_CHECK(n == OPS, "%zu of %d queued host functions ran", n, OPS);
  for (int i = 0; i < OPS; i++)
    CTS_CHECK(values[i] == i, "position %d ran host function %d", i, values[i]);
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

CTS_CASE(lazy_sync_is_a_flush_point, CTS_TAG_NONE) {
  accel_stream_t *s = NULL;
  atomic_int flag;
  atomic_init(&flag, 0);
  CTS_OK(accel_stream_create_ex(ctx->dev, ACCEL_STREAM_LAZY, &s));
  CTS_OK(accel_launch_host_func(s, cts_flag_host_fn, &flag));
  CTS_OK(accel_stream_synchronize(s)); /* no explicit flush */
  CTS_CHECK(atomic_load(&flag) == 1, "synchronize of a lazy stream did not submit its queue");
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

/* One flushed sequence: copy a host value to the device, fill, copy back. The host value is
 * read when the sequence runs, so a cached replay must still see the current value. */
typedef struct lazy_seq {
  unsigned char *dev;
  unsigned char *in;  /* host, 64 bytes */
  unsigned char *out; /* host, 64 bytes */
} lazy_seq_t;

static accel_status_t queue_seq(accel_stream_t *s, lazy_seq_t *q, size_t fill_size) {
  accel_status_t st = accel_memcpy_async(s, q->dev, q->in, 64);
  if (st == ACCEL_OK) st = accel_memset_async(s, q->dev + 64, 0x19, fill_size);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, q->out, q->dev, 64);
  if (st == ACCEL_OK) st = accel_stream_flush(s);
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  return st;
}

CTS_CASE(lazy_cache_hits, CTS_TAG_NONE) {
  accel_stream_t *s = NULL;
  lazy_seq_t q;
  unsigned char in[64], out[64];
  q.in = in;
  q.out = out;
  CTS_OK(accel_malloc(ctx->dev, 1024, (void **)&q.dev));
  CTS_OK(accel_stream_create_ex(ctx->dev, ACCEL_STREAM_LAZY, &s));
  accel_lazy_stats_t first, later, other;
  for (int round = 0; round < 4; round++) {
    memset(in, 0xB0 + round, sizeof(in));
    memset(out, 0, sizeof(out));
    CTS_OK(queue_seq(s, &q, 256));
    CTS_CHECK(cts_find_not_byte(out, sizeof(out), (unsigned char)(0xB0 + round)) == sizeof(out),
              "round %d of an identical sequence computed a stale result", round);
    if (round == 0) CTS_OK(accel_stream_lazy_stats(s, &first));
  }
  CTS_OK(accel_stream_lazy_stats(s, &later));
  CTS_CHECK(later.cache_hits > first.cache_hits,
            "3 repeats of an identical flushed sequence: cache_hits %llu -> %llu",
            (unsigned long long)first.cache_hits, (unsigned long long)later.cache_hits);
  /* A different sequence (another fill size) must not be served from the cache. */
  memset(in, 0xC7, sizeof(in));
  CTS_OK(queue_seq(s, &q, 512));
  CTS_CHECK(cts_find_not_byte(out, sizeof(out), 0xC7) == sizeof(out),
            "a different sequence computed a stale result");
  CTS_OK(accel_stream_lazy_stats(s, &other));
  CTS_CHECK(other.cache_hits == later.cache_hits, "a different sequence hit the cache");
  CTS_CHECK(other.cache_misses > later.cache_misses, "cache_misses %llu -> %llu",
            (unsigned long long)later.cache_misses, (unsigned long long)other.cache_misses);
  CTS_OK(accel_stream_destroy(s));
  CTS_OK(accel_free(ctx->dev, q.dev));
  return CTS_PASS;
}

/* More distinct repeated sequences than the stream caches, none synchronized until the end:
 * entries whose native graph was instantiated (third repeat) are evicted while their
 * submissions may still be queued (the graph must outlive them), and every sequence still
 * computes its own result. */
CTS_CASE(lazy_cache_eviction, CTS_TAG_NONE) {
  enum { SEQS = 7, ROUNDS = 3, REPEATS = 3 };
  accel_stream_t *s = NULL;
  unsigned char *dev = NULL;
  unsigned char in[SEQS][64], out[SEQS][64];
  CTS_OK(accel_malloc(ctx->dev, 128 * SEQS, (void **)&dev));
  CTS_OK(accel_stream_create_ex(ctx->dev, ACCEL_STREAM_LAZY, &s));
  for (int round = 0; round < ROUNDS; round++) {
    for (int k = 0; k < SEQS; k++) {
      memset(in[k], 0x40 + 16 * round + k, 64);
      memset(out[k], 0, 64);
      unsigned char *d = dev + 128 * k;
      for (int r = 0; r < REPEATS; r++) {
        CTS_OK(accel_memcpy_async(s, d, in[k], 64));
        CTS_OK(accel_memset_async(s, d + 64, 0x19, 64));
        CTS_OK(accel_memcpy_async(s, out[k], d, 64));
        CTS_OK(accel_stream_flush(s));
      }
    }
    CTS_OK(accel_stream_synchronize(s));
    for (int k = 0; k < SEQS; k++)
      CTS_CHECK(cts_find_not_byte(out[k], 64, (unsigned char)(0x40 + 16 * round + k)) == 64,
                "round %d, sequence %d computed a stale result", round, k);
  }
  accel_lazy_stats_t st;
  CTS_OK(accel_stream_lazy_stats(s, &st));
  CTS_CHECK(st.cache_hits >= (uint64_t)ROUNDS * SEQS * (REPEATS - 1) &&
                st.cache_misses >= (uint64_t)ROUNDS * SEQS,
            "hits %llu, misses %llu: the cache did not cycle", (unsigned long long)st.cache_hits,
            (unsigned long long)st.cache_misses);
  CTS_OK(accel_stream_destroy(s));
  CTS_OK(accel_free(ctx->dev, dev));
  return CTS_PASS;
}
