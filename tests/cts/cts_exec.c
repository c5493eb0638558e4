/*
 * accel CTS: cts_exec runs one case body in the suite's mode (eager, captured into a graph and
 * replayed, or queued on a lazy stream), so every case that submits work covers all three.
 */
#include "cts_internal.h"

/* Resources of failed cts_exec calls, released after the case (see cts_exec_cleanup). */
enum { CTS_MAX_DEFERRED = 16 };
static accel_stream_t *g_deferred_streams[CTS_MAX_DEFERRED];
static accel_graph_t *g_deferred_graphs[CTS_MAX_DEFERRED];
static int g_deferred;

unsigned cts_stream_flags(const cts_ctx_t *ctx) {
  switch (ctx->mode) {
    case CTS_MODE_EAGER: return ACCEL_STREAM_EAGER;
    case CTS_MODE_LAZY: return ACCEL_STREAM_LAZY;
    case CTS_MODE_GRAPH: break;
  }
  return ACCEL_STREAM_DEFAULT;
}

static void release(accel_stream_t *s, accel_graph_t *g) {
  if (g) accel_graph_destroy(g);
  if (s) accel_stream_destroy(s);
}

/* On failure: keep the objects for later so that accel_last_error() is not overwritten by the
 * cleanup calls before the case reports it. */
static accel_status_t finish(accel_status_t st, accel_stream_t *s, accel_graph_t *g) {
  if (st == ACCEL_OK || g_deferred == CTS_MAX_DEFERRED) {
    release(s, g);
    return st;
  }
  g_deferred_streams[g_deferred] = s;
  g_deferred_graphs[g_deferred] = g;
  g_deferred++;
  return st;
}

void cts_exec_cleanup(void) {
  for (int i = 0; i < g_deferred; i++) {
    accel_stream_t *s = g_deferred_streams[i];
    int capturing = 0;
    if (s && accel_stream_is_capturing(s, &capturing) == ACCEL_OK && capturing &&
        g_deferred_graphs[i])
      accel_graph_capture_end(g_deferred_graphs[i]);
    /* The failed work may still be queued; wait for it before tearing down. */
    if (s) accel_stream_synchronize(s);
    release(s, g_deferred_graphs[i]);
  }
  g_deferred = 0;
}

static accel_status_t exec_direct(cts_ctx_t *ctx, cts_body_fn body, void *user, int replays) {
  accel_stream_t *s = NULL;
  accel_status_t st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s);
  if (st != ACCEL_OK) return st;
  for (int i = 0; i < replays && st == ACCEL_OK; i++) st = body(s, user);
  /* Lazy: the explicit flush is what the mode exercises; synchronize must then find the work
   * already submitted. On eager streams flush is a no-op. */
  if (st == ACCEL_OK) st = accel_stream_flush(s);
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  return finish(st, s, NULL);
}

static accel_status_t exec_graph(cts_ctx_t *ctx, cts_body_fn body, void *user, int replays) {
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL;
  accel_status_t st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s);
  if (st != ACCEL_OK) return st;
  st = accel_graph_create(ctx->dev, &g);
  if (st != ACCEL_OK) return finish(st, s, NULL);
  st = accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  if (st != ACCEL_OK) return finish(st, s, g);
  st = body(s, user);
  /* On failure the capture is still open: cts_exec_cleanup ends it. */
  if (st != ACCEL_OK) return finish(st, s, g);
  st = accel_graph_capture_end(g);
  for (int i = 0; i < replays && st == ACCEL_OK; i++) st = accel_graph_replay(g, s);
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  return finish(st, s, g);
}

accel_status_t cts_exec(cts_ctx_t *ctx, cts_body_fn body, void *user, int replays) {
  if (ctx->mode == CTS_MODE_GRAPH) return exec_graph(ctx, body, user, replays);
  return exec_direct(ctx, body, user, replays);
}
