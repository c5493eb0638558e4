/*
 * optstep presets gpt2-fp16 and gpt2-bf16 (issue 22; also many-small-* and tiny-*, where the
 * host's share of a step is larger): the whole mixed-precision step of a DeepSpeed-style fp16 /
 * bf16 optimizer on the model preset's tensors, captured once, with
 *   fresh grads: lp = pristine (device copy; the stand-in for backward), fp16: lp *= scale
 *   the fused step (issue 30): the norm sweep (fp16: unscale + found_inf), then one pass:
 *   hp = float(lp) (unscaled, clipped to norm 1.0), lp = 0, AdamW on the fp32 master weights,
 *   model = lp(master); Adam and the cast skipped on overflow.
 * The pristine fp16 grads hold one element of 1.0 (element 5 of the largest tensor), so from a
 * scale of 2^15 that grows every GROWTH_INTERVAL clean steps, every (GROWTH_INTERVAL + 1)-th step overflows (1.0 * 2^16 >
 * 65504) and is skipped, and the scale backs off: the overflow schedule the benchmark controls.
 * Three variants, same graph work, same bits at the end (digest), run in turn for --repeat
 * rounds (default 3) so that the machine's slow phases spread over all three; the speedup is of
 * mean step times (the loop has no per-step time), medians are shown beside:
 *   host scalars  today's way: before each replay the host uploads step, lr, scale and
 *                 1/scale and zeroes found_inf (one accel_memcpy_async); fp16 also reads
 *                 found_inf back (a copy + synchronize) to skip the step count and update the
 *                 scale on the host as GradScaler.update() does;
 *   device, sync  the whole step on the device (accel_amp_begin_step, accel_step_count,
 *                 accel_amp_update_scale in the graph): replay + synchronize per step;
 *   device loop   the same graph, replayed back to back, one synchronize at the end.
 * bf16 has no loss scale (DeepSpeed's bf16 optimizer does not scale): its host variant
 * uploads step and lr only, without a synchronize.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_tensors.h"
#include "bench_torch.h"
#include "optstep_model.h"
#include "scenario_ampstep.h"

#define GROWTH_INTERVAL 9
#define INIT_SCALE 32768.0f
#define MAX_NORM 1.0f

enum { V_HOST, V_DEVICE_SYNC, V_DEVICE_LOOP, NUM_V };
static const char *const vnames[NUM_V] = {"host scalars", "device, sync/step", "device loop"};

/* Device scalars. */
typedef struct amp_scalars {
  accel_adam_args_t args; /* args.found_inf: the overflow flag; args.step: the counter */
  accel_loss_scaler_t scaler;
  float norm, coef;
} amp_scalars_t;

typedef struct amp_bench {
  os_model_t md;           /* sizes, master (params), hp, exp_avg, exp_avg_sq, lp, pristine */
  accel_dtype_t lp_dtype;  /* F16 or BF16 */
  uint16_t *model;         /* device: the model weights */
  accel_tensor_t *MODEL;
  amp_scalars_t *d;        /* device */
  amp_scalars_t *host;     /* pinned: the host variant's upload */
  float *host_found_inf;   /* pinned: the host variant's readback */
} amp_bench_t;

/* The step; host: the host-scalars variant (no begin / count / update kernels). */
static accel_status_t enqueue(amp_bench_t *b, accel_stream_t *s, int host) {
  os_model_t *md = &b->md;
  amp_scalars_t *d = b->d;
  const int fp16 = b->lp_dtype == ACCEL_F16;
  accel_status_t st = ACCEL_OK;
  if (!host && fp16) st = accel_amp_begin_step(s, &d->scaler, &d->args.found_inf);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, md->lp, md->pristine, md->flat * 2);
  if (st == ACCEL_OK && fp16) st = accel_scale(s, md->LP, md->n, &d->scaler.scale);
  /* the fused step: the norm sweep (fp16: unscale and the overflow check), the update pass */
  const accel_adam_step_t step = {
      .struct_size = sizeof step, .n = md->n, .grads = md->LP, .hp_grads = md->HP,
      .params = md->P, .exp_avg = md->M, .exp_avg_sq = md->V, .model_params = b->MODEL,
      .args_dev = &d->args, .inv_scale_dev = fp16 ? &d->scaler.inv_scale : NULL,
      .found_inf_dev = fp16 ? &d->args.found_inf : NULL, .norm_type = 2.0f, .norm_dev = &d->norm,
      .max_norm = MAX_NORM, .clip_eps = 1e-6f, .coef_out_dev = &d->coef,
      .flags = ACCEL_ADAM_STEP_ZERO_GRADS | ACCEL_ADAM_STEP_CLIP};
  if (st == ACCEL_OK) st = accel_adam_step_norm(s, &step);
  if (st == ACCEL_OK && !host) st = accel_step_count(s, &d->args.step, &d->args.found_inf);
  if (st == ACCEL_OK) st = accel_adam_step_update(s, &step);
  if (st == ACCEL_OK && !host && fp16) st = accel_amp_update_scale(s, &d->scaler, &d->args.found_inf);
  return st;
}

static const amp_scalars_t initial = {
    .args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 0, 1, 0.0f},
    .scaler = {INIT_SCALE, 1.0f / INIT_SCALE, 0, GROWTH_INTERVAL, 2.0f, 0.5f}};

static int reset(amp_bench_t *b, accel_stream_t *s) {
  os_model_t *md = &b->md;
  if (!os_model_reset(md, s)) return 0;
  amp_scalars_t init = initial;
  if (b->lp_dtype == ACCEL_BF16) init.scaler = (accel_loss_scaler_t){1.0f, 1.0f, 0, 1, 1.0f, 1.0f};
  *b->host = init;
  BENCH_TRY(accel_memcpy(md->dev, b->d, &init, sizeof init));
  BENCH_TRY(accel_cast(s, md->P, b->MODEL, md->n, NULL));
  BENCH_TRY(accel_stream_synchronize(s));
  return 1;
fail:
  return 0;
}

/* The host side of one step of the host-scalars variant: GradScaler's bookkeeping. */
static accel_status_t host_step(amp_bench_t *b, accel_stream_t *s, accel_graph_t *g) {
  amp_scalars_t *h = b->host;
  const int fp16 = b->lp_dtype == ACCEL_F16;
  h->args.step += 1; /* taken back below when the step overflows */
  h->args.found_inf = 0.0f;
  h->scaler.inv_scale = 1.0f / h->scaler.scale;
  /* args + scaler: one copy (norm and coef are outputs) */
  accel_status_t st = accel_memcpy_async(s, b->d, h, offsetof(amp_scalars_t, norm));
  if (st == ACCEL_OK) st = accel_graph_replay(g, s);
  if (st != ACCEL_OK || !fp16) return st;
  st = accel_memcpy_async(s, b->host_found_inf, &b->d->args.found_inf, sizeof(float));
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  if (st != ACCEL_OK) return st;
  accel_loss_scaler_t *c = &h->scaler;
  if (*b->host_found_inf != 0.0f) {
    h->args.step -= 1;
    c->scale *= c->backoff_factor;
    c->growth_tracker = 0;
  } else if (++c->growth_tracker == c->growth_interval) {
    if (isfinite(c->scale * c->growth_factor)) c->scale *= c->growth_factor;
    c->growth_tracker = 0;
  }
  return ACCEL_OK;
}

/* Runs variant v for steps steps from the initial state (the first step a warm-up) and
 * appends its samples (ms per step; the device loop: one, the loop's mean) to samples[*ns]. */
static int run_v(amp_bench_t *b, accel_stream_t *s, int v, int steps, double *samples,
                 size_t *ns, uint64_t *digest, int *skipped) {
  accel_graph_t *g = NULL;
  int rc = 1;
  if (!reset(b, s)) return 1;
  BENCH_TRY(accel_graph_create(b->md.dev, &g));
  BENCH_TRY(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  BENCH_TRY(enqueue(b, s, v == V_HOST));
  BENCH_TRY(accel_graph_capture_end(g));
  if (v == V_DEVICE_LOOP) {
    BENCH_TRY(accel_graph_replay(g, s)); /* warm-up */
    BENCH_TRY(accel_stream_synchronize(s));
    bench_progress("optstep %s: %s (%d steps)", b->md.name, vnames[v], steps - 1);
    uint64_t t0 = bench_now_ns();
    for (int k = 1; k < steps; k++) BENCH_TRY(accel_graph_replay(g, s));
    BENCH_TRY(accel_stream_synchronize(s));
    samples[(*ns)++] = (double)(bench_now_ns() - t0) / 1e6 / (steps - 1);
  } else {
    for (int k = 0; k < steps; k++) {
      bench_progress("optstep %s: %s step %d/%d", b->md.name, vnames[v], k + 1, steps);
      uint64_t t0 = bench_now_ns();
      if (v == V_HOST) {
        BENCH_TRY(host_step(b, s, g));
      } else {
        BENCH_TRY(accel_graph_replay(g, s));
      }
      BENCH_TRY(accel_stream_synchronize(s));
      if (k > 0) samples[(*ns)++] = (double)(bench_now_ns() - t0) / 1e6;
    }
  }
  amp_scalars_t end;
  BENCH_TRY(accel_memcpy(b->md.dev, &end, b->d, sizeof end));
  *skipped = steps - (int)end.args.step;
  if (!os_model_digest(&b->md, digest)) goto fail; /* master, exp_avg, exp_avg_sq */
  rc = 0;
fail:
  if (g) accel_graph_destroy(g);
  return rc;
}

int bench_optstep_amp(const bench_opts_t *o, accel_device_t *dev, const char *preset,
                      bench_json_t *j, FILE *f, int *agree) {
  amp_bench_t b;
  memset(&b, 0, sizeof b);
  b.lp_dtype = !strcmp(preset + strlen(preset) - 5, "-fp16") ? ACCEL_F16 : ACCEL_BF16;
  accel_stream_t *s = NULL;
  const int steps = o->steps > 1 ? o->steps : 2 * (GROWTH_INTERVAL + 1) + 1;
  const int rounds = o->repeat ? o->repeat : 3;
  double *buf = calloc((size_t)NUM_V * (size_t)rounds * (size_t)steps, sizeof *buf);
  size_t nsamples[NUM_V] = {0};
  bench_stats_t ms[NUM_V];
  uint64_t digest[NUM_V], round_digest;
  int skipped[NUM_V], round_skipped, rc = 1, same = 1;
  bench_torch_result_t torch;
  memset(&torch, 0, sizeof torch);
  char model[64];
  snprintf(model, sizeof model, "%.*s", (int)(strlen(preset) - 5), preset); /* "-fp16" off */
  if (!buf || !os_model_sizes(&b.md, model, 0, 0) || !os_model_alloc(&b.md, dev)) goto done;
  snprintf(b.md.name, sizeof b.md.name, "%s", preset);
  os_model_t *md = &b.md;
  /* the lp grads and their pristine copy in the preset's dtype: small values and one 1.0 */
  bench_make_list(md->lp, b.lp_dtype, md->sizes, md->offsets, md->n, md->LP);
  b.MODEL = calloc(md->n, sizeof *b.MODEL);
  if (!b.MODEL) goto done;
  /* fp32 values staged in hp, rounded to the preset's dtype by accel_cast */
  BENCH_TRY(bench_upload_random(dev, md->hp, md->flat, ACCEL_F32, 1e-3f, 3));
  bench_make_list(md->pristine, b.lp_dtype, md->sizes, md->offsets, md->n, b.MODEL);
  BENCH_TRY(accel_stream_create(dev, &s));
  BENCH_TRY(accel_cast(s, md->HP, b.MODEL, md->n, NULL));
  BENCH_TRY(accel_stream_synchronize(s));
  {
    const uint16_t one = b.lp_dtype == ACCEL_F16 ? 0x3c00u : 0x3f80u;
    size_t big = 0; /* element 5 of the (first) largest tensor */
    for (size_t i = 1; i < md->n; i++) big = md->sizes[i] > md->sizes[big] ? i : big;
    BENCH_TRY(accel_memcpy(dev, md->pristine + md->offsets[big] + 5, &one, 2));
  }
  BENCH_TRY(accel_malloc(dev, md->flat * 2, (void **)&b.model));
  bench_make_list(b.model, b.lp_dtype, md->sizes, md->offsets, md->n, b.MODEL);
  BENCH_TRY(accel_malloc(dev, sizeof *b.d, (void **)&b.d));
  BENCH_TRY(accel_host_alloc(dev, sizeof *b.host, (void **)&b.host));
  BENCH_TRY(accel_host_alloc(dev, sizeof(float), (void **)&b.host_found_inf));
  /* rounds of the three variants in turn, so the machine's slow phases spread over all */
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < NUM_V; v++) {
      double *samples = buf + (size_t)v * (size_t)rounds * (size_t)steps;
      if (run_v(&b, s, v, steps, samples, &nsamples[v], &round_digest, &round_skipped)) goto fail;
      if (r == 0) {
        digest[v] = round_digest;
        skipped[v] = round_skipped;
      }
      same &= round_digest == digest[0] && round_skipped == skipped[0];
    }
  /* the loop gives only means: every variant gets a mean (of its steps' times), the speedup is
   * of means; the medians of the per-step variants show how much of a mean is outliers */
  double mean[NUM_V];
  for (int v = 0; v < NUM_V; v++) {
    double *samples = buf + (size_t)v * (size_t)rounds * (size_t)steps, sum = 0;
    for (size_t k = 0; k < nsamples[v]; k++) sum += samples[k];
    mean[v] = nsamples[v] ? sum / (double)nsamples[v] : NAN;
    ms[v] = bench_stats(samples, nsamples[v]);
  }
  if (!same) *agree = 0;
  if (o->torch == 1) {
    bench_progress("optstep %s: PyTorch", md->name);
    bench_torch_run(o, b.lp_dtype == ACCEL_F16 ? "ampstep-fp16" : "ampstep-bf16",
                    o->torch_threads ? o->torch_threads : (size_t)bench_online_cpus(), md->sizes,
                    md->n, rounds * (steps - 1), &torch);
  } else {
    snprintf(torch.reason, sizeof torch.reason, "not requested (--torch)");
  }
  bench_progress_done();
  fprintf(f, "\npreset %s: %zu tensors, %zu params, %d rounds of %d steps per variant (first "
             "is warm-up), %d overflowed and skipped (every %d-th)\n", md->name, md->n,
          md->numel, rounds, steps, skipped[0], GROWTH_INTERVAL + 1);
  fprintf(f, "%-19s %-30s %9s %8s\n", "variant", "ms/step median [min..max]", "mean",
          "speedup");
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "preset", md->name);
  bench_json_int(j, "tensors", (long long)md->n);
  bench_json_int(j, "params", (long long)md->numel);
  bench_json_int(j, "steps", steps);
  bench_json_int(j, "rounds", rounds);
  bench_json_int(j, "overflowed_steps", skipped[0]);
  bench_json_begin_array(j, "variants");
  for (int v = 0; v < NUM_V; v++) {
    fprintf(f, "%-19s %9.3f [%8.3f..%8.3f] %9.3f %7.2fx%s\n", vnames[v], ms[v].median,
            ms[v].min, ms[v].max, mean[v], mean[V_HOST] / mean[v],
            v == V_DEVICE_LOOP ? "  (samples: each round's loop mean)" : "");
    bench_json_begin_object(j, NULL);
    bench_json_str(j, "name", vnames[v]);
    bench_json_stats(j, "ms", &ms[v]);
    bench_json_num(j, "mean_ms", mean[v]);
    bench_json_num(j, "speedup_vs_host_scalars", mean[V_HOST] / mean[v]);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)digest[v]);
    bench_json_str(j, "digest", hex);
    bench_json_end_object(j);
  }
  bench_json_end_array(j);
  bench_json_bool(j, "agreement", same);
  fprintf(f, "agreement (master, exp_avg, exp_avg_sq bitwise; skipped steps): %s\n",
          same ? "all 3 variants identical" : "VARIANTS DISAGREE");
  bench_torch_json(j, "torch", &torch);
  if (torch.available)
    fprintf(f, "PyTorch %s (%d threads, scaler bookkeeping + AdamW foreach + clip_grad_norm_ + "
               "master->model copy): %.3f ms/step median [%.3f..%.3f]; the device step (sync "
               "per step) is %.2fx faster (medians)\n", torch.version, torch.threads,
            torch.ms.median, torch.ms.min, torch.ms.max, torch.ms.median / ms[V_DEVICE_SYNC].median);
  else
    fprintf(f, "PyTorch peer skipped: %s\n", torch.reason);
  bench_json_end_object(j);
  rc = 0;
fail:
  bench_progress_done();
  if (s) accel_stream_destroy(s);
done:
  if (b.model) accel_free(dev, b.model);
  if (b.d) accel_free(dev, b.d);
  if (b.host) accel_host_free(dev, b.host);
  if (b.host_found_inf) accel_host_free(dev, b.host_found_inf);
  free(b.MODEL);
  os_model_free(&b.md);
  free(buf);
  return rc;
}
