/*
 * Waiting primitives of the CPU backend.
 *
 * A cpu_notifier_t lets a thread wait for a condition that another thread makes true with a
 * plain atomic store. The waiter spins briefly (most waits on a busy stream are short), then
 * sleeps on a condition variable; the notifier only touches the mutex when someone sleeps, so
 * the common "nobody is waiting" path costs one atomic load.
 *
 * Lost wake-ups are impossible because both sides use sequentially consistent operations in
 * opposite order (Dekker): the waiter raises `waiters` and then re-checks the condition, the
 * notifier makes the condition true and then reads `waiters`. At least one of them sees the
 * other's write; a notifier that sees a waiter broadcasts under the mutex, which the waiter
 * holds from its re-check until pthread_cond_wait releases it.
 */
#ifndef ACCEL_CPU_SYNC_H
#define ACCEL_CPU_SYNC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Spin iterations before a waiter goes to sleep (roughly tens of microseconds). */
#define CPU_SPIN_ITERATIONS 4000u

typedef struct cpu_notifier {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  atomic_uint waiters;
} cpu_notifier_t;

/* Returns nonzero once the awaited condition holds; must use seq_cst (default) atomic loads. */
typedef int (*cpu_ready_fn)(void *arg);

/* 0 on success, else an errno value from pthread_*_init. */
int cpu_notifier_init(cpu_notifier_t *n);
void cpu_notifier_destroy(cpu_notifier_t *n);

/* Returns once ready(arg) is true: spins up to CPU_SPIN_ITERATIONS checks, then sleeps. */
void cpu_notifier_wait(cpu_notifier_t *n, cpu_ready_fn ready, void *arg);

/* Call after making a condition true (with a seq_cst store): wakes sleeping waiters. */
void cpu_notifier_notify(cpu_notifier_t *n);

/* One pause of a spin loop (PAUSE / YIELD instruction where there is one). */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t cpu_monotonic_ns(void);

#endif
