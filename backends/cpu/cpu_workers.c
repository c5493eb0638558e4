#include "cpu_workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu_sync.h"

/* cpu_workers_t.job: the number of the current job with this bit while it takes helpers. */
#define JOB_OPEN 1u

struct cpu_workers {
  unsigned size;     /* threads, counting the caller of cpu_workers_run */
  unsigned nhelpers; /* helper threads actually started */
  pthread_t *helpers;
  /* Held by the caller that owns the pool for the duration of one job (taken with trylock). */
  pthread_mutex_t dispatch;
  cpu_notifier_t work; /* helpers wait here: a job opened, or shutdown */
  cpu_notifier_t done; /* the caller waits here: every unit done and no helper inside */
  atomic_uint_fast64_t job;
  atomic_int shutdown;
  /* Helpers inside the open job. A helper counts itself in, then checks that the job is still
   * open; the caller closes the job, then waits for none inside (Dekker, seq_cst): a helper
   * either sees the job closed and backs off, or the caller waits for it. So the fields below
   * change only while no helper reads them. */
  atomic_uint in;
  /* The job, written by the caller while no helper is inside. */
  cpu_range_fn fn;
  void *ctx;
  uint64_t total, min_grain;
  unsigned parts;
  atomic_uint joined;                /* helpers that took part (at most parts - 1) */
  atomic_uint_fast64_t next;         /* the first unit not yet claimed */
  atomic_uint_fast64_t units_done;
};

/* Claims and runs ranges of the job's units until none is left. Guided: each claim takes a
 * share of what remains (at least min_grain units), so threads given unequal units (chunks of
 * different sizes) still end together, with a few atomic operations per job. */
static void run_units(cpu_workers_t *pool) {
  const uint64_t total = pool->total;
  for (;;) {
    const uint64_t left = total - atomic_load_explicit(&pool->next, memory_order_relaxed);
    uint64_t grain = left / (2u * pool->parts);
    if (grain < pool->min_grain) grain = pool->min_grain;
    const uint64_t b = atomic_fetch_add(&pool->next, grain);
    if (b >= total) return;
    const uint64_t e = total - b > grain ? b + grain : total;
    pool->fn(pool->ctx, b, e);
    atomic_fetch_add(&pool->units_done, e - b);
  }
}

typedef struct helper_wait {
  cpu_workers_t *pool;
  uint64_t seen; /* the last job this helper looked at */
} helper_wait_t;

static int job_or_shutdown(void *arg) {
  const helper_wait_t *w = arg;
  const uint64_t job = atomic_load(&w->pool->job);
  return atomic_load(&w->pool->shutdown) || ((job & JOB_OPEN) && job != w->seen);
}

static void leave(cpu_workers_t *pool) {
  atomic_fetch_sub(&pool->in, 1u);
  cpu_notifier_notify(&pool->done);
}

static void *helper_main(void *arg) {
  helper_wait_t w = {arg, 0};
  cpu_workers_t *pool = w.pool;
  for (;;) {
    cpu_notifier_wait(&pool->work, job_or_shutdown, &w);
    if (atomic_load(&pool->shutdown)) return NULL;
    const uint64_t job = atomic_load(&pool->job);
    if (!(job & JOB_OPEN) || job == w.seen) continue;
    w.seen = job;
    atomic_fetch_add(&pool->in, 1u);
    if (atomic_load(&pool->job) == job && atomic_fetch_add(&pool->joined, 1u) + 1u < pool->parts)
      run_units(pool);
    leave(pool);
  }
}

static int finished(void *arg) {
  cpu_workers_t *pool = arg;
  return atomic_load(&pool->units_done) == pool->total && atomic_load(&pool->in) == 0u;
}

static void stop_helpers(cpu_workers_t *pool) {
  atomic_store(&pool->shutdown, 1);
  cpu_notifier_notify(&pool->work);
  for (unsigned i = 0; i < pool->nhelpers; ++i) pthread_join(pool->helpers[i], NULL);
}

static void free_pool(cpu_workers_t *pool) {
  cpu_notifier_destroy(&pool->done);
  cpu_notifier_destroy(&pool->work);
  pthread_mutex_destroy(&pool->dispatch);
  free(pool->helpers);
  free(pool);
}

int cpu_workers_create(unsigned size, uint64_t spin_ns, cpu_workers_t **out,
                       const char **failed_call) {
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
  int rc = cpu_notifier_init(&pool->work, spin_ns);
  if (rc == 0) {
    rc = cpu_notifier_init(&pool->done, spin_ns);
    if (rc != 0) cpu_notifier_destroy(&pool->work);
  }
  if (rc != 0) {
    free(pool->helpers);
    free(pool);
    *failed_call = "pthread_mutex_init/pthread_cond_init";
    return rc;
  }
  pthread_mutex_init(&pool->dispatch, NULL); /* default attributes: cannot fail on glibc/musl */
  for (unsigned i = 0; i + 1u < pool->size; ++i) {
    rc = pthread_create(&pool->helpers[i], NULL, helper_main, pool);
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
                     unsigned parts, uint64_t min_grain) {
  if (total == 0) return;
  if (parts > pool->size) parts = pool->size;
  if (parts > total) parts = (unsigned)total;
  if (parts <= 1u || pthread_mutex_trylock(&pool->dispatch) != 0) {
    fn(ctx, 0, total);
    return;
  }
  pool->fn = fn;
  pool->ctx = ctx;
  pool->total = total;
  pool->min_grain = min_grain ? min_grain : 1u;
  pool->parts = parts;
  atomic_store(&pool->joined, 0u);
  atomic_store(&pool->next, 0u);
  atomic_store(&pool->units_done, 0u);
  /* open the job (a new number: helpers take part in each job once) */
  const uint64_t job = (atomic_load(&pool->job) | JOB_OPEN) + 2u;
  atomic_store(&pool->job, job);
  cpu_notifier_notify(&pool->work);
  run_units(pool);
  atomic_store(&pool->job, job & ~(uint64_t)JOB_OPEN);
  cpu_notifier_wait(&pool->done, finished, pool);
  pthread_mutex_unlock(&pool->dispatch);
}
