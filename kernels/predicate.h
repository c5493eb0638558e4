/*
 * Predication of conditional regions (docs/GRAPHS.md, "Branches on a device flag") for the
 * backends whose devices have no control flow between commands: the OpenCL form and the
 * CUDA / HIP form include it (not the CPU, which skips natively). The backend keeps a slot per
 * nesting depth in memory the device reaches: at a region's start (and at each WHILE pass)
 * accel_k_pred_enter sets the region's slot from its parent's and the flag, read on the device
 * in stream order; every command of the body then runs predicated on that slot. A kernel takes
 * it as its second argument (the preludes' ACC_FOR_BLOCKS runs no block when it is 0), and a
 * copy or a fill becomes accel_k_pred_copy / accel_k_pred_fill. Each prelude defines
 * ACC_PLAIN_KERNEL (an entry point with plain arguments), ACC_GLOBAL_ID / ACC_GLOBAL_SIZE (the
 * work-item's index and count) and ACC_PRED_RUNS.
 */
#ifndef ACCEL_KERNELS_PREDICATE_H
#define ACCEL_KERNELS_PREDICATE_H

/* out = (in is NULL or *in != 0) && *flag != 0. A WHILE pass after the first passes its own
 * slot as in: the loop stops for good once the flag was 0 at a pass's start. */
ACC_PLAIN_KERNEL(accel_k_pred_enter)(ACC_GPTR(int) out, ACC_GPTR(const int) in,
                                     ACC_GPTR(const int) flag) {
  if (ACC_GLOBAL_ID == 0u) *out = ACC_PRED_RUNS(in) && *flag != 0 ? 1 : 0;
}

/* The work-item's share of n items: contiguous ranges on the lane-loops form (one work-item
 * runs on one CPU thread, so it streams), every global-size-th item otherwise (neighbouring
 * work-items touch neighbouring items). */
#ifdef ACC_LANE_LOOPS
#define ACC_PRED_FOR(i, n)                                                             \
  for (acc_u64 acc_per_ = ((n) + ACC_GLOBAL_SIZE - 1u) / ACC_GLOBAL_SIZE,               \
               i = ACC_GLOBAL_ID * acc_per_,                                            \
               acc_end_ = (acc_u64)(n) < i + acc_per_ ? (acc_u64)(n) : i + acc_per_;   \
       i < acc_end_; ++i)
#else
#define ACC_PRED_FOR(i, n) for (acc_u64 i = ACC_GLOBAL_ID; i < (acc_u64)(n); i += ACC_GLOBAL_SIZE)
#endif

/* A copy of n bytes, by words when dst, src and n allow (the backend says so in words). */
ACC_PLAIN_KERNEL(accel_k_pred_copy)(ACC_GPTR(const int) pred, ACC_GPTR(acc_u8) dst,
                                    ACC_GPTR(const acc_u8) src, acc_u64 n, acc_u32 words) {
  if (!ACC_PRED_RUNS(pred)) return;
  if (words) {
    ACC_GPTR(acc_u32) d = (ACC_GPTR(acc_u32))dst;
    ACC_GPTR(const acc_u32) s = (ACC_GPTR(const acc_u32))src;
    ACC_PRED_FOR(i, n / 4u) d[i] = s[i];
  } else {
    ACC_PRED_FOR(i, n) dst[i] = src[i];
  }
}

/* A fill of n bytes with value (a byte), by words when dst and n allow. */
ACC_PLAIN_KERNEL(accel_k_pred_fill)(ACC_GPTR(const int) pred, ACC_GPTR(acc_u8) dst,
                                    acc_u32 value, acc_u64 n, acc_u32 words) {
  if (!ACC_PRED_RUNS(pred)) return;
  if (words) {
    ACC_GPTR(acc_u32) d = (ACC_GPTR(acc_u32))dst;
    const acc_u32 v = (value & 0xffu) * 0x01010101u;
    ACC_PRED_FOR(i, n / 4u) d[i] = v;
  } else {
    ACC_PRED_FOR(i, n) dst[i] = (acc_u8)value;
  }
}

#endif
