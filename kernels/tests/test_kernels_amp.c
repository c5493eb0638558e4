/* The one-block kernels of the standalone kernel tests (test_kernels.c): the loss scaler's update
 * and the step counters, against torch's rules. */
#include "kt_run.h"
#include "../../tests/common/ref_amp.h"

/* The state the one-block kernels update: the loss scaler (its reference is torch's,
 * REF_AMP_UPDATE_SCALE), found_inf and the step counter. */
typedef struct amp_state {
  acc_amp_scaler_t sc;
  float found_inf;
  acc_u32 step;
} amp_state_t;

/* Runs the three one-block kernels over a set of states (CPU form, and each OpenCL form with 1
 * and 2 blocks at once) against the reference. */
void kt_test_amp(void) {
  static const float founds[] = {0.0f, 1.0f, NAN, -0.0f};
  static const float scales[] = {65536.0f, 1.0f, 3.0e38f, 0.5f, 3.0f};
  static const acc_u32 trackers[] = {0, 1, 1999, 4};
  for (size_t f = 0; f < sizeof founds / sizeof founds[0]; ++f)
    for (size_t c = 0; c < sizeof scales / sizeof scales[0]; ++c)
      for (size_t g = 0; g < sizeof trackers / sizeof trackers[0]; ++g)
        for (int form = 0; form < RUN_FORMS && form_runs(form); ++form) {
          amp_state_t *d = xalloc(sizeof *d);
          const acc_amp_scaler_t init = {scales[c], -1.0f, trackers[g], 2000, 2.0f, 0.5f};
          d->sc = init;
          d->found_inf = founds[f];
          d->step = 41;
          const acc_u64 sc = (acc_u64)(uintptr_t)&d->sc, fi = (acc_u64)(uintptr_t)&d->found_inf,
                        stp = (acc_u64)(uintptr_t)&d->step;
          const acc_amp_update_params_t up = {0, sc, fi, 0, 0};
          const acc_step_count_params_t cp = {0, stp, fi, 0, 0};
          const acc_step_count_params_t cp_always = {0, stp, 0, 0, 0};
          const acc_amp_begin_params_t bp = {0, sc, fi, 0, 0};
          amp_state_t want = *d;
          REF_AMP_UPDATE_SCALE(&want.sc, want.found_inf);
          want.step += (want.found_inf == 0.0f) + 1u;
          want.sc.inv_scale = (float)(1.0 / (double)want.sc.scale); /* exact for 2^k */
          want.found_inf = 0.0f;
          const struct { uint32_t id; const void *p; size_t size; } launches[4] = {
              {ACCEL_KERNEL_AMP_UPDATE, &up, sizeof up},
              {ACCEL_KERNEL_STEP_COUNT, &cp, sizeof cp},
              {ACCEL_KERNEL_STEP_COUNT, &cp_always, sizeof cp_always},
              {ACCEL_KERNEL_AMP_BEGIN, &bp, sizeof bp}};
          for (int k = 0; k < 4; ++k)
            run_form(launches[k].id, launches[k].p, launches[k].size, form);
          const int inv_exact = frexpf(want.sc.scale, &(int){0}) == 0.5f;
          KT_CHECK(memcmp(&d->sc.scale, &want.sc.scale, 4) == 0 &&
                       d->sc.growth_tracker == want.sc.growth_tracker &&
                       d->step == want.step && d->found_inf == 0.0f &&
                       signbit(d->found_inf) == 0 &&
                       (!inv_exact || d->sc.inv_scale == want.sc.inv_scale),
                   "amp form %d found %g scale %g tracker %u: got scale %a tracker %u step %u "
                   "inv %a found %g; want %a %u %u %a", form, founds[f], scales[c],
                   trackers[g], d->sc.scale, d->sc.growth_tracker, d->step, d->sc.inv_scale,
                   d->found_inf, want.sc.scale, want.sc.growth_tracker, want.step,
                   want.sc.inv_scale);
          KT_CHECK(d->sc.growth_interval == 2000 && d->sc.growth_factor == 2.0f &&
                       d->sc.backoff_factor == 0.5f, "amp: settings changed");
          xfree(d);
        }
}

/* The per-tensor step counts (CPU form, OpenCL with grids of 1 and 2): +1 where a tensor has a
 * gradient (all of them without flags), nothing when skipped (a set or NaN flag). */
void kt_test_step_counts(void) {
  static const float skips[] = {0.0f, 1.0f, NAN, -0.0f};
  for (int flags = 0; flags < 2; ++flags)
    for (size_t k = 0; k < 5; ++k) /* the skip flag of skips[k], or none (k = 4) */
      for (int form = 0; form < RUN_FORMS && form_runs(form); ++form) {
        float *steps = xalloc((NT + 1) * sizeof(float)); /* [NT]: the skip flag */
        uint32_t *has_grad = make_has_grad();
        for (size_t t = 0; t < NT; ++t) steps[t] = (float)(3 * t);
        steps[NT] = k < 4 ? skips[k] : 0.0f;
        const acc_step_counts_params_t p = {0, (acc_u64)(uintptr_t)steps,
                                            flags ? (acc_u64)(uintptr_t)has_grad : 0u,
                                            k < 4 ? (acc_u64)(uintptr_t)&steps[NT] : 0u, 0, NT};
        run_form(ACCEL_KERNEL_STEP_COUNTS, &p, sizeof p, form);
        const int skipped = k < 4 && skips[k] != 0.0f;
        for (size_t t = 0; t < NT; ++t) {
          const float want = (float)(3 * t) + (!skipped && (!flags || has_grad[t]));
          KT_CHECK(steps[t] == want,
                   "step counts form %d flags %d skip %zu: tensor %zu %g, want %g", form, flags,
                   k, t, steps[t], want);
        }
        xfree(steps);
        xfree(has_grad);
      }
}
