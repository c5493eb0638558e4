/*
 * optstep (issue 8): a DeepSpeed-style mixed-precision optimizer step on a synthetic model,
 *   [fresh bf16 grads: a device copy from a pristine buffer, the stand-in for backward, untimed]
 *   -> hp grads = float(lp), lp = 0; unscale hp + found_inf -> adam args.found_inf;
 *      global L2 norm; clip to max_norm 1.0; AdamW
 * in five variants: per-tensor (the separate kernels called with n = 1 per tensor: accel_fill,
 * accel_update_hp_grads, accel_unscale_and_check, accel_clip_by_global_norm, accel_fused_adam;
 * eager or captured once and replayed), multi-tensor (the fused step, accel_adam_step_norm +
 * accel_adam_step_update over the whole lists; eager or captured), and "unfused graph" (the
 * separate kernels over the whole lists, captured: the multi-tensor step before the fused
 * step existed). The global norm is one reduction over the whole list in every variant:
 * per-tensor norms followed by a norm of norms round differently, and the variants must agree
 * bitwise (the fused step gives the separate kernels' bits). Before each step the host uploads
 * the step number, the loss-scale inverse and found_inf = 0 with one accel_memcpy_async outside
 * the graph (stream ordered, from host memory that lives until the end).
 *
 * Each variant first runs AGREE_STEPS steps from the same initial state for the bitwise
 * comparison. Then the timing (issue 23): rounds in which the step's bound (the compulsory
 * traffic, bench_bound_step) and the variants each run once, in turn, so every ratio (% of
 * bound, speedup over per-tensor eager) is taken within a round; the tables give the median of
 * those ratios and their spread. On an OpenCL device the same compulsory traffic also runs
 * through the device in every round (bench_cl_bound_open: a hand-written OpenCL loop on the
 * model's own buffers), a second bound (issue 30).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "bench_baseline.h"
#include "bench_deepspeed.h"
#include "bench_torch.h"
#include "optstep_model.h"
#include "scenario_ampstep.h"
#include "scenario_optstep_state.h"
#include "scenario_optstep_sweeps.h"

/* Steps per variant of the agreement run (the digests compare these). */
#define AGREE_STEPS 3
/* Rounds of the multi-tensor graph against the PyTorch peer (a process each). */
#define PEER_ROUNDS 3

enum { V_PT_EAGER, V_PT_GRAPH, V_MT_EAGER, V_MT_GRAPH, V_UNFUSED_GRAPH, NUM_VARIANTS };
static const char *const variant_names[NUM_VARIANTS] = {
    "per-tensor eager", "per-tensor graph", "multi-tensor eager", "multi-tensor graph",
    "unfused graph"};
/* How a variant enqueues the step. */
typedef enum step_form { FORM_PER_TENSOR, FORM_FUSED, FORM_UNFUSED } step_form_t;

/* One variant of the step: its graph (graph variants) and what it measured. */
typedef struct variant {
  os_model_t *md;
  accel_stream_t *s;
  const os_scalars_t *host_steps;
  int nsteps, next_step;
  step_form_t form;
  accel_graph_t *graph;
  double capture_ms;
  size_t calls_per_step;
  size_t graph_nodes;
  uint64_t digest;
  /* pct, cl_pct: of the bound, of the OpenCL bound; speedup: over per-tensor eager */
  bench_stats_t ms, pct, cl_pct, speedup;
  double *enqueue;  /* eager variants while timed: host ms in the API calls of each step */
  int nenqueue, enqueue_cap;
  bench_stats_t enqueue_ms;
} variant_t;

/* The bound of the step: the compulsory traffic (bench_bound_step) on the model's buffers, or
 * on host buffers of the same sizes when the host cannot use the device's; and through an
 * OpenCL device on the model's buffers (clb: NULL when there is none). */
typedef struct step_bound {
  bench_bounds_t bounds;
  char cl_why[256]; /* why there is no OpenCL bound on an OpenCL device */
  bench_stats_t ms, cl_ms;
} step_bound_t;

/* The separate kernels over lists of k tensors, `calls` times (per tensor: k = 1). */
static accel_status_t enqueue_separate(os_model_t *md, accel_stream_t *s, size_t calls,
                                       size_t k) {
  os_scalars_t *sc = md->scalars;
  accel_status_t st = ACCEL_OK;
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++) st = accel_fill(s, &md->HP[i], k, 0.0f);
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++)
    st = accel_update_hp_grads(s, &md->LP[i], &md->HP[i], k, 1);
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++)
    st = accel_unscale_and_check(s, &md->HP[i], k, &sc->inv_scale, &sc->args.found_inf);
  if (st == ACCEL_OK) st = accel_multi_tensor_norm(s, md->HP, md->n, 2.0f, &sc->norm);
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++)
    st = accel_clip_by_global_norm(s, &md->HP[i], k, OS_MAX_NORM, &sc->norm, OS_CLIP_EPS,
                                   &sc->coef);
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++)
    st = accel_fused_adam(s, &md->P[i], &md->HP[i], &md->M[i], &md->V[i], k, &sc->args);
  return st;
}

/* The same step as the fused step's two sweeps. */
static accel_status_t enqueue_fused(os_model_t *md, accel_stream_t *s) {
  os_scalars_t *sc = md->scalars;
  const accel_adam_step_t step = os_adam_step(sc, md->n, md->LP, md->HP, md->P, md->M, md->V);
  accel_status_t st = accel_adam_step_norm(s, &step);
  return st == ACCEL_OK ? accel_adam_step_update(s, &step) : st;
}

static accel_status_t enqueue_step(os_model_t *md, accel_stream_t *s, step_form_t form) {
  if (form == FORM_FUSED) return enqueue_fused(md, s);
  return form == FORM_PER_TENSOR ? enqueue_separate(md, s, md->n, 1)
                                 : enqueue_separate(md, s, 1, md->n);
}

/* One step of v (its next step number's scalars uploaded first), synchronized: ms or -1. The
 * stand-in for backward (fresh lp grads copied from the pristine ones) runs first, untimed: it
 * is not part of the optimizer step, and the bound does not count it either. */
static double sample_step(void *ctx) {
  variant_t *v = ctx;
  const os_scalars_t *sc = &v->host_steps[v->next_step++ % v->nsteps];
  BENCH_TRY(accel_memcpy_async(v->s, v->md->lp, v->md->pristine, v->md->flat * 2));
  BENCH_TRY(accel_stream_synchronize(v->s));
  uint64_t t0 = bench_now_ns();
  BENCH_TRY(accel_memcpy_async(v->s, v->md->scalars, sc, OS_UPLOAD_BYTES));
  if (v->graph) {
    BENCH_TRY(accel_graph_replay(v->graph, v->s));
  } else {
    BENCH_TRY(enqueue_step(v->md, v->s, v->form));
    if (v->nenqueue < v->enqueue_cap)
      v->enqueue[v->nenqueue++] = (double)(bench_now_ns() - t0) / 1e6;
  }
  BENCH_TRY(accel_stream_synchronize(v->s));
  return (double)(bench_now_ns() - t0) / 1e6;
fail:
  return -1.0;
}

static int bound_init(step_bound_t *b, os_model_t *md, accel_device_t *dev,
                      const accel_device_info_t *info, const bench_opts_t *o) {
  memset(b, 0, sizeof *b);
  b->bounds.loop = (bench_loop_t){.kind = BENCH_LOOP_STEP,
                                  .n = md->numel,
                                  .f32 = {md->hp, md->params, md->exp_avg, md->exp_avg_sq},
                                  .lp = md->lp,
                                  .inv_scale = 0x1p-10f};
  if (!strcmp(info->backend, "opencl"))
    bench_cl_bound_open(dev, &b->bounds.clb, b->cl_why, sizeof b->cl_why);
  return !bench_dev_copy_for(o, dev, info, &b->bounds.devcopy);
}

/* Captures the graph of a graph variant, runs AGREE_STEPS steps from the initial state and
 * takes the digest of the result (the variants must agree bitwise). */
static int agree_variant(variant_t *v, int index) {
  const int graph = index == V_PT_GRAPH || index == V_MT_GRAPH || index == V_UNFUSED_GRAPH;
  v->form = index == V_PT_EAGER || index == V_PT_GRAPH ? FORM_PER_TENSOR
            : index == V_UNFUSED_GRAPH                 ? FORM_UNFUSED
                                                       : FORM_FUSED;
  /* the step's calls and the upload */
  v->calls_per_step = (v->form == FORM_PER_TENSOR ? 5 * v->md->n + 1
                       : v->form == FORM_UNFUSED  ? 6
                                                  : 2) + 1;
  if (!os_model_reset(v->md, v->s)) return 1;
  if (graph) {
    uint64_t t0 = bench_now_ns();
    BENCH_TRY(accel_graph_create(v->md->dev, &v->graph));
    BENCH_TRY(accel_graph_capture_begin(v->graph, v->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
    BENCH_TRY(enqueue_step(v->md, v->s, v->form));
    BENCH_TRY(accel_graph_capture_end(v->graph));
    v->capture_ms = (double)(bench_now_ns() - t0) / 1e6;
    BENCH_TRY(accel_graph_node_count(v->graph, &v->graph_nodes));
  }
  v->next_step = 0;
  for (int k = 0; k < AGREE_STEPS; k++) {
    bench_progress("optstep %s: %s agreement step %d/%d", v->md->name, variant_names[index],
                   k + 1, AGREE_STEPS);
    if (sample_step(v) < 0) return 1;
  }
  return os_model_digest(v->md, &v->digest) ? 0 : 1;
fail:
  return 1;
}

/* PEER_ROUNDS rounds of the PyTorch peer (a process running steps - 1 steps) and the
 * multi-tensor graph (as many steps); *ratio: the rounds' peer median / accel median. */
static int run_peer_rounds(const bench_opts_t *o, os_model_t *md, variant_t *mt_graph,
                           int steps, double *buf, bench_torch_result_t *torch,
                           bench_stats_t *ratio) {
  const int count = steps > 1 ? steps - 1 : 1;
  const size_t threads = o->torch_threads ? o->torch_threads : (size_t)bench_online_cpus();
  double peer[PEER_ROUNDS], mine[PEER_ROUNDS], tmp[PEER_ROUNDS];
  int r = 0;
  for (; r < PEER_ROUNDS; r++) {
    bench_progress("optstep %s: PyTorch round %d", md->name, r + 1);
    bench_torch_run(o, "optstep", threads, md->sizes, md->n, count, torch);
    if (!torch->available) return 0;
    peer[r] = torch->ms.median;
    const struct timespec pause = {0, 300 * 1000 * 1000}; /* the peer's teardown */
    nanosleep(&pause, NULL);
    for (int k = -1; k < count; k++) {
      const double ms = sample_step(mt_graph);
      if (ms < 0) return 1;
      if (k >= 0) buf[k] = ms;
    }
    mine[r] = bench_stats(buf, (size_t)count).median;
  }
  *ratio = bench_ratio_stats(peer, mine, r, 1.0, tmp);
  return 0;
}

static int default_steps(const char *preset) {
  if (preset && !strcmp(preset, "gpt2")) return 5;
  if (preset && !strcmp(preset, "many-small")) return 11;
  return 5;
}

static void print_stats3(FILE *f, const bench_stats_t *s, const char *fmt) {
  fprintf(f, fmt, s->median, s->min, s->max);
}

/* One preset end to end; *agree is cleared when the variants disagree. */
static int run_preset(const bench_opts_t *o, accel_device_t *dev, const char *preset,
                      bench_json_t *j, FILE *f, int *agree) {
  os_model_t md;
  accel_stream_t *s = NULL;
  os_scalars_t *host_steps = NULL;
  variant_t var[NUM_VARIANTS];
  step_bound_t bound = {0};
  bench_torch_result_t torch;
  bench_stats_t torch_ratio = {0};
  memset(var, 0, sizeof var);
  memset(&torch, 0, sizeof torch);
  const int steps = o->steps ? o->steps : default_steps(preset);
  const int rounds = steps > 1 ? steps - 1 : 1;
  /* rounds of: the bound, the variants, the OpenCL bound; and a scratch row */
  double *buf = calloc((size_t)(NUM_VARIANTS + 3) * (size_t)rounds, sizeof *buf);
  int rc = 1;
  if (!os_model_sizes(&md, preset, o->tensors, o->params) || !buf) goto done;
  if (!os_model_alloc(&md, dev)) goto done;
  accel_device_info_t info;
  BENCH_TRY(accel_device_get_info(dev, &info));
  if (!bound_init(&bound, &md, dev, &info, o)) goto fail;
  BENCH_TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s));
  BENCH_TRY(accel_host_alloc(dev, (size_t)steps * sizeof *host_steps, (void **)&host_steps));
  for (int k = 0; k < steps; k++)
    host_steps[k] = (os_scalars_t){
        .args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, (uint32_t)k + 1, 1, 0.0f},
        .inv_scale = ldexpf(1.0f, -(10 + k % 2))};
  for (int v = 0; v < NUM_VARIANTS; v++) {
    var[v] = (variant_t){.md = &md, .s = s, .host_steps = host_steps, .nsteps = steps};
    if (agree_variant(&var[v], v)) goto fail;
  }
  int same = 1;
  for (int v = 1; v < NUM_VARIANTS; v++) same &= var[v].digest == var[0].digest;
  if (!same) *agree = 0;

  /* Paired timing: bound and the variants take turns in every round, on one state. */
  bench_progress("optstep %s: %d paired rounds", md.name, rounds);
  if (!os_model_reset(&md, s)) goto fail;
  for (int v = 0; v < NUM_VARIANTS; v++) {
    if (var[v].graph) continue;
    var[v].enqueue = calloc((size_t)rounds + 1, sizeof *var[v].enqueue);
    var[v].enqueue_cap = var[v].enqueue ? rounds + 1 : 0;
  }
  bench_sample_fn fns[NUM_VARIANTS + 2] = {bench_sample_bound};
  void *ctx[NUM_VARIANTS + 2] = {&bound.bounds};
  for (int v = 0; v < NUM_VARIANTS; v++) {
    fns[v + 1] = sample_step;
    ctx[v + 1] = &var[v];
  }
  fns[NUM_VARIANTS + 1] = bench_sample_cl_bound;
  ctx[NUM_VARIANTS + 1] = &bound.bounds;
  if (bench_rounds(rounds, NUM_VARIANTS + 1 + (bound.bounds.clb != NULL), fns, ctx, buf)) goto fail;
  double *tmp = buf + (NUM_VARIANTS + 2) * rounds;
  const double *bound_ms = buf, *pt_eager_ms = buf + rounds;
  const double *cl_ms = buf + (NUM_VARIANTS + 1) * rounds;
  bound.ms = bench_stats_copy(bound_ms, rounds, tmp);
  if (bound.bounds.clb) bound.cl_ms = bench_stats_copy(cl_ms, rounds, tmp);
  for (int v = 0; v < NUM_VARIANTS; v++) {
    const double *ms = buf + (v + 1) * rounds;
    var[v].ms = bench_stats_copy(ms, rounds, tmp);
    var[v].pct = bench_bound_pct_stats(bound_ms, ms, rounds, tmp);
    if (bound.bounds.clb) var[v].cl_pct = bench_bound_pct_stats(cl_ms, ms, rounds, tmp);
    var[v].speedup = bench_ratio_stats(pt_eager_ms, ms, rounds, 1.0, tmp);
    if (var[v].nenqueue > 1) /* the first is the warm-up round's */
      var[v].enqueue_ms = bench_stats(var[v].enqueue + 1, (size_t)var[v].nenqueue - 1);
  }
  if (o->torch == 1) {
    if (run_peer_rounds(o, &md, &var[V_MT_GRAPH], steps, buf, &torch, &torch_ratio)) goto fail;
  } else {
    snprintf(torch.reason, sizeof torch.reason, "not requested (--torch)");
  }
  bench_progress_done();

  const double bytes = BENCH_BOUND_STEP_BYTES * (double)md.numel;
  fprintf(f, "\npreset %s: %zu tensors, %zu params, %d paired rounds (after a warm-up round) "
             "of the bound and the %d variants\n", md.name, md.n, md.numel, rounds, NUM_VARIANTS);
  fprintf(f, "bound: compulsory traffic %.1f MB per step (%.0f B per param: read bf16 grads, "
             "p, m, v; write lp, hp, p, m, v), %.3f ms [%.3f..%.3f], %.2f GB/s\n",
          bytes / 1e6, BENCH_BOUND_STEP_BYTES, bound.ms.median, bound.ms.min, bound.ms.max,
          bytes / (bound.ms.median * 1e6));
  if (bound.bounds.devcopy) fprintf(f, "bound: that traffic at %s\n", BENCH_DEV_COPY_NOTE);
  if (bound.bounds.clb)
    fprintf(f,
            "OpenCL bound: the same traffic through the device (tools/bench/bench_cl_bound.cl), "
            "%.3f ms [%.3f..%.3f], %.2f GB/s\n",
            bound.cl_ms.median, bound.cl_ms.min, bound.cl_ms.max,
            bytes / (bound.cl_ms.median * 1e6));
  else if (bound.cl_why[0]) fprintf(f, "OpenCL bound skipped: %s\n", bound.cl_why);
  fprintf(f, "%-19s %6s %-28s %6s %-22s ", "variant", "calls", "ms/step median [min..max]", "GB/s",
          "% of bound [min..max]");
  if (bound.bounds.clb) fprintf(f, "%-21s ", "% of OpenCL loop");
  fprintf(f, "%-22s %s\n", "speedup [min..max]", "capture ms");
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "preset", md.name);
  bench_json_int(j, "tensors", (long long)md.n);
  bench_json_int(j, "params", (long long)md.numel);
  bench_json_int(j, "rounds", rounds);
  bench_json_num(j, "bytes_per_step", bytes);
  bench_json_begin_object(j, "bound");
  bench_json_str(j, "loop", "compulsory traffic: read bf16 grads, p, m, v; write lp, hp, p, m, v");
  bench_json_str(j, "kind", bound.bounds.devcopy ? "device-copy" : "host-loop");
  bench_json_stats(j, "ms", &bound.ms);
  bench_json_num(j, "gbps", bytes / (bound.ms.median * 1e6));
  bench_json_end_object(j);
  if (bound.bounds.clb) {
    bench_json_begin_object(j, "cl_bound");
    bench_json_str(j, "loop", "the same through the OpenCL device");
    bench_json_stats(j, "ms", &bound.cl_ms);
    bench_json_num(j, "gbps", bytes / (bound.cl_ms.median * 1e6));
    bench_json_end_object(j);
  }
  bench_json_begin_array(j, "variants");
  for (int v = 0; v < NUM_VARIANTS; v++) {
    const variant_t *r = &var[v];
    const double g = bytes / (r->ms.median * 1e6);
    fprintf(f, "%-19s %6zu", variant_names[v], r->calls_per_step);
    print_stats3(f, &r->ms, " %8.3f [%7.3f..%7.3f]");
    fprintf(f, " %6.2f", g);
    print_stats3(f, &r->pct, " %5.1f%% [%5.1f..%5.1f]");
    if (bound.bounds.clb) print_stats3(f, &r->cl_pct, " %5.1f%% [%5.1f..%5.1f]");
    print_stats3(f, &r->speedup, " %6.2fx [%5.2f..%5.2f] ");
    if (r->graph_nodes)
      fprintf(f, "%.2f (%zu nodes)\n", r->capture_ms, r->graph_nodes);
    else
      fprintf(f, "-\n");
    bench_json_begin_object(j, NULL);
    bench_json_str(j, "name", variant_names[v]);
    bench_json_int(j, "calls_per_step", (long long)r->calls_per_step);
    bench_json_stats(j, "ms", &r->ms);
    bench_json_num(j, "gbps", g);
    bench_json_stats(j, "pct_of_bound", &r->pct);
    if (bound.bounds.clb) bench_json_stats(j, "pct_of_cl_bound", &r->cl_pct);
    bench_json_stats(j, "speedup_vs_per_tensor_eager", &r->speedup);
    if (r->enqueue_ms.n) bench_json_stats(j, "enqueue_ms", &r->enqueue_ms);
    if (r->graph_nodes) {
      bench_json_num(j, "capture_ms", r->capture_ms);
      bench_json_int(j, "graph_nodes", (long long)r->graph_nodes);
    }
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)r->digest);
    bench_json_str(j, "digest", hex);
    bench_json_end_object(j);
  }
  bench_json_end_array(j);
  bench_json_bool(j, "agreement", same);
  fprintf(f, "%% of bound and speedup (over per-tensor eager): median [min..max] of the "
             "per-round ratios\n");
  for (int v = 0; v < NUM_VARIANTS; v++)
    if (var[v].enqueue_ms.n)
      fprintf(f, "%s: the host spends %.3f ms [%.3f..%.3f] of the step in its %zu API calls "
                 "(%.2f us per call), the rest waiting for the stream\n",
              variant_names[v], var[v].enqueue_ms.median, var[v].enqueue_ms.min,
              var[v].enqueue_ms.max, var[v].calls_per_step,
              1e3 * var[v].enqueue_ms.median / (double)var[v].calls_per_step);
  fprintf(f, "agreement after %d steps from one state (params, exp_avg, exp_avg_sq, norm, coef "
             "bitwise): %s\n", AGREE_STEPS,
          same ? "all variants identical" : "VARIANTS DISAGREE");
  bench_torch_json(j, "torch", &torch);
  if (torch.available) {
    bench_json_stats(j, "torch_over_multi_tensor_graph", &torch_ratio);
    fprintf(f, "PyTorch %s (%d threads, AdamW foreach, clip_grad_norm_): %.3f ms/step "
               "[%.3f..%.3f] (last round); multi-tensor graph is %.2fx [%.2f..%.2f] faster "
               "(%zu paired rounds)\n",
            torch.version, torch.threads, torch.ms.median, torch.ms.min, torch.ms.max,
            torch_ratio.median, torch_ratio.min, torch_ratio.max, torch_ratio.n);
  } else {
    fprintf(f, "PyTorch peer skipped: %s\n", torch.reason);
  }
  if (o->peer) {
    /* accel-bench's own buffers go first: the peer allocates its own (6 GiB at 1 GiB of
     * parameters), and the sizes outlive the model. */
    size_t *sizes = malloc(md.n * sizeof *sizes);
    const size_t n = md.n;
    if (!sizes) goto fail;
    memcpy(sizes, md.sizes, n * sizeof *sizes);
    for (int v = 0; v < NUM_VARIANTS; v++)
      if (var[v].graph) {
        accel_graph_destroy(var[v].graph);
        var[v].graph = NULL;
      }
    os_model_free(&md);
    const int prc = bench_deepspeed_run(o, sizes, n, rounds, j, f, agree);
    free(sizes);
    if (prc) goto fail;
  }
  bench_json_end_object(j);
  rc = 0;
fail:
  bench_progress_done();
  for (int v = 0; v < NUM_VARIANTS; v++) {
    if (var[v].graph) accel_graph_destroy(var[v].graph);
    free(var[v].enqueue);
  }
  if (host_steps) accel_host_free(dev, host_steps);
  if (s) accel_stream_destroy(s);
done:
  bench_dev_copy_close(bound.bounds.devcopy);
  bench_cl_bound_close(bound.bounds.clb);
  os_model_free(&md);
  free(buf);
  return rc;
}

int bench_optstep(const bench_opts_t *o) {
  if ((o->tensors != 0 && o->params == 0) || (o->tensors && o->preset) ||
      (o->params && !o->tensors && (!o->preset || bench_optstep_is_amp(o->preset)))) {
    fprintf(stderr, "accel-bench: optstep wants --preset [--params M], or --tensors N with "
                    "--params M\n");
    return 2;
  }
  if (o->peer && (strcmp(o->peer, "deepspeed") != 0 ||
                  (o->preset && bench_optstep_is_amp(o->preset)))) {
    fprintf(stderr, "accel-bench: optstep knows --peer deepspeed, with the fp32-master presets "
                    "(tiny, many-small, gpt2) and custom sizes\n");
    return 2;
  }
  const int state = o->state ? bench_optstep_state_parse(o->state) : -1;
  if (o->state && (state < 0 || o->peer || o->torch == 1 ||
                   (o->preset && bench_optstep_is_amp(o->preset)))) {
    fprintf(stderr, "accel-bench: optstep --state wants fp32, bf16, 8bit, bf16-master or "
                    "bf16-master-sr, with the fp32-master "
                    "presets or custom sizes and without --peer or --torch\n");
    return 2;
  }
  if (o->sweeps && (o->state || o->peer || o->torch == 1 ||
                    (o->preset && bench_optstep_is_amp(o->preset)))) {
    fprintf(stderr, "accel-bench: optstep --sweeps takes the fp32-master presets or custom "
                    "sizes, without --state, --peer or --torch\n");
    return 2;
  }
  static const char *const defaults[] = {"many-small", "gpt2"};
  const char *one[1] = {o->preset};
  const char *const *presets = o->preset || o->tensors ? one : defaults;
  const size_t npresets = o->preset || o->tensors ? 1 : 2;
  accel_device_t *dev = NULL;
  if (bench_open_device(o, &dev)) return 1;
  bench_machine_t m;
  FILE *f = bench_report_begin(o, dev, &m);
  bench_json_t j;
  bench_json_begin_report(&j, o, "optstep", &m);
  bench_json_begin_array(&j, "runs");
  int agree = 1, rc = 0;
  for (size_t i = 0; i < npresets && rc == 0; i++) {
    if (o->sweeps)
      rc = bench_optstep_sweeps(o, dev, presets[i], &j, f);
    else if (o->state)
      rc = bench_optstep_state(o, dev, presets[i], state, &j, f);
    else if (bench_optstep_is_amp(presets[i]))
      rc = bench_optstep_amp(o, dev, presets[i], &j, f, &agree);
    else
      rc = run_preset(o, dev, presets[i], &j, f, &agree);
  }
  bench_json_end_array(&j);
  bench_json_bool(&j, "agreement", agree && rc == 0);
  bench_json_end_object(&j);
  accel_device_close(dev);
  if (rc) return rc;
  return agree ? 0 : 3;
}
