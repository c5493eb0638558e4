/*
 * Kernel dialect -> C (the CPU backend).
 *
 * A logical block of ACC_BLOCK lanes runs on one host thread, its lanes as loops
 * (prelude_lanes.h). See docs/KERNELS.md for the dialect.
 */
#ifndef ACCEL_PRELUDE_C_H
#define ACCEL_PRELUDE_C_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef uint64_t acc_u64;
typedef uint32_t acc_u32;
typedef uint8_t acc_u8;
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
/* A constant table at file scope (kernels/q8_map.h, q8_codes_*.h). */
#define ACC_TABLE(T, name, n) static const T name[n]
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

/* Reads a line at element i of the array at device address base ahead of use (the lane loops'
 * `ahead`, prelude_lanes.h). */
#define ACC_PREFETCH(base, i, elem_bytes) \
  __builtin_prefetch((const char *)(uintptr_t)(base) + (i) * (elem_bytes), 0, 3)

#include "prelude_lanes.h"

#endif
