#include "cpu_sync.h"

#include <time.h>

#include "cpu_sysinfo.h"

uint64_t cpu_spin_budget_ns(void) { return cpu_sysinfo_usable_cpus() > 1 ? CPU_SPIN_NS : 0; }

int cpu_notifier_init(cpu_notifier_t *n, uint64_t spin_ns) {
  int rc = pthread_mutex_init(&n->mutex, NULL);
  if (rc != 0) return rc;
  rc = pthread_cond_init(&n->cond, NULL);
  if (rc != 0) {
    pthread_mutex_destroy(&n->mutex);
    return rc;
  }
  atomic_init(&n->waiters, 0u);
  atomic_init(&n->wake_at, UINT64_MAX);
  n->spin_ns = spin_ns;
  return 0;
}

void cpu_notifier_destroy(cpu_notifier_t *n) {
  pthread_cond_destroy(&n->cond);
  pthread_mutex_destroy(&n->mutex);
}

void cpu_notifier_wait_level(cpu_notifier_t *n, cpu_ready_fn ready, void *arg, uint64_t level) {
  if (ready(arg)) return;
  const uint64_t spin_end = n->spin_ns ? cpu_monotonic_ns() + n->spin_ns : 0;
  for (unsigned i = 1; spin_end; ++i) {
    if (ready(arg)) return;
    if (i % 16u == 0 && cpu_monotonic_ns() >= spin_end) break;
    cpu_relax();
  }
  pthread_mutex_lock(&n->mutex);
  atomic_fetch_add(&n->waiters, 1u);
  for (;;) {
    /* (re)published under the mutex: a notify that woke everyone reset it to UINT64_MAX */
    if (level < atomic_load(&n->wake_at)) atomic_store(&n->wake_at, level);
    if (ready(arg)) break;
    pthread_cond_wait(&n->cond, &n->mutex);
  }
  atomic_fetch_sub(&n->waiters, 1u);
  pthread_mutex_unlock(&n->mutex);
}

void cpu_notifier_notify_level(cpu_notifier_t *n, uint64_t level) {
  /* Orders the caller's store of the condition before these loads (see cpu_sync.h). */
  atomic_thread_fence(memory_order_seq_cst);
  /* wake_at is UINT64_MAX also between a wake-up and the moment the woken sleepers run:
   * notifies in between (a producer enqueueing many commands) need no system call */
  const uint64_t wake_at = atomic_load(&n->wake_at);
  if (atomic_load(&n->waiters) == 0u || wake_at == UINT64_MAX || level < wake_at) return;
  pthread_mutex_lock(&n->mutex);
  atomic_store(&n->wake_at, UINT64_MAX);
  pthread_cond_broadcast(&n->cond);
  pthread_mutex_unlock(&n->mutex);
}

uint64_t cpu_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
