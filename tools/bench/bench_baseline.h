/*
 * Bandwidth bounds: for every kernel and for the optimizer step, a plain loop moving the same
 * streams (the same count of arrays read and written, the same element sizes, written in place
 * where the kernel writes in place) with trivial arithmetic, vectorised (-O3 -ffast-math) and
 * split over every thread (OpenMP when the compiler has it). Each comes in two forms, with and
 * without a software prefetch ahead of every stream, on `threads` threads (every CPU:
 * bench_baseline_threads(); small working sets also on one, see bench_bound_thread_counts); a
 * scenario takes the fastest in every round, so the bound is the best these loops achieve on
 * this machine at that moment.
 * They are compiled on their own (tools/bench/meson.build) and write into the caller's buffers.
 */
#ifndef ACCEL_BENCH_BASELINE_H
#define ACCEL_BENCH_BASELINE_H

#include <stddef.h>
#include <stdint.h>

/* Reads x[0..n) (fp32): the sum of squares, returned so it cannot be optimised away. */
double bench_bound_read(const float *x, size_t n, int prefetch, int threads);
/* Reads x[0..n) (bf16): the sum of squares of the widened values. */
double bench_bound_read_bf16(const uint16_t *x, size_t n, int prefetch, int threads);
/* update_hp_grads: hp[i] += float(lp[i]) (bf16 -> fp32); with zero_lp also lp[i] = 0.
 * Reads 2 + 4 bytes, writes 4 (+ 2) bytes per element, in place. */
void bench_bound_hp(uint16_t *lp, float *hp, size_t n, int zero_lp, int prefetch, int threads);
/* AdamW's streams: reads p, g, m, v and writes p, m, v in place (fp32: 16 + 12 bytes). */
void bench_bound_adam(float *p, const float *g, float *m, float *v, size_t n, int prefetch,
                      int threads);
/* The optimizer step's compulsory traffic, each array once: reads the bf16 grads lp and p, m, v
 * (fp32); writes lp (zeroed, in place), hp (fp32) and p, m, v in place: 14 + 18 bytes. */
void bench_bound_step(uint16_t *lp, float *hp, float *p, float *m, float *v, size_t n,
                      float inv_scale, int prefetch, int threads);
/* Bytes per element each bound moves (read + written). */
#define BENCH_BOUND_READ_BYTES 4.0
#define BENCH_BOUND_READ_BF16_BYTES 2.0
#define BENCH_BOUND_HP_BYTES(zero_lp) ((zero_lp) ? 12.0 : 10.0)
#define BENCH_BOUND_ADAM_BYTES 28.0
#define BENCH_BOUND_STEP_BYTES 32.0
/* Every CPU's thread (1 without OpenMP). */
int bench_baseline_threads(void);
/* The thread counts a bound of `bytes` (read + written) is tried with: every CPU; and one
 * thread too below BENCH_BOUND_SMALL_BYTES, where a run takes well under a millisecond and the
 * cost of waking and joining a team (a scheduler time slice when another job holds a core) can
 * exceed the loop itself — the kernels' small launches run on one thread for the same reason.
 * Fills counts[0..1] and returns how many. */
#define BENCH_BOUND_SMALL_BYTES (64.0 * 1048576.0)
int bench_bound_thread_counts(double bytes, int counts[2]);

#endif
