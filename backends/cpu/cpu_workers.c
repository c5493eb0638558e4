#include "cpu_workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct cpu_workers {
  unsigned size;       /* threads, counting the caller of cpu_workers_run */
  unsigned nhelpers;   /* helper threads actually started */
  pthread_t *helpers;
  /* Held by the caller that owns the pool for the duration of one job (taken with trylock). */
  pthread_mutex_t dispatch;
  /* Protects everything below. */
  pthread_mutex_t mutex;
  pthread_cond_t work_cv; /* helpers: a job was published or shutdown */
  pthread_cond_t done_cv; /* caller: the last part finished */
  int shutdown;
  cpu_range_fn fn;
  void *ctx;
  uint64_t total;
  unsigned parts;      /* 0 when no job is published */
  unsigned next_part;
  unsigned parts_done;
};

static void range_of(uint64_t total, unsigned parts, unsigned i, uint64_t *b, uint64_t *e) {
  /* No overflow: parts <= CPU_POOL_MAX_THREADS (2^10) and total < 2^53 (bytes or blocks). */
  *b = total * i / parts;
  *e = total * (i + 1u) / parts;
}

/* Takes and runs parts of the published job until none is left. Called with pool->mutex held;
 * returns with it held. */
static void run_parts_locked(cpu_workers_t *pool) {
  while (pool->next_part < pool->parts) {
    unsigned i = pool->next_part++;
    cpu_range_fn fn = pool->fn;
    void *ctx = pool->ctx;
    uint64_t b, e;
    range_of(pool->total, pool->parts, i, &b, &e);
    pthread_mutex_unlock(&pool->mutex);
    fn(ctx, b, e);
    pthread_mutex_lock(&pool->mutex);
    if (++pool->parts_done == pool->parts) pthread_cond_signal(&pool->done_cv);
  }
}

static void *helper_main(void *arg) {
  cpu_workers_t *pool = arg;
  pthread_mutex_lock(&pool->mutex);
  for (;;) {
    run_parts_locked(pool);
    if (pool->shutdown) break;
    pthread_cond_wait(&pool->work_cv, &pool->mutex);
  }
  pthread_mutex_unlock(&pool->mutex);
  return NULL;
}

static void stop_helpers(cpu_workers_t *pool) {
  pthread_mutex_lock(&pool->mutex);
  pool->shutdown = 1;
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->mutex);
  for (unsigned i = 0; i < pool->nhelpers; ++i) pthread_join(pool->helpers[i], NULL);
}

static void free_pool(cpu_workers_t *pool) {
  pthread_cond_destroy(&pool->done_cv);
  pthread_cond_destroy(&pool->work_cv);
  pthread_mutex_destroy(&pool->mutex);
  pthread_mutex_destroy(&pool->dispatch);
  free(pool->helpers);
  free(pool);
}

int cpu_workers_create(unsigned size, cpu_workers_t **out, const char **failed_call) {
  cpu_workers_t *pool = calloc(1, sizeof(*pool));
  if (pool == NULL) {
    *failed_call = "calloc";
    return ENOMEM;
  }
  pool->size = size < 1u ? 1u : size > CPU_POOL_MAX_THREADS ? CPU_POOL_MAX_THREADS : size;
  if (pool->size > 1u) {
    pool->helpers = calloc(pool->size - 1u, sizeof(pthread_t));
    if (pool->helpers == NULL) {
      free(pool);
      *failed_call = "calloc";
      return ENOMEM;
    }
  }
  /* Default-attribute mutex/cond initialisation cannot fail on glibc/musl. */
  pthread_mutex_init(&pool->dispatch, NULL);
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->work_cv, NULL);
  pthread_cond_init(&pool->done_cv, NULL);
  for (unsigned i = 0; i + 1u < pool->size; ++i) {
    int rc = pthread_create(&pool->helpers[i], NULL, helper_main, pool);
    if (rc != 0) {
      stop_helpers(pool);
      free_pool(pool);
      *failed_call = "pthread_create";
      return rc;
    }
    pool->nhelpers++;
    pthread_setname_np(pool->helpers[i], "accel-cpu-pool");
  }
  *out = pool;
  return 0;
}

void cpu_workers_destroy(cpu_workers_t *pool) {
  stop_helpers(pool);
  free_pool(pool);
}

unsigned cpu_workers_size(const cpu_workers_t *pool) { return pool->size; }

void cpu_workers_run(cpu_workers_t *pool, cpu_range_fn fn, void *ctx, uint64_t total,
                     unsigned parts) {
  if (total == 0) return;
  if (parts > pool->size) parts = pool->size;
  if (parts > total) parts = (unsigned)total;
  if (parts <= 1u || pthread_mutex_trylock(&pool->dispatch) != 0) {
    fn(ctx, 0, total);
    return;
  }
  pthread_mutex_lock(&pool->mutex);
  pool->fn = fn;
  pool->ctx = ctx;
  pool->total = total;
  pool->parts = parts;
  pool->next_part = 0;
  pool->parts_done = 0;
  pthread_cond_broadcast(&pool->work_cv);
  run_parts_locked(pool);
  while (pool->parts_done < pool->parts) pthread_cond_wait(&pool->done_cv, &pool->mutex);
  pool->parts = 0;
  pool->next_part = 0;
  pthread_mutex_unlock(&pool->mutex);
  pthread_mutex_unlock(&pool->dispatch);
}
