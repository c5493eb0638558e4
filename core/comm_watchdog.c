/*
 * ACCEL_COMM_TIMEOUT for stream engines: a watchdog thread over eager collectives.
 *
 * A stream engine's collective runs on the device; nothing on the host waits for it. So each
 * eager collective gets a watch: a marker (the backend's event) recorded right after it on the
 * stream, and one thread (started on first use, sleeping while nothing is watched) queries
 * every watch's marker every WATCH_POLL_MS. Nothing runs on the stream for the watch: a host
 * function there (the first design) stalled the stream until the driver's one callback thread
 * ran it, serialised every stream's watches there, and, on a stream a runtime was capturing,
 * became a node of the runtime's graph that later replays ran on a freed watch. A watch whose
 * owner reports an asynchronous error (ncclCommGetAsyncError), whose marker reports a device
 * error, or that is not done at its deadline, expires: the owner is told once (the
 * communicator fails and the engine cancels its work, ncclCommAbort) and the watch is dropped.
 * Only the watchdog thread takes watches off the list, queries and releases them; callbacks
 * and queries run without the watchdog's lock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "comm_internal.h"
#include "core_util.h"
#include "event.h"
#include "log.h"
#include "service_thread.h"

#define WATCH_POLL_MS 5
#define WATCH_POLL_MAX 64 /* running watches asked for asynchronous errors per round */

typedef struct watch {
  struct watch *next;
  accel_stream_marker_t marker; /* after the collective */
  double deadline;              /* CLOCK_MONOTONIC seconds */
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

static void watch_free(watch_t *w) {
  accel_stream_marker_release(&w->marker);
  w->ops->release(w->owner);
  free(w);
}

/* One round over one watch: true when it is finished (done or expired) and may be freed.
 * *polled counts the asynchronous-error polls of the round. */
static bool watch_round(watch_t *w, double now, size_t *polled) {
  char why[256];
  accel_clear_error();
  const accel_status_t st = accel_stream_marker_query(&w->marker);
  if (st == ACCEL_OK) return true;
  if (st != ACCEL_ERROR_NOT_READY) {
    snprintf(why, sizeof why, "%s: the stream failed after it: %s", w->what, accel_last_error());
  } else if (now >= w->deadline) {
    snprintf(why, sizeof why, "%s did not complete within %.3g s (ACCEL_COMM_TIMEOUT)", w->what,
             w->timeout_s);
  } else if (w->ops->async_error && (*polled)++ < WATCH_POLL_MAX &&
             w->ops->async_error(w->owner) != ACCEL_OK) {
    snprintf(why, sizeof why, "%s failed asynchronously: %s", w->what, accel_last_error());
  } else {
    return false;
  }
  w->ops->expired(w->owner, why);
  return true;
}

static void *watchdog_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&watch_lock);
  for (;;) {
    while (!watches) pthread_cond_wait(&watch_added, &watch_lock);
    watch_t *round = watches; /* new watches go to the (now empty) list meanwhile */
    watches = NULL;
    pthread_mutex_unlock(&watch_lock);
    watch_t *kept = NULL, **tail = &kept;
    size_t polled = 0;
    const double now = now_s();
    for (watch_t *w = round, *next; w; w = next) {
      next = w->next;
      if (watch_round(w, now, &polled)) {
        watch_free(w);
      } else {
        *tail = w;
        tail = &w->next;
      }
    }
    *tail = NULL;
    if (kept) {
      struct timespec ts = {0, WATCH_POLL_MS * 1000000L};
      nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&watch_lock);
    if (kept) { /* the ones still running go back after those added meanwhile */
      *tail = watches;
      watches = kept;
    }
  }
  return NULL;
}

accel_status_t accel_watch_stream(accel_stream_t *s, double timeout_s, const char *what,
                                  const accel_watch_ops_t *ops, void *owner) {
  watch_t *w = calloc(1, sizeof *w);
  if (!w) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", what);
  w->timeout_s = timeout_s;
  w->deadline = now_s() + timeout_s;
  w->ops = ops;
  w->owner = owner;
  snprintf(w->what, sizeof w->what, "%s", what);
  accel_status_t st = accel_stream_marker_record(s, &w->marker);
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
    watch_free(w);
  }
  return ACCEL_OK;
}
