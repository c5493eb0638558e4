/*
 * accel_graph_update where the backend rewrites its instantiated graph in place (the CPU
 * backend's op list; docs/GRAPHS.md, "Updating a graph"): what the old arguments decided must
 * be decided again for the new ones, and a replay queued before an update runs the old ones.
 * - fusion replanned: fill then scale over equal-length tensor lists. Over disjoint lists the
 *   two launches fuse (run tile by tile); updated so that scale's list is fill's list in the
 *   other order, block b of scale reads what another block of fill writes, and a plan kept from
 *   the old arguments would scale tensors before they are filled. The updated graph must give
 *   value * scale everywhere, as a fresh capture does, and an update back must too.
 *   _queued: the same update made while a replay of the fused plan waits behind a gate (the
 *   CPU backend then builds a new op list, checking the old plan for it) must too.
 * - replays queued on one stream behind a gate, with updates between them: each replay runs
 *   the arguments the graph had when it was issued.
 * Both hold in every backend (an emulated update re-instantiates), in every CTS mode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"
#include "cts_internal.h"

/* Two tensors of 1 Mi floats per list: many blocks each, so a fused group runs in tiles. */
#define PLAN_NUMEL ((size_t)1 << 20)

typedef struct plan_bufs {
  float *x[2], *y[2], *scale;
} plan_bufs_t;

typedef struct plan_args {
  accel_tensor_t fill[2], scaled[2];
  float value;
  const float *scale;
} plan_args_t;

static accel_status_t plan_body(accel_stream_t *s, void *user) {
  const plan_args_t *a = user;
  accel_status_t st = accel_fill(s, a->fill, 2, a->value);
  return st == ACCEL_OK ? accel_scale(s, a->scaled, 2, a->scale) : st;
}

/* fill x, scale y (disjoint: fusable) or fill x, scale x reversed (a hazard across blocks). */
static plan_args_t plan_args(const plan_bufs_t *b, int reversed, float value) {
  plan_args_t a = {.value = value, .scale = b->scale};
  for (int i = 0; i < 2; ++i) {
    a.fill[i] = (accel_tensor_t){b->x[i], PLAN_NUMEL, ACCEL_F32};
    a.scaled[i] = (accel_tensor_t){reversed ? b->x[1 - i] : b->y[i], PLAN_NUMEL, ACCEL_F32};
  }
  return a;
}

static accel_status_t plan_capture(accel_stream_t *s, accel_graph_t *g, plan_args_t *a) {
  accel_status_t st = accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  if (st != ACCEL_OK) return st;
  st = plan_body(s, a);
  accel_status_t end = accel_graph_capture_end(g);
  return st != ACCEL_OK ? st : end;
}

/* The first element of t that is not want, or -1 (all of t read back). */
static long first_wrong(cts_ctx_t *ctx, const float *t, float want, float *host,
                        accel_status_t *st) {
  *st = cts_download(ctx, host, t, PLAN_NUMEL * sizeof *host);
  for (size_t i = 0; *st == ACCEL_OK && i < PLAN_NUMEL; ++i)
    if (host[i] != want) return (long)i;
  return -1;
}

/* Zeroes x, replays g, and checks that x (both tensors) holds value * scale. */
static const char *plan_check(cts_ctx_t *ctx, accel_stream_t *s, accel_graph_t *g,
                              const plan_bufs_t *b, float want, float *host) {
  accel_status_t st = ACCEL_OK;
  for (int i = 0; i < 2 && st == ACCEL_OK; ++i)
    st = accel_memset_async(s, b->x[i], 0, PLAN_NUMEL * sizeof(float));
  if (st == ACCEL_OK) st = accel_graph_replay(g, s);
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  for (int i = 0; i < 2 && st == ACCEL_OK; ++i) {
    long bad = first_wrong(ctx, b->x[i], want, host, &st);
    if (st == ACCEL_OK && bad >= 0) return "x is not value * scale: a fusion plan of the old "
                                           "arguments ran the new ones";
  }
  return st == ACCEL_OK ? NULL : accel_last_error();
}

/* plan_check after updating g from src while a replay of g waits behind a gate on s. */
static const char *gated_update_check(cts_ctx_t *ctx, accel_stream_t *s, accel_graph_t *g,
                                      accel_graph_t *src, const plan_bufs_t *b, float want,
                                      float *host) {
  cts_gate_t gate;
  cts_gate_init(&gate);
  accel_status_t st = accel_launch_host_func(s, cts_gate_host_fn, &gate);
  if (st == ACCEL_OK) st = accel_graph_replay(g, s); /* holds the op list of the fused plan */
  if (st == ACCEL_OK) st = accel_stream_flush(s);
  if (st == ACCEL_OK) st = accel_graph_update(g, src);
  cts_gate_open(&gate);
  accel_status_t sync = accel_stream_synchronize(s);
  if (st == ACCEL_OK) st = sync;
  if (st != ACCEL_OK) return accel_last_error();
  if (atomic_load(&gate.timed_out)) return "the gate timed out";
  return plan_check(ctx, s, g, b, want, host);
}

/* queued: the update to the aliased lists is made while a replay of the fused plan waits
 * behind a gate (a synchronous backend never has one queued: graph_update_*_queued cases). */
static cts_result_t fusion_replanned(cts_ctx_t *ctx, int queued) {
  plan_bufs_t b;
  memset(&b, 0, sizeof b);
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL, *rev = NULL, *fwd = NULL;
  float *host = malloc(PLAN_NUMEL * sizeof *host);
  const float scale = 2.5f;
  accel_status_t st = host ? ACCEL_OK : ACCEL_ERROR_OUT_OF_MEMORY;
  for (int i = 0; i < 2 && st == ACCEL_OK; ++i) {
    st = accel_malloc(ctx->dev, PLAN_NUMEL * sizeof(float), (void **)&b.x[i]);
    if (st == ACCEL_OK) st = accel_malloc(ctx->dev, PLAN_NUMEL * sizeof(float), (void **)&b.y[i]);
  }
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, sizeof scale, (void **)&b.scale);
  if (st == ACCEL_OK) st = cts_upload(ctx, b.scale, &scale, sizeof scale);
  if (st == ACCEL_OK) st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s);
  plan_args_t a_fwd = plan_args(&b, 0, 1.5f), a_rev = plan_args(&b, 1, 1.5f);
  plan_args_t a_fwd2 = plan_args(&b, 0, 3.0f);
  accel_graph_t **graphs[] = {&g, &rev, &fwd};
  for (int i = 0; i < 3 && st == ACCEL_OK; ++i) st = accel_graph_create(ctx->dev, graphs[i]);
  if (st == ACCEL_OK) st = plan_capture(s, g, &a_fwd);
  if (st == ACCEL_OK) st = plan_capture(s, rev, &a_rev);
  if (st == ACCEL_OK) st = plan_capture(s, fwd, &a_fwd2);
  const char *why = NULL, *fresh = NULL;
  if (st == ACCEL_OK) fresh = plan_check(ctx, s, rev, &b, 1.5f * scale, host);
  if (queued && st == ACCEL_OK && !fresh)
    why = gated_update_check(ctx, s, g, rev, &b, 1.5f * scale, host);
  /* fill x then scale x (other order): x = 1.5 * 2.5 */
  if (!queued && st == ACCEL_OK && !fresh && (st = accel_graph_update(g, rev)) == ACCEL_OK)
    why = plan_check(ctx, s, g, &b, 1.5f * scale, host);
  /* back to disjoint lists: x = 3.0, unscaled (y is scaled) */
  if (!queued && st == ACCEL_OK && !fresh && !why &&
      (st = accel_graph_update(g, fwd)) == ACCEL_OK)
    why = plan_check(ctx, s, g, &b, 3.0f, host);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", st != ACCEL_OK ? accel_last_error() : "");
  for (int i = 0; i < 3; ++i)
    if (*graphs[i]) accel_graph_destroy(*graphs[i]);
  if (s) accel_stream_destroy(s);
  for (int i = 0; i < 2; ++i) {
    if (b.x[i]) accel_free(ctx->dev, b.x[i]);
    if (b.y[i]) accel_free(ctx->dev, b.y[i]);
  }
  if (b.scale) accel_free(ctx->dev, b.scale);
  free(host);
  CTS_CHECK(st == ACCEL_OK, "%s: %s", accel_status_name(st), msg);
  CTS_CHECK(!fresh, "a fresh capture of the aliased lists: %s", fresh);
  CTS_CHECK(!why, "%s", why);
  return CTS_PASS;
}

CTS_CASE(graph_update_fusion_replanned, CTS_TAG_KERNELS) { return fusion_replanned(ctx, 0); }

CTS_CASE(graph_update_fusion_replanned_queued, CTS_TAG_KERNELS) {
  return fusion_replanned(ctx, 1);
}

typedef struct queued_set {
  float *t, *dst; /* fill t with value, copy its first element to dst */
  float value;
} queued_set_t;

static accel_status_t queued_body(accel_stream_t *s, void *user) {
  const queued_set_t *q = user;
  accel_tensor_t t = {q->t, 64, ACCEL_F32};
  accel_status_t st = accel_fill(s, &t, 1, q->value);
  return st == ACCEL_OK ? accel_memcpy_async(s, q->dst, q->t, sizeof(float)) : st;
}

static accel_status_t queued_capture(cts_ctx_t *ctx, accel_stream_t *s, queued_set_t *q,
                                     accel_graph_t **out) {
  accel_status_t st = accel_graph_create(ctx->dev, out);
  if (st == ACCEL_OK) st = accel_graph_capture_begin(*out, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  if (st != ACCEL_OK) return st;
  st = queued_body(s, q);
  accel_status_t end = accel_graph_capture_end(*out);
  return st != ACCEL_OK ? st : end;
}

/* Three replays of one graph queued on one stream behind a gate, with an update before the
 * second and the third: A (ta = 1, copied to da), B (tb = 2, to db), A again with 3 (to da2).
 * Each replay runs the arguments the graph had when it was issued. */
CTS_CASE(graph_update_between_queued_replays, CTS_TAG_KERNELS) {
  float *mem[5] = {0};
  accel_stream_t *s = NULL;
  accel_graph_t *g[3] = {0};
  cts_gate_t gate;
  cts_gate_init(&gate);
  accel_status_t st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s);
  for (int i = 0; i < 5 && st == ACCEL_OK; ++i)
    st = accel_malloc(ctx->dev, 64 * sizeof(float), (void **)&mem[i]);
  /* mem: ta, tb, da, db, da2 */
  queued_set_t sets[3] = {{mem[0], mem[2], 1.0f}, {mem[1], mem[3], 2.0f}, {mem[0], mem[4], 3.0f}};
  for (int i = 0; i < 3 && st == ACCEL_OK; ++i) st = queued_capture(ctx, s, &sets[i], &g[i]);
  for (int i = 0; i < 5 && st == ACCEL_OK; ++i)
    st = accel_memset_async(s, mem[i], 0, 64 * sizeof(float));
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  if (st == ACCEL_OK) st = accel_launch_host_func(s, cts_gate_host_fn, &gate);
  if (st == ACCEL_OK) st = accel_graph_replay(g[0], s);
  if (st == ACCEL_OK) st = accel_stream_flush(s);
  if (st == ACCEL_OK) st = accel_graph_update(g[0], g[1]);
  if (st == ACCEL_OK) st = accel_graph_replay(g[0], s);
  if (st == ACCEL_OK) st = accel_stream_flush(s);
  if (st == ACCEL_OK) st = accel_graph_update(g[0], g[2]);
  if (st == ACCEL_OK) st = accel_graph_replay(g[0], s);
  if (st == ACCEL_OK) st = accel_stream_flush(s);
  cts_gate_open(&gate);
  if (s) accel_stream_synchronize(s);
  float got[5] = {0};
  for (int i = 0; i < 5 && st == ACCEL_OK; ++i) st = cts_download(ctx, &got[i], mem[i], 4);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", st != ACCEL_OK ? accel_last_error() : "");
  for (int i = 0; i < 3; ++i)
    if (g[i]) accel_graph_destroy(g[i]);
  for (int i = 0; i < 5; ++i)
    if (mem[i]) accel_free(ctx->dev, mem[i]);
  if (s) accel_stream_destroy(s);
  CTS_CHECK(!atomic_load(&gate.timed_out), "the gate timed out");
  CTS_CHECK(st == ACCEL_OK, "%s: %s", accel_status_name(st), msg);
  CTS_CHECK(got[2] == 1.0f && got[3] == 2.0f && got[4] == 3.0f,
            "the replays copied %g, %g, %g (want 1, 2, 3: each its own arguments)",
            (double)got[2], (double)got[3], (double)got[4]);
  CTS_CHECK(got[0] == 3.0f && got[1] == 2.0f, "ta %g (want 3), tb %g (want 2)", (double)got[0],
            (double)got[1]);
  return CTS_PASS;
}
