/* Compiled with -O3 -ffast-math [-fopenmp] (tools/bench/meson.build); see bench_baseline.h. */
#include "bench_baseline.h"

#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* See bench_settle in bench_baseline.h. */
#define BENCH_SETTLE_MS 5
/* How long the bound loops' OpenMP threads may still spin after a run: libgomp's default wait
 * policy spins before it sleeps (3.7 ms measured on the Intel Xeon). */
#define BENCH_SPIN_MS 10

/* Prefetch distance in elements of each stream (the kernels' element loops use 4096 too). */
#define AHEAD 4096u
/* Elements per block: one prefetch per stream and 64-byte line of fp32 per block. */
#define BLOCK 16u

int bench_baseline_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int bench_bound_thread_counts(double bytes, int counts[2]) {
  counts[0] = bench_baseline_threads();
  if (bytes >= BENCH_BOUND_SMALL_BYTES || counts[0] == 1) return 1;
  counts[1] = 1;
  return 2;
}

/* The loops hand out slabs of SLAB elements to the threads as they finish (schedule(dynamic)),
 * as the CPU backend's pool hands out chunks: with a static half each, a thread that lost its
 * core for a while made the whole run wait, and the kernels beat their bound (medians of
 * 100-102% in the first quiet campaign of issue 30). A multiple of 64 and of STEP_TILE. */
#define SLAB (1u << 18)

static size_t slabs(size_t n) { return (n + SLAB - 1) / SLAB; }

/* Slab s's elements [*lo, *hi) of n. */
static void slab(size_t n, size_t s, size_t *lo, size_t *hi) {
  *lo = s * SLAB;
  *hi = *lo + SLAB < n ? *lo + SLAB : n;
}


static inline float bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Per-ISA copies, as the kernels have (kernels/prelude_c.h, ACC_CPU_CLONES): a bound loop must
 * use the widest vectors the machine has, like the kernel it bounds. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
#define BOUND_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BOUND_CLONES
#endif

/* 64 independent accumulators (4 AVX-512 or 8 AVX2 registers) keep the adds off the critical
 * path, so the loop is limited by memory bandwidth alone. */
BOUND_CLONES static float sumsq_range(const float *x, size_t lo, size_t hi, int prefetch) {
  float acc[64] = {0};
  size_t i = lo;
  for (; i + 64 <= hi; i += 64) {
    if (prefetch)
      for (unsigned k = 0; k < 64; k += BLOCK) __builtin_prefetch(x + i + k + AHEAD);
    for (int k = 0; k < 64; k++) acc[k] += x[i + (size_t)k] * x[i + (size_t)k];
  }
  float s = 0.0f;
  for (int k = 0; k < 64; k++) s += acc[k];
  for (; i < hi; i++) s += x[i] * x[i];
  return s;
}

/* The same over bf16 elements (2 bytes each), widened as the kernels widen them. */
BOUND_CLONES static float sumsq_bf16_range(const uint16_t *x, size_t lo, size_t hi,
                                           int prefetch) {
  float acc[64] = {0};
  size_t i = lo;
  for (; i + 64 <= hi; i += 64) {
    if (prefetch)
      for (unsigned k = 0; k < 64; k += 2 * BLOCK) __builtin_prefetch(x + i + k + AHEAD);
    for (int k = 0; k < 64; k++) {
      const float v = bf16_to_f32(x[i + (size_t)k]);
      acc[k] += v * v;
    }
  }
  float s = 0.0f;
  for (int k = 0; k < 64; k++) s += acc[k];
  for (; i < hi; i++) s += bf16_to_f32(x[i]) * bf16_to_f32(x[i]);
  return s;
}

/* Sum of squares over n elements of x (bf16 when bf16, else f32), one slab a task. */
static double sumsq_slabs(const void *x, int bf16, size_t n, int prefetch, int threads) {
  double total = 0.0;
  const size_t ns = slabs(n);
#pragma omp parallel for reduction(+ : total) schedule(dynamic, 1) num_threads(threads)
  for (size_t k = 0; k < ns; k++) {
    size_t lo, hi;
    slab(n, k, &lo, &hi);
    total += bf16 ? sumsq_bf16_range(x, lo, hi, prefetch) : sumsq_range(x, lo, hi, prefetch);
  }
  return total;
}

double bench_bound_read_bf16(const uint16_t *x, size_t n, int prefetch, int threads) {
  return sumsq_slabs(x, 1, n, prefetch, threads);
}

double bench_bound_read(const float *x, size_t n, int prefetch, int threads) {
  return sumsq_slabs(x, 0, n, prefetch, threads);
}

/* The element functions every variant of a loop shares (inlined into each ISA copy).
 * The lp gradients are zeroed in the loop that reads them, as the kernel does: zeroed by a
 * memset of the slab afterwards, lines the loop had read were evicted before the memset came
 * (512 KiB of lp and 1 MiB of hp a slab), and the kernel ran at 112% of the loop on an AMD
 * EPYC (docs/PERFORMANCE.md, section 24). */
static inline void hp_elems(uint16_t *lp, float *hp, size_t lo, size_t hi, int zero_lp) {
  if (zero_lp) {
    for (size_t i = lo; i < hi; i++) {
      hp[i] += bf16_to_f32(lp[i]);
      lp[i] = 0;
    }
    return;
  }
  for (size_t i = lo; i < hi; i++) hp[i] += bf16_to_f32(lp[i]);
}

/* Cheap stand-ins for the Adam moments and update: the values stay bounded over any number of
 * calls (the buffers are the benchmarks' own and are reset before results are checked).
 * Every stream is read before any is written: with the store to m before the load of p, the
 * load waited on the store (the arrays sit at the same offset in their 4 KiB pages, and the CPU
 * matches loads to earlier stores by those 12 bits), and the AdamW kernel, which reads p first,
 * ran at 102-105% of the loop on an AMD EPYC (docs/PERFORMANCE.md, section 24). */
static inline void adam_elems(float *p, const float *g, float *m, float *v, size_t lo,
                              size_t hi) {
  for (size_t i = lo; i < hi; i++) {
    const float gi = g[i], pi = p[i];
    const float mi = 0.9f * m[i] + 0.1f * gi, vi = 0.999f * v[i] + 0.001f * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = 0.999f * pi - 1e-3f * mi;
  }
}

/* adam_elems over bf16 moments: widened, and rounded back to nearest (ties away: a stand-in
 * that costs what the kernel's rounding costs in a vector loop). */
static inline uint16_t bf16_round(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)((u + 0x8000u) >> 16);
}

static inline void adam_elems_bf16(float *p, const float *g, uint16_t *m, uint16_t *v,
                                   size_t lo, size_t hi) {
  for (size_t i = lo; i < hi; i++) {
    const float gi = g[i], pi = p[i];
    const float mi = 0.9f * bf16_to_f32(m[i]) + 0.1f * gi;
    const float vi = 0.999f * bf16_to_f32(v[i]) + 0.001f * gi * gi;
    m[i] = bf16_round(mi);
    v[i] = bf16_round(vi);
    p[i] = 0.999f * pi - 1e-3f * mi;
  }
}

/* adam_elems_bf16 with bf16 master weights too (the step with BF16 params). */
static inline void adam_elems_bf16p(uint16_t *p, const float *g, uint16_t *m, uint16_t *v,
                                    size_t lo, size_t hi) {
  for (size_t i = lo; i < hi; i++) {
    const float gi = g[i], pi = bf16_to_f32(p[i]);
    const float mi = 0.9f * bf16_to_f32(m[i]) + 0.1f * gi;
    const float vi = 0.999f * bf16_to_f32(v[i]) + 0.001f * gi * gi;
    m[i] = bf16_round(mi);
    v[i] = bf16_round(vi);
    p[i] = bf16_round(0.999f * pi - 1e-3f * mi);
  }
}

/* adam_elems over 8-bit moments: a linear stand-in for the codes (a multiply to decode, bits
 * to encode) with the kernel's traffic, 1 byte per moment; the block scales (8 bytes per 256
 * elements) are left out, so the loop moves slightly less than the step. */
static inline uint8_t q8_stand_in(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint8_t)(u >> 23);
}

static inline void adam_elems_q8(float *p, const float *g, uint8_t *m, uint8_t *v, size_t lo,
                                 size_t hi) {
  for (size_t i = lo; i < hi; i++) {
    const float gi = g[i], pi = p[i];
    const float mi = 0.9f * 0x1p-7f * (float)m[i] + 0.1f * gi;
    const float vi = 0.999f * 0x1p-7f * (float)v[i] + 0.001f * gi * gi;
    m[i] = q8_stand_in(mi);
    v[i] = q8_stand_in(vi);
    p[i] = 0.999f * pi - 1e-3f * mi;
  }
}

/* The gradients are read, then zeroed in the same tile (the lines are in cache: no read for
 * ownership), as the step zeroes its lp gradients once read. */
static inline void grads_elems(uint16_t *lp, float *hp, size_t lo, size_t hi, float inv_scale) {
  for (size_t i = lo; i < hi; i++) hp[i] = bf16_to_f32(lp[i]) * inv_scale;
  memset(lp + lo, 0, (hi - lo) * sizeof *lp);
}

BOUND_CLONES static void hp_range(uint16_t *lp, float *hp, size_t lo, size_t hi, int zero_lp,
                                  int prefetch) {
  if (!prefetch) {
    hp_elems(lp, hp, lo, hi, zero_lp);
    return;
  }
  for (size_t b = lo; b < hi; b += 4 * BLOCK) {
    const size_t e = b + 4 * BLOCK < hi ? b + 4 * BLOCK : hi;
    for (unsigned k = 0; k < 4 * BLOCK; k += 2 * BLOCK) __builtin_prefetch(lp + b + k + AHEAD, 1);
    for (unsigned k = 0; k < 4 * BLOCK; k += BLOCK) __builtin_prefetch(hp + b + k + AHEAD, 1);
    hp_elems(lp, hp, b, e, zero_lp);
  }
}

void bench_bound_hp(uint16_t *lp, float *hp, size_t n, int zero_lp, int prefetch, int threads) {
  const size_t ns = slabs(n);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t k = 0; k < ns; k++) {
    size_t lo, hi;
    slab(n, k, &lo, &hi);
    hp_range(lp, hp, lo, hi, zero_lp, prefetch);
  }
}

/* AdamW's elements [lo, hi) with moments of es bytes (fp32, bf16 or 8-bit). */
static inline void adam_elems_es(float *p, const float *g, void *m, void *v, size_t es,
                                 size_t lo, size_t hi) {
  if (es == 1)
    adam_elems_q8(p, g, m, v, lo, hi);
  else if (es == 2)
    adam_elems_bf16(p, g, m, v, lo, hi);
  else
    adam_elems(p, g, m, v, lo, hi);
}

/* The moments' lines are prefetched once per line, as p's: every BLOCK * es / 4 elements. */
BOUND_CLONES static void adam_range(float *p, const float *g, void *m, void *v, size_t es,
                                    size_t lo, size_t hi, int prefetch) {
  if (!prefetch) {
    adam_elems_es(p, g, m, v, es, lo, hi);
    return;
  }
  for (size_t b = lo; b < hi; b += BLOCK) {
    const size_t e = b + BLOCK < hi ? b + BLOCK : hi;
    __builtin_prefetch(p + b + AHEAD, 1);
    __builtin_prefetch(g + b + AHEAD);
    if (((b - lo) & (4 / es * BLOCK - 1)) == 0) {
      __builtin_prefetch((char *)m + (b + AHEAD) * es, 1);
      __builtin_prefetch((char *)v + (b + AHEAD) * es, 1);
    }
    adam_elems_es(p, g, m, v, es, b, e);
  }
}

static void adam_slabs(float *p, const float *g, void *m, void *v, size_t es, size_t n,
                       int prefetch, int threads) {
  const size_t ns = slabs(n);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t k = 0; k < ns; k++) {
    size_t lo, hi;
    slab(n, k, &lo, &hi);
    adam_range(p, g, m, v, es, lo, hi, prefetch);
  }
}

void bench_bound_adam(float *p, const float *g, float *m, float *v, size_t n, int prefetch,
                      int threads) {
  adam_slabs(p, g, m, v, 4, n, prefetch, threads);
}

void bench_bound_adam_bf16(float *p, const float *g, uint16_t *m, uint16_t *v, size_t n,
                           int prefetch, int threads) {
  adam_slabs(p, g, m, v, 2, n, prefetch, threads);
}

void bench_bound_adam_q8(float *p, const float *g, uint8_t *m, uint8_t *v, size_t n,
                         int prefetch, int threads) {
  adam_slabs(p, g, m, v, 1, n, prefetch, threads);
}

/* The step's compulsory traffic in tiles small enough for L1/L2: the grads half (lp -> hp,
 * lp = 0) then the Adam half on the same tile, which finds hp in cache. In one pass over
 * all nine arrays the loop ran slower than the captured step on this machine (too many streams
 * at once); tiled, each DRAM stream is still read or written exactly once. The moments are
 * es bytes each: fp32, bf16 or 8-bit (a line per 2 or 4 blocks: prefetched that often, as
 * lp). */
#define STEP_TILE 2048u
BOUND_CLONES static void step_range(uint16_t *lp, float *hp, void *p, size_t ps, void *m,
                                    void *v, size_t es, size_t lo, size_t hi, float inv_scale,
                                    int prefetch) {
  for (size_t b = lo; b < hi; b += STEP_TILE) {
    const size_t e = b + STEP_TILE < hi ? b + STEP_TILE : hi;
    if (prefetch)
      for (size_t k = b; k < e; k += BLOCK) {
        const int half = ((k - b) & (2 * BLOCK - 1)) == 0;
        if (half) __builtin_prefetch(lp + k + STEP_TILE, 1);
        if (ps == 4 || half) __builtin_prefetch((char *)p + (k + STEP_TILE) * ps, 1);
        if (((k - b) & (4 / es * BLOCK - 1)) == 0) {
          __builtin_prefetch((char *)m + (k + STEP_TILE) * es, 1);
          __builtin_prefetch((char *)v + (k + STEP_TILE) * es, 1);
        }
      }
    grads_elems(lp, hp, b, e, inv_scale);
    if (ps == 2)
      adam_elems_bf16p(p, hp, m, v, b, e);
    else if (es == 1)
      adam_elems_q8(p, hp, m, v, b, e);
    else if (es == 2)
      adam_elems_bf16(p, hp, m, v, b, e);
    else
      adam_elems(p, hp, m, v, b, e);
  }
}

static void step_slabs(uint16_t *lp, float *hp, void *p, size_t ps, void *m, void *v, size_t es,
                       size_t n, float inv_scale, int prefetch, int threads) {
  const size_t ns = slabs(n);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t k = 0; k < ns; k++) {
    size_t lo, hi;
    slab(n, k, &lo, &hi);
    step_range(lp, hp, p, ps, m, v, es, lo, hi, inv_scale, prefetch);
  }
}

void bench_bound_step(uint16_t *lp, float *hp, float *p, float *m, float *v, size_t n,
                      float inv_scale, int prefetch, int threads) {
  step_slabs(lp, hp, p, 4, m, v, 4, n, inv_scale, prefetch, threads);
}

void bench_bound_step_bf16(uint16_t *lp, float *hp, float *p, uint16_t *m, uint16_t *v,
                           size_t n, float inv_scale, int prefetch, int threads) {
  step_slabs(lp, hp, p, 4, m, v, 2, n, inv_scale, prefetch, threads);
}

void bench_bound_step_bf16p(uint16_t *lp, float *hp, uint16_t *p, uint16_t *m, uint16_t *v,
                            size_t n, float inv_scale, int prefetch, int threads) {
  step_slabs(lp, hp, p, 2, m, v, 2, n, inv_scale, prefetch, threads);
}

void bench_bound_step_q8(uint16_t *lp, float *hp, float *p, uint8_t *m, uint8_t *v, size_t n,
                         float inv_scale, int prefetch, int threads) {
  step_slabs(lp, hp, p, 4, m, v, 1, n, inv_scale, prefetch, threads);
}

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_settle(int ms) {
  const struct timespec pause = {0, ms * 1000 * 1000};
  nanosleep(&pause, NULL);
}

double bench_bound_best(double bytes, bench_bound_run_fn run, void *ctx) {
  double best = 0.0;
  int counts[2];
  const int nc = bench_bound_thread_counts(bytes, counts);
  bench_settle(BENCH_SETTLE_MS);
  for (int k = 0; k < 2 * BENCH_BOUND_TRIES * nc; k++) {
    const uint64_t t0 = bench_now_ns();
    run(ctx, k & 1, counts[(k >> 1) % nc]);
    const double ms = (double)(bench_now_ns() - t0) / 1e6;
    if (k == 0 || ms < best) best = ms;
  }
  bench_settle(BENCH_SPIN_MS);
  return best;
}

typedef struct adam_bufs {
  float *p, *m, *v;
  const float *g;
  size_t n;
} adam_bufs_t;

static void run_adam(void *ctx, int prefetch, int threads) {
  const adam_bufs_t *b = ctx;
  bench_bound_adam(b->p, b->g, b->m, b->v, b->n, prefetch, threads);
}

double bench_bound_adam_best(float *p, const float *g, float *m, float *v, size_t n) {
  adam_bufs_t b = {p, m, v, g, n};
  return bench_bound_best(BENCH_BOUND_ADAM_BYTES * (double)n, run_adam, &b);
}
