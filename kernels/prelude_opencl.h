/*
 * Kernel dialect -> OpenCL C 1.2 (the OpenCL backend builds it from source; Level Zero gets
 * it as SPIR-V through clang -cl-std=CL1.2 -target spir64 and llvm-spirv).
 *
 * A logical block is a work-group of ACC_BLOCK work-items; shared arrays are __local (declared
 * at kernel scope, as OpenCL 1.2 requires), a barrier is barrier(CLK_LOCAL_MEM_FENCE). Device
 * addresses are SVM pointers, so a 64-bit value cast to a __global pointer is valid.
 * Build with -cl-fp32-correctly-rounded-divide-sqrt: without it OpenCL allows 2.5/3 ulp
 * division/sqrt and the results would differ from the other backends.
 */
#ifndef ACCEL_PRELUDE_OPENCL_H
#define ACCEL_PRELUDE_OPENCL_H

/* OpenCL C contracts a*b+c into fma by default. */
#pragma OPENCL FP_CONTRACT OFF

typedef ulong acc_u64;
typedef uint acc_u32;
typedef ushort acc_u16;
typedef float acc_f32;
typedef acc_u32 acc_idx; /* element index inside a chunk */

#define ACC_INLINE static inline
#define ACC_GPTR(T) __global T *
#define ACC_PTR(T, addr) ((__global T *)(addr))

#define ACC_AS_F32(u) as_float(u)
#define ACC_AS_U32(f) as_uint(f)
#define ACC_SQRTF(x) sqrt(x)
#define ACC_POWF(x, y) pow((x), (y))
#define ACC_FABSF(x) fabs(x)

#define ACC_KERNEL(name, T, P) \
  __kernel __attribute__((reqd_work_group_size(ACC_BLOCK, 1, 1))) void name(const T P)

#define ACC_LANE_ID_ ((acc_u32)get_local_id(0))
#define ACC_FOR_BLOCKS(b, n) \
  for (acc_u32 b = (acc_u32)get_group_id(0); b < (n); b += (acc_u32)get_num_groups(0))

#define ACC_SHARED(T, name, n) __local T name[n]
#define ACC_PRIVATE(T, name) T name
#define ACC_LV(name) name
#define ACC_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)

#include "prelude_simt.h"

#endif
