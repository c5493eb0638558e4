/*
 * optstep --sweeps: where the fused step's time goes. The fused step (accel_adam_step_norm +
 * _update, as optstep's multi-tensor variants run it) taken apart on one preset's model: the
 * norm sweep alone, the update sweep alone, the update without one of its writes (grads
 * zeroed, hp stored), the update on fp32 gradients in place, and accel_fused_adam over the
 * same moments (the separate kernel the update replaces). Each is timed eagerly (enqueue +
 * synchronize) in paired rounds, with the bytes it moves; a sweep much slower per byte than
 * the others is where to look (docs/GPU.md: on the H200 the update ran at a fifth of the
 * separate kernels' rate).
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "optstep_model.h"
#include "scenario_optstep_sweeps.h"

enum { SW_NORM, SW_UPDATE, SW_UPDATE_KEEP_GRADS, SW_UPDATE_NO_HP, SW_UPDATE_F32, SW_ADAM, NUM_SW };
static const char *const sweep_names[NUM_SW] = {
    "norm sweep (bf16 grads)",    "update (optstep's form)",  "update, grads not zeroed",
    "update, no hp stored",       "update, f32 grads in place", "accel_fused_adam (f32 grads)"};
/* Bytes per parameter, read + written. */
static const double sweep_bytes[NUM_SW] = {2, 2 + 2 + 4 + 24, 2 + 4 + 24, 2 + 2 + 24, 8 + 24,
                                           4 + 24};

typedef struct sweep {
  os_model_t *md;
  accel_stream_t *s;
  int kind;
  accel_adam_step_t step;
  bench_stats_t ms;
} sweep_t;

static double sample_sweep(void *ctx) {
  sweep_t *w = ctx;
  os_scalars_t *sc = w->md->scalars;
  const os_model_t *md = w->md;
  const uint64_t t0 = bench_now_ns();
  if (w->kind == SW_NORM)
    BENCH_TRY(accel_adam_step_norm(w->s, &w->step));
  else if (w->kind == SW_ADAM)
    BENCH_TRY(accel_fused_adam(w->s, md->P, md->HP, md->M, md->V, md->n, &sc->args));
  else
    BENCH_TRY(accel_adam_step_update(w->s, &w->step));
  BENCH_TRY(accel_stream_synchronize(w->s));
  return (double)(bench_now_ns() - t0) / 1e6;
fail:
  return -1.0;
}

static void report(FILE *f, bench_json_t *j, const os_model_t *md, const sweep_t *w,
                   int rounds) {
  fprintf(f, "\npreset %s: %zu tensors, %zu params; the fused step's sweeps, %d paired rounds "
             "(eager: enqueue + synchronize)\n", md->name, md->n, md->numel, rounds);
  fprintf(f, "%-30s %5s  %-28s %8s\n", "sweep", "B/p", "ms median [min..max]", "GB/s");
  bench_json_begin_run(j, md->name, md->numel, rounds, "sweeps");
  for (int k = 0; k < NUM_SW; k++) {
    const double gbps = sweep_bytes[k] * (double)md->numel / (w[k].ms.median * 1e6);
    fprintf(f, "%-30s %5.0f  %8.3f [%7.3f..%7.3f]  %8.2f\n", sweep_names[k], sweep_bytes[k],
            w[k].ms.median, w[k].ms.min, w[k].ms.max, gbps);
    bench_json_begin_object(j, NULL);
    bench_json_str(j, "sweep", sweep_names[k]);
    bench_json_num(j, "bytes_per_param", sweep_bytes[k]);
    bench_json_stats(j, "ms", &w[k].ms);
    bench_json_num(j, "gbps", gbps);
    bench_json_end_object(j);
  }
  bench_json_end_array(j);
  bench_json_end_object(j);
  fprintf(f, "B/p: bytes per parameter read + written (bf16 grads 2, zeroing them 2, hp 4, "
             "p/m/v read and written 24)\n");
}

int bench_optstep_sweeps(const bench_opts_t *o, accel_device_t *dev, const char *preset,
                         bench_json_t *j, FILE *f) {
  os_model_t md;
  memset(&md, 0, sizeof md);
  accel_stream_t *s = NULL;
  sweep_t w[NUM_SW];
  const int steps = o->steps ? o->steps : 6;
  const int rounds = steps > 1 ? steps - 1 : 1;
  double *buf = calloc((size_t)(NUM_SW + 1) * (size_t)rounds, sizeof *buf);
  int rc = 1;
  if (!buf || !os_model_sizes(&md, preset, o->tensors, o->params)) goto done;
  if (!os_model_alloc(&md, dev)) goto done;
  BENCH_TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s));
  if (!os_model_reset(&md, s)) goto fail;
  const os_scalars_t first = {.args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1, 0.0f},
                              .inv_scale = 0x1p-10f};
  BENCH_TRY(accel_memcpy_async(s, md.scalars, &first, OS_UPLOAD_BYTES));
  BENCH_TRY(accel_memcpy_async(s, md.lp, md.pristine, md.flat * 2));
  const accel_adam_step_t step = os_adam_step(md.scalars, md.n, md.LP, md.HP, md.P, md.M, md.V);
  bench_sample_fn fns[NUM_SW];
  void *ctx[NUM_SW];
  for (int k = 0; k < NUM_SW; k++) {
    w[k] = (sweep_t){.md = &md, .s = s, .kind = k, .step = step};
    fns[k] = sample_sweep, ctx[k] = &w[k];
  }
  w[SW_UPDATE_KEEP_GRADS].step.flags &= ~(uint32_t)ACCEL_ADAM_STEP_ZERO_GRADS;
  w[SW_UPDATE_NO_HP].step.hp_grads = NULL;
  w[SW_UPDATE_F32].step.grads = w[SW_UPDATE_F32].step.hp_grads = md.HP;
  /* the norm over the grads once, so that the updates clip by a norm */
  BENCH_TRY(accel_adam_step_norm(s, &step));
  BENCH_TRY(accel_stream_synchronize(s));
  for (int k = 0; k < NUM_SW; k++) /* a warm-up of each: tables built, code loaded */
    if (sample_sweep(&w[k]) < 0) goto fail;
  bench_progress("optstep --sweeps %s: %d paired rounds", md.name, rounds);
  if (bench_rounds(rounds, NUM_SW, fns, ctx, buf)) goto fail;
  bench_progress_done();
  double *tmp = buf + NUM_SW * rounds;
  for (int k = 0; k < NUM_SW; k++) w[k].ms = bench_stats_copy(buf + k * rounds, rounds, tmp);
  report(f, j, &md, w, rounds);
  rc = 0;
fail:
  bench_progress_done();
  if (s) accel_stream_destroy(s);
  os_model_free(&md);
done:
  free(buf);
  return rc;
}
