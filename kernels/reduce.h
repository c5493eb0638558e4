/* Combiners for ACC_TREE and the norm accumulators (shared by the norm and unscale kernels). */
#ifndef ACCEL_KERNELS_REDUCE_H
#define ACCEL_KERNELS_REDUCE_H

/* max that propagates NaN from either side (torch semantics for the inf norm). */
ACC_INLINE acc_f32 acc_nanmax(acc_f32 m, acc_f32 v) { return ((acc_u32)(v > m) | (acc_u32)(v != v)) ? v : m; }

/* NaN-propagating max of two values that are each +0 or above, or a NaN with its sign clear
 * (the inf norm's |x| and partials): on such floats the order of the bit patterns as unsigned
 * integers is the float order, and every NaN is above +Inf, so one integer max does what
 * acc_nanmax does in five vector operations. Which NaN wins differs (the largest payload). */
ACC_INLINE acc_f32 acc_absmax(acc_f32 m, acc_f32 v) {
  const acc_u32 a = ACC_AS_U32(m), b = ACC_AS_U32(v);
  return ACC_AS_F32(a > b ? a : b);
}

/* How two partial norm values combine: max for the inf norm, a sum otherwise. */
ACC_INLINE acc_f32 acc_norm_combine(acc_f32 a, acc_f32 b, acc_u32 kind) {
  return kind == ACC_NORM_INF ? acc_absmax(a, b) : a + b;
}

/* Accumulates element x into a lane's running value. */
ACC_INLINE acc_f32 acc_norm_step(acc_f32 acc, acc_f32 x, acc_u32 kind, acc_f32 p) {
  if (kind == ACC_NORM_L2) return acc + x * x;
  if (kind == ACC_NORM_L1) return acc + ACC_FABSF(x);
  if (kind == ACC_NORM_INF) return acc_absmax(acc, ACC_FABSF(x));
  return acc + ACC_POWF(ACC_FABSF(x), p);
}

ACC_INLINE acc_u32 acc_or_u32(acc_u32 a, acc_u32 b, acc_u32 unused) {
  (void)unused;
  return a | b;
}

/* Calls FN(args..., KIND) with KIND the constant norm kind (specialised hot loops; see
 * ACC_DTYPE_CALL). */
#define ACC_NORM_KIND_CALL(kind, FN, ...)                                         \
  {                                                                               \
    const acc_u32 acc_kind_ = (kind);                                             \
    if (acc_kind_ == ACC_NORM_L2) {                                               \
      FN(__VA_ARGS__, ACC_NORM_L2);                                               \
    } else if (acc_kind_ == ACC_NORM_L1) {                                        \
      FN(__VA_ARGS__, ACC_NORM_L1);                                               \
    } else if (acc_kind_ == ACC_NORM_INF) {                                       \
      FN(__VA_ARGS__, ACC_NORM_INF);                                              \
    } else {                                                                      \
      FN(__VA_ARGS__, ACC_NORM_P);                                                \
    }                                                                             \
  }

#endif
