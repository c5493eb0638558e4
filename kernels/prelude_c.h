/*
 * Kernel dialect -> C (the CPU backend).
 *
 * A logical block of ACC_BLOCK lanes runs on one host thread. Every lane-parallel statement is
 * a loop over the lanes, so the compiler vectorises it; lane-private variables are arrays
 * indexed by the lane; a barrier is the boundary between two such loops and needs no code.
 * See docs/KERNELS.md for the dialect.
 */
#ifndef ACCEL_PRELUDE_C_H
#define ACCEL_PRELUDE_C_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef uint64_t acc_u64;
typedef uint32_t acc_u32;
typedef uint16_t acc_u16;
typedef float acc_f32;
/* Element index inside a chunk: 64-bit on the CPU so that the compiler can prove the accesses
 * of a row contiguous (a 32-bit index might wrap) and vectorise them. */
typedef uint64_t acc_idx;

#define ACC_INLINE static inline __attribute__((always_inline))
#define ACC_GPTR(T) T *
#define ACC_PTR(T, addr) ((T *)(uintptr_t)(addr))

ACC_INLINE acc_f32 acc_as_f32(acc_u32 u) {
  acc_f32 f;
  memcpy(&f, &u, sizeof f);
  return f;
}
ACC_INLINE acc_u32 acc_as_u32(acc_f32 f) {
  acc_u32 u;
  memcpy(&u, &f, sizeof u);
  return u;
}
#define ACC_AS_F32(u) acc_as_f32(u)
#define ACC_AS_U32(f) acc_as_u32(f)
/* sqrtf is correctly rounded (IEEE 754); the kernels are built with -fno-math-errno so that it
 * becomes the vector instruction. */
#define ACC_SQRTF(x) sqrtf(x)
#define ACC_POWF(x, y) powf((x), (y))
#define ACC_FABSF(x) fabsf(x)

/* Per-ISA copies of every kernel, chosen at load time from cpuid (GCC function
 * multi-versioning through an ifunc resolver). Not with clang: clang 14's clones of these
 * static kernels with a by-value parameter struct received a garbage struct (accel_k_scale
 * read a NULL scale pointer, accel_k_fill wrote nothing). Not under ThreadSanitizer: its
 * instrumentation runs inside the ifunc resolver before the runtime is up and crashes. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(ACC_NO_TARGET_CLONES)
#define ACC_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ACC_CPU_CLONES
#endif

/* A kernel is `static void name(const void *params, acc_u32 block_begin, acc_u32 block_end)`
 * running logical blocks [block_begin, block_end); the body sees its parameters as P. */
#define ACC_KERNEL(name, T, P)                                                       \
  ACC_CPU_CLONES static void name##_impl(const T P, acc_u32 acc_b0_, acc_u32 acc_b1_); \
  static void name(const void *acc_params_, acc_u32 acc_b0_, acc_u32 acc_b1_) {      \
    T acc_p_;                                                                         \
    memcpy(&acc_p_, acc_params_, sizeof acc_p_);                                      \
    name##_impl(acc_p_, acc_b0_, acc_b1_);                                            \
  }                                                                                   \
  ACC_CPU_CLONES static void name##_impl(const T P, acc_u32 acc_b0_, acc_u32 acc_b1_)

#define ACC_FOR_BLOCKS(b, n) for (acc_u32 b = acc_b0_; b < acc_b1_ && b < (n); ++b)

#define ACC_SHARED(T, name, n) T name[n]
#define ACC_PRIVATE(T, name) T name[ACC_BLOCK]
#define ACC_LV(name) name[lane]
#define ACC_BARRIER() ((void)0)

#define ACC_LANES(...)                                          \
  for (acc_u32 lane = 0; lane < ACC_BLOCK; ++lane) {            \
    __VA_ARGS__                                                 \
  }
#define ACC_LANE0(...) \
  {                    \
    __VA_ARGS__        \
  }

/* Reading ahead (ACC_LANE_LOOP_AHEAD, ACC_ELEM_LOOP_AHEAD): once per group of 16 lanes or
 * elements the loop runs `ahead` with i bound to an index further on, where the kernel names
 * what its body will read there with ACC_PREFETCH. With the hardware prefetchers alone the
 * CPU norm read at 89-91% of the machine's plain read loop (its four-row walk visits four
 * rows of a page in turn) and the in-place clip of 1 GiB took ~37 ms; prefetching 8 rows
 * (8 KiB of fp32) / 4096 elements (16 KiB) ahead, the best of 4-32 rows and 1-64 KiB tried,
 * gives 99-111% and ~33 ms (docs/PERFORMANCE.md). Past the end of a chunk it touches the
 * next one, usually read next; a prefetch never faults. */
#define ACC_AHEAD_ROWS 8u
#define ACC_AHEAD_ELEMS 4096u
#define ACC_PREFETCH(base, i, elem_bytes) \
  __builtin_prefetch((const char *)(uintptr_t)(base) + (i) * (elem_bytes), 0, 3)

/* Lane l visits i = l, l + ACC_BLOCK, ... in increasing order: rows of ACC_BLOCK elements,
 * lanes innermost (contiguous, vectorisable). Four rows per pass: a lane's private values
 * then stay in registers for four elements instead of going through memory for each (lanes
 * are independent, so only each lane's own order matters, and it is unchanged). The lanes go
 * in groups of 16 (one AVX-512 vector of fp32), each group reading ahead once per row. */
#define ACC_LANE_LOOP_AHEAD(i, n, ahead, ...)                                           \
  {                                                                                     \
    const acc_u32 acc_n_ = (n);                                                         \
    acc_idx acc_row_ = 0;                                                               \
    for (; acc_n_ - acc_row_ >= 4 * ACC_BLOCK; acc_row_ += 4 * ACC_BLOCK)               \
      for (acc_idx acc_g_ = 0; acc_g_ < ACC_BLOCK; acc_g_ += 16) {                      \
        for (acc_idx acc_r_ = 0; acc_r_ < 4; ++acc_r_) {                                \
          const acc_idx i = acc_row_ + (ACC_AHEAD_ROWS + acc_r_) * ACC_BLOCK + acc_g_;  \
          (void)i;                                                                      \
          ahead                                                                         \
        }                                                                               \
        for (acc_idx lane = acc_g_; lane < acc_g_ + 16; ++lane) {                       \
          { const acc_idx i = acc_row_ + lane; __VA_ARGS__ }                            \
          { const acc_idx i = acc_row_ + ACC_BLOCK + lane; __VA_ARGS__ }                \
          { const acc_idx i = acc_row_ + 2 * ACC_BLOCK + lane; __VA_ARGS__ }            \
          { const acc_idx i = acc_row_ + 3 * ACC_BLOCK + lane; __VA_ARGS__ }            \
        }                                                                               \
      }                                                                                 \
    for (; acc_n_ - acc_row_ >= ACC_BLOCK; acc_row_ += ACC_BLOCK)                       \
      for (acc_idx lane = 0; lane < ACC_BLOCK; ++lane) {                                \
        const acc_idx i = acc_row_ + lane;                                              \
        __VA_ARGS__                                                                     \
      }                                                                                 \
    for (acc_idx lane = 0; lane < acc_n_ - acc_row_; ++lane) {                          \
      const acc_idx i = acc_row_ + lane;                                                \
      __VA_ARGS__                                                                       \
    }                                                                                   \
  }
#define ACC_LANE_LOOP(i, n, ...) ACC_LANE_LOOP_AHEAD(i, n, , __VA_ARGS__)

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
 * value. The _AHEAD forms prefetch the array at `base` (elements of `bytes` bytes) ahead, as
 * the loops above. Being always_inline, FN compiles to the code the statement forms gave. */
#define ACC_ELEM_MAP(n, FN, ...) ACC_ELEM_LOOP(acc_i_, n, FN(acc_i_, __VA_ARGS__);)
#define ACC_ELEM_MAP_AHEAD(n, base, bytes, FN, ...) \
  ACC_ELEM_LOOP_AHEAD(acc_i_, n, ACC_PREFETCH(base, acc_i_, bytes);, FN(acc_i_, __VA_ARGS__);)
#define ACC_LANE_FOLD(x, n, FN, ...) \
  ACC_LANE_LOOP(acc_i_, n, ACC_LV(x) = FN(ACC_LV(x), acc_i_, __VA_ARGS__);)
#define ACC_LANE_FOLD_AHEAD(x, n, base, bytes, FN, ...)                  \
  ACC_LANE_LOOP_AHEAD(acc_i_, n, ACC_PREFETCH(base, acc_i_, bytes);, \
                      ACC_LV(x) = FN(ACC_LV(x), acc_i_, __VA_ARGS__);)

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

/* Runs the statement with F bound to (flags & bit), a compile-time constant for each of its two
 * values, so that each gets its own branch-free loop. */
#define ACC_FLAG_SWITCH(flags, bit, F, ...) \
  if (((flags) & (bit)) != 0u) {           \
    const acc_u32 F = (bit);               \
    __VA_ARGS__                            \
  } else {                                 \
    const acc_u32 F = 0u;                  \
    __VA_ARGS__                            \
  }

/* Fixed pairwise tree over red[0..ACC_BLOCK): red[l] = FN(red[l], red[l + s], ARG) for
 * s = ACC_BLOCK/2 ... 1, l < s. The result is red[0]. */
#define ACC_TREE(red, FN, ARG)                                  \
  for (acc_u32 acc_s_ = ACC_BLOCK / 2; acc_s_ > 0; acc_s_ >>= 1) \
    for (acc_u32 acc_l_ = 0; acc_l_ < acc_s_; ++acc_l_)          \
      (red)[acc_l_] = FN((red)[acc_l_], (red)[acc_l_ + acc_s_], (ARG));

#endif
