/*
 * opencl (issue 5): launch overhead on the OpenCL device (PoCL here), three measurements,
 * each against its baseline in the same run (samples of the two sides alternate):
 *  (a) global L2 norm of 300 x 4096 fp32: one accel_multi_tensor_norm over the list (2
 *      launches) vs one call per tensor followed by a norm of the 300 norms (602 launches);
 *  (b) a per-tensor mixed-precision optimizer step over 50 tensors (update_hp_grads bf16->fp32,
 *      unscale_and_check, per-tensor norm, norm of norms, clip_by_global_norm, fused AdamW;
 *      302 launches) eager vs captured once and replayed on the same stream, checked bitwise;
 *  (c) accel_fill + accel_scale on one tensor vs the same kernels launched by a hand-written
 *      OpenCL host loop (bench_opencl_host.c), small and medium sizes, contents compared
 *      bitwise. Target: accel's per-launch cost within 5% of the hand-written loop.
 * No OpenCL plugin, platform or SVM device: prints "skipped: <reason>" and returns 0.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_tensors.h"
#include "optstep_model.h"

#define NORM_TENSORS 300
#define NORM_NUMEL 4096
#define NORMS_PER_SAMPLE 4
#define STEP_TENSORS 50
#define STEP_PARAMS (STEP_TENSORS * 4096)
#define STEP_LAUNCHES (STEP_TENSORS * 6 + 2)
#define MAX_NORM 1.0f
#define CLIP_EPS 1e-6f
#define TARGET_OVERHEAD_PCT 5.0
#define FILL_SCALE 1.5f

/* (c): tensor sizes and fill+scale pairs per sample (about the same device work per sample). */
static const struct {
  const char *name;
  size_t numel;
  int pairs;
} loop_sizes[] = {{"4 KB", 1024, 250}, {"4 MB", 1u << 20, 20}};
#define NUM_LOOP_SIZES (sizeof loop_sizes / sizeof loop_sizes[0])

typedef struct run {
  const bench_opts_t *o;
  accel_device_t *dev;
  accel_device_info_t info;
  accel_stream_t *s;
  int repeat;
  double *a, *b; /* sample buffers, repeat each */
  FILE *f;
  bench_json_t *j;
} run_t;

/* ---- (a) list vs per-tensor norm ------------------------------------------------------- */

static accel_status_t per_tensor_norm(accel_stream_t *s, const accel_tensor_t *t,
                                      const accel_tensor_t *norms, float *out) {
  for (size_t i = 0; i < NORM_TENSORS; i++) {
    accel_status_t st = accel_multi_tensor_norm(s, &t[i], 1, 2.0f, (float *)norms->data + i);
    if (st != ACCEL_OK) return st;
  }
  return accel_multi_tensor_norm(s, norms, 1, 2.0f, out);
}

static int bench_norm(run_t *R) {
  float *data = NULL, *norms = NULL, *out = NULL;
  accel_tensor_t t[NORM_TENSORS];
  int rc = 1;
  BENCH_TRY(accel_malloc(R->dev, (size_t)NORM_TENSORS * NORM_NUMEL * sizeof(float),
                         (void **)&data));
  BENCH_TRY(accel_malloc(R->dev, NORM_TENSORS * sizeof(float), (void **)&norms));
  BENCH_TRY(accel_malloc(R->dev, 2 * sizeof(float), (void **)&out));
  BENCH_TRY(bench_upload_random(R->dev, data, (size_t)NORM_TENSORS * NORM_NUMEL, ACCEL_F32,
                                1.0f, 11));
  for (size_t i = 0; i < NORM_TENSORS; i++)
    t[i] = (accel_tensor_t){data + i * NORM_NUMEL, NORM_NUMEL, ACCEL_F32};
  const accel_tensor_t nt = {norms, NORM_TENSORS, ACCEL_F32};
  for (int r = -1; r < R->repeat; r++) {
    bench_progress("opencl: norm sample %d/%d", r + 2, R->repeat + 1);
    for (int side = 0; side < 2; side++) {
      const int list = (side + r) & 1; /* alternate which side goes first */
      uint64_t t0 = bench_now_ns();
      for (int k = 0; k < NORMS_PER_SAMPLE; k++)
        BENCH_TRY(list ? accel_multi_tensor_norm(R->s, t, NORM_TENSORS, 2.0f, &out[0])
                       : per_tensor_norm(R->s, t, &nt, &out[1]));
      BENCH_TRY(accel_stream_synchronize(R->s));
      if (r >= 0) (list ? R->b : R->a)[r] = (double)(bench_now_ns() - t0) / 1e6 / NORMS_PER_SAMPLE;
    }
  }
  bench_progress_done();
  float v[2];
  BENCH_TRY(accel_memcpy(R->dev, v, out, sizeof v));
  const bench_stats_t pt = bench_stats(R->a, (size_t)R->repeat);
  const bench_stats_t li = bench_stats(R->b, (size_t)R->repeat);
  const double ratio = pt.median / li.median;
  const double rel = v[0] != 0.0f ? ((double)v[1] - v[0]) / v[0] : 0.0;
  fprintf(R->f, "\n(a) global L2 norm of %d x %d fp32: ms per norm, %d samples of %d norms, "
                "median [min..max]\n", NORM_TENSORS, NORM_NUMEL, R->repeat, NORMS_PER_SAMPLE);
  fprintf(R->f, "%-27s %6s %8s  %-30s %8s\n", "variant", "calls", "launches",
          "ms/norm median [min..max]", "speedup");
  fprintf(R->f, "%-27s %6d %8d  %9.3f [%8.3f..%8.3f] %7.2fx\n", "per tensor + norm of norms",
          NORM_TENSORS + 1, 2 * (NORM_TENSORS + 1), pt.median, pt.min, pt.max, 1.0);
  fprintf(R->f, "%-27s %6d %8d  %9.3f [%8.3f..%8.3f] %7.2fx\n", "whole list, one call", 1, 2,
          li.median, li.min, li.max, ratio);
  fprintf(R->f, "norm: whole list %.9g, norm of per-tensor norms %.9g (relative difference "
                "%.2g; the two sum in different orders)\n", v[0], v[1], rel);
  bench_json_begin_object(R->j, "norm");
  bench_json_int(R->j, "tensors", NORM_TENSORS);
  bench_json_int(R->j, "numel", NORM_NUMEL);
  bench_json_stats(R->j, "per_tensor_ms", &pt);
  bench_json_stats(R->j, "list_ms", &li);
  bench_json_num(R->j, "per_tensor_over_list", ratio);
  bench_json_num(R->j, "norm_list", v[0]);
  bench_json_num(R->j, "norm_per_tensor", v[1]);
  bench_json_end_object(R->j);
  rc = 0;
fail:
  bench_progress_done();
  if (data) accel_free(R->dev, data);
  if (norms) accel_free(R->dev, norms);
  if (out) accel_free(R->dev, out);
  return rc;
}

/* ---- (b) per-tensor optimizer step, eager vs graph --------------------------------------- */

/* 50 x (update_hp, unscale, norm) + norm of norms + 50 x (clip, AdamW): 251 calls. */
static accel_status_t enqueue_step(accel_stream_t *s, os_model_t *md,
                                   const accel_tensor_t *norms) {
  os_scalars_t *sc = md->scalars;
  accel_status_t st = ACCEL_OK;
  for (size_t i = 0; i < md->n && st == ACCEL_OK; i++) {
    st = accel_update_hp_grads(s, &md->LP[i], &md->HP[i], 1, 1);
    if (st == ACCEL_OK)
      st = accel_unscale_and_check(s, &md->HP[i], 1, &sc->inv_scale, &sc->args.found_inf);
    if (st == ACCEL_OK)
      st = accel_multi_tensor_norm(s, &md->HP[i], 1, 2.0f, (float *)norms->data + i);
  }
  if (st == ACCEL_OK) st = accel_multi_tensor_norm(s, norms, 1, 2.0f, &sc->norm);
  for (size_t i = 0; i < md->n && st == ACCEL_OK; i++) {
    st = accel_clip_by_global_norm(s, &md->HP[i], 1, MAX_NORM, &sc->norm, CLIP_EPS, &sc->coef);
    if (st == ACCEL_OK)
      st = accel_fused_adam(s, &md->P[i], &md->HP[i], &md->M[i], &md->V[i], 1, &sc->args);
  }
  return st;
}

typedef struct step_result {
  bench_stats_t ms;
  double capture_ms;
  size_t graph_nodes;
  uint64_t digest;
} step_result_t;

/* One variant from the same initial state; every step first uploads its scalars and fresh
 * bf16 grads (2 stream-ordered copies, outside the graph, timed on both sides). */
static int run_step_variant(run_t *R, os_model_t *md, const accel_tensor_t *norms,
                            const os_scalars_t *host_steps, int graph, step_result_t *res) {
  accel_graph_t *g = NULL;
  int rc = 1;
  if (!os_model_reset(md, R->s)) return 1;
  BENCH_TRY(accel_memset_async(R->s, md->hp, 0, md->flat * sizeof(float)));
  BENCH_TRY(accel_stream_synchronize(R->s));
  if (graph) {
    uint64_t t0 = bench_now_ns();
    BENCH_TRY(accel_graph_create(R->dev, &g));
    BENCH_TRY(accel_graph_capture_begin(g, R->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
    BENCH_TRY(enqueue_step(R->s, md, norms));
    BENCH_TRY(accel_graph_capture_end(g));
    res->capture_ms = (double)(bench_now_ns() - t0) / 1e6;
    BENCH_TRY(accel_graph_node_count(g, &res->graph_nodes));
  }
  for (int k = -1; k < R->repeat; k++) {
    bench_progress("opencl: step %s %d/%d", graph ? "graph" : "eager", k + 2, R->repeat + 1);
    uint64_t t0 = bench_now_ns();
    BENCH_TRY(accel_memcpy_async(R->s, md->scalars, &host_steps[k + 1], OS_UPLOAD_BYTES));
    BENCH_TRY(accel_memcpy_async(R->s, md->lp, md->pristine, md->flat * 2));
    if (graph)
      BENCH_TRY(accel_graph_replay(g, R->s));
    else
      BENCH_TRY(enqueue_step(R->s, md, norms));
    BENCH_TRY(accel_stream_synchronize(R->s));
    if (k >= 0) R->a[k] = (double)(bench_now_ns() - t0) / 1e6;
  }
  res->ms = bench_stats(R->a, (size_t)R->repeat);
  if (!os_model_digest(md, &res->digest)) goto fail;
  rc = 0;
fail:
  if (g) accel_graph_destroy(g);
  return rc;
}

static int bench_step(run_t *R, int *agree) {
  os_model_t md;
  float *norms_buf = NULL;
  os_scalars_t *host_steps = NULL;
  step_result_t res[2];
  memset(res, 0, sizeof res);
  int rc = 1;
  if (!os_model_sizes(&md, NULL, STEP_TENSORS, STEP_PARAMS)) goto done;
  if (!os_model_alloc(&md, R->dev)) goto done;
  BENCH_TRY(accel_malloc(R->dev, STEP_TENSORS * sizeof(float), (void **)&norms_buf));
  const accel_tensor_t norms = {norms_buf, STEP_TENSORS, ACCEL_F32};
  const int nsteps = R->repeat + 1;
  BENCH_TRY(accel_host_alloc(R->dev, (size_t)nsteps * sizeof *host_steps, (void **)&host_steps));
  for (int k = 0; k < nsteps; k++)
    host_steps[k] = (os_scalars_t){
        .args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, (uint32_t)k + 1, 1, 0.0f},
        .inv_scale = 1.0f / 1024.0f};
  for (int v = 0; v < 2; v++)
    if (run_step_variant(R, &md, &norms, host_steps, v, &res[v])) goto fail;
  bench_progress_done();
  const int same = res[0].digest == res[1].digest;
  if (!same) *agree = 0;
  const double ratio = res[0].ms.median / res[1].ms.median;
  fprintf(R->f, "\n(b) per-tensor AdamW step, %zu tensors, %zu params: %d calls + 2 uploads, "
                "%d launches per step; %d steps (+1 warm-up), median [min..max]\n",
          md.n, md.numel, 5 * STEP_TENSORS + 1, STEP_LAUNCHES, R->repeat);
  fprintf(R->f, "%-8s %-30s %12s %8s  %s\n", "variant", "ms/step median [min..max]",
          "us/launch", "speedup", "capture ms");
  const char *names[2] = {"eager", "graph"};
  bench_json_begin_object(R->j, "step");
  bench_json_int(R->j, "tensors", (long long)md.n);
  bench_json_int(R->j, "params", (long long)md.numel);
  bench_json_int(R->j, "launches_per_step", STEP_LAUNCHES);
  for (int v = 0; v < 2; v++) {
    const step_result_t *r = &res[v];
    const double us = r->ms.median * 1e3 / STEP_LAUNCHES;
    fprintf(R->f, "%-8s %9.3f [%8.3f..%8.3f] %12.2f %7.2fx  ", names[v], r->ms.median,
            r->ms.min, r->ms.max, us, res[0].ms.median / r->ms.median);
    if (v) fprintf(R->f, "%.2f (%zu nodes)\n", r->capture_ms, r->graph_nodes);
    else fprintf(R->f, "-\n");
    bench_json_begin_object(R->j, names[v]);
    bench_json_stats(R->j, "ms", &r->ms);
    bench_json_num(R->j, "us_per_launch", us);
    if (v) {
      bench_json_num(R->j, "capture_ms", r->capture_ms);
      bench_json_int(R->j, "graph_nodes", (long long)r->graph_nodes);
    }
    bench_json_end_object(R->j);
  }
  bench_json_num(R->j, "eager_over_graph", ratio);
  bench_json_bool(R->j, "agreement", same);
  bench_json_end_object(R->j);
  fprintf(R->f, "agreement (params, exp_avg, exp_avg_sq, norm, coef bitwise): %s\n",
          same ? "eager and graph identical" : "EAGER AND GRAPH DISAGREE");
  rc = 0;
fail:
  bench_progress_done();
  if (host_steps) accel_host_free(R->dev, host_steps);
  if (norms_buf) accel_free(R->dev, norms_buf);
done:
  os_model_free(&md);
  return rc;
}

/* ---- (c) accel vs the hand-written OpenCL host loop -------------------------------------- */

typedef struct loop_result {
  bench_stats_t host_us, accel_us; /* per launch */
  double overhead_pct, overhead_min_pct; /* of the medians, of the fastest samples */
  int identical, expected;
} loop_result_t;

static accel_status_t accel_loop(accel_stream_t *s, const accel_tensor_t *t,
                                 const float *scale_dev, const float *values, int n) {
  for (int k = 0; k < n; k++) {
    accel_status_t st = accel_fill(s, t, 1, values[k]);
    if (st == ACCEL_OK) st = accel_scale(s, t, 1, scale_dev);
    if (st != ACCEL_OK) return st;
  }
  return accel_stream_synchronize(s);
}

static int loop_size(run_t *R, bench_cl_host_t *h, size_t numel, int n, const float *values,
                     float *scale_dev, loop_result_t *res) {
  char why[1536];
  float *buf = NULL, *host = malloc(numel * sizeof *host);
  int rc = 1;
  if (!host) {
    fprintf(stderr, "accel-bench: out of host memory\n");
    return 1;
  }
  if (bench_cl_host_prepare(h, numel, FILL_SCALE, why, sizeof why)) goto cl_fail;
  BENCH_TRY(accel_malloc(R->dev, numel * sizeof(float), (void **)&buf));
  const accel_tensor_t t = {buf, numel, ACCEL_F32};
  for (int r = -1; r < R->repeat; r++) {
    bench_progress("opencl: %zu elements, sample %d/%d", numel, r + 2, R->repeat + 1);
    for (int side = 0; side < 2; side++) {
      const int acc = (side + r) & 1; /* alternate which side goes first */
      uint64_t t0 = bench_now_ns();
      if (acc)
        BENCH_TRY(accel_loop(R->s, &t, scale_dev, values, n));
      else if (bench_cl_host_run(h, values, n, why, sizeof why))
        goto cl_fail;
      if (r >= 0) (acc ? R->b : R->a)[r] = (double)(bench_now_ns() - t0) / 1e3 / (2.0 * n);
    }
  }
  res->host_us = bench_stats(R->a, (size_t)R->repeat);
  res->accel_us = bench_stats(R->b, (size_t)R->repeat);
  res->overhead_pct = 100.0 * (res->accel_us.median / res->host_us.median - 1.0);
  res->overhead_min_pct = 100.0 * (res->accel_us.min / res->host_us.min - 1.0);
  BENCH_TRY(accel_memcpy(R->dev, host, buf, numel * sizeof *host));
  const float *theirs = bench_cl_host_data(h);
  res->identical = memcmp(host, theirs, numel * sizeof *host) == 0;
  const float want = values[n - 1] * FILL_SCALE;
  res->expected = 1;
  for (size_t i = 0; i < numel; i++) res->expected &= memcmp(&host[i], &want, sizeof want) == 0;
  rc = 0;
  goto fail;
cl_fail:
  fprintf(stderr, "accel-bench: hand-written OpenCL loop: %s\n", why);
fail:
  bench_progress_done();
  if (buf) accel_free(R->dev, buf);
  free(host);
  return rc;
}

static int bench_loop(run_t *R, int *agree) {
  char why[1536];
  bench_cl_host_t *h = NULL;
  float *scale_dev = NULL, *values = NULL;
  loop_result_t res[NUM_LOOP_SIZES];
  int rc = 1, maxn = 0;
  for (size_t i = 0; i < NUM_LOOP_SIZES; i++)
    if (loop_sizes[i].pairs > maxn) maxn = loop_sizes[i].pairs;
  values = malloc((size_t)maxn * sizeof *values);
  if (!values) {
    fprintf(stderr, "accel-bench: out of host memory\n");
    return 1;
  }
  for (int k = 0; k < maxn; k++) values[k] = 0.5f + 0.25f * (float)(k % 16);
  if (bench_cl_host_open(R->info.index, R->info.name, &h, why, sizeof why)) {
    fprintf(stderr, "accel-bench: hand-written OpenCL loop: %s\n", why);
    goto fail;
  }
  const float scale = FILL_SCALE;
  BENCH_TRY(accel_malloc(R->dev, sizeof scale, (void **)&scale_dev));
  BENCH_TRY(accel_memcpy(R->dev, scale_dev, &scale, sizeof scale));
  for (size_t i = 0; i < NUM_LOOP_SIZES; i++)
    if (loop_size(R, h, loop_sizes[i].numel, loop_sizes[i].pairs, values, scale_dev, &res[i]))
      goto fail;

  fprintf(R->f, "\n(c) accel_fill + accel_scale vs a hand-written OpenCL loop of the same "
                "kernels: us per launch (launches + final sync) / launches, %d samples, "
                "median [min..max]\n", R->repeat);
  fprintf(R->f, "%-6s %8s  %-28s %-28s %9s %9s  %-11s %s\n", "tensor", "launches",
          "hand-written us/launch", "accel us/launch", "overhead", "(of mins)", "target",
          "contents");
  bench_json_begin_array(R->j, "vs_hand_written");
  for (size_t i = 0; i < NUM_LOOP_SIZES; i++) {
    const loop_result_t *r = &res[i];
    const int met = r->overhead_pct <= TARGET_OVERHEAD_PCT;
    const int ok = r->identical && r->expected;
    if (!ok) *agree = 0;
    fprintf(R->f, "%-6s %8d  %8.2f [%7.2f..%8.2f]  %8.2f [%7.2f..%8.2f]  %+7.1f%% %+8.1f%%  "
                  "<= %.0f%%: %-6s %s\n",
            loop_sizes[i].name, 2 * loop_sizes[i].pairs, r->host_us.median, r->host_us.min,
            r->host_us.max, r->accel_us.median, r->accel_us.min, r->accel_us.max,
            r->overhead_pct, r->overhead_min_pct, TARGET_OVERHEAD_PCT, met ? "met" : "MISSED",
            ok ? "bitwise identical" : r->identical ? "IDENTICAL BUT WRONG" : "DIFFER");
    bench_json_begin_object(R->j, NULL);
    bench_json_int(R->j, "numel", (long long)loop_sizes[i].numel);
    bench_json_int(R->j, "launches", 2 * loop_sizes[i].pairs);
    bench_json_stats(R->j, "hand_written_us_per_launch", &r->host_us);
    bench_json_stats(R->j, "accel_us_per_launch", &r->accel_us);
    bench_json_num(R->j, "overhead_pct", r->overhead_pct);
    bench_json_num(R->j, "overhead_of_min_pct", r->overhead_min_pct);
    bench_json_bool(R->j, "target_met", met);
    bench_json_bool(R->j, "bitwise_identical", ok);
    bench_json_end_object(R->j);
  }
  bench_json_end_array(R->j);
  rc = 0;
fail:
  bench_progress_done();
  bench_cl_host_close(h);
  if (scale_dev) accel_free(R->dev, scale_dev);
  free(values);
  return rc;
}

/* ---- entry -------------------------------------------------------------------------------- */

int bench_opencl(const bench_opts_t *o) {
  /* --device is honoured when it names an opencl device (e.g. opencl:1). */
  const char *sel = o->device && strncmp(o->device, "opencl", 6) == 0 ? o->device : "opencl";
  run_t R = {.o = o, .repeat = o->repeat ? o->repeat : 100, .f = bench_table_out(o)};
  bench_json_t j;
  bench_json_init(&j, o->json ? stdout : NULL);
  R.j = &j;
  accel_status_t st = accel_device_open(sel, &R.dev);
  if (st == ACCEL_ERROR_UNAVAILABLE || st == ACCEL_ERROR_UNSUPPORTED) {
    fprintf(R.f, "skipped: accel_device_open(\"%s\"): %s: %s\n", sel, accel_status_name(st),
            accel_last_error());
    bench_json_begin_object(&j, NULL);
    bench_json_str(&j, "scenario", "opencl");
    bench_json_str(&j, "skipped", accel_last_error());
    bench_json_end_object(&j);
    return 0;
  }
  if (st != ACCEL_OK) return bench_fail(st, "accel_device_open(opencl)");
  int rc = 1, agree = 1;
  R.a = calloc((size_t)R.repeat, sizeof *R.a);
  R.b = calloc((size_t)R.repeat, sizeof *R.b);
  BENCH_ALLOCATED(R.a && R.b);
  BENCH_TRY(accel_device_get_info(R.dev, &R.info));
  BENCH_TRY(accel_stream_create_ex(R.dev, ACCEL_STREAM_EAGER, &R.s));
  bench_machine_t m;
  bench_report_begin(o, R.dev, &m); /* prints on R.f, the same stream */
  bench_json_begin_object(&j, NULL);
  bench_json_str(&j, "scenario", "opencl");
  bench_json_machine(&j, &m);
  bench_json_int(&j, "repeat", R.repeat);
  if (bench_norm(&R) || bench_step(&R, &agree) || bench_loop(&R, &agree)) goto fail;
  bench_json_bool(&j, "agreement", agree);
  bench_json_end_object(&j);
  rc = agree ? 0 : 3;
fail:
  free(R.a);
  free(R.b);
  if (R.s) accel_stream_destroy(R.s);
  accel_device_close(R.dev);
  return rc;
}
