/*
 * Host functions on a plugin-owned thread.
 *
 * cuLaunchHostFunc's callback "must not make any CUDA API calls" (cuda.h; HIP's likewise),
 * but accel promises that a host function may call every API function that does not wait for
 * its own stream (docs/API.md): allocate, free, create and destroy streams and events, launch
 * on other streams. So the vendor callback only hands the function to a thread of this plugin,
 * and the stream waits for the function's end on a flag in pinned host memory:
 *
 *   WriteValue32(flag, 0)  ->  LaunchHostFunc(trampoline)  ->  WaitValue32(flag == 1)
 *
 * The trampoline queues the job and returns at once (no vendor call); a worker thread runs
 * fn(user) and then stores 1 into the flag, which releases the stream. Stream memory
 * operations are capturable, so a captured host function is the same three nodes and every
 * replay resets the flag first. Workers are a cached pool: a job never waits behind another
 * job that blocks (a host function may wait for another stream's host function), a thread
 * idle for GPU_HOSTFN_IDLE_S seconds exits.
 *
 * Flags: an eager stream has one (its host functions run one after another in stream order,
 * and each one's reset is ordered after the previous wait); a graph has one per host-function
 * node, with a job that lives as long as the graph (replays of one executable graph are
 * serialised by the driver). Without the stream memory operations (an old HIP), host
 * functions run on the driver's thread as before and the first one logs a warning: they must
 * not call accel there.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "gpu_backend.h"
#include "service_thread.h"

#define GPU_HOSTFN_IDLE_S 30

struct gpu_hostfn_job {
  accel_host_fn_t fn;
  void *user;
  const int32_t *pred; /* inside a conditional region: fn runs iff it reads nonzero */
  uint32_t *flag;  /* pinned: the stream waits until it reads 1 */
  int persistent;  /* a graph node's: kept for every replay, freed with the graph */
  gpu_hostfn_job_t *next;
};

static struct {
  pthread_mutex_t lock;
  pthread_cond_t ready;
  pthread_cond_t gone; /* a worker exited */
  gpu_hostfn_job_t *head, *tail;
  int queued;  /* jobs in the queue: each has an idle thread of its own or gets a new one */
  int idle, threads, stopping;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
            NULL, NULL, 0, 0, 0, 0};

/* fn(user), unless the job's region is not taken (its slot, written by the stream's kernels
 * before this point of the stream, reads 0). */
static void run_job(const gpu_hostfn_job_t *job) {
  if (!job->pred || __atomic_load_n(job->pred, __ATOMIC_ACQUIRE) != 0) job->fn(job->user);
}

static void *worker_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&pool.lock);
  for (;;) {
    while (!pool.head && !pool.stopping) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_sec += GPU_HOSTFN_IDLE_S;
      pool.idle++;
      int r = pthread_cond_timedwait(&pool.ready, &pool.lock, &until);
      pool.idle--;
      if (r != 0 && !pool.head) break;
    }
    gpu_hostfn_job_t *job = pool.head;
    if (!job) break;
    pool.head = job->next;
    if (!pool.head) pool.tail = NULL;
    pool.queued--;
    pthread_mutex_unlock(&pool.lock);
    run_job(job);
    uint32_t *flag = job->flag;
    if (!job->persistent) free(job);
    __atomic_store_n(flag, 1u, __ATOMIC_SEQ_CST); /* releases the stream */
    pthread_mutex_lock(&pool.lock);
  }
  pool.threads--;
  pthread_cond_broadcast(&pool.gone);
  pthread_mutex_unlock(&pool.lock);
  return NULL;
}

/* The vendor callback: on the driver's thread, where no vendor call is allowed. */
static void trampoline(void *arg) {
  gpu_hostfn_job_t *job = arg;
  pthread_mutex_lock(&pool.lock);
  job->next = NULL;
  if (pool.tail) pool.tail->next = job;
  else pool.head = job;
  pool.tail = job;
  pool.queued++;
  int spawned = 1;
  if (pool.queued <= pool.idle) {
    pthread_cond_signal(&pool.ready);
  } else {
    spawned = accel_service_thread_start(worker_main, NULL);
    if (spawned) pool.threads++;
  }
  if (!spawned && pool.threads == 0) {
    /* no thread at all: run it here rather than leave the stream waiting forever (it is the
     * only job queued: with no thread, every earlier one was taken the same way) */
    pool.head = job->next;
    if (!pool.head) pool.tail = NULL;
    pool.queued--;
    pthread_mutex_unlock(&pool.lock);
    gpu_host->log(ACCEL_LOG_ERROR, GPU_BACKEND_NAME, "no host-function thread could be "
                  "started: running it on the driver's thread, where it must not call accel");
    run_job(job);
    uint32_t *flag = job->flag;
    if (!job->persistent) free(job);
    __atomic_store_n(flag, 1u, __ATOMIC_SEQ_CST);
    return;
  }
  pthread_mutex_unlock(&pool.lock);
}

int gpu_hostfn_has_flags(const gpu_backend_t *be) {
  return be->api.StreamWaitValue32 && be->api.StreamWriteValue32;
}

accel_status_t gpu_hostfn_flag_alloc(gpu_device_t *d, uint32_t **flag) {
  void *p = NULL;
  accel_status_t st = GPU_TRY(d->backend, HostAlloc, &p, sizeof(uint32_t),
                              GPU_HOST_ALLOC_PORTABLE);
  if (st != ACCEL_OK) return st;
  *(uint32_t *)p = 1u;
  *flag = p;
  return ACCEL_OK;
}

void gpu_hostfn_flag_free(gpu_device_t *d, uint32_t *flag) {
  if (flag) GPU_WARN(d->backend, HostFree, flag);
}

accel_status_t gpu_hostfn_job_new(uint32_t *flag, int persistent, gpu_hostfn_job_t **out) {
  gpu_hostfn_job_t *job = calloc(1, sizeof *job);
  if (!job)
    return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: host function",
                               GPU_BACKEND_NAME);
  job->flag = flag;
  job->persistent = persistent;
  *out = job;
  return ACCEL_OK;
}

void gpu_hostfn_job_free(gpu_hostfn_job_t *job) { free(job); }

accel_status_t gpu_hostfn_issue(gpu_device_t *d, gpuStream_t stream, accel_host_fn_t fn,
                                void *user, uint32_t *flag, gpu_hostfn_job_t *job) {
  return gpu_hostfn_issue_pred(d, stream, fn, user, flag, job, NULL);
}

accel_status_t gpu_hostfn_issue_pred(gpu_device_t *d, gpuStream_t stream, accel_host_fn_t fn,
                                     void *user, uint32_t *flag, gpu_hostfn_job_t *job,
                                     const int32_t *pred) {
  gpu_backend_t *be = d->backend;
  if (!be->api.LaunchHostFunc)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: %s does not export %s",
                               GPU_BACKEND_NAME, be->library_path,
                               gpu_api_names.LaunchHostFunc);
  if (pred && (!gpu_hostfn_has_flags(be) || (!flag && !job)))
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "%s: a host function inside a conditional region needs the "
                               "stream memory operations, which %s lacks",
                               GPU_BACKEND_NAME, be->library_path);
  if (!gpu_hostfn_has_flags(be) || (!flag && !job)) {
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      gpu_host->log(ACCEL_LOG_WARN, GPU_BACKEND_NAME, "%s lacks stream memory operations: host "
                    "functions run on the driver's thread and must not call accel",
                    be->library_path);
    return GPU_TRY(be, LaunchHostFunc, stream, fn, user);
  }
  int own = job == NULL;
  if (own) {
    accel_status_t st = gpu_hostfn_job_new(flag, 0, &job);
    if (st != ACCEL_OK) return st;
  }
  job->fn = fn;
  job->user = user;
  job->pred = pred;
  uint32_t *job_flag = job->flag;
  accel_status_t st = gpu_check(be, GPU_STREAM_WRITE_VALUE32(&be->api, stream, job_flag, 0u),
                                gpu_api_names.StreamWriteValue32);
  if (st == ACCEL_OK) st = GPU_TRY(be, LaunchHostFunc, stream, trampoline, job);
  if (st != ACCEL_OK) {
    if (own) free(job);
    return st;
  }
  /* From here the job belongs to the worker that runs it, which frees an eager one: it may
   * be gone already (not touched again; the flag is the stream's). */
  return gpu_check(be, GPU_STREAM_WAIT_VALUE32(&be->api, stream, job_flag, 1u),
                   gpu_api_names.StreamWaitValue32);
}

/* Idle workers exit; waits up to 1 s for them (a worker still inside a host function that
 * blocks is left running), so that nothing of the plugin runs while the process exits. */
void gpu_hostfn_shutdown(void) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 1;
  pthread_mutex_lock(&pool.lock);
  pool.stopping = 1;
  pthread_cond_broadcast(&pool.ready);
  while (pool.threads > 0 && pthread_cond_timedwait(&pool.gone, &pool.lock, &until) == 0) {
  }
  pthread_mutex_unlock(&pool.lock);
}
