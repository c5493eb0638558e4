/*
 * Predication of conditional regions (docs/GRAPHS.md, "Branches on a device flag") for the
 * OpenCL backend, whose devices have no control flow between commands. The backend keeps a
 * slot per nesting depth in device memory: at a region's start (and at each WHILE pass)
 * accel_k_pred_enter sets the region's slot from its parent's and the flag, read on the device
 * in stream order; every command of the body then runs predicated on that slot. A kernel takes
 * it as its second argument (prelude_opencl.h: ACC_FOR_BLOCKS runs no block when it is 0), and
 * a copy or a fill becomes accel_k_pred_copy / accel_k_pred_fill.
 */

/* out = (in is NULL or *in != 0) && *flag != 0. A WHILE pass after the first passes its own
 * slot as in: the loop stops for good once the flag was 0 at a pass's start. */
__kernel void accel_k_pred_enter(__global int *out, __global const int *in,
                                 __global const int *flag) {
  if (get_global_id(0) == 0) *out = ACC_PRED_RUNS(in) && *flag != 0 ? 1 : 0;
}

/* The work-item's share of n items: contiguous ranges on the lane-loops form (one work-item
 * runs on one CPU thread, so it streams), every global_size-th item on the SIMT form (a
 * work-group's neighbouring work-items touch neighbouring items). */
#ifdef ACC_LANE_LOOPS
#define ACC_PRED_FOR(i, n)                                                          \
  for (ulong acc_per_ = ((n) + get_global_size(0) - 1) / get_global_size(0),         \
             i = get_global_id(0) * acc_per_, acc_end_ = min((ulong)(n), i + acc_per_); \
       i < acc_end_; ++i)
#else
#define ACC_PRED_FOR(i, n) \
  for (ulong i = get_global_id(0); i < (ulong)(n); i += get_global_size(0))
#endif

/* A copy of n bytes, by words when dst, src and n allow (the backend says so in words). */
__kernel void accel_k_pred_copy(__global const int *pred, __global uchar *dst,
                                __global const uchar *src, ulong n, uint words) {
  if (!ACC_PRED_RUNS(pred)) return;
  if (words) {
    __global uint *d = (__global uint *)dst;
    __global const uint *s = (__global const uint *)src;
    ACC_PRED_FOR(i, n / 4) d[i] = s[i];
  } else {
    ACC_PRED_FOR(i, n) dst[i] = src[i];
  }
}

/* A fill of n bytes with value (a byte), by words when dst and n allow. */
__kernel void accel_k_pred_fill(__global const int *pred, __global uchar *dst, uint value,
                                ulong n, uint words) {
  if (!ACC_PRED_RUNS(pred)) return;
  if (words) {
    __global uint *d = (__global uint *)dst;
    const uint v = (value & 0xffu) * 0x01010101u;
    ACC_PRED_FOR(i, n / 4) d[i] = v;
  } else {
    ACC_PRED_FOR(i, n) dst[i] = (uchar)value;
  }
}
