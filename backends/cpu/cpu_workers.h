/*
 * Per-device thread pool of the CPU backend.
 *
 * A pool of `size` threads runs one data-parallel job at a time: [0, total) is cut into
 * `parts` contiguous ranges, part i = [total*i/parts, total*(i+1)/parts), and the ranges are
 * handed out to the size-1 helper threads and to the calling thread (a stream worker), which
 * takes part in the work. The pool does not spin: helpers sleep on a condition variable
 * between jobs, so only launches large enough to amortise a wake-up should use it.
 *
 * When the pool is already running another caller's job (two streams launching at once), the
 * new job runs entirely on its calling thread instead of queueing behind the other one: every
 * user of the pool guarantees that results do not depend on the split.
 */
#ifndef ACCEL_CPU_WORKERS_H
#define ACCEL_CPU_WORKERS_H

#include <stdint.h>

/* Upper bound on the pool size (ACCEL_CPU_THREADS is clamped to it). */
#define CPU_POOL_MAX_THREADS 1024u

typedef struct cpu_workers cpu_workers_t;

/* Runs the half-open range [begin, end) of a job. */
typedef void (*cpu_range_fn)(void *ctx, uint64_t begin, uint64_t end);

/* Creates a pool of `size` threads in all (size - 1 helpers; size is clamped
 * to [1, CPU_POOL_MAX_THREADS]). Returns 0, or the
 * errno value of the failing call, whose name is stored in *failed_call. */
int cpu_workers_create(unsigned size, cpu_workers_t **out, const char **failed_call);

/* Joins the helpers. No job may be running. */
void cpu_workers_destroy(cpu_workers_t *pool);

/* Threads in the pool, counting the caller of cpu_workers_run. */
unsigned cpu_workers_size(const cpu_workers_t *pool);

/* Runs fn over [0, total) split into `parts` ranges (clamped to [1, min(size, total)]) and
 * returns when every range ran. total = 0 runs nothing. */
void cpu_workers_run(cpu_workers_t *pool, cpu_range_fn fn, void *ctx, uint64_t total,
                     unsigned parts);

#endif
