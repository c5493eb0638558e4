/*
 * graph-update: changing a captured graph's arguments (issue 34). A chain of N one-tensor
 * accel_fill nodes whose buffer and value change every sample, made ready to replay three ways
 * and replayed + synchronized, in paired rounds:
 *   recapture: accel_graph_reset + capture + replay (what torch does today);
 *   capture+update: a second graph is reset and captured, accel_graph_update takes its
 *                   arguments, the first graph replays (the portable update path);
 *   update: accel_graph_update from one of two sources captured beforehand + replay (the cost
 *           of the update call itself);
 *   replay: replay alone (the floor).
 * ACCEL_ATTR_GRAPH_UPDATE says whether the device updates natively or the core emulates it
 * (docs/GRAPHS.md, "Updating a graph"). Timings are the lead's to publish (docs/PERFORMANCE.md).
 */
#include <stdlib.h>

#include "accel/accel_kernels.h"
#include "bench.h"

static const int chain_lengths[] = {10, 100, 1000};
#define NUM_LENGTHS (sizeof chain_lengths / sizeof chain_lengths[0])
#define NUM_WAYS 4
static const char *const way_names[NUM_WAYS] = {"recapture", "capture+update", "update",
                                                "replay"};

typedef struct upd_chain {
  accel_stream_t *s;
  float *buf[2];
  int n, turn;
  accel_graph_t *g, *src, *pre[2]; /* pre: the two sources captured beforehand */
} upd_chain_t;

static accel_status_t capture_chain(upd_chain_t *c, accel_graph_t *g, int which) {
  accel_tensor_t t = {c->buf[which], 1, ACCEL_F32};
  accel_status_t st = accel_graph_capture_begin(g, c->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  for (int i = 0; i < c->n && st == ACCEL_OK; i++) st = accel_fill(c->s, &t, 1, (float)(i + which));
  accel_status_t end = accel_graph_capture_end(g);
  return st != ACCEL_OK ? st : end;
}

/* Replays c->g, synchronizes; ms since t0 (-1 on failure). */
static double finish(upd_chain_t *c, uint64_t t0) {
  BENCH_TRY(accel_graph_replay(c->g, c->s));
  BENCH_TRY(accel_stream_synchronize(c->s));
  return (double)(bench_now_ns() - t0) / 1e6;
fail:
  return -1.0;
}

static double sample_recapture(void *ctx) {
  upd_chain_t *c = ctx;
  uint64_t t0 = bench_now_ns();
  BENCH_TRY(accel_graph_reset(c->g));
  BENCH_TRY(capture_chain(c, c->g, c->turn ^= 1));
  return finish(c, t0);
fail:
  return -1.0;
}

static double sample_capture_update(void *ctx) {
  upd_chain_t *c = ctx;
  uint64_t t0 = bench_now_ns();
  BENCH_TRY(accel_graph_reset(c->src));
  BENCH_TRY(capture_chain(c, c->src, c->turn ^= 1));
  BENCH_TRY(accel_graph_update(c->g, c->src));
  return finish(c, t0);
fail:
  return -1.0;
}

static double sample_update(void *ctx) {
  upd_chain_t *c = ctx;
  uint64_t t0 = bench_now_ns();
  BENCH_TRY(accel_graph_update(c->g, c->pre[c->turn ^= 1]));
  return finish(c, t0);
fail:
  return -1.0;
}

static double sample_replay(void *ctx) { return finish(ctx, bench_now_ns()); }

typedef struct upd_result {
  int n;
  bench_stats_t ms[NUM_WAYS];
  bench_stats_t over_recapture[NUM_WAYS]; /* per round: way / recapture */
} upd_result_t;

static int measure(accel_device_t *dev, upd_chain_t *c, int repeat, double *ms, upd_result_t *r) {
  int rc = 1;
  accel_graph_t **graphs[] = {&c->g, &c->src, &c->pre[0], &c->pre[1]};
  for (size_t i = 0; i < 4; i++) BENCH_TRY(accel_graph_create(dev, graphs[i]));
  BENCH_TRY(capture_chain(c, c->g, 0));
  BENCH_TRY(capture_chain(c, c->src, 1));
  BENCH_TRY(capture_chain(c, c->pre[0], 0));
  BENCH_TRY(capture_chain(c, c->pre[1], 1));
  const bench_sample_fn fns[NUM_WAYS] = {sample_recapture, sample_capture_update, sample_update,
                                         sample_replay};
  void *const ctx[NUM_WAYS] = {c, c, c, c};
  if (bench_rounds(repeat, NUM_WAYS, fns, ctx, ms)) goto fail;
  double *tmp = ms + NUM_WAYS * repeat;
  for (int w = 0; w < NUM_WAYS; w++) {
    r->ms[w] = bench_stats_copy(ms + w * repeat, repeat, tmp);
    r->over_recapture[w] = bench_ratio_stats(ms + w * repeat, ms, repeat, 1.0, tmp);
  }
  rc = 0;
fail:
  for (size_t i = 0; i < 4; i++)
    if (*graphs[i]) accel_graph_destroy(*graphs[i]), *graphs[i] = NULL;
  return rc;
}

static void report(const bench_opts_t *o, accel_device_t *dev, int repeat, int64_t kind,
                   const upd_result_t *res) {
  bench_machine_t m;
  FILE *f = bench_report_begin(o, dev, &m);
  fprintf(f, "graph-update: N fill nodes, new buffer and value each sample, + replay + "
             "synchronize; %d paired rounds, median [min..max] ms; /recapture: median of the "
             "rounds' ratios; update is %s\n", repeat,
          kind == ACCEL_GRAPH_UPDATE_NATIVE ? "native" : "emulated by the core");
  bench_json_t j;
  bench_json_begin_report(&j, o, "graph-update", &m);
  bench_json_int(&j, "repeat", repeat);
  bench_json_str(&j, "update", kind == ACCEL_GRAPH_UPDATE_NATIVE ? "native" : "emulated");
  bench_json_begin_array(&j, "rows");
  for (size_t i = 0; i < NUM_LENGTHS; i++) {
    for (int w = 0; w < NUM_WAYS; w++) {
      const bench_stats_t *s = &res[i].ms[w];
      fprintf(f, "N %5d  %-15s %9.4f [%9.4f..%9.4f] ms  /recapture %6.3f\n", res[i].n,
              way_names[w], s->median, s->min, s->max, res[i].over_recapture[w].median);
      bench_json_begin_object(&j, NULL);
      bench_json_int(&j, "n", res[i].n);
      bench_json_str(&j, "way", way_names[w]);
      bench_json_stats(&j, "ms", s);
      bench_json_stats(&j, "over_recapture", &res[i].over_recapture[w]);
      bench_json_end_object(&j);
    }
  }
  bench_json_end_array(&j);
  bench_json_end_object(&j);
}

int bench_graph_update(const bench_opts_t *o) {
  const int repeat = o->repeat ? o->repeat : 30;
  accel_device_t *dev = NULL;
  upd_chain_t c = {0};
  double *ms = calloc((NUM_WAYS + 1) * (size_t)repeat, sizeof *ms);
  upd_result_t res[NUM_LENGTHS];
  int64_t kind = 0;
  int rc = 1;
  BENCH_ALLOCATED(ms);
  if (bench_open_device(o, &dev)) goto fail;
  BENCH_TRY(accel_device_get_attribute(dev, ACCEL_ATTR_GRAPH_UPDATE, &kind));
  BENCH_TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &c.s));
  BENCH_TRY(accel_malloc(dev, 256, (void **)&c.buf[0]));
  BENCH_TRY(accel_malloc(dev, 256, (void **)&c.buf[1]));
  for (size_t i = 0; i < NUM_LENGTHS; i++) {
    res[i] = (upd_result_t){.n = chain_lengths[i]};
    c.n = chain_lengths[i];
    bench_progress("graph-update: N = %d", c.n);
    if (measure(dev, &c, repeat, ms, &res[i])) goto fail;
  }
  bench_progress_done();
  report(o, dev, repeat, kind, res);
  rc = 0;
fail:
  bench_progress_done();
  free(ms);
  for (int i = 0; i < 2; i++)
    if (c.buf[i]) accel_free(dev, c.buf[i]);
  if (c.s) accel_stream_destroy(c.s);
  if (dev) accel_device_close(dev);
  return rc;
}
