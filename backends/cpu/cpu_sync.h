/*
 * Waiting primitives of the CPU backend.
 *
 * A cpu_notifier_t lets a thread wait for a condition that another thread makes true with a
 * plain atomic store. The waiter spins briefly (most waits on a busy stream are short), then
 * sleeps on a condition variable; the notifier only touches the mutex when someone sleeps, so
 * the common "nobody is waiting" path costs one atomic load.
 *
 * Lost wake-ups are impossible because both sides order their two steps with sequentially
 * consistent operations, in opposite order (Dekker): the waiter raises `waiters` and then
 * re-checks the condition, the notifier makes the condition true and then, after a seq_cst
 * fence, reads `waiters`. At least one of them sees the other's write; a notifier that sees a
 * waiter broadcasts under the mutex, which the waiter holds from its re-check until
 * pthread_cond_wait releases it.
 *
 * Levels: a condition that is a counter reaching a target (a stream's completed commands)
 * would otherwise wake every sleeper on every increment, and each wake-up is a context switch
 * that steals a core from the work being waited for (MPI progress in a collective, on a
 * 2-core machine). A sleeper publishes the level it needs in `wake_at` (the minimum over
 * sleepers); a notify with a lower level does not wake anyone. A notify that wakes the
 * sleepers resets `wake_at` to UINT64_MAX, and each of them publishes its level again before it
 * re-checks its condition, so the notifies that come before they run cost no system call.
 * `wake_at` follows the same Dekker order as `waiters`.
 */
#ifndef ACCEL_CPU_SYNC_H
#define ACCEL_CPU_SYNC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* How long a waiter spins before it sleeps: about the cost of a sleep and wake-up. Bounded
 * in time, not iterations: 4000 PAUSEs took 105 us on an AMD EPYC (more on Intel since
 * Skylake), long enough for a waiter to take a core from the work it waits for. A process
 * bound to one CPU (an MPI rank bound to a core) does not spin at all: the thread that would
 * end the wait needs the very core the spinner holds. */
#define CPU_SPIN_NS 20000u

/* The spin budget of notifiers created by this thread: CPU_SPIN_NS, or 0 when it may run on
 * one CPU only. */
uint64_t cpu_spin_budget_ns(void);

typedef struct cpu_notifier {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  atomic_uint waiters;
  atomic_uint_least64_t wake_at; /* lowest level a sleeper needs; UINT64_MAX: none */
  uint64_t spin_ns;              /* how long a waiter spins before it sleeps */
} cpu_notifier_t;

/* Returns nonzero once the awaited condition holds; must use seq_cst (default) atomic loads. */
typedef int (*cpu_ready_fn)(void *arg);

/* 0 on success, else an errno value from pthread_*_init. Waiters spin for spin_ns. */
int cpu_notifier_init(cpu_notifier_t *n, uint64_t spin_ns);
void cpu_notifier_destroy(cpu_notifier_t *n);

/* Returns once ready(arg) is true: spins up to the notifier's spin_ns, then sleeps until
 * a notify of level >= level finds ready(arg) true. */
void cpu_notifier_wait_level(cpu_notifier_t *n, cpu_ready_fn ready, void *arg, uint64_t level);
static inline void cpu_notifier_wait(cpu_notifier_t *n, cpu_ready_fn ready, void *arg) {
  cpu_notifier_wait_level(n, ready, arg, 0);
}

/* Call after making a condition true (with an atomic store: a relaxed or release one is
 * enough, the seq_cst fence this begins with orders it before the loads of the protocol),
 * with the level it reached: wakes the sleepers that wait for that level or a lower one. */
void cpu_notifier_notify_level(cpu_notifier_t *n, uint64_t level);
static inline void cpu_notifier_notify(cpu_notifier_t *n) {
  cpu_notifier_notify_level(n, UINT64_MAX);
}

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
