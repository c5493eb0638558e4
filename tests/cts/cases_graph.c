/*
 * accel CTS: graph capture and replay — a DeepSpeed-style step replayed 100 times against the
 * same step run directly, device scalars read at replay time, stable addresses of captured
 * allocations, pools shared by several graphs, and graph state errors. These cases capture
 * explicitly, so in every suite mode they exercise graphs (on lazy streams in lazy mode).
 */
#include <stdlib.h>
#include <string.h>

#include "cts_internal.h"

enum { STEP_BYTES = 4096, STEP_RUNS = 100 };

/* One optimizer-like step: stream-ordered scratch allocation, device copies and fills, a fork to
 * a side stream and a join back, a host function whose output is copied to the device, and a
 * 4-byte "device scalar" read by a copy (the stand-in for loss scale / learning rate). */
typedef struct step_job {
  accel_stream_t *side;
  accel_event_t *fork, *join;
  unsigned char *acc;    /* state carried from step to step */
  unsigned char *shadow; /* written by the side stream */
  unsigned char *scalar; /* 4 bytes, changed by the host between steps */
  unsigned char *hostin; /* host memory written by the host function */
  atomic_uint counter;
  void *scratch;         /* address of the last scratch allocation */
} step_job_t;

static void step_host_fn(void *user) {
  step_job_t *j = user;
  unsigned v = atomic_fetch_add(&j->counter, 1) + 1;
  for (int i = 0; i < 4; i++) j->hostin[i] = (unsigned char)(v >> (8 * i));
}

static accel_status_t step_body(accel_stream_t *s, void *user) {
  step_job_t *j = user;
  unsigned char *tmp = NULL;
  accel_status_t st = accel_malloc_async(s, STEP_BYTES, (void **)&tmp);
  if (st != ACCEL_OK) return st;
  j->scratch = tmp;
  /* tmp = acc rotated left by one byte, with a filled band */
  st = accel_memcpy_async(s, tmp, j->acc + 1, STEP_BYTES - 1);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, tmp + STEP_BYTES - 1, j->acc, 1);
  if (st == ACCEL_OK) st = accel_memset_async(s, tmp + 100, 0xA7, 20);
  /* fork: the side stream snapshots tmp into shadow */
  if (st == ACCEL_OK) st = accel_event_record(j->fork, s);
  if (st == ACCEL_OK) st = accel_stream_wait_event(j->side, j->fork);
  if (st == ACCEL_OK) st = accel_memcpy_async(j->side, j->shadow, tmp, STEP_BYTES);
  if (st == ACCEL_OK) st = accel_memset_async(j->side, j->shadow + 7, 0x3E, 5);
  if (st == ACCEL_OK) st = accel_event_record(j->join, j->side);
  if (st == ACCEL_OK) st = accel_stream_wait_event(s, j->join);
  /* join: fold everything back into acc */
  if (st == ACCEL_OK) st = accel_launch_host_func(s, step_host_fn, j);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->acc, tmp, STEP_BYTES);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->acc + 200, j->hostin, 4);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->acc + 300, j->scalar, 4);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->acc + 400, j->shadow + 1000, 64);
  if (st == ACCEL_OK) st = accel_free_async(s, tmp);
  return st;
}

static accel_status_t step_setup(cts_ctx_t *ctx, step_job_t *j) {
  memset(j, 0, sizeof(*j));
  atomic_init(&j->counter, 0);
  unsigned flags = cts_stream_flags(ctx);
  accel_status_t st = accel_stream_create_ex(ctx->dev, flags, &j->side);
  if (st == ACCEL_OK) st = accel_event_create(ctx->dev, ACCEL_EVENT_DISABLE_TIMING, &j->fork);
  if (st == ACCEL_OK) st = accel_event_create(ctx->dev, ACCEL_EVENT_DISABLE_TIMING, &j->join);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, STEP_BYTES, (void **)&j->acc);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, STEP_BYTES, (void **)&j->shadow);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, 4, (void **)&j->scalar);
  if (st == ACCEL_OK) st = accel_host_alloc(ctx->dev, 4, (void **)&j->hostin);
  return st;
}

static void step_teardown(cts_ctx_t *ctx, step_job_t *j) {
  if (j->side) accel_stream_destroy(j->side);
  if (j->fork) accel_event_destroy(j->fork);
  if (j->join) accel_event_destroy(j->join);
  if (j->acc) accel_free(ctx->dev, j->acc);
  if (j->shadow) accel_free(ctx->dev, j->shadow);
  if (j->scalar) accel_free(ctx->dev, j->scalar);
  if (j->hostin) accel_host_free(ctx->dev, j->hostin);
}

/* Initial state shared by the direct and the replayed run. */
static accel_status_t step_reset(cts_ctx_t *ctx, step_job_t *j) {
  unsigned char init[STEP_BYTES];
  cts_fill_pattern(init, STEP_BYTES, 99);
  atomic_store(&j->counter, 0);
  memset(j->hostin, 0, 4);
  accel_status_t st = cts_upload(ctx, j->acc, init, STEP_BYTES);
  if (st == ACCEL_OK) st = cts_upload(ctx, j->shadow, init, STEP_BYTES);
  return st;
}

static uint32_t step_scalar(int i) { return 0x9E3779B9u * (uint32_t)(i + 1); }

CTS_CASE(graph_step_replay_matches_direct, CTS_TAG_NONE) {
  step_job_t j;
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL;
  static unsigned char direct_acc[STEP_BYTES], direct_shadow[STEP_BYTES];
  static unsigned char graph_acc[STEP_BYTES], graph_shadow[STEP_BYTES];
  CTS_OK(step_setup(ctx, &j));
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));

  /* Direct: the step body submitted STEP_RUNS times, the scalar changing every step. */
  CTS_OK(step_reset(ctx, &j));
  for (int i = 0; i < STEP_RUNS; i++) {
    uint32_t v = step_scalar(i);
    CTS_OK(cts_upload(ctx, j.scalar, &v, 4));
    CTS_OK(step_body(s, &j));
    CTS_OK(accel_stream_synchronize(s));
  }
  CTS_CHECK(atomic_load(&j.counter) == STEP_RUNS, "host function ran %u times",
            atomic_load(&j.counter));
  CTS_OK(cts_download(ctx, direct_acc, j.acc, STEP_BYTES));
  CTS_OK(cts_download(ctx, direct_shadow, j.shadow, STEP_BYTES));

  /* Captured once, replayed STEP_RUNS times with the same scalar updates. */
  CTS_OK(step_reset(ctx, &j));
  CTS_OK(accel_graph_create(ctx->dev, &g));
  CTS_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  CTS_OK(step_body(s, &j));
  CTS_OK(accel_graph_capture_end(g));
  CTS_CHECK(atomic_load(&j.counter) == 0, "the host function ran during capture");
  size_t nodes = 0;
  CTS_OK(accel_graph_node_count(g, &nodes));
  CTS_CHECK(nodes >= 10, "captured step has %zu nodes", nodes);
  for (int i = 0; i < STEP_RUNS; i++) {
    uint32_t v = step_scalar(i);
    CTS_OK(cts_upload(ctx, j.scalar, &v, 4));
    CTS_OK(accel_graph_replay(g, s));
    CTS_OK(accel_stream_synchronize(s));
  }
  CTS_CHECK(atomic_load(&j.counter) == STEP_RUNS, "host function ran %u times in %d replays",
            atomic_load(&j.counter), STEP_RUNS);
  CTS_OK(cts_download(ctx, graph_acc, j.acc, STEP_BYTES));
  CTS_OK(cts_download(ctx, graph_shadow, j.shadow, STEP_BYTES));
  for (size_t i = 0; i < STEP_BYTES; i++)
    CTS_CHECK(graph_acc[i] == direct_acc[i], "acc byte %zu: replay 0x%02x, direct 0x%02x", i,
              graph_acc[i], direct_acc[i]);
  for (size_t i = 0; i < STEP_BYTES; i++)
    CTS_CHECK(graph_shadow[i] == direct_shadow[i],
              "side-stream byte %zu: replay 0x%02x, direct 0x%02x", i, graph_shadow[i],
              direct_shadow[i]);
  CTS_OK(accel_graph_destroy(g));
  CTS_OK(accel_stream_destroy(s));
  step_teardown(ctx, &j);
  return CTS_PASS;
}

CTS_CASE(graph_device_scalar_update, CTS_TAG_NONE) {
  step_job_t j;
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL;
  CTS_OK(step_setup(ctx, &j));
  CTS_OK(step_reset(ctx, &j));
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_graph_create(ctx->dev, &g));
  CTS_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  CTS_OK(step_body(s, &j));
  CTS_OK(accel_graph_capture_end(g));
  static const uint32_t values[] = {0x11223344u, 0x55667788u, 0u, 0xFFFFFFFFu};
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
    uint32_t got = ~values[i];
    CTS_OK(cts_upload(ctx, j.scalar, &values[i], 4));
    CTS_OK(accel_graph_replay(g, s));
    CTS_OK(accel_stream_synchronize(s));
    CTS_OK(cts_download(ctx, &got, j.acc + 300, 4));
    CTS_CHECK(got == values[i], "replay %zu read scalar 0x%08x, device holds 0x%08x", i, got,
              values[i]);
    uint32_t count = 0;
    CTS_OK(cts_download(ctx, &count, j.acc + 200, 4));
    CTS_CHECK(count == i + 1, "replay %zu: host function output %u", i, count);
  }
  CTS_OK(accel_graph_destroy(g));
  CTS_OK(accel_stream_destroy(s));
  step_teardown(ctx, &j);
  return CTS_PASS;
}

/* A block allocated during capture and not freed there stays live after capture_end at the
 * address returned during capture; every replay writes that same address. */
CTS_CASE(graph_alloc_address_stable, CTS_TAG_NONE) {
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL;
  uint32_t *scalar = NULL;
  unsigned char *kept = NULL, *scratch = NULL;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_malloc(ctx->dev, 4, (void **)&scalar));
  CTS_OK(accel_graph_create(ctx->dev, &g));
  CTS_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  CTS_OK(accel_malloc_async(s, 4096, (void **)&scratch));
  CTS_OK(accel_malloc_async(s, 512, (void **)&kept));
  CTS_OK(accel_memcpy_async(s, scratch + 64, scalar, 4));
  CTS_OK(accel_memcpy_async(s, kept + 8, scratch + 64, 4));
  CTS_OK(accel_free_async(s, scratch));
  CTS_OK(accel_graph_capture_end(g));
  CTS_CHECK(kept && scratch && kept != scratch, "capture allocations %p, %p", (void *)kept,
            (void *)scratch);
  accel_memory_stats_t stats;
  CTS_OK(accel_memory_stats(ctx->dev, &stats));
  CTS_CHECK(stats.graph_pool_reserved_bytes >= 512, "graph_pool_reserved_bytes %llu with a live "
            "capture allocation", (unsigned long long)stats.graph_pool_reserved_bytes);
  for (uint32_t k = 1; k <= 3; k++) {
    uint32_t v = 0xC0DE0000u + k, got = 0;
    CTS_OK(cts_upload(ctx, scalar, &v, 4));
    CTS_OK(accel_graph_replay(g, s));
    CTS_OK(accel_stream_synchronize(s));
    CTS_OK(cts_download(ctx, &got, kept + 8, 4));
    CTS_CHECK(got == v, "replay %u wrote 0x%08x at the captured address, want 0x%08x", k, got, v);
  }
  CTS_OK(accel_graph_destroy(g));
  /* The block outlives its graph and is freed like any stream-ordered allocation. */
  CTS_OK(accel_free(ctx->dev, kept));
  CTS_OK(accel_free(ctx->dev, scalar));
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

/* A capture that allocates `size` bytes from the pool, fills them with `value`, copies 256
 * bytes of it to out, and frees the block again. */
static accel_status_t capture_pool_user(accel_graph_t *g, accel_stream_t *s, accel_pool_t *pool,
                                        size_t size, unsigned char value, unsigned char *out) {
  unsigned char *p = NULL;
  accel_status_t st = accel_graph_capture_begin(g, s, pool, ACCEL_CAPTURE_MODE_GLOBAL);
  if (st != ACCEL_OK) return st;
  st = accel_malloc_async(s, size, (void **)&p);
  if (st == ACCEL_OK) st = accel_memset_async(s, p, value, size);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, out, p + size - 256, 256);
  if (st == ACCEL_OK) st = accel_free_async(s, p);
  accel_status_t end = accel_graph_capture_end(g);
  return st != ACCEL_OK ? st : end;
}

static cts_result_t expect_bytes(cts_ctx_t *ctx, const char *what, const unsigned char *dev,
                                 unsigned char value) {
  unsigned char host[256];
  CTS_OK(cts_download(ctx, host, dev, sizeof(host)));
  size_t bad = cts_find_not_byte(host, sizeof(host), value);
  CTS_CHECK(bad == sizeof(host), "%s: byte %zu is 0x%02x, want 0x%02x", what, bad, host[bad],
            value);
  return CTS_PASS;
}

#define EXPECT_BYTES(what, dev, value)                                 \
  do {                                                                 \
    cts_result_t r_ = expect_bytes(ctx, (what), (dev), (value));       \
    if (r_ != CTS_PASS) return r_;                                     \
  } while (0)

CTS_CASE(graph_shared_pool, CTS_TAG_NONE) {
  enum { BIG = 1 << 20, SMALL = 1 << 19 };
  accel_stream_t *s = NULL;
  accel_graph_t *g1 = NULL, *g2 = NULL;
  accel_pool_t *pool = NULL;
  unsigned char *out1 = NULL, *out2 = NULL;
  unsigned char zeros[256] = {0};
  accel_memory_stats_t st0, st1, st2, st3;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_malloc(ctx->dev, 256, (void **)&out1));
  CTS_OK(accel_malloc(ctx->dev, 256, (void **)&out2));
  CTS_OK(cts_upload(ctx, out1, zeros, 256));
  CTS_OK(cts_upload(ctx, out2, zeros, 256));
  CTS_OK(accel_memory_stats(ctx->dev, &st0));
  CTS_OK(accel_graph_pool_create(ctx->dev, &pool));
  CTS_OK(accel_graph_create(ctx->dev, &g1));
  CTS_OK(accel_graph_create(ctx->dev, &g2));
  CTS_OK(capture_pool_user(g1, s, pool, BIG, 0x11, out1));
  CTS_OK(accel_memory_stats(ctx->dev, &st1));
  uint64_t need = st1.graph_pool_reserved_bytes - st0.graph_pool_reserved_bytes;
  CTS_CHECK(st1.graph_pool_reserved_bytes >= st0.graph_pool_reserved_bytes + BIG,
            "pool reserved %llu bytes for a %d-byte capture allocation",
            (unsigned long long)need, BIG);
  CTS_OK(capture_pool_user(g2, s, pool, SMALL, 0x22, out2));
  CTS_OK(accel_memory_stats(ctx->dev, &st2));
  /* Both captures freed what they allocated, so the second one fits in what the first one
   * needed. */
  CTS_CHECK(st2.graph_pool_reserved_bytes == st1.graph_pool_reserved_bytes,
            "shared pool grew from %llu to %llu bytes for a smaller second graph",
            (unsigned long long)st1.graph_pool_reserved_bytes,
            (unsigned long long)st2.graph_pool_reserved_bytes);
  CTS_OK(accel_pool_release(pool)); /* the graphs keep it alive */

  CTS_OK(accel_graph_replay(g1, s));
  CTS_OK(accel_graph_replay(g2, s));
  CTS_OK(accel_stream_synchronize(s));
  EXPECT_BYTES("graph 1 output", out1, 0x11);
  EXPECT_BYTES("graph 2 output", out2, 0x22);

  /* Destroying one graph keeps the shared pool working for the other. */
  CTS_OK(cts_upload(ctx, out1, zeros, 256));
  CTS_OK(cts_upload(ctx, out2, zeros, 256));
  CTS_OK(accel_graph_destroy(g1));
  CTS_OK(accel_graph_replay(g2, s));
  CTS_OK(accel_stream_synchronize(s));
  EXPECT_BYTES("graph 2 after graph 1 was destroyed", out2, 0x22);
  EXPECT_BYTES("graph 1 output after destroy", out1, 0x00);
  CTS_OK(accel_graph_destroy(g2));
  CTS_OK(accel_memory_stats(ctx->dev, &st3));
  CTS_CHECK(st3.graph_pool_reserved_bytes == st0.graph_pool_reserved_bytes,
            "graph_pool_reserved_bytes %llu after the last graph and pool reference are gone, "
            "%llu before", (unsigned long long)st3.graph_pool_reserved_bytes,
            (unsigned long long)st0.graph_pool_reserved_bytes);
  CTS_OK(accel_free(ctx->dev, out1));
  CTS_OK(accel_free(ctx->dev, out2));
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

/* accel_graph_pool hands out a graph's private pool for the next capture to share. */
CTS_CASE(graph_pool_from_graph, CTS_TAG_NONE) {
  accel_stream_t *s = NULL;
  accel_graph_t *g1 = NULL, *g2 = NULL;
  accel_pool_t *pool = NULL;
  unsigned char *out1 = NULL, *out2 = NULL;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_malloc(ctx->dev, 256, (void **)&out1));
  CTS_OK(accel_malloc(ctx->dev, 256, (void **)&out2));
  CTS_OK(accel_graph_create(ctx->dev, &g1));
  CTS_OK(accel_graph_create(ctx->dev, &g2));
  CTS_OK(capture_pool_user(g1, s, NULL, 300000, 0x33, out1));
  CTS_OK(accel_graph_pool(g1, &pool));
  CTS_CHECK(pool != NULL, "accel_graph_pool returned NULL");
  CTS_OK(capture_pool_user(g2, s, pool, 200000, 0x44, out2));
  CTS_OK(accel_pool_release(pool));
  CTS_OK(accel_graph_destroy(g1)); /* g2 still holds the pool */
  CTS_OK(accel_graph_replay(g2, s));
  CTS_OK(accel_stream_synchronize(s));
  EXPECT_BYTES("graph sharing a destroyed graph's pool", out2, 0x44);
  CTS_OK(accel_graph_destroy(g2));
  CTS_OK(accel_free(ctx->dev, out1));
  CTS_OK(accel_free(ctx->dev, out2));
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

CTS_CASE(graph_state_errors, CTS_TAG_NONE) {
  accel_stream_t *s = NULL, *other = NULL;
  accel_graph_t *g = NULL;
  unsigned char *dev = NULL;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &other));
  CTS_OK(accel_malloc(ctx->dev, 256, (void **)&dev));
  CTS_OK(accel_graph_create(ctx->dev, &g));
  size_t nodes = 99;
  CTS_OK(accel_graph_node_count(g, &nodes));
  CTS_CHECK(nodes == 0, "new graph has %zu nodes", nodes);
  CTS_STATUS(accel_graph_replay(g, s), ACCEL_ERROR_STATE);
  CTS_STATUS(accel_graph_capture_end(g), ACCEL_ERROR_STATE);

  CTS_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  int capturing = 0;
  CTS_OK(accel_stream_is_capturing(s, &capturing));
  CTS_CHECK(capturing == 1, "stream not capturing after capture_begin");
  CTS_STATUS(accel_graph_replay(g, other), ACCEL_ERROR_STATE); /* still capturing */
  CTS_OK(accel_memset_async(s, dev, 0x5E, 256));
  CTS_OK(accel_graph_capture_end(g));
  CTS_OK(accel_stream_is_capturing(s, &capturing));
  CTS_CHECK(capturing == 0, "stream still capturing after capture_end");
  CTS_OK(accel_graph_node_count(g, &nodes));
  CTS_CHECK(nodes == 1, "one memset captured as %zu nodes", nodes);

  /* Replay on a stream other than the capturing one. */
  CTS_OK(accel_graph_replay(g, other));
  CTS_OK(accel_stream_synchronize(other));
  EXPECT_BYTES("replay on another stream", dev, 0x5E);

  CTS_OK(accel_graph_reset(g));
  CTS_OK(accel_graph_node_count(g, &nodes));
  CTS_CHECK(nodes == 0, "reset graph has %zu nodes", nodes);
  CTS_STATUS(accel_graph_replay(g, s), ACCEL_ERROR_STATE);

  /* A reset graph captures again. */
  CTS_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  CTS_OK(accel_memset_async(s, dev, 0x6F, 256));
  CTS_OK(accel_graph_capture_end(g));
  CTS_OK(accel_graph_replay(g, s));
  CTS_OK(accel_stream_synchronize(s));
  EXPECT_BYTES("replay after reset and recapture", dev, 0x6F);

  CTS_OK(accel_graph_destroy(g));
  CTS_OK(accel_free(ctx->dev, dev));
  CTS_OK(accel_stream_destroy(s));
  CTS_OK(accel_stream_destroy(other));
  return CTS_PASS;
}

CTS_CASE(graph_default_stream_cannot_capture, CTS_TAG_NONE) {
  accel_stream_t *def = NULL;
  accel_graph_t *g = NULL;
  CTS_OK(accel_stream_default(ctx->dev, &def));
  CTS_OK(accel_graph_create(ctx->dev, &g));
  CTS_STATUS(accel_graph_capture_begin(g, def, NULL, ACCEL_CAPTURE_MODE_GLOBAL),
             ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_CHECK(accel_last_error()[0] != '\0', "no message");
  int capturing = 1;
  CTS_OK(accel_stream_is_capturing(def, &capturing));
  CTS_CHECK(capturing == 0, "default stream capturing after a refused capture_begin");
  CTS_OK(accel_graph_destroy(g));
  return CTS_PASS;
}
