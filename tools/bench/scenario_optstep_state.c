/*
 * optstep --state fp32|bf16|8bit|bf16-master|bf16-master-sr (issue 39): the multi-tensor step
 * (accel_adam_step_norm + _update, captured once and replayed) with the optimizer state in a
 * given format, paired with the fp32-state step in the same rounds. Each format runs on its own
 * moments (fp32: the model's exp_avg / exp_avg_sq; bf16: two bf16 buffers of the same layout;
 * 8bit: two buffers of codes and one of block scales, from a zero state) and shares the params,
 * the grads and the scalar block with the others; bf16-master runs bf16 moments on bf16 master
 * weights of its own (the model's rounded), stored to nearest even, and bf16-master-sr rounds
 * them stochastically with a generator (docs/KERNELS.md "BF16 master weights"). Each has its
 * own bound: the step's compulsory traffic for its bytes per parameter (bench_bound_step,
 * _bf16, _q8, _bf16p), so "% of bound" is against a loop that moves the same bytes (the 8-bit
 * one leaves out the scales' 1/16 byte per parameter: its figure errs low). A round runs, in
 * turn, every format's bound and step; the speed-up of a format is the fp32 step's time over
 * its own, per round.
 */
#include <stdlib.h>
#include <string.h>

#include "accel/accel_random.h"
#include "bench.h"
#include "bench_tensors.h"
#include "optstep_model.h"
#include "scenario_optstep_state.h"

enum { ST_FP32, ST_BF16, ST_Q8, ST_BF16M, ST_BF16M_SR, NUM_STATES };
static const char *const state_names[NUM_STATES] = {"fp32", "bf16", "8bit", "bf16-master",
                                                    "bf16-master-sr"};
static const double state_bytes[NUM_STATES] = {
    BENCH_BOUND_STEP_BYTES, BENCH_BOUND_STEP_BF16_BYTES, BENCH_BOUND_STEP_Q8_BYTES,
    BENCH_BOUND_STEP_BF16P_BYTES, BENCH_BOUND_STEP_BF16P_BYTES};
/* Optimizer state bytes per parameter (the two moments; 8bit: and the block scales). */
static const double state_size[NUM_STATES] = {8.0, 4.0, 2.0 + 8.0 / 256.0, 4.0, 4.0};
static const accel_dtype_t state_dtype[NUM_STATES] = {ACCEL_F32, ACCEL_BF16, ACCEL_U8,
                                                      ACCEL_BF16, ACCEL_BF16};

/* One format: its moments, captured step, bound loop buffers and results. */
typedef struct state_run {
  os_model_t *md;
  accel_stream_t *s;
  const os_scalars_t *host_steps;
  int nsteps, next_step, fmt; /* ST_* */
  void *m, *v; /* device moments (the model's own for fp32) */
  void *scales; /* 8bit: [s_m, s_v] per block of 256 elements, tensor after tensor */
  void *p16;     /* bf16-master*: the bf16 master weights */
  accel_generator_t *gen; /* bf16-master-sr: what rounds them */
  accel_tensor_t *M, *V, *SC, *P16;
  accel_graph_t *graph;
  /* the bound: the device's copy rate (shared by the runs), else host loops on the model's
   * buffers and this format's moments */
  bench_dev_copy_t *devcopy;
  bench_stats_t ms, bound_ms, pct, speedup;
} state_run_t;

int bench_optstep_state_parse(const char *name) {
  for (int k = 0; k < NUM_STATES; k++)
    if (!strcmp(name, state_names[k])) return k;
  return -1;
}

static double sample_state_step(void *ctx) {
  state_run_t *r = ctx;
  const os_scalars_t *sc = &r->host_steps[r->next_step++ % r->nsteps];
  BENCH_TRY(accel_memcpy_async(r->s, r->md->lp, r->md->pristine, r->md->flat * 2));
  BENCH_TRY(accel_stream_synchronize(r->s));
  const uint64_t t0 = bench_now_ns();
  BENCH_TRY(accel_memcpy_async(r->s, r->md->scalars, sc, OS_UPLOAD_BYTES));
  BENCH_TRY(accel_graph_replay(r->graph, r->s));
  BENCH_TRY(accel_stream_synchronize(r->s));
  return (double)(bench_now_ns() - t0) / 1e6;
fail:
  return -1.0;
}

static void run_state_bound(void *ctx, int prefetch, int threads) {
  const state_run_t *r = ctx;
  const os_model_t *md = r->md;
  if (r->fmt == ST_BF16M || r->fmt == ST_BF16M_SR)
    bench_bound_step_bf16p(md->lp, md->hp, r->p16, r->m, r->v, md->numel, 0x1p-10f, prefetch,
                           threads);
  else if (r->fmt == ST_Q8)
    bench_bound_step_q8(md->lp, md->hp, md->params, r->m, r->v, md->numel, 0x1p-10f, prefetch,
                        threads);
  else if (r->fmt == ST_BF16)
    bench_bound_step_bf16(md->lp, md->hp, md->params, r->m, r->v, md->numel, 0x1p-10f, prefetch,
                          threads);
  else
    bench_bound_step(md->lp, md->hp, md->params, md->exp_avg, md->exp_avg_sq, md->numel,
                     0x1p-10f, prefetch, threads);
}

static double sample_state_bound(void *ctx) {
  state_run_t *r = ctx;
  const double bytes = state_bytes[r->fmt] * (double)r->md->numel;
  if (r->devcopy) return bench_dev_copy_ms(r->devcopy, bytes);
  return bench_bound_best(bytes, run_state_bound, r);
}

/* 8bit: the block scales' buffer and list, zeroed (with zeroed codes: a zero state). */
static int state_scales_init(state_run_t *r) {
  os_model_t *md = r->md;
  r->SC = calloc(md->n, sizeof *r->SC);
  BENCH_ALLOCATED(r->SC);
  if (bench_q8_scales(md->dev, r->s, md->sizes, md->n, &r->scales, r->SC)) goto fail;
  BENCH_TRY(accel_memset_async(r->s, r->m, 0, md->flat));
  BENCH_TRY(accel_memset_async(r->s, r->v, 0, md->flat));
  return 1;
fail:
  return 0;
}

/* bf16-master*: the bf16 master weights (the model's, rounded) and the generator. */
static int master_init(state_run_t *r) {
  os_model_t *md = r->md;
  r->P16 = calloc(md->n, sizeof *r->P16);
  BENCH_ALLOCATED(r->P16);
  BENCH_TRY(accel_malloc(md->dev, md->flat * 2, &r->p16));
  bench_make_list(r->p16, ACCEL_BF16, md->sizes, md->offsets, md->n, r->P16);
  BENCH_TRY(accel_cast(r->s, md->P, r->P16, md->n, NULL));
  if (r->fmt == ST_BF16M_SR) BENCH_TRY(accel_generator_create(md->dev, 1, &r->gen));
  return 1;
fail:
  return 0;
}

/* The format's moments and lists, and its captured step. */
static int state_init(state_run_t *r) {
  os_model_t *md = r->md;
  const int own = r->fmt != ST_FP32; /* moments of its own (fp32: the model's) */
  const accel_dtype_t dt = state_dtype[r->fmt];
  r->M = calloc(2 * md->n, sizeof *r->M);
  BENCH_ALLOCATED(r->M);
  r->V = r->M + md->n;
  if (own) {
    BENCH_TRY(accel_malloc(md->dev, md->flat * accel_dtype_size(dt), &r->m));
    BENCH_TRY(accel_malloc(md->dev, md->flat * accel_dtype_size(dt), &r->v));
  }
  void *m = own ? r->m : md->exp_avg;
  void *v = own ? r->v : md->exp_avg_sq;
  bench_make_list(m, dt, md->sizes, md->offsets, md->n, r->M);
  bench_make_list(v, dt, md->sizes, md->offsets, md->n, r->V);
  if (r->fmt == ST_Q8 && !state_scales_init(r)) goto fail;
  if (r->fmt != ST_Q8) {
    BENCH_TRY(accel_fill(r->s, r->M, md->n, 0.0f));
    BENCH_TRY(accel_fill(r->s, r->V, md->n, 0.0f));
  }
  if (r->fmt >= ST_BF16M && !master_init(r)) goto fail;
  accel_adam_step_t step = os_adam_step(md->scalars, md->n, md->LP, md->HP,
                                        r->P16 ? r->P16 : md->P, r->M, r->V);
  step.state_scales = r->SC;
  step.generator = r->gen;
  BENCH_TRY(accel_graph_create(md->dev, &r->graph));
  BENCH_TRY(accel_graph_capture_begin(r->graph, r->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  BENCH_TRY(accel_adam_step_norm(r->s, &step));
  BENCH_TRY(accel_adam_step_update(r->s, &step));
  BENCH_TRY(accel_graph_capture_end(r->graph));
  return 1;
fail:
  return 0;
}

static void state_free(state_run_t *r) {
  if (r->graph) accel_graph_destroy(r->graph);
  if (r->m) accel_free(r->md->dev, r->m);
  if (r->v) accel_free(r->md->dev, r->v);
  if (r->scales) accel_free(r->md->dev, r->scales);
  if (r->p16) accel_free(r->md->dev, r->p16);
  if (r->gen) accel_generator_release(r->gen);
  free(r->M);
  free(r->P16);
  free(r->SC);
}

static void report(FILE *f, bench_json_t *j, const os_model_t *md, const state_run_t *runs,
                   int nruns, int rounds) {
  fprintf(f, "\npreset %s: %zu params, %d paired rounds (after a warm-up round) of each state "
             "format's bound and multi-tensor graph step\n", md->name, md->numel, rounds);
  fprintf(f, "%-14s %9s %7s %-28s %-28s %-22s %s\n", "state", "state B/p", "step B/p",
          "ms/step median [min..max]", "bound ms [min..max]", "% of bound [min..max]",
          "speedup over fp32");
  bench_json_begin_run(j, md->name, md->numel, rounds, "states");
  for (int k = 0; k < nruns; k++) {
    const state_run_t *r = &runs[k];
    fprintf(f, "%-14s %9.1f %7.1f  %8.3f [%7.3f..%7.3f]  %8.3f [%7.3f..%7.3f]  %5.1f%% "
               "[%5.1f..%5.1f]  %5.2fx [%4.2f..%4.2f]\n",
            state_names[r->fmt], state_size[r->fmt], state_bytes[r->fmt], r->ms.median,
            r->ms.min, r->ms.max, r->bound_ms.median, r->bound_ms.min, r->bound_ms.max,
            r->pct.median, r->pct.min, r->pct.max, r->speedup.median, r->speedup.min,
            r->speedup.max);
    bench_json_begin_object(j, NULL);
    bench_json_str(j, "state", state_names[r->fmt]);
    bench_json_num(j, "state_bytes_per_param", state_size[r->fmt]);
    bench_json_num(j, "step_bytes_per_param", state_bytes[r->fmt]);
    bench_json_stats(j, "ms", &r->ms);
    bench_json_stats(j, "bound_ms", &r->bound_ms);
    bench_json_stats(j, "pct_of_bound", &r->pct);
    bench_json_stats(j, "speedup_vs_fp32_state", &r->speedup);
    bench_json_end_object(j);
  }
  bench_json_end_array(j);
  bench_json_str(j, "bound_kind", runs[0].devcopy ? "device-copy" : "host-loop");
  bench_json_end_object(j);
  fprintf(f, "B/p: bytes per parameter (state: the moments; step: the compulsory traffic, read "
             "+ written); %% of bound and speed-up: median [min..max] of the per-round ratios\n");
  if (runs[0].devcopy) fprintf(f, "bound: those bytes at %s\n", BENCH_DEV_COPY_NOTE);
}

/* Times the rounds and fills each run's statistics (buf: (2 * nruns + 1) * rounds). */
static int time_rounds(state_run_t *runs, int nruns, int rounds, double *buf) {
  bench_sample_fn fns[2 * NUM_STATES];
  void *ctx[2 * NUM_STATES];
  for (int k = 0; k < nruns; k++) {
    fns[2 * k] = sample_state_bound, ctx[2 * k] = &runs[k];
    fns[2 * k + 1] = sample_state_step, ctx[2 * k + 1] = &runs[k];
  }
  if (bench_rounds(rounds, 2 * nruns, fns, ctx, buf)) return 0;
  double *tmp = buf + 2 * nruns * rounds;
  const double *fp32_ms = buf + rounds;
  for (int k = 0; k < nruns; k++) {
    const double *bound = buf + 2 * k * rounds, *ms = bound + rounds;
    runs[k].bound_ms = bench_stats_copy(bound, rounds, tmp);
    runs[k].ms = bench_stats_copy(ms, rounds, tmp);
    runs[k].pct = bench_bound_pct_stats(bound, ms, rounds, tmp);
    runs[k].speedup = bench_ratio_stats(fp32_ms, ms, rounds, 1.0, tmp);
  }
  return 1;
}

int bench_optstep_state(const bench_opts_t *o, accel_device_t *dev, const char *preset,
                        int state, bench_json_t *j, FILE *f) {
  os_model_t md;
  memset(&md, 0, sizeof md);
  accel_stream_t *s = NULL;
  os_scalars_t *host_steps = NULL;
  bench_dev_copy_t *devcopy = NULL;
  state_run_t runs[NUM_STATES];
  memset(runs, 0, sizeof runs);
  const int steps = o->steps ? o->steps : 5;
  const int rounds = steps > 1 ? steps - 1 : 1;
  const int nruns = state == ST_FP32 ? 1 : 2;
  double *buf = calloc((size_t)(2 * nruns + 1) * (size_t)rounds, sizeof *buf);
  int rc = 1;
  if (!buf || !os_model_sizes(&md, preset, o->tensors, o->params)) goto done;
  if (!os_model_alloc(&md, dev)) goto done;
  accel_device_info_t info;
  BENCH_TRY(accel_device_get_info(dev, &info));
  if (bench_dev_copy_for(o, dev, &info, &devcopy)) goto fail;
  BENCH_TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s));
  BENCH_TRY(accel_host_alloc(dev, (size_t)steps * sizeof *host_steps, (void **)&host_steps));
  for (int k = 0; k < steps; k++)
    host_steps[k] = (os_scalars_t){
        .args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, (uint32_t)k + 1, 1, 0.0f},
        .inv_scale = 0x1p-10f};
  if (!os_model_reset(&md, s)) goto fail;
  for (int k = 0; k < nruns; k++) {
    runs[k] = (state_run_t){.md = &md, .s = s, .host_steps = host_steps, .nsteps = steps,
                            .fmt = k == 0 ? ST_FP32 : state, .devcopy = devcopy};
    bench_progress("optstep %s: capturing the %s-state step", md.name,
                   state_names[runs[k].fmt]);
    if (!state_init(&runs[k])) goto fail;
  }
  bench_progress("optstep %s: %d paired rounds of the state formats", md.name, rounds);
  if (!time_rounds(runs, nruns, rounds, buf)) goto fail;
  bench_progress_done();
  report(f, j, &md, runs, nruns, rounds);
  rc = 0;
fail:
  bench_progress_done();
  for (int k = 0; k < nruns; k++) state_free(&runs[k]);
  if (host_steps) accel_host_free(dev, host_steps);
  if (s) accel_stream_destroy(s);
  bench_dev_copy_close(devcopy);
done:
  os_model_free(&md);
  free(buf);
  return rc;
}
