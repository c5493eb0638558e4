/* REF_AMP_UPDATE_SCALE(s, found_inf): torch._amp_update_scale_
 * (aten/src/ATen/native/cuda/AmpKernels.cu) on the host, products in double as torch forms them.
 * s points to a loss scaler: accel_loss_scaler_t (the CTS) or the kernels' acc_amp_scaler_t
 * (kernels/tests), which have the same fields; found_inf is nonzero (NaN included) on an
 * overflowed step. Needs <math.h>. */
#ifndef ACCEL_TESTS_REF_AMP_H
#define ACCEL_TESTS_REF_AMP_H

#define REF_AMP_UPDATE_SCALE(s, found_inf)                                             \
  do {                                                                                 \
    if (found_inf) {                                                                   \
      (s)->scale = (float)((double)(s)->scale * (s)->backoff_factor);                  \
      (s)->growth_tracker = 0;                                                         \
    } else if ((s)->growth_tracker + 1 == (s)->growth_interval) {                      \
      const float ref_amp_grown_ = (float)((double)(s)->scale * (s)->growth_factor);   \
      if (isfinite(ref_amp_grown_)) (s)->scale = ref_amp_grown_;                       \
      (s)->growth_tracker = 0;                                                         \
    } else {                                                                           \
      (s)->growth_tracker += 1;                                                        \
    }                                                                                  \
  } while (0)

#endif
