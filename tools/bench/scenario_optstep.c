/*
 * optstep (issue 8): a DeepSpeed-style mixed-precision optimizer step on a synthetic model,
 *   fresh bf16 grads (device copy from a pristine buffer: the stand-in for backward)
 *   -> hp grads = 0, hp += float(lp), lp = 0        (accel_fill, accel_update_hp_grads)
 *   -> unscale hp, found_inf -> adam args.found_inf  (accel_unscale_and_check)
 *   -> global L2 norm -> clip to max_norm 1.0         (accel_multi_tensor_norm, _clip_by_...)
 *   -> AdamW                                          (accel_fused_adam)
 * in four variants: per-tensor (every op called with n = 1 per tensor) or multi-tensor (one
 * call per op), each eager or captured once and replayed. The global norm is one reduction
 * over the whole list in every variant: per-tensor norms followed by a norm of norms round
 * differently, and the variants must agree bitwise. Before each step the host uploads the
 * step number, the loss-scale inverse and found_inf = 0 with one accel_memcpy_async outside
 * the graph (stream ordered, from host memory that lives until the end).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_baseline.h"
#include "bench_torch.h"
#include "optstep_model.h"
#include "scenario_ampstep.h"

#define MAX_NORM 1.0f
#define CLIP_EPS 1e-6f
/* Bytes per element per step: grads copy 2+2, hp zero 4, lp->hp 2+4+4+2 (zero lp),
 * unscale 4+4, norm 4, clip 4+4, AdamW p,g,m,v read 16 + p,m,v written 12. */
#define BYTES_PER_ELEMENT 68.0

enum { V_PT_EAGER, V_PT_GRAPH, V_MT_EAGER, V_MT_GRAPH, NUM_VARIANTS };
static const char *const variant_names[NUM_VARIANTS] = {
    "per-tensor eager", "per-tensor graph", "multi-tensor eager", "multi-tensor graph"};

typedef struct variant_result {
  bench_stats_t ms;
  double capture_ms;
  size_t calls_per_step;
  size_t graph_nodes;
  uint64_t digest;
} variant_result_t;

static accel_status_t enqueue_step(os_model_t *md, accel_stream_t *s, int per_tensor) {
  os_scalars_t *sc = md->scalars;
  accel_status_t st = accel_memcpy_async(s, md->lp, md->pristine, md->flat * 2);
  const size_t calls = per_tensor ? md->n : 1, k = per_tensor ? 1 : md->n;
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++) st = accel_fill(s, &md->HP[i], k, 0.0f);
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++)
    st = accel_update_hp_grads(s, &md->LP[i], &md->HP[i], k, 1);
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++)
    st = accel_unscale_and_check(s, &md->HP[i], k, &sc->inv_scale, &sc->args.found_inf);
  if (st == ACCEL_OK) st = accel_multi_tensor_norm(s, md->HP, md->n, 2.0f, &sc->norm);
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++)
    st = accel_clip_by_global_norm(s, &md->HP[i], k, MAX_NORM, &sc->norm, CLIP_EPS, &sc->coef);
  for (size_t i = 0; i < calls && st == ACCEL_OK; i++)
    st = accel_fused_adam(s, &md->P[i], &md->HP[i], &md->M[i], &md->V[i], k, &sc->args);
  return st;
}

static int run_variant(os_model_t *md, accel_stream_t *s, int v, int steps,
                       const os_scalars_t *host_steps, double *buf, variant_result_t *res) {
  const int per_tensor = v == V_PT_EAGER || v == V_PT_GRAPH;
  const int graph = v == V_PT_GRAPH || v == V_MT_GRAPH;
  accel_graph_t *g = NULL;
  int rc = 1;
  res->calls_per_step = 1 + (per_tensor ? 5 * md->n + 1 : 6) + 1; /* + the upload */
  if (!os_model_reset(md, s)) return 1;
  if (graph) {
    uint64_t t0 = bench_now_ns();
    BENCH_TRY(accel_graph_create(md->dev, &g));
    BENCH_TRY(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
    BENCH_TRY(enqueue_step(md, s, per_tensor));
    BENCH_TRY(accel_graph_capture_end(g));
    res->capture_ms = (double)(bench_now_ns() - t0) / 1e6;
    BENCH_TRY(accel_graph_node_count(g, &res->graph_nodes));
  }
  for (int k = 0; k < steps; k++) {
    bench_progress("optstep %s: %s step %d/%d", md->name, variant_names[v], k + 1, steps);
    uint64_t t0 = bench_now_ns();
    BENCH_TRY(accel_memcpy_async(s, md->scalars, &host_steps[k], OS_UPLOAD_BYTES));
    if (graph)
      BENCH_TRY(accel_graph_replay(g, s));
    else
      BENCH_TRY(enqueue_step(md, s, per_tensor));
    BENCH_TRY(accel_stream_synchronize(s));
    buf[k] = (double)(bench_now_ns() - t0) / 1e6;
  }
  /* The first step is a warm-up (first touch of the lists, chunk tables) when there are more. */
  res->ms = steps > 1 ? bench_stats(buf + 1, (size_t)steps - 1) : bench_stats(buf, 1);
  if (!os_model_digest(md, &res->digest)) goto fail;
  rc = 0;
fail:
  if (g) accel_graph_destroy(g);
  return rc;
}

static int default_steps(const char *preset) {
  if (preset && !strcmp(preset, "gpt2")) return 4;
  if (preset && !strcmp(preset, "many-small")) return 10;
  return 5;
}

/* Copy bandwidth (read + write) on buffers the size of the model's hp grads. */
static double copy_baseline(os_model_t *md, const accel_device_info_t *info, int repeat,
                            double *buf) {
  float *src = md->hp, *dst = md->params, *host = NULL;
  if (!info->host_accessible) {
    host = calloc(2 * md->flat, sizeof *host);
    if (!host) return NAN;
    src = host;
    dst = host + md->flat;
  }
  /* Write the source first: untouched pages all map the kernel's zero page, which reads at
   * cache speed and made this baseline several times faster than memory. */
  memset(src, 0x3f, md->flat * sizeof *src);
  /* Small models copy several times per sample so thread fork/join does not dominate. */
  const size_t iters = md->flat >= (8u << 20) ? 1 : (8u << 20) / md->flat;
  for (int r = -1; r < repeat; r++) {
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < iters; i++) bench_baseline_copy(dst, src, md->flat);
    if (r >= 0) buf[r] = (double)(bench_now_ns() - t0) / 1e6 / (double)iters;
  }
  free(host);
  bench_stats_t s = bench_stats(buf, (size_t)repeat);
  return md->flat * 8.0 / (s.median * 1e6);
}

/* One preset end to end; *agree is cleared when the variants disagree. */
static int run_preset(const bench_opts_t *o, accel_device_t *dev, const char *preset,
                      bench_json_t *j, FILE *f, int *agree) {
  os_model_t md;
  accel_stream_t *s = NULL;
  os_scalars_t *host_steps = NULL;
  variant_result_t res[NUM_VARIANTS];
  bench_torch_result_t torch;
  memset(res, 0, sizeof res);
  memset(&torch, 0, sizeof torch);
  const int steps = o->steps ? o->steps : default_steps(preset);
  double *buf = calloc((size_t)(steps < 5 ? 5 : steps), sizeof *buf);
  int rc = 1;
  if (!os_model_sizes(&md, preset, o->tensors, o->params) || !buf) goto done;
  if (!os_model_alloc(&md, dev)) goto done;
  accel_device_info_t info;
  BENCH_TRY(accel_device_get_info(dev, &info));
  BENCH_TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s));
  BENCH_TRY(accel_host_alloc(dev, (size_t)steps * sizeof *host_steps, (void **)&host_steps));
  for (int k = 0; k < steps; k++)
    host_steps[k] = (os_scalars_t){
        .args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, (uint32_t)k + 1, 1, 0.0f},
        .inv_scale = ldexpf(1.0f, -(10 + k % 2))};
  bench_progress("optstep %s: copy baseline", md.name);
  const double copy_gbps = copy_baseline(&md, &info, 5, buf);
  for (int v = 0; v < NUM_VARIANTS; v++)
    if (run_variant(&md, s, v, steps, host_steps, buf, &res[v])) goto fail;
  int same = 1;
  for (int v = 1; v < NUM_VARIANTS; v++) same &= res[v].digest == res[0].digest;
  if (!same) *agree = 0;
  if (o->torch == 1) {
    bench_progress("optstep %s: PyTorch", md.name);
    bench_torch_run(o, "optstep", o->torch_threads ? o->torch_threads : (size_t)bench_online_cpus(),
                    md.sizes, md.n, steps > 1 ? steps - 1 : 1, &torch);
  } else {
    snprintf(torch.reason, sizeof torch.reason, "not requested (--torch)");
  }
  bench_progress_done();

  const double bytes = BYTES_PER_ELEMENT * (double)md.numel;
  const double base_ms = res[V_PT_EAGER].ms.median;
  fprintf(f, "\npreset %s: %zu tensors, %zu params, %d steps (first is warm-up), "
             "%.1f MB moved per step, copy baseline %.2f GB/s\n",
          md.name, md.n, md.numel, steps, bytes / 1e6, copy_gbps);
  fprintf(f, "%-19s %8s %-30s %7s %7s %8s  %s\n", "variant", "calls", "ms/step median [min..max]",
          "GB/s", "% bound", "speedup", "capture ms");
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "preset", md.name);
  bench_json_int(j, "tensors", (long long)md.n);
  bench_json_int(j, "params", (long long)md.numel);
  bench_json_int(j, "steps", steps);
  bench_json_num(j, "bytes_per_step", bytes);
  bench_json_num(j, "copy_baseline_gbps", copy_gbps);
  bench_json_begin_array(j, "variants");
  for (int v = 0; v < NUM_VARIANTS; v++) {
    const variant_result_t *r = &res[v];
    const double g = bytes / (r->ms.median * 1e6);
    fprintf(f, "%-19s %8zu %9.3f [%8.3f..%8.3f] %7.2f %6.1f%% %7.2fx  ", variant_names[v],
            r->calls_per_step, r->ms.median, r->ms.min, r->ms.max, g, 100.0 * g / copy_gbps,
            base_ms / r->ms.median);
    if (r->graph_nodes)
      fprintf(f, "%.2f (%zu nodes)\n", r->capture_ms, r->graph_nodes);
    else
      fprintf(f, "-\n");
    bench_json_begin_object(j, NULL);
    bench_json_str(j, "name", variant_names[v]);
    bench_json_int(j, "calls_per_step", (long long)r->calls_per_step);
    bench_json_stats(j, "ms", &r->ms);
    bench_json_num(j, "gbps", g);
    bench_json_num(j, "pct_of_bound", 100.0 * g / copy_gbps);
    bench_json_num(j, "speedup_vs_per_tensor_eager", base_ms / r->ms.median);
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
  fprintf(f, "agreement (params, exp_avg, exp_avg_sq, norm, coef bitwise): %s\n",
          same ? "all 4 variants identical" : "VARIANTS DISAGREE");
  bench_torch_json(j, "torch", &torch);
  if (torch.available) {
    const double ratio = torch.ms.median / res[V_MT_GRAPH].ms.median;
    bench_json_num(j, "torch_over_multi_tensor_graph", ratio);
    fprintf(f, "PyTorch %s (%d threads, AdamW foreach, clip_grad_norm_): %.3f ms/step "
               "[%.3f..%.3f]; multi-tensor graph is %.2fx faster\n",
            torch.version, torch.threads, torch.ms.median, torch.ms.min, torch.ms.max, ratio);
  } else {
    fprintf(f, "PyTorch peer skipped: %s\n", torch.reason);
  }
  bench_json_end_object(j);
  rc = 0;
fail:
  bench_progress_done();
  if (host_steps) accel_host_free(dev, host_steps);
  if (s) accel_stream_destroy(s);
done:
  os_model_free(&md);
  free(buf);
  return rc;
}

int bench_optstep(const bench_opts_t *o) {
  if ((o->tensors != 0) != (o->params != 0) || (o->tensors && o->preset)) {
    fprintf(stderr, "accel-bench: optstep wants --preset, or --tensors N with --params M\n");
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
  bench_json_init(&j, o->json ? stdout : NULL);
  bench_json_begin_object(&j, NULL);
  bench_json_str(&j, "scenario", "optstep");
  bench_json_machine(&j, &m);
  bench_json_begin_array(&j, "runs");
  int agree = 1, rc = 0;
  for (size_t i = 0; i < npresets && rc == 0; i++)
    rc = bench_optstep_is_amp(presets[i]) ? bench_optstep_amp(o, dev, presets[i], &j, f, &agree)
                                          : run_preset(o, dev, presets[i], &j, f, &agree);
  bench_json_end_array(&j);
  bench_json_bool(&j, "agreement", agree && rc == 0);
  bench_json_end_object(&j);
  accel_device_close(dev);
  if (rc) return rc;
  return agree ? 0 : 3;
}
