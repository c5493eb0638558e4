/*
 * Per-device thread pool of the CPU backend.
 *
 * A pool of `size` threads runs one data-parallel job at a time over units [0, total): the
 * calling thread (a stream worker) and up to parts - 1 helpers claim ranges of units with an
 * atomic counter until none is left (guided: each claim a share of what remains), so threads
 * that drew heavier units (chunks of different sizes) still finish together. Helpers that
 * finish a job spin briefly for the next one (cpu_sync.h), then sleep: back-to-back jobs (the
 * steps of a graph replay) hand work over without a system call; only a job after a pause pays
 * a wake-up.
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

/* Creates a pool of `size` threads in all (size - 1 helpers; size is clamped to [1,
 * CPU_POOL_MAX_THREADS]) whose helpers spin spin_ns before they sleep. Returns 0, or the errno
 * value of the failing call, whose name is stored in *failed_call. */
int cpu_workers_create(unsigned size, uint64_t spin_ns, cpu_workers_t **out,
                       const char **failed_call);

/* Joins the helpers. No job may be running. */
void cpu_workers_destroy(cpu_workers_t *pool);

/* Threads in the pool, counting the caller of cpu_workers_run. */
unsigned cpu_workers_size(const cpu_workers_t *pool);

/* Runs fn over ranges covering [0, total) once, on at most `parts` threads (clamped to [1,
 * min(size, total)]), each range at least min_grain units long (but the last), and returns
 * when every range ran. total = 0 runs nothing. */
void cpu_workers_run(cpu_workers_t *pool, cpu_range_fn fn, void *ctx, uint64_t total,
                     unsigned parts, uint64_t min_grain);

#endif
