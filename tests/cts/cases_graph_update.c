/*
 * accel_graph_update (docs/GRAPHS.md, "Updating a graph"): a ready graph takes the arguments of
 * a new capture of the same sequence. One sequence of a memset, a device copy, a fill (a scalar
 * kernel parameter) and a scale (a device scalar) over a tensor list is captured over two sets
 * of buffers with other pointers, sizes, scalars and list lengths; the updated graph must give
 * the bits of a fresh capture, leave the old buffers alone, leak nothing over 1000 updates,
 * refuse a topology change with the graph intact, and order itself after a queued replay.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"
#include "cts_internal.h"

#define MAXT 3

typedef struct upd_spec {
  size_t k, numel[MAXT]; /* the tensor list */
  float value, scale;    /* fill value (kernel parameter), scale (device scalar) */
  size_t bytes, mbytes;  /* copy and memset sizes */
  int mvalue;
} upd_spec_t;

typedef struct upd_set {
  upd_spec_t spec;
  accel_tensor_t list[MAXT];
  float *scale;
  unsigned char *src, *dst, *mset;
} upd_set_t;

static const upd_spec_t spec_a = {3, {100, 257, 31}, 1.5f, 2.0f, 64, 48, 0x11};
static const upd_spec_t spec_b = {2, {1000, 5, 0}, -3.25f, 0.5f, 200, 100, 0x7e};
static const upd_spec_t spec_c = {3, {9, 700, 64}, 0.75f, 4.0f, 8, 256, 0xa5}; /* sizes grow */

static accel_status_t upd_body(accel_stream_t *s, void *user) {
  upd_set_t *u = user;
  accel_status_t st = accel_memset_async(s, u->mset, u->spec.mvalue, u->spec.mbytes);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, u->dst, u->src, u->spec.bytes);
  if (st == ACCEL_OK) st = accel_fill(s, u->list, u->spec.k, u->spec.value);
  if (st == ACCEL_OK) st = accel_scale(s, u->list, u->spec.k, u->scale);
  return st;
}

static accel_status_t set_alloc(cts_ctx_t *ctx, const upd_spec_t *spec, upd_set_t *u) {
  memset(u, 0, sizeof *u);
  u->spec = *spec;
  accel_status_t st = accel_malloc(ctx->dev, 4, (void **)&u->scale);
  for (size_t i = 0; i < spec->k && st == ACCEL_OK; ++i) {
    u->list[i].numel = spec->numel[i];
    u->list[i].dtype = ACCEL_F32;
    st = accel_malloc(ctx->dev, spec->numel[i] * 4, &u->list[i].data);
  }
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, spec->bytes, (void **)&u->src);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, spec->bytes, (void **)&u->dst);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, spec->mbytes, (void **)&u->mset);
  return st;
}

static void set_free(cts_ctx_t *ctx, upd_set_t *u) {
  for (size_t i = 0; i < u->spec.k; ++i) accel_free(ctx->dev, u->list[i].data);
  accel_free(ctx->dev, u->scale);
  accel_free(ctx->dev, u->src);
  if (u->dst != u->src) accel_free(ctx->dev, u->dst); /* a shared dst is freed by its owner */
  accel_free(ctx->dev, u->mset);
}

/* Sentinels everywhere the sequence writes; src gets the pattern of seed. */
static accel_status_t set_prepare(cts_ctx_t *ctx, upd_set_t *u, uint32_t seed) {
  unsigned char buf[4096];
  float sentinel[1000];
  for (size_t i = 0; i < 1000; ++i) sentinel[i] = 7.0f;
  accel_status_t st = cts_upload(ctx, u->scale, &u->spec.scale, 4);
  for (size_t i = 0; i < u->spec.k && st == ACCEL_OK; ++i)
    st = cts_upload(ctx, u->list[i].data, sentinel, u->spec.numel[i] * 4);
  cts_fill_pattern(buf, u->spec.bytes, seed);
  if (st == ACCEL_OK) st = cts_upload(ctx, u->src, buf, u->spec.bytes);
  memset(buf, 0, sizeof buf);
  if (st == ACCEL_OK) st = cts_upload(ctx, u->dst, buf, u->spec.bytes);
  if (st == ACCEL_OK) st = cts_upload(ctx, u->mset, buf, u->spec.mbytes);
  return st;
}

/* Everything the sequence wrote, as bytes (for bitwise comparisons); n = bytes written. */
static accel_status_t set_read(cts_ctx_t *ctx, const upd_set_t *u, unsigned char *out,
                               size_t *n) {
  size_t at = 0;
  accel_status_t st = ACCEL_OK;
  for (size_t i = 0; i < u->spec.k && st == ACCEL_OK; at += u->spec.numel[i++] * 4)
    st = cts_download(ctx, out + at, u->list[i].data, u->spec.numel[i] * 4);
  if (st == ACCEL_OK) st = cts_download(ctx, out + at, u->dst, u->spec.bytes);
  at += u->spec.bytes;
  if (st == ACCEL_OK) st = cts_download(ctx, out + at, u->mset, u->spec.mbytes);
  *n = at + u->spec.mbytes;
  return st;
}

/* NULL when the set holds what one run of the sequence writes (reference: double product of
 * the fill value and the scale, the src pattern of seed, the memset byte), else what differs. */
static const char *set_verify(cts_ctx_t *ctx, const upd_set_t *u, uint32_t seed) {
  static _Thread_local char why[160];
  unsigned char got[8192];
  size_t n = 0;
  if (set_read(ctx, u, got, &n) != ACCEL_OK) return accel_last_error();
  const float want = (float)((double)u->spec.value * (double)u->spec.scale);
  size_t at = 0;
  for (size_t i = 0; i < u->spec.k; ++i)
    for (size_t j = 0; j < u->spec.numel[i]; ++j, at += 4) {
      float v;
      memcpy(&v, got + at, 4);
      if (v != want) {
        snprintf(why, sizeof why, "tensor %zu[%zu] = %g, want %g", i, j, (double)v,
                 (double)want);
        return why;
      }
    }
  size_t bad = cts_check_pattern(got + at, u->spec.bytes, seed);
  if (bad != u->spec.bytes) return "the copy's destination does not hold its source";
  at += u->spec.bytes;
  if (cts_find_not_byte(got + at, u->spec.mbytes, (unsigned char)u->spec.mvalue) !=
      u->spec.mbytes)
    return "the memset's bytes are wrong";
  return NULL;
}

/* NULL when every tensor of the set still holds the sentinel (nothing ran on it). */
static const char *set_untouched(cts_ctx_t *ctx, const upd_set_t *u) {
  float got[1000];
  for (size_t i = 0; i < u->spec.k; ++i) {
    if (cts_download(ctx, got, u->list[i].data, u->spec.numel[i] * 4) != ACCEL_OK)
      return accel_last_error();
    for (size_t j = 0; j < u->spec.numel[i]; ++j)
      if (got[j] != 7.0f) return "a replay after the update wrote the old buffers";
  }
  return NULL;
}

/* The sequence with a block of the capture's private pool allocated and freed first: it adds
 * no node, but the pool keeps a segment for as long as a graph holds it. */
static accel_status_t pooled_body(accel_stream_t *s, void *user) {
  void *tmp = NULL;
  accel_status_t st = accel_malloc_async(s, 1u << 20, &tmp);
  if (st == ACCEL_OK) st = accel_free_async(s, tmp);
  return st == ACCEL_OK ? upd_body(s, user) : st;
}

static accel_status_t capture_with(cts_ctx_t *ctx, accel_stream_t *s, cts_body_fn body,
                                   upd_set_t *u, accel_graph_t **g) {
  accel_status_t st = accel_graph_create(ctx->dev, g);
  if (st != ACCEL_OK) return st;
  st = accel_graph_capture_begin(*g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  if (st == ACCEL_OK) st = body(s, u);
  accel_status_t end = accel_graph_capture_end(*g);
  return st != ACCEL_OK ? st : end;
}

static accel_status_t capture(cts_ctx_t *ctx, accel_stream_t *s, upd_set_t *u,
                              accel_graph_t **g) {
  return capture_with(ctx, s, upd_body, u, g);
}

/* Two sets of buffers and a stream, made and released together. */
typedef struct upd_fixture {
  upd_set_t a, b;
  accel_stream_t *s;
  accel_graph_t *ga, *gb;
} upd_fixture_t;

static accel_status_t fixture_make(cts_ctx_t *ctx, upd_fixture_t *f, const upd_spec_t *b) {
  memset(f, 0, sizeof *f);
  accel_status_t st = set_alloc(ctx, &spec_a, &f->a);
  if (st == ACCEL_OK) st = set_alloc(ctx, b, &f->b);
  if (st == ACCEL_OK) st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &f->s);
  if (st == ACCEL_OK) st = capture(ctx, f->s, &f->a, &f->ga);
  if (st == ACCEL_OK) st = capture(ctx, f->s, &f->b, &f->gb);
  return st;
}

static void fixture_free(cts_ctx_t *ctx, upd_fixture_t *f) {
  if (f->s) accel_stream_synchronize(f->s);
  if (f->ga) accel_graph_destroy(f->ga);
  if (f->gb) accel_graph_destroy(f->gb);
  if (f->s) accel_stream_destroy(f->s);
  set_free(ctx, &f->a);
  set_free(ctx, &f->b);
}

/* Replays g on s once with both sets prepared; checks that set `want` got the run and set
 * `idle` kept its sentinels. */
static const char *replay_into(cts_ctx_t *ctx, accel_graph_t *g, accel_stream_t *s,
                               upd_set_t *want, upd_set_t *idle) {
  if (set_prepare(ctx, want, 5) != ACCEL_OK || set_prepare(ctx, idle, 9) != ACCEL_OK ||
      accel_graph_replay(g, s) != ACCEL_OK || accel_stream_synchronize(s) != ACCEL_OK)
    return accel_last_error();
  const char *why = set_verify(ctx, want, 5);
  return why ? why : set_untouched(ctx, idle);
}

/* New pointers, scalars, list lengths and sizes: the updated graph writes the new buffers with
 * the bits of a fresh capture, and an update back restores the first arguments. */
static cts_result_t update_roundtrip(cts_ctx_t *ctx, const upd_spec_t *spec) {
  upd_fixture_t f;
  accel_status_t st = fixture_make(ctx, &f, spec);
  const char *why = NULL;
  unsigned char fresh[8192], updated[8192];
  size_t nf = 0, nu = 0;
  if (st == ACCEL_OK && !(why = replay_into(ctx, f.gb, f.s, &f.b, &f.a)))
    st = set_read(ctx, &f.b, fresh, &nf);
  if (st == ACCEL_OK && !why && !(why = replay_into(ctx, f.ga, f.s, &f.a, &f.b)))
    st = accel_graph_update(f.ga, f.gb);
  if (st == ACCEL_OK && !why && !(why = replay_into(ctx, f.ga, f.s, &f.b, &f.a)))
    st = set_read(ctx, &f.b, updated, &nu);
  int same = st == ACCEL_OK && !why && nf == nu && memcmp(fresh, updated, nf) == 0;
  accel_graph_t *back = NULL; /* a new capture of set a updates it back */
  if (st == ACCEL_OK && !why) st = capture(ctx, f.s, &f.a, &back);
  if (st == ACCEL_OK && !why) st = accel_graph_update(f.ga, back);
  if (st == ACCEL_OK && !why) why = replay_into(ctx, f.ga, f.s, &f.a, &f.b);
  if (back) accel_graph_destroy(back);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", st != ACCEL_OK ? accel_last_error() : why ? why : "");
  fixture_free(ctx, &f);
  CTS_CHECK(st == ACCEL_OK && !why, "%s%s%s", st != ACCEL_OK ? accel_status_name(st) : "",
            st != ACCEL_OK ? ": " : "", msg);
  CTS_CHECK(same, "the updated graph's results differ from a fresh capture's (%zu vs %zu bytes)",
            nu, nf);
  return CTS_PASS;
}

CTS_CASE(graph_update_new_arguments, CTS_TAG_KERNELS) { return update_roundtrip(ctx, &spec_b); }

CTS_CASE(graph_update_larger_sizes, CTS_TAG_KERNELS) { return update_roundtrip(ctx, &spec_c); }

/* A different sequence is refused with GRAPH_MISMATCH naming the node; the graph still replays
 * its own arguments. Bad arguments are refused too. */
CTS_CASE(graph_update_topology_refused, CTS_TAG_KERNELS) {
  upd_fixture_t f;
  CTS_OK(fixture_make(ctx, &f, &spec_b));
  accel_graph_t *other = NULL, *empty = NULL;
  accel_status_t st = accel_graph_create(ctx->dev, &other);
  if (st == ACCEL_OK) st = accel_graph_capture_begin(other, f.s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  if (st == ACCEL_OK) st = upd_body(f.s, &f.b);
  if (st == ACCEL_OK) st = accel_fill(f.s, f.b.list, 1, 0.0f); /* one node more */
  accel_status_t end = accel_graph_capture_end(other);
  if (st == ACCEL_OK) st = end;
  if (st == ACCEL_OK) st = accel_graph_create(ctx->dev, &empty);
  accel_status_t mismatch = st == ACCEL_OK ? accel_graph_update(f.ga, other) : st;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", accel_last_error());
  accel_status_t swapped = st == ACCEL_OK ? accel_graph_update(other, f.ga) : st;
  accel_status_t from_empty = st == ACCEL_OK ? accel_graph_update(f.ga, empty) : st;
  accel_status_t to_empty = st == ACCEL_OK ? accel_graph_update(empty, f.ga) : st;
  accel_status_t self = st == ACCEL_OK ? accel_graph_update(f.ga, f.ga) : st;
  accel_status_t null_src = accel_graph_update(f.ga, NULL);
  const char *why = st == ACCEL_OK ? replay_into(ctx, f.ga, f.s, &f.a, &f.b) : NULL;
  if (other) accel_graph_destroy(other);
  if (empty) accel_graph_destroy(empty);
  accel_status_t destroyed = accel_graph_update(f.ga, empty);
  fixture_free(ctx, &f);
  CTS_OK(st);
  CTS_CHECK(mismatch == ACCEL_ERROR_GRAPH_MISMATCH && strstr(msg, "node 4") &&
                strstr(msg, "the end of the graph") && strstr(msg, "accel_k_"),
            "an extra node: %s: %s", accel_status_name(mismatch), msg);
  CTS_CHECK(swapped == ACCEL_ERROR_GRAPH_MISMATCH, "a missing node: %s",
            accel_status_name(swapped));
  CTS_CHECK(from_empty == ACCEL_ERROR_STATE && to_empty == ACCEL_ERROR_STATE,
            "empty graphs: %s / %s", accel_status_name(from_empty), accel_status_name(to_empty));
  CTS_CHECK(self == ACCEL_ERROR_INVALID_ARGUMENT, "self update: %s", accel_status_name(self));
  CTS_CHECK(null_src == ACCEL_ERROR_INVALID_HANDLE && destroyed == ACCEL_ERROR_INVALID_HANDLE,
            "NULL / destroyed source: %s / %s", accel_status_name(null_src),
            accel_status_name(destroyed));
  CTS_CHECK(!why, "after the refused update the graph does not replay its own work: %s", why);
  return CTS_PASS;
}

/* 1000 alternating updates and replays, every other one from a new capture with a pool of its
 * own that is destroyed right after: device memory, blocks, segments and graph-pool memory come
 * back to where they were (the old contents of each update, the last hold on the source's pool
 * among them, are released once its replays finished). */
CTS_CASE(graph_update_1000_no_leak, CTS_TAG_KERNELS) {
  upd_fixture_t f;
  accel_memory_stats_t before, after;
  accel_status_t st = fixture_make(ctx, &f, &spec_b);
  if (st == ACCEL_OK) st = set_prepare(ctx, &f.a, 5);
  if (st == ACCEL_OK) st = set_prepare(ctx, &f.b, 5);
  /* i = -2, -1 warm up (first-use allocations) and leave the state every odd step leaves: the
   * graph holding the pool of a capture that was destroyed */
  for (int i = -2; i < 1000 && st == ACCEL_OK; ++i) {
    if (i == 0 && (st = accel_device_synchronize(ctx->dev)) == ACCEL_OK)
      st = accel_memory_stats(ctx->dev, &before);
    accel_graph_t *fresh = NULL; /* odd steps: a new capture with its own pool, then dropped */
    if (st == ACCEL_OK && i % 2) st = capture_with(ctx, f.s, pooled_body, &f.a, &fresh);
    if (st == ACCEL_OK) st = accel_graph_update(f.ga, i % 2 ? fresh : f.gb);
    if (fresh) accel_graph_destroy(fresh);
    if (st == ACCEL_OK) st = accel_graph_replay(f.ga, f.s);
    if (st == ACCEL_OK && i % 100 == 99) st = accel_stream_synchronize(f.s);
  }
  if (st == ACCEL_OK) st = accel_device_synchronize(ctx->dev);
  if (st == ACCEL_OK) st = accel_memory_stats(ctx->dev, &after);
  const char *why = NULL;
  if (st == ACCEL_OK) why = set_verify(ctx, &f.a, 5); /* the last update was back to set a */
  if (st == ACCEL_OK && !why) why = set_verify(ctx, &f.b, 5);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", st != ACCEL_OK ? accel_last_error() : why ? why : "");
  fixture_free(ctx, &f);
  CTS_CHECK(st == ACCEL_OK && !why, "%s %s", accel_status_name(st), msg);
  CTS_CHECK(after.allocated_bytes == before.allocated_bytes &&
                after.active_blocks == before.active_blocks &&
                after.reserved_bytes == before.reserved_bytes &&
                after.segment_count == before.segment_count &&
                after.graph_pool_reserved_bytes == before.graph_pool_reserved_bytes,
            "memory grew over 1000 updates: allocated %llu -> %llu, blocks %llu -> %llu, "
            "reserved %llu -> %llu, segments %llu -> %llu",
            (unsigned long long)before.allocated_bytes, (unsigned long long)after.allocated_bytes,
            (unsigned long long)before.active_blocks, (unsigned long long)after.active_blocks,
            (unsigned long long)before.reserved_bytes, (unsigned long long)after.reserved_bytes,
            (unsigned long long)before.segment_count, (unsigned long long)after.segment_count);
  return CTS_PASS;
}

/* A replay of g queued behind a blocked host function on one stream, then an update of g and a
 * replay on another stream: the queued replay runs the old arguments, the new one the new
 * arguments and after it (both copy into one shared buffer: the last copy must be b's). */
CTS_CASE(graph_update_while_replay_queued, CTS_TAG_KERNELS) {
  upd_fixture_t f;
  accel_stream_t *s2 = NULL;
  cts_gate_t gate;
  cts_gate_init(&gate);
  memset(&f, 0, sizeof f);
  accel_status_t st = set_alloc(ctx, &spec_a, &f.a);
  if (st == ACCEL_OK) st = set_alloc(ctx, &spec_b, &f.b);
  if (st == ACCEL_OK) {
    accel_free(ctx->dev, f.b.dst);
    f.b.dst = f.a.dst; /* the shared destination; b copies fewer bytes than a */
    f.b.spec.bytes = f.a.spec.bytes;
  }
  if (st == ACCEL_OK) st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &f.s);
  if (st == ACCEL_OK) st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s2);
  if (st == ACCEL_OK) st = capture(ctx, f.s, &f.a, &f.ga);
  if (st == ACCEL_OK) st = capture(ctx, f.s, &f.b, &f.gb);
  if (st == ACCEL_OK) st = set_prepare(ctx, &f.a, 5);
  if (st == ACCEL_OK) st = set_prepare(ctx, &f.b, 9);
  if (st == ACCEL_OK) st = accel_launch_host_func(f.s, cts_gate_host_fn, &gate);
  if (st == ACCEL_OK) st = accel_graph_replay(f.ga, f.s); /* queued behind the gate */
  if (st == ACCEL_OK) st = accel_stream_flush(f.s);
  if (st == ACCEL_OK) st = accel_graph_update(f.ga, f.gb);
  if (st == ACCEL_OK) st = accel_graph_replay(f.ga, s2);
  if (st == ACCEL_OK) st = accel_stream_flush(s2);
  cts_gate_open(&gate);
  if (f.s) accel_stream_synchronize(f.s);
  if (s2) accel_stream_synchronize(s2);
  const char *why = NULL;
  float t0 = 0;
  if (st == ACCEL_OK) st = cts_download(ctx, &t0, f.a.list[0].data, 4);
  if (st == ACCEL_OK && t0 != 3.0f) why = "the queued replay did not run the old arguments";
  if (st == ACCEL_OK && !why) why = set_verify(ctx, &f.b, 9); /* b's copy came last */
  if (s2) accel_stream_destroy(s2);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", st != ACCEL_OK ? accel_last_error() : why ? why : "");
  f.b.dst = f.b.src; /* not freed twice */
  fixture_free(ctx, &f);
  CTS_CHECK(!atomic_load(&gate.timed_out), "the gate timed out");
  CTS_CHECK(st == ACCEL_OK && !why, "%s %s", accel_status_name(st), msg);
  return CTS_PASS;
}
