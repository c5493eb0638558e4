#include "cpu_sync.h"

#include <time.h>

int cpu_notifier_init(cpu_notifier_t *n) {
  int rc = pthread_mutex_init(&n->mutex, NULL);
  if (rc != 0) return rc;
  rc = pthread_cond_init(&n->cond, NULL);
  if (rc != 0) {
    pthread_mutex_destroy(&n->mutex);
    return rc;
  }
  atomic_init(&n->waiters, 0u);
  return 0;
}

void cpu_notifier_destroy(cpu_notifier_t *n) {
  pthread_cond_destroy(&n->cond);
  pthread_mutex_destroy(&n->mutex);
}

void cpu_notifier_wait(cpu_notifier_t *n, cpu_ready_fn ready, void *arg) {
  for (unsigned i = 0; i < CPU_SPIN_ITERATIONS; ++i) {
    if (ready(arg)) return;
    cpu_relax();
  }
  pthread_mutex_lock(&n->mutex);
  atomic_fetch_add(&n->waiters, 1u);
  while (!ready(arg)) pthread_cond_wait(&n->cond, &n->mutex);
  atomic_fetch_sub(&n->waiters, 1u);
  pthread_mutex_unlock(&n->mutex);
}

void cpu_notifier_notify(cpu_notifier_t *n) {
  /* Orders the caller's store of the condition before this load (see cpu_sync.h). */
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load(&n->waiters) == 0u) return;
  pthread_mutex_lock(&n->mutex);
  pthread_cond_broadcast(&n->cond);
  pthread_mutex_unlock(&n->mutex);
}

uint64_t cpu_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
