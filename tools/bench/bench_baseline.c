/* Compiled with -O3 -ffast-math [-fopenmp] (tools/bench/meson.build); see bench_baseline.h. */
#include "bench_baseline.h"

#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Sum of squares over this thread's share of x. 64 independent accumulators (4 AVX-512 or 8
 * AVX2 registers) keep the adds off the critical path, so the loop is limited by memory
 * bandwidth alone; fast-math lets the compiler vectorise it freely. */
static float sumsq_range(const float *x, size_t lo, size_t hi) {
  float acc[64] = {0};
  size_t i = lo;
  for (; i + 64 <= hi; i += 64)
    for (int k = 0; k < 64; k++) acc[k] += x[i + (size_t)k] * x[i + (size_t)k];
  float s = 0.0f;
  for (int k = 0; k < 64; k++) s += acc[k];
  for (; i < hi; i++) s += x[i] * x[i];
  return s;
}

double bench_baseline_sumsq(const float *x, size_t n) {
  int threads = bench_baseline_threads();
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int t = 0; t < threads; t++)
    total += sumsq_range(x, n * (size_t)t / (size_t)threads, n * (size_t)(t + 1) / (size_t)threads);
  return total;
}

void bench_baseline_copy(float *dst, const float *src, size_t n) {
  int threads = bench_baseline_threads();
#pragma omp parallel for schedule(static)
  for (int t = 0; t < threads; t++) {
    size_t lo = n * (size_t)t / (size_t)threads, hi = n * (size_t)(t + 1) / (size_t)threads;
    memcpy(dst + lo, src + lo, (hi - lo) * sizeof *dst);
  }
}

int bench_baseline_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
