/*
 * Kernel dialect -> CUDA and HIP (one source; nvcc and hipcc both compile it).
 *
 * A logical block is a thread block of ACC_BLOCK threads; the lane is threadIdx.x, shared
 * arrays are __shared__, a barrier is __syncthreads(). Lane-private variables are registers.
 * Build flags carry the numerics: nvcc -fmad=false (with its default -prec-div/-prec-sqrt),
 * hipcc -ffp-contract=off (division and sqrt are correctly rounded by default).
 */
#ifndef ACCEL_PRELUDE_GPU_H
#define ACCEL_PRELUDE_GPU_H

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#elif !defined(__CUDACC__)
#error "prelude_gpu.h needs nvcc or hipcc"
#endif

typedef unsigned long long acc_u64;
typedef unsigned int acc_u32;
typedef unsigned char acc_u8;
typedef unsigned short acc_u16;
typedef float acc_f32;
typedef acc_u32 acc_idx; /* element index inside a chunk */

#define ACC_INLINE static __device__ __forceinline__
#define ACC_GPTR(T) T *
#define ACC_PTR(T, addr) ((T *)(addr))

#define ACC_AS_F32(u) __uint_as_float(u)
#define ACC_AS_U32(f) __float_as_uint(f)
/* A constant table at file scope (kernels/q8_map.h). */
#define ACC_TABLE(T, name, n) static __device__ const T name[n]
#define ACC_SQRTF(x) sqrtf(x)
#define ACC_POWF(x, y) powf((x), (y))
#define ACC_FABSF(x) fabsf(x)

/* Every kernel takes a second argument, the predicate of conditional regions
 * (kernels/predicate.h): NULL, or an int the device reaches that, when 0, makes ACC_FOR_BLOCKS
 * run no block (the CUDA/HIP plugin points it at a region's slot for the body's work). */
#define ACC_PRED_RUNS(pred) ((pred) == 0 || *(pred) != 0)
#define ACC_KERNEL(name, T, P) \
  extern "C" __global__ void __launch_bounds__(ACC_BLOCK) name(const T P, const int *acc_pred_)
/* Plain entry points (kernels/predicate.h). */
#define ACC_PLAIN_KERNEL(name) extern "C" __global__ void name
#define ACC_GLOBAL_ID ((acc_u64)blockIdx.x * blockDim.x + threadIdx.x)
#define ACC_GLOBAL_SIZE ((acc_u64)gridDim.x * blockDim.x)

#define ACC_LANE_ID_ ((acc_u32)threadIdx.x)
#define ACC_FOR_BLOCKS(b, n)                                                               \
  for (acc_u32 b = (acc_u32)blockIdx.x, acc_n_ = ACC_PRED_RUNS(acc_pred_) ? (n) : 0u; \
       b < acc_n_; b += (acc_u32)gridDim.x)

#define ACC_SHARED(T, name, n) __shared__ T name[n]
#define ACC_SHARED_ARG(T, name) T *name
#define ACC_BARRIER() __syncthreads()

#include "prelude_simt.h"

#endif
