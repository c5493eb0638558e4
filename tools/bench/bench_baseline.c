/* Compiled with -O3 -ffast-math [-fopenmp] (tools/bench/meson.build); see bench_baseline.h. */
#include "bench_baseline.h"

#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

double bench_baseline_sumsq(const float *x, size_t n) {
  /* fast-math lets the compiler split the sum into vector accumulators. */
  float total = 0.0f;
#pragma omp parallel for simd reduction(+ : total) schedule(static)
  for (size_t i = 0; i < n; i++) total += x[i] * x[i];
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
