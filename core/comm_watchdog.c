/*
 * ACCEL_COMM_TIMEOUT for stream engines: a watchdog thread over eager collectives.
 *
 * A stream engine's collective runs on the device; nothing on the host waits for it. So each
 * eager collective gets a watch: a host function enqueued right after it marks the watch done
 * when the stream got past the collective, and one thread (started on first use, sleeping
 * while nothing is watched) looks at every watch every WATCH_POLL_MS. A watch whose owner
 * reports an asynchronous error (ncclCommGetAsyncError), or that is not done at its deadline,
 * expires: the owner is told once (the communicator fails and the engine cancels its work,
 * ncclCommAbort) and the watch is dropped. Callbacks run without the watchdog's lock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "comm_internal.h"
#include "core_util.h"
#include "log.h"
#include "service_thread.h"

#define WATCH_POLL_MS 5
#define WATCH_POLL_MAX 64 /* running watches asked for asynchronous errors per round */

typedef struct watch {
  struct watch *next;
  atomic_int refs;    /* the list's and the host function's */
  atomic_int done;    /* set by the host function */
  double deadline;    /* CLOCK_MONOTONIC seconds */
  double timeout_s;
  const accel_watch_ops_t *ops;
  void *owner;
  char what[64];
} watch_t;

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_added = PTHREAD_COND_INITIALIZER;
static watch_t *watches;
static bool thread_started;

static double now_s(void) { return (double)accel_now_ns() * 1e-9; }

static void watch_unref(watch_t *w) {
  if (atomic_fetch_sub(&w->refs, 1) != 1) return;
  w->ops->release(w->owner);
  free(w);
}

static void watch_done(void *user) {
  watch_t *w = user;
  atomic_store(&w->done, 1);
  watch_unref(w);
}

/* Takes every watch that is done or past its deadline off the list (under the lock); the
 * caller handles them without it. */
static watch_t *collect_locked(double now) {
  watch_t *out = NULL, **link = &watches;
  while (*link) {
    watch_t *w = *link;
    if (atomic_load(&w->done) || now >= w->deadline) {
      *link = w->next;
      w->next = out;
      out = w;
    } else {
      link = &w->next;
    }
  }
  return out;
}

static void *watchdog_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&watch_lock);
  for (;;) {
    while (!watches) pthread_cond_wait(&watch_added, &watch_lock);
    watch_t *finished = collect_locked(now_s());
    watch_t *running[WATCH_POLL_MAX];
    size_t nrunning = 0;
    for (watch_t *w = watches; w && nrunning < WATCH_POLL_MAX; w = w->next)
      if (w->ops->async_error) {
        atomic_fetch_add(&w->refs, 1);
        running[nrunning++] = w;
      }
    pthread_mutex_unlock(&watch_lock);
    for (watch_t *w = finished, *next; w; w = next) {
      next = w->next;
      if (!atomic_load(&w->done)) {
        char why[256];
        snprintf(why, sizeof why, "%s did not complete within %.3g s (ACCEL_COMM_TIMEOUT)",
                 w->what, w->timeout_s);
        w->ops->expired(w->owner, why);
      }
      watch_unref(w);
    }
    for (size_t i = 0; i < nrunning; ++i) {
      watch_t *w = running[i];
      accel_clear_error();
      if (!atomic_load(&w->done) && w->ops->async_error(w->owner) != ACCEL_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s failed asynchronously: %s", w->what, accel_last_error());
        w->ops->expired(w->owner, why);
      }
      watch_unref(w);
    }
    struct timespec ts = {0, WATCH_POLL_MS * 1000000L};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&watch_lock);
  }
  return NULL;
}

accel_status_t accel_watch_stream(accel_stream_t *s, double timeout_s, const char *what,
                                  const accel_watch_ops_t *ops, void *owner) {
  watch_t *w = calloc(1, sizeof *w);
  if (!w) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", what);
  atomic_init(&w->refs, 2);
  w->timeout_s = timeout_s;
  w->deadline = now_s() + timeout_s;
  w->ops = ops;
  w->owner = owner;
  snprintf(w->what, sizeof w->what, "%s", what);
  accel_status_t st = accel_launch_host_func(s, watch_done, w);
  if (st != ACCEL_OK) {
    free(w); /* the owner keeps its reference: release is not called */
    return st;
  }
  pthread_mutex_lock(&watch_lock);
  if (!thread_started) thread_started = accel_service_thread_start(watchdog_main, NULL);
  if (thread_started) {
    w->next = watches;
    watches = w;
    pthread_cond_signal(&watch_added);
  }
  pthread_mutex_unlock(&watch_lock);
  if (!thread_started) {
    accel_log(ACCEL_LOG_WARN, "comm", "%s: no watchdog thread, ACCEL_COMM_TIMEOUT not applied",
              what);
    watch_unref(w); /* the list's reference */
  }
  return ACCEL_OK;
}
