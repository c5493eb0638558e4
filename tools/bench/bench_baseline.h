/*
 * Bandwidth baselines: the best plain host loops this machine runs, compiled on their own with
 * -O3 -ffast-math (and -fopenmp when the compiler has it, using every core), so that accel's
 * kernels are compared with what the memory system can deliver, measured in the same run.
 */
#ifndef ACCEL_BENCH_BASELINE_H
#define ACCEL_BENCH_BASELINE_H

#include <stddef.h>

/* Sum of squares of x[0..n) (vectorised, all threads). */
double bench_baseline_sumsq(const float *x, size_t n);
/* dst[0..n) = src[0..n) (memcpy of per-thread slices). */
void bench_baseline_copy(float *dst, const float *src, size_t n);
/* Threads the loops above use (1 without OpenMP). */
int bench_baseline_threads(void);

#endif
