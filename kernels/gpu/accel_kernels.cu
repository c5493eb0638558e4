/*
 * The CUDA and HIP form of the shared kernels: one translation unit that both nvcc
 * (-fmad=false) and hipcc (-ffp-contract=off) compile. Kernel symbols are extern "C" and named
 * as in accel_kernel_list.h; each takes its parameter struct by value and the predicate of
 * conditional regions; the predication kernels (predicate.h) are plain entry points.
 */
#include "../prelude_gpu.h"
#include "../accel_kernels_all.h"
#include "../predicate.h"
