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
/* AdamW alone with a state format: the same streams with bf16 moments (12 + 8 bytes) and with
 * 8-bit ones (codes, the block scales left out: 10 + 6 bytes). */
void bench_bound_adam_bf16(float *p, const float *g, uint16_t *m, uint16_t *v, size_t n,
                           int prefetch, int threads);
void bench_bound_adam_q8(float *p, const float *g, uint8_t *m, uint8_t *v, size_t n,
                         int prefetch, int threads);
/* The optimizer step's compulsory traffic, each array once: reads the bf16 grads lp and p, m, v
 * (fp32); writes lp (zeroed, in place), hp (fp32) and p, m, v in place: 14 + 18 bytes. */
void bench_bound_step(uint16_t *lp, float *hp, float *p, float *m, float *v, size_t n,
                      float inv_scale, int prefetch, int threads);
/* The same with bf16 moments m, v (the step with bf16 optimizer state): 10 + 14 bytes. */
void bench_bound_step_bf16(uint16_t *lp, float *hp, float *p, uint16_t *m, uint16_t *v,
                           size_t n, float inv_scale, int prefetch, int threads);
/* The same with bf16 master weights p too (the step with BF16 params): 8 + 12 bytes. */
void bench_bound_step_bf16p(uint16_t *lp, float *hp, uint16_t *p, uint16_t *m, uint16_t *v,
                            size_t n, float inv_scale, int prefetch, int threads);
/* The same with 8-bit moments (codes; the block scales left out): 8 + 12 bytes. */
void bench_bound_step_q8(uint16_t *lp, float *hp, float *p, uint8_t *m, uint8_t *v, size_t n,
                         float inv_scale, int prefetch, int threads);
/* Bytes per element each bound moves (read + written). */
#define BENCH_BOUND_READ_BYTES 4.0
#define BENCH_BOUND_READ_BF16_BYTES 2.0
#define BENCH_BOUND_HP_BYTES(zero_lp) ((zero_lp) ? 12.0 : 10.0)
#define BENCH_BOUND_ADAM_BYTES 28.0
#define BENCH_BOUND_ADAM_BF16_BYTES 20.0
/* the 8-bit AdamW's: the codes' 4 bytes and the scales' 16 per 256 elements */
#define BENCH_BOUND_ADAM_Q8_BYTES (16.0 + 16.0 / 256.0)
#define BENCH_BOUND_STEP_BYTES 32.0
#define BENCH_BOUND_STEP_BF16_BYTES 24.0
#define BENCH_BOUND_STEP_BF16P_BYTES 20.0
/* the 8-bit step's: the codes' 4 bytes and the scales' 16 per 256 elements */
#define BENCH_BOUND_STEP_Q8_BYTES (20.0 + 16.0 / 256.0)
/* Every CPU's thread (1 without OpenMP). */
int bench_baseline_threads(void);
/* The thread counts a bound of `bytes` (read + written) is tried with: every CPU; and one
 * thread too below BENCH_BOUND_SMALL_BYTES, where a run takes well under a millisecond and the
 * cost of waking and joining a team (a scheduler time slice when another job holds a core) can
 * exceed the loop itself — the kernels' small launches run on one thread for the same reason.
 * Fills counts[0..1] and returns how many. */
#define BENCH_BOUND_SMALL_BYTES (64.0 * 1048576.0)
int bench_bound_thread_counts(double bytes, int counts[2]);

/* Sampling a bound (also for processes without accel-bench, see bench_bound_adam_best). */
/* Monotonic clock in nanoseconds. */
uint64_t bench_now_ns(void);

/* Runs of each form of a bound loop (plain, prefetching) per round; the round's bound is the
 * fastest. A bound is the best the loop achieves: a run slowed by a neighbour on this shared
 * machine says nothing about it, while a kernel's one run per round is what it is (this errs
 * on the side of a higher bound, never a lower one). More tries do not make it a sharper
 * ruler on these machines: with 3 the quiet campaign of issue 30 put every kernel 2-5 points
 * lower and still saw single runs' medians at 100.1% (with 2: one at 101.1%), since the
 * bandwidth itself flips between phases (docs/PERFORMANCE.md, section 16). */
#define BENCH_BOUND_TRIES 2

/* Sleeps ms milliseconds around a bound sample. Before it (5 ms), so that threads of the
 * device's runtime that may still spin after the previous sample's last command are asleep: a
 * bound is the best the loop achieves with the CPUs to itself. (A precaution: on PoCL the bound
 * was as slow with it as without under the load of the day; not measured on a quiet machine.)
 * The tries of a sample then run back to back: after the pause the loop's own threads are
 * asleep too, and only the first try pays for waking them, which on small working sets is most
 * of a run. After it (10 ms), so that the bound loops' OpenMP threads, which spin for a while
 * after every run (libgomp's default wait policy; 3.7 ms of CPU here), are asleep when the
 * next sample starts: without it the 24 MiB rows of `kernels` measured their kernels 2-7x
 * slower than under OMP_WAIT_POLICY=passive (norm: 7.3 vs 1.1 ms on the CPU backend, 10.4 vs
 * 1.6 ms on PoCL; one pair of runs each, machine under load). */
void bench_settle(int ms);
/* One bound sample: BENCH_BOUND_TRIES runs of run(ctx, prefetch, threads) for each form (plain,
 * prefetching) and each thread count of bench_bound_thread_counts(bytes), between two
 * bench_settle pauses; returns the fastest run in ms. */
typedef void (*bench_bound_run_fn)(void *ctx, int prefetch, int threads);
double bench_bound_best(double bytes, bench_bound_run_fn run, void *ctx);

/* One bound sample of AdamW's streams (bench_bound_adam) on the caller's buffers, taken as
 * bench_bound_best takes it: ms. For a process that has no accel-bench of its own, the DeepSpeed
 * peer (tools/deepspeed_peer.py loads the module accel_bench_bound.so with ctypes), so that its
 * bound is the same loop, sampled the same way, as accel-bench's. */
double bench_bound_adam_best(float *p, const float *g, float *m, float *v, size_t n);

#endif
