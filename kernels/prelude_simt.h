/*
 * The lane macros shared by the SIMT preludes (prelude_gpu.h, prelude_opencl.h): a lane is one
 * thread / work-item, so lane code runs once per thread and the reduction tree steps are
 * separated by barriers. Each prelude defines ACC_LANE_ID_, ACC_BLOCK, ACC_SHARED and
 * ACC_BARRIER() first.
 */
#ifndef ACCEL_PRELUDE_SIMT_H
#define ACCEL_PRELUDE_SIMT_H

/* A lane-private variable is the thread's own: a one-element array (a register once the
 * compiler scalarises it), so that a body function can take it as a pointer (ACC_LANE_ARG)
 * the same way the lane-loop form passes its per-lane array. */
#define ACC_PRIVATE(T, name) T name[1]
#define ACC_LV(name) (name)[0]
#define ACC_LANE_ARG(T, name) T *name

#define ACC_LANES(...)                       \
  {                                          \
    const acc_u32 lane = ACC_LANE_ID_;       \
    (void)lane;                              \
    __VA_ARGS__                              \
  }
#define ACC_LANE0(...)            \
  if (ACC_LANE_ID_ == 0u) {       \
    __VA_ARGS__                   \
  }

#define ACC_LANE_LOOP(i, n, ...)                                       \
  for (acc_idx i = ACC_LANE_ID_; i < (n); i += ACC_BLOCK) {            \
    __VA_ARGS__                                                        \
  }
#define ACC_ELEM_LOOP(i, n, ...) ACC_LANE_LOOP(i, n, __VA_ARGS__)
/* Reading ahead is the CPU's (prelude_c.h); the memory systems here hide latency with
 * other warps / work-groups, so `ahead` is dropped unexpanded. */
#define ACC_ELEM_LOOP_AHEAD(i, n, ahead, ...) ACC_LANE_LOOP(i, n, __VA_ARGS__)

/* The function forms (prelude_c.h describes them); no reading ahead here either. */
#define ACC_ELEM_MAP(n, FN, ...) ACC_LANE_LOOP(acc_i_, n, FN(acc_i_, __VA_ARGS__);)
#define ACC_ELEM_MAP_AHEAD(n, base, bytes, FN, ...) ACC_ELEM_MAP(n, FN, __VA_ARGS__)
#define ACC_LANE_FOLD(x, n, FN, ...) \
  ACC_LANE_LOOP(acc_i_, n, ACC_LV(x) = FN(ACC_LV(x), acc_i_, __VA_ARGS__);)
#define ACC_LANE_FOLD_AHEAD(x, n, base, bytes, FN, ...) ACC_LANE_FOLD(x, n, FN, __VA_ARGS__)

/* Rows (prelude_c.h): the lanes walk the rows together, lane l taking element row + l. */
#define ACC_FOR_ROWS(row, rn, n)                                                       \
  for (acc_idx row = 0, rn = (n) < ACC_BLOCK ? (acc_idx)(n) : (acc_idx)ACC_BLOCK;    \
       row < (n); row += ACC_BLOCK,                                                   \
               rn = (n) - row < ACC_BLOCK ? (acc_idx)((n) - row) : (acc_idx)ACC_BLOCK)
#define ACC_ROW_LANES(rn, ...)               \
  if (ACC_LANE_ID_ < (rn)) {                 \
    const acc_u32 lane = ACC_LANE_ID_;       \
    (void)lane;                              \
    __VA_ARGS__                              \
  }

/* One call FN(args..., flags & bit) with the bit at run time: a branch that is the same for
 * every lane costs nothing here, where a copy per value would only grow the kernel. */
#define ACC_FLAG_CALL(flags, bit, FN, ...) FN(__VA_ARGS__, (flags) & (bit))

/* A store to an element whose load is still in flight stalls the memory pipeline: the kernels
 * that store to what they have just loaded store after their other loads (step.h). */
#define ACC_STORES_AFTER_LOADS 1u

#define ACC_TREE(red, FN, ARG)                                            \
  for (acc_u32 acc_s_ = ACC_BLOCK / 2; acc_s_ > 0; acc_s_ >>= 1) {        \
    if (ACC_LANE_ID_ < acc_s_)                                            \
      (red)[ACC_LANE_ID_] = FN((red)[ACC_LANE_ID_], (red)[ACC_LANE_ID_ + acc_s_], (ARG)); \
    ACC_BARRIER();                                                        \
  }

#endif
