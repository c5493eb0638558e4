/*
 * Kernel dialect -> OpenCL C 1.2 (the OpenCL backend builds it from source; Level Zero gets
 * it as SPIR-V through clang -cl-std=CL1.2 -target spir64 and llvm-spirv).
 *
 * Two forms of the same bodies, chosen when the program is built (docs/KERNELS.md):
 *  - SIMT (the default; GPUs, Level Zero): a logical block is a work-group of ACC_BLOCK
 *    work-items; shared arrays are __local (declared at kernel scope, as OpenCL 1.2 requires),
 *    a barrier is barrier(CLK_LOCAL_MEM_FENCE).
 *  - lane loops (-DACC_LANE_LOOPS; the OpenCL backend on CL_DEVICE_TYPE_CPU devices such as
 *    PoCL): a logical block is one work-item (work-groups of 1) that runs the block's lanes as
 *    loops, as the CPU backend does (prelude_lanes.h). A CPU runtime runs a work-group on one
 *    thread, looping over its work-items around each region between barriers, so in the SIMT
 *    form each work-item walked its whole strided fold (i = l, l + 256, ...: one scalar load
 *    per 1 KiB) before the next started: PoCL read at 0.3-3 GB/s. With the lanes innermost the
 *    same fold reads rows of 256 contiguous elements and vectorises.
 * Both give the same bits: each lane folds the same elements in the same order and the tree is
 * the same fixed tree.
 *
 * Every kernel takes a second argument, a predicate (kernels/predicate.h): NULL, or an int in
 * device memory that, when 0, makes ACC_FOR_BLOCKS run no block. The OpenCL backend points it
 * at a slot of its stream for the work of a conditional region's body (docs/GRAPHS.md,
 * "Branches on a device flag"); a kernel whose every store lies inside ACC_FOR_BLOCKS (all of
 * the shared kernels) then does nothing when the region is not taken.
 *
 * Device addresses are SVM pointers, so a 64-bit value cast to a __global pointer is valid.
 * Build with -cl-fp32-correctly-rounded-divide-sqrt: without it OpenCL allows 2.5/3 ulp
 * division/sqrt and the results would differ from the other backends.
 */
#ifndef ACCEL_PRELUDE_OPENCL_H
#define ACCEL_PRELUDE_OPENCL_H

/* OpenCL C contracts a*b+c into fma by default. */
#pragma OPENCL FP_CONTRACT OFF

typedef ulong acc_u64;
typedef uint acc_u32;
typedef uchar acc_u8;
typedef ushort acc_u16;
typedef float acc_f32;
/* Element index inside a chunk (the C prelude's is 64-bit for GCC's vectoriser; PoCL's LLVM
 * gave the lane-loop kernels the same code with either). */
typedef acc_u32 acc_idx;

/* Always inlined, as on the other targets: a body function's specialisation arguments
 * (ACC_DTYPE_CALL) must become constants in its copy. */
#define ACC_INLINE static inline __attribute__((always_inline))
#define ACC_GPTR(T) __global T *
#define ACC_PTR(T, addr) ((__global T *)(addr))

#define ACC_AS_F32(u) as_float(u)
#define ACC_AS_U32(f) as_uint(f)
/* A constant table at file scope (kernels/q8_map.h, q8_codes_*.h). */
#define ACC_TABLE(T, name, n) __constant T name[n]
#define ACC_SQRTF(x) sqrt(x)
#define ACC_POWF(x, y) pow((x), (y))
#define ACC_FABSF(x) fabs(x)

/* Whether a launch predicated on pred runs its blocks: no predicate, or a nonzero one. */
#define ACC_PRED_RUNS(pred) ((pred) == 0 || *(pred) != 0)
/* Plain entry points (kernels/predicate.h). */
#define ACC_PLAIN_KERNEL(name) __kernel void name
#define ACC_GLOBAL_ID ((acc_u64)get_global_id(0))
#define ACC_GLOBAL_SIZE ((acc_u64)get_global_size(0))

#ifdef ACC_LANE_LOOPS

#define ACC_KERNEL(name, T, P)                                  \
  __kernel __attribute__((reqd_work_group_size(1, 1, 1))) void name( \
      const T P, __global const int *acc_pred_)

#define ACC_FOR_BLOCKS(b, n)                                                                 \
  for (acc_u32 b = (acc_u32)get_global_id(0), acc_n_ = ACC_PRED_RUNS(acc_pred_) ? (n) : 0u; \
       b < acc_n_; b += (acc_u32)get_global_size(0))

/* OpenCL's prefetch() builtin compiles to nothing on PoCL; clang's builtin takes a __global
 * pointer and gives the prefetch instruction. */
#define ACC_PREFETCH(base, i, elem_bytes) \
  __builtin_prefetch(ACC_PTR(const char, base) + (i) * (elem_bytes), 0, 3)

#include "prelude_lanes.h"

#else

#define ACC_KERNEL(name, T, P)                                          \
  __kernel __attribute__((reqd_work_group_size(ACC_BLOCK, 1, 1))) void name( \
      const T P, __global const int *acc_pred_)

#define ACC_LANE_ID_ ((acc_u32)get_local_id(0))
#define ACC_FOR_BLOCKS(b, n)                                                                \
  for (acc_u32 b = (acc_u32)get_group_id(0), acc_n_ = ACC_PRED_RUNS(acc_pred_) ? (n) : 0u; \
       b < acc_n_; b += (acc_u32)get_num_groups(0))

#define ACC_SHARED(T, name, n) __local T name[n]
#define ACC_SHARED_ARG(T, name) __local T *name
#define ACC_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)

#include "prelude_simt.h"

#endif

#endif
