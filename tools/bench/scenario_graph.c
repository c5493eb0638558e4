/*
 * graph: host cost per node of a chain of N tiny nodes (4-byte memset or a one-element
 * accel_fill), submitted eagerly and synchronized vs captured once and replayed + synchronized.
 * Target (issue 3): at N = 100 a replayed node costs <= 1/10 of an eager one. Eager and replay
 * alternate in rounds and the ratio is taken within each round (issue 23).
 */
#include <stdlib.h>

#include "accel/accel_kernels.h"
#include "bench.h"

static const int chain_lengths[] = {1, 10, 100, 1000};
#define NUM_LENGTHS (sizeof chain_lengths / sizeof chain_lengths[0])
#define TARGET_N 100
#define TARGET_RATIO 0.1

typedef enum { NODE_MEMSET, NODE_FILL } node_kind_t;
static const char *const kind_names[] = {"memset 4 B", "fill 1 x f32"};

typedef struct result {
  node_kind_t kind;
  int n;
  size_t nodes_recorded;
  bench_stats_t eager_ns, replay_ns; /* per node */
  bench_stats_t ratio;               /* per round: replay ns / eager ns */
} result_t;

static accel_status_t enqueue_chain(accel_stream_t *s, node_kind_t kind, float *buf, int n) {
  accel_tensor_t t = {buf, 1, ACCEL_F32};
  for (int i = 0; i < n; i++) {
    accel_status_t st = kind == NODE_MEMSET ? accel_memset_async(s, buf, i & 255, 4)
                                            : accel_fill(s, &t, 1, (float)i);
    if (st != ACCEL_OK) return st;
  }
  return ACCEL_OK;
}

/* What one sample of either side needs. */
typedef struct chain {
  accel_stream_t *s;
  node_kind_t kind;
  float *buf;
  int n;
  accel_graph_t *g;
} chain_t;

/* One eager submission of the chain + synchronize, in ns per node (-1 on failure). */
static double sample_eager(void *ctx) {
  chain_t *c = ctx;
  uint64_t t0 = bench_now_ns();
  BENCH_TRY(enqueue_chain(c->s, c->kind, c->buf, c->n));
  BENCH_TRY(accel_stream_synchronize(c->s));
  return (double)(bench_now_ns() - t0) / c->n;
fail:
  return -1.0;
}

/* One replay of the captured chain + synchronize, in ns per node. */
static double sample_replay(void *ctx) {
  chain_t *c = ctx;
  uint64_t t0 = bench_now_ns();
  BENCH_TRY(accel_graph_replay(c->g, c->s));
  BENCH_TRY(accel_stream_synchronize(c->s));
  return (double)(bench_now_ns() - t0) / c->n;
fail:
  return -1.0;
}

/* Captures the chain, then repeat paired rounds of eager and replay (ab: 3 * repeat). */
static int measure(accel_device_t *dev, accel_stream_t *s, float *buf, int repeat, double *ab,
                   result_t *res) {
  chain_t c = {s, res->kind, buf, res->n, NULL};
  int rc = 1;
  BENCH_TRY(accel_graph_create(dev, &c.g));
  BENCH_TRY(accel_graph_capture_begin(c.g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  BENCH_TRY(enqueue_chain(s, res->kind, buf, res->n));
  BENCH_TRY(accel_graph_capture_end(c.g));
  BENCH_TRY(accel_graph_node_count(c.g, &res->nodes_recorded));
  if (bench_rounds_ab(repeat, sample_eager, &c, sample_replay, &c, ab, &res->eager_ns,
                      &res->replay_ns))
    goto fail;
  res->ratio = bench_ratio_stats(ab + repeat, ab, repeat, 1.0, ab + 2 * repeat);
  rc = 0;
fail:
  if (c.g) accel_graph_destroy(c.g);
  return rc;
}

int bench_graph(const bench_opts_t *o) {
  const int repeat = o->repeat ? o->repeat : 30;
  accel_device_t *dev = NULL;
  accel_stream_t *s = NULL;
  float *buf = NULL;
  double *ab = calloc(3 * (size_t)repeat, sizeof *ab);
  result_t res[2 * NUM_LENGTHS];
  int rc = 1;
  BENCH_ALLOCATED(ab);
  if (bench_open_device(o, &dev)) goto fail;
  /* Capture needs a non-default stream; eager runs on the same one for a fair comparison. */
  BENCH_TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s));
  BENCH_TRY(accel_malloc(dev, 256, (void **)&buf));
  for (size_t k = 0; k < 2; k++) {
    for (size_t i = 0; i < NUM_LENGTHS; i++) {
      result_t *r = &res[k * NUM_LENGTHS + i];
      *r = (result_t){.kind = (node_kind_t)k, .n = chain_lengths[i]};
      bench_progress("graph: %s x %d", kind_names[k], r->n);
      if (measure(dev, s, buf, repeat, ab, r)) goto fail;
    }
  }
  bench_progress_done();

  bench_machine_t m;
  FILE *f = bench_report_begin(o, dev, &m);
  fprintf(f, "graph: per-node host cost (submit + synchronize) / N, %d paired rounds (eager, "
             "replay), median [min..max] ns; replay/eager: median [min..max] of the rounds' "
             "ratios\n", repeat);
  fprintf(f, "%-13s %5s %6s %-29s %-29s %7s  %s\n", "node", "N", "nodes", "eager ns/node",
          "replay ns/node", "replay/eager", "target");
  bench_json_t j;
  bench_json_begin_report(&j, o, "graph", &m);
  bench_json_int(&j, "repeat", repeat);
  bench_json_begin_array(&j, "rows");
  for (size_t i = 0; i < 2 * NUM_LENGTHS; i++) {
    const result_t *r = &res[i];
    const double ratio = r->ratio.median;
    char verdict[32] = "";
    if (r->n == TARGET_N)
      snprintf(verdict, sizeof verdict, "<= %.2f: %s", TARGET_RATIO,
               ratio <= TARGET_RATIO ? "met" : "MISSED");
    fprintf(f, "%-13s %5d %6zu %8.0f [%7.0f..%8.0f] %8.0f [%7.0f..%8.0f] %6.3f [%5.3f..%5.3f]  %s\n",
            kind_names[r->kind], r->n, r->nodes_recorded, r->eager_ns.median, r->eager_ns.min,
            r->eager_ns.max, r->replay_ns.median, r->replay_ns.min, r->replay_ns.max, ratio,
            r->ratio.min, r->ratio.max, verdict);
    bench_json_begin_object(&j, NULL);
    bench_json_str(&j, "node", kind_names[r->kind]);
    bench_json_int(&j, "n", r->n);
    bench_json_int(&j, "nodes_recorded", (long long)r->nodes_recorded);
    bench_json_stats(&j, "eager_ns_per_node", &r->eager_ns);
    bench_json_stats(&j, "replay_ns_per_node", &r->replay_ns);
    bench_json_stats(&j, "replay_over_eager", &r->ratio);
    if (r->n == TARGET_N) bench_json_bool(&j, "target_met", ratio <= TARGET_RATIO);
    bench_json_end_object(&j);
  }
  bench_json_end_array(&j);
  bench_json_end_object(&j);
  rc = 0;
fail:
  bench_progress_done();
  free(ab);
  if (buf) accel_free(dev, buf);
  if (s) accel_stream_destroy(s);
  if (dev) accel_device_close(dev);
  return rc;
}
