/*
 * The lane macros shared by the lane-loop preludes (prelude_c.h for the CPU backend,
 * prelude_opencl.h on OpenCL CPU devices): a logical block of ACC_BLOCK lanes runs on one
 * thread (one work-item). Every lane-parallel statement is a loop over the lanes, so the
 * compiler vectorises it; lane-private variables are arrays indexed by the lane; a barrier is
 * the boundary between two such loops and needs no code. Each prelude defines acc_idx (the
 * element index inside a chunk), ACC_PREFETCH and ACC_BLOCK first.
 */
#ifndef ACCEL_PRELUDE_LANES_H
#define ACCEL_PRELUDE_LANES_H

#define ACC_SHARED(T, name, n) T name[n]
#define ACC_PRIVATE(T, name) T name[ACC_BLOCK]
#define ACC_LV(name) name[lane]
/* Parameters of a body function naming the caller's ACC_PRIVATE / ACC_SHARED variable. */
#define ACC_LANE_ARG(T, name) T *name
#define ACC_SHARED_ARG(T, name) T *name
#define ACC_BARRIER() ((void)0)

#define ACC_LANES(...)                                          \
  for (acc_u32 lane = 0; lane < ACC_BLOCK; ++lane) {            \
    __VA_ARGS__                                                 \
  }
#define ACC_LANE0(...) \
  {                    \
    __VA_ARGS__        \
  }

/* Reading ahead (ACC_ELEM_LOOP_AHEAD): once per group of 16 elements the loop runs `ahead`
 * with i bound to an index further on, where the kernel names what its body will read there
 * with ACC_PREFETCH. Prefetching 4096 elements (16 KiB of fp32) ahead, the best of 1-64 KiB
 * tried on an Intel Xeon, took the in-place clip of 1 GiB from ~37 ms to ~33 ms
 * (docs/PERFORMANCE.md). Past the end of a chunk it touches the next one, usually read next; a
 * prefetch never faults. */
#define ACC_AHEAD_ELEMS 4096u

/* Lane l visits i = l, l + ACC_BLOCK, ... in increasing order: one row of ACC_BLOCK elements
 * at a time, lanes innermost (contiguous, vectorisable), nothing else in the lane loop. The
 * compiler vectorises the row and unrolls it (GCC: 16 iterations of AVX-512); the private
 * values stay in registers or take one load and store per row, and the reads are one
 * sequential stream, which the hardware prefetchers follow. The walk this replaced took four
 * rows per pass, a group of 16 lanes at a time with a prefetch once per group and row: on an
 * AMD EPYC (Zen 4) it read at 10.7 GB/s per thread against the plain loop's 29 (prefetching
 * or not; its prefetchers lose four interleaved streams), and the norms ran at 42-64% of the
 * read loop on the CPU and 59-70% through PoCL, against 86-99% and 85-101% in this walk
 * (docs/PERFORMANCE.md, section 24). */
#define ACC_LANE_LOOP(i, n, ...)                                                      \
  {                                                                                   \
    const acc_u32 acc_n_ = (n);                                                       \
    acc_idx acc_row_ = 0;                                                             \
    for (; acc_n_ - acc_row_ >= ACC_BLOCK; acc_row_ += ACC_BLOCK)                     \
      for (acc_idx lane = 0; lane < ACC_BLOCK; ++lane) {                              \
        const acc_idx i = acc_row_ + lane;                                            \
        __VA_ARGS__                                                                   \
      }                                                                               \
    for (acc_idx lane = 0; lane < acc_n_ - acc_row_; ++lane) {                        \
      const acc_idx i = acc_row_ + lane;                                              \
      __VA_ARGS__                                                                     \
    }                                                                                 \
  }

/* Independent elements: any order. */
#define ACC_ELEM_LOOP_AHEAD(i, n, ahead, ...)                                   \
  {                                                                             \
    const acc_idx acc_n_ = (n);                                                 \
    acc_idx acc_g_ = 0;                                                         \
    for (; acc_n_ - acc_g_ >= 16; acc_g_ += 16) {                               \
      {                                                                         \
        const acc_idx i = acc_g_ + ACC_AHEAD_ELEMS;                             \
        (void)i;                                                                \
        ahead                                                                   \
      }                                                                         \
      for (acc_idx i = acc_g_; i < acc_g_ + 16; ++i) {                          \
        __VA_ARGS__                                                             \
      }                                                                         \
    }                                                                           \
    for (acc_idx i = acc_g_; i < acc_n_; ++i) {                                 \
      __VA_ARGS__                                                               \
    }                                                                           \
  }
#define ACC_ELEM_LOOP(i, n, ...)              \
  for (acc_idx i = 0; i < (n); ++i) {         \
    __VA_ARGS__                               \
  }

/* The forms kernel bodies use: the per-element work is an ACC_INLINE function, and the loop
 * macro takes its name and its arguments after the index (docs/KERNELS.md, "The dialect").
 * ACC_ELEM_MAP*: FN(i, ...) for every element i (any order). ACC_LANE_FOLD*: lane l folds
 * x = FN(x, i, ...) over i = l, l + ACC_BLOCK, ... in increasing order, x its ACC_PRIVATE
 * value. ACC_ELEM_MAP_AHEAD prefetches the array at `base` (elements of `bytes` bytes) ahead,
 * as ACC_ELEM_LOOP_AHEAD; ACC_LANE_FOLD_AHEAD names the array a fold streams through, which
 * the row walk leaves to the hardware prefetchers. Being always_inline, FN compiles to the
 * code the statement forms gave. */
#define ACC_ELEM_MAP(n, FN, ...) ACC_ELEM_LOOP(acc_i_, n, FN(acc_i_, __VA_ARGS__);)
#define ACC_ELEM_MAP_AHEAD(n, base, bytes, FN, ...) \
  ACC_ELEM_LOOP_AHEAD(acc_i_, n, ACC_PREFETCH(base, acc_i_, bytes);, FN(acc_i_, __VA_ARGS__);)
#define ACC_LANE_FOLD(x, n, FN, ...) \
  ACC_LANE_LOOP(acc_i_, n, ACC_LV(x) = FN(ACC_LV(x), acc_i_, __VA_ARGS__);)
#define ACC_LANE_FOLD_AHEAD(x, n, base, bytes, FN, ...) ACC_LANE_FOLD(x, n, FN, __VA_ARGS__)

/* Rows of ACC_BLOCK elements of [0, n), one at a time: the statement runs with `row` the row's
 * first element and `rn` its length (ACC_BLOCK but in the last row); in it, ACC_ROW_LANES(rn,
 * stmt) runs stmt for the lanes l < rn (element row + l: lane l's next element, as in the
 * folds). A computation split into stages joined by a lane-private value (each stage with its
 * own specialisations) costs the sum of the stages' copies instead of their product. */
#define ACC_FOR_ROWS(row, rn, n)                                                   \
  for (acc_idx row = 0, rn = (n) < ACC_BLOCK ? (acc_idx)(n) : ACC_BLOCK; row < (n); \
       row += ACC_BLOCK, rn = (n) - row < ACC_BLOCK ? (n) - row : ACC_BLOCK)
#define ACC_ROW_LANES(rn, ...)                        \
  for (acc_idx lane = 0; lane < (rn); ++lane) {       \
    __VA_ARGS__                                       \
  }

/* Calls FN(args..., F) with F the constant (flags & bit), once for each of its two values, so
 * that each gets its own branch-free loops (see ACC_DTYPE_CALL). */
#define ACC_FLAG_CALL(flags, bit, FN, ...) \
  {                                        \
    if (((flags) & (bit)) != 0u) {         \
      FN(__VA_ARGS__, (bit));              \
    } else {                               \
      FN(__VA_ARGS__, 0u);                 \
    }                                      \
  }

/* Fixed pairwise tree over red[0..ACC_BLOCK): red[l] = FN(red[l], red[l + s], ARG) for
 * s = ACC_BLOCK/2 ... 1, l < s. The result is red[0]. */
#define ACC_TREE(red, FN, ARG)                                  \
  for (acc_u32 acc_s_ = ACC_BLOCK / 2; acc_s_ > 0; acc_s_ >>= 1) \
    for (acc_u32 acc_l_ = 0; acc_l_ < acc_s_; ++acc_l_)          \
      (red)[acc_l_] = FN((red)[acc_l_], (red)[acc_l_ + acc_s_], (ARG));

#endif
