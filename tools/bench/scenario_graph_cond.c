/*
 * graph-cond: what a conditional region costs (issue 34; docs/GRAPHS.md, "Branches on a device
 * flag"). A chain of N one-tensor accel_fill nodes, captured three ways and replayed +
 * synchronized in paired rounds:
 *   plain:      the chain alone (the floor);
 *   if-taken:   the chain inside accel_graph_capture_if on a flag that holds 1;
 *   if-skipped: the same on a flag that holds 0.
 * The per-node cost of the region is (if-taken - plain) / N. ACCEL_ATTR_CONDITIONALS says how
 * the device runs regions: natively (the CPU backend's worker reads the flag and skips the
 * body; a graph with regions is not fused) or predicated (OpenCL: every node of the body is
 * launched and checks the flag's slot on the device). Timings are the lead's to publish
 * (docs/PERFORMANCE.md).
 */
#include <stdlib.h>

#include "accel/accel_kernels.h"
#include "bench.h"

static const int chain_lengths[] = {10, 100, 1000};
#define NUM_LENGTHS (sizeof chain_lengths / sizeof chain_lengths[0])
#define NUM_WAYS 3
static const char *const way_names[NUM_WAYS] = {"plain", "if-taken", "if-skipped"};

typedef struct cond_chain {
  accel_stream_t *s;
  float *buf;
  int32_t *flag[2]; /* holding 0 and 1 */
  int n;
  accel_graph_t *g[NUM_WAYS];
} cond_chain_t;

/* Captures the chain into c->g[way]: inside an IF on flag[1] (taken) or flag[0] (skipped). */
static accel_status_t capture(cond_chain_t *c, int way) {
  accel_tensor_t t = {c->buf, 1, ACCEL_F32};
  accel_status_t st = accel_graph_capture_begin(c->g[way], c->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  if (st == ACCEL_OK && way > 0) st = accel_graph_capture_if(c->s, c->flag[way == 1]);
  for (int i = 0; i < c->n && st == ACCEL_OK; i++) st = accel_fill(c->s, &t, 1, (float)i);
  if (st == ACCEL_OK && way > 0) st = accel_graph_capture_end_if(c->s);
  accel_status_t end = accel_graph_capture_end(c->g[way]);
  return st != ACCEL_OK ? st : end;
}

static double replay(cond_chain_t *c, int way) {
  uint64_t t0 = bench_now_ns();
  BENCH_TRY(accel_graph_replay(c->g[way], c->s));
  BENCH_TRY(accel_stream_synchronize(c->s));
  return (double)(bench_now_ns() - t0) / 1e6;
fail:
  return -1.0;
}

static double sample_plain(void *ctx) { return replay(ctx, 0); }
static double sample_taken(void *ctx) { return replay(ctx, 1); }
static double sample_skipped(void *ctx) { return replay(ctx, 2); }

typedef struct cond_result {
  int n;
  bench_stats_t ms[NUM_WAYS];
  bench_stats_t over_plain[NUM_WAYS]; /* per round: way / plain */
  bench_stats_t node_us;              /* per round: (if-taken - plain) / n, in us */
} cond_result_t;

static int measure(accel_device_t *dev, cond_chain_t *c, int repeat, double *ms,
                   cond_result_t *r) {
  int rc = 1;
  for (int w = 0; w < NUM_WAYS; w++) BENCH_TRY(accel_graph_create(dev, &c->g[w]));
  for (int w = 0; w < NUM_WAYS; w++) BENCH_TRY(capture(c, w));
  const bench_sample_fn fns[NUM_WAYS] = {sample_plain, sample_taken, sample_skipped};
  void *const ctx[NUM_WAYS] = {c, c, c};
  if (bench_rounds(repeat, NUM_WAYS, fns, ctx, ms)) goto fail;
  double *tmp = ms + NUM_WAYS * repeat, *extra = tmp + repeat;
  for (int w = 0; w < NUM_WAYS; w++) {
    r->ms[w] = bench_stats_copy(ms + w * repeat, repeat, tmp);
    r->over_plain[w] = bench_ratio_stats(ms + w * repeat, ms, repeat, 1.0, tmp);
  }
  for (int k = 0; k < repeat; k++) extra[k] = (ms[repeat + k] - ms[k]) * 1e3 / c->n;
  r->node_us = bench_stats_copy(extra, repeat, tmp);
  rc = 0;
fail:
  for (int w = 0; w < NUM_WAYS; w++)
    if (c->g[w]) accel_graph_destroy(c->g[w]), c->g[w] = NULL;
  return rc;
}

static const char *cond_kind(int64_t kind) {
  return kind == ACCEL_CONDITIONALS_NATIVE       ? "native"
         : kind == ACCEL_CONDITIONALS_PREDICATED ? "predicated"
                                                 : "none";
}

static void report(const bench_opts_t *o, accel_device_t *dev, int repeat, int64_t kind,
                   const cond_result_t *res) {
  bench_machine_t m;
  FILE *f = bench_report_begin(o, dev, &m);
  fprintf(f, "graph-cond: N fill nodes replayed + synchronized, plain or inside an IF taken / "
             "skipped; %d paired rounds, median [min..max] ms; /plain: median of the rounds' "
             "ratios; region per node: median of (if-taken - plain) / N; conditionals are %s\n",
          repeat, cond_kind(kind));
  bench_json_t j;
  bench_json_begin_report(&j, o, "graph-cond", &m);
  bench_json_int(&j, "repeat", repeat);
  bench_json_str(&j, "conditionals", cond_kind(kind));
  bench_json_begin_array(&j, "rows");
  for (size_t i = 0; i < NUM_LENGTHS; i++) {
    for (int w = 0; w < NUM_WAYS; w++) {
      const bench_stats_t *s = &res[i].ms[w];
      fprintf(f, "N %5d  %-11s %9.4f [%9.4f..%9.4f] ms  /plain %6.3f\n", res[i].n,
              way_names[w], s->median, s->min, s->max, res[i].over_plain[w].median);
      bench_json_begin_object(&j, NULL);
      bench_json_int(&j, "n", res[i].n);
      bench_json_str(&j, "way", way_names[w]);
      bench_json_stats(&j, "ms", s);
      bench_json_stats(&j, "over_plain", &res[i].over_plain[w]);
      bench_json_end_object(&j);
    }
    fprintf(f, "N %5d  region per node %8.3f [%8.3f..%8.3f] us\n", res[i].n,
            res[i].node_us.median, res[i].node_us.min, res[i].node_us.max);
    bench_json_begin_object(&j, NULL);
    bench_json_int(&j, "n", res[i].n);
    bench_json_str(&j, "way", "region-per-node-us");
    bench_json_stats(&j, "us", &res[i].node_us);
    bench_json_end_object(&j);
  }
  bench_json_end_array(&j);
  bench_json_end_object(&j);
}

/* The two flags, 0 and 1, written in stream order and waited for. */
static accel_status_t set_flags(accel_device_t *dev, cond_chain_t *c) {
  accel_status_t st = ACCEL_OK;
  for (int v = 0; v < 2 && st == ACCEL_OK; v++) {
    st = accel_malloc(dev, sizeof(int32_t), (void **)&c->flag[v]);
    if (st == ACCEL_OK) st = accel_memset_async(c->s, c->flag[v], 0, sizeof(int32_t));
    if (st == ACCEL_OK && v == 1) st = accel_memset_async(c->s, c->flag[v], 1, 1);
  }
  return st == ACCEL_OK ? accel_stream_synchronize(c->s) : st;
}

int bench_graph_cond(const bench_opts_t *o) {
  const int repeat = o->repeat ? o->repeat : 30;
  accel_device_t *dev = NULL;
  cond_chain_t c = {0};
  double *ms = calloc((NUM_WAYS + 2) * (size_t)repeat, sizeof *ms);
  cond_result_t res[NUM_LENGTHS];
  int64_t kind = 0;
  int rc = 1;
  BENCH_ALLOCATED(ms);
  if (bench_open_device(o, &dev)) goto fail;
  BENCH_TRY(accel_device_get_attribute(dev, ACCEL_ATTR_CONDITIONALS, &kind));
  if (kind == ACCEL_CONDITIONALS_NONE) {
    fprintf(stderr, "graph-cond: the device has no conditional regions "
                    "(ACCEL_ATTR_CONDITIONALS is NONE)\n");
    goto fail;
  }
  BENCH_TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &c.s));
  BENCH_TRY(accel_malloc(dev, 256, (void **)&c.buf));
  BENCH_TRY(set_flags(dev, &c));
  for (size_t i = 0; i < NUM_LENGTHS; i++) {
    res[i] = (cond_result_t){.n = chain_lengths[i]};
    c.n = chain_lengths[i];
    bench_progress("graph-cond: N = %d", c.n);
    if (measure(dev, &c, repeat, ms, &res[i])) goto fail;
  }
  bench_progress_done();
  report(o, dev, repeat, kind, res);
  rc = 0;
fail:
  bench_progress_done();
  free(ms);
  for (int v = 0; v < 2; v++)
    if (c.flag[v]) accel_free(dev, c.flag[v]);
  if (c.buf) accel_free(dev, c.buf);
  if (c.s) accel_stream_destroy(c.s);
  if (dev) accel_device_close(dev);
  return rc;
}
