/*
 * Process exit with collectives still queued: a program may return from main while a stream's
 * thread is still running (or has queued) collectives of a host engine. The MPI engine
 * finalizes MPI in an exit handler when it initialised MPI itself, and MPI_Finalize under a
 * thread that is inside MPI fails or crashes ("MPI_MAX is not defined on MPI_FLOAT ... NULL
 * communicator", a segfault in MPI_Allgather). So every communicator is listed from its
 * creation to its teardown, and at exit, before the engines' exit handlers (which were
 * registered earlier: exit handlers run last-in first-out), the devices they run on finish the
 * work submitted to them: every rank runs what it issued, the ranks stay matched, then MPI
 * finalizes. The wait is bounded: a collective that cannot complete ends within its
 * ACCEL_COMM_TIMEOUT (an error, or the engine ends the job); past the longest timeout and a
 * grace, the exit goes on.
 */
#include <stdlib.h>
#include <time.h>

#include "comm_internal.h"
#include "log.h"
#include "stream.h"

#define EXIT_GRACE_S 10.0

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static accel_comm_live_t *live; /* guarded by live_lock */
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Waits until every stream of dev is idle or the deadline passed (no lock held). */
static void finish_streams(accel_device_t *dev, double deadline) {
  accel_stream_t **streams = NULL;
  size_t n = 0;
  if (accel_device_streams(dev, &streams, &n) != ACCEL_OK) return;
  const struct timespec pause = {0, 1000000L};
  for (size_t i = 0; i < n; ++i)
    while (dev->backend->vt->stream_query(streams[i]->impl) == ACCEL_ERROR_NOT_READY &&
           now_s() < deadline)
      nanosleep(&pause, NULL);
  accel_device_streams_release(streams, n);
}

static void drain_at_exit(void) {
  accel_device_t **devs = NULL;
  size_t n = 0, cap = 0;
  double timeout_s = 0;
  pthread_mutex_lock(&live_lock);
  for (accel_comm_live_t *l = live; l; l = l->next) {
    size_t i = 0;
    while (i < n && devs[i] != l->dev) ++i;
    if (l->timeout_s > timeout_s) timeout_s = l->timeout_s;
    if (i < n) continue;
    if (n == cap) {
      accel_device_t **more = realloc(devs, (cap ? cap * 2 : 4) * sizeof *devs);
      if (!more) break;
      devs = more;
      cap = cap ? cap * 2 : 4;
    }
    accel_device_retain(l->dev);
    devs[n++] = l->dev;
  }
  pthread_mutex_unlock(&live_lock);
  const double deadline = now_s() + timeout_s + EXIT_GRACE_S;
  for (size_t i = 0; i < n; ++i) finish_streams(devs[i], deadline);
  if (n && now_s() >= deadline)
    accel_log(ACCEL_LOG_WARN, "comm", "at exit: streams with collectives still running after "
              "%.0f s; exiting without waiting for them", timeout_s + EXIT_GRACE_S);
  for (size_t i = 0; i < n; ++i) accel_device_release_ref(devs[i]);
  free(devs);
}

static void register_exit(void) {
  if (atexit(drain_at_exit) != 0)
    accel_log(ACCEL_LOG_WARN, "comm", "atexit failed: collectives still queued at exit may run "
              "under the engine's finalization");
}

void accel_comm_live_add(accel_comm_live_t *l) {
  pthread_once(&exit_once, register_exit); /* after the engine's own exit handler */
  pthread_mutex_lock(&live_lock);
  l->prev = NULL;
  l->next = live;
  if (live) live->prev = l;
  live = l;
  pthread_mutex_unlock(&live_lock);
}

void accel_comm_live_remove(accel_comm_live_t *l) {
  pthread_mutex_lock(&live_lock);
  if (l->prev) l->prev->next = l->next;
  else live = l->next;
  if (l->next) l->next->prev = l->prev;
  pthread_mutex_unlock(&live_lock);
}
