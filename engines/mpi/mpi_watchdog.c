/*
 * The MPI engine's watchdog of blocking calls (ACCEL_COMM_MPI_WAIT=block, mpi_engine.c): a
 * call still running at its deadline is reported and the job ended with MPI_Abort.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "mpi_internal.h"
#include "service_thread.h"

/* Every communicator is on the watchdog's list from creation to destruction. A blocking call
 * is numbered when it starts and its number stored as finished when it ends: no lock and no
 * clock read, which would be a measurable share of a 2 us collective. The watchdog wakes
 * every period and times, with its own clock, how long the same call has been in flight.
 *
 * Collectives on one communicator are never concurrent (MPI requires every rank to issue them
 * in one order; a program that overlaps two is erroneous), so theirs are numbered with a plain
 * load and store: no locked instruction (the two atomic increments this replaced were a tenth
 * of a 4 KB all_reduce's cost beyond MPI's). A call stores finished only while it is still
 * the latest started, so two erroneously overlapping collectives may hide one from the
 * watchdog but do not leave a finished call in flight for it (a false timeout). Sends and
 * receives may overlap (a pipeline's, on two streams): theirs are atomic increments. */
static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond;
static mpi_comm_t *wd_list; /* guarded by wd_lock */
static pthread_once_t wd_once = PTHREAD_ONCE_INIT;
static int wd_started;
static double wd_period = 1.0; /* guarded by wd_lock: a tenth of the shortest timeout seen */

/* Whether the call of w in flight (since w->since, numbered w->seen) is past c's deadline. */
static int wd_calls_late(mpi_comm_t *c, wd_calls_t *w, double now) {
  const uint64_t started = atomic_load_explicit(&w->started, memory_order_relaxed);
  if (started == atomic_load_explicit(&w->finished, memory_order_relaxed)) return 0;
  if (started != w->seen) {
    w->seen = started; /* a call the watchdog has not timed yet: from now */
    w->since = now;
    return 0;
  }
  return now - w->since > atomic_load(&c->timeout_ms) * 1e-3;
}

static int wd_late(mpi_comm_t *c, double now) {
  const int coll = wd_calls_late(c, &c->coll, now); /* both: each times its own call */
  return wd_calls_late(c, &c->p2p, now) || coll;
}

static void *watchdog(void *arg) {
  (void)arg;
  pthread_mutex_lock(&wd_lock);
  for (;;) {
    const double wake = mpi_now_s() + wd_period;
    struct timespec ts;
    ts.tv_sec = (time_t)wake;
    ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&wd_cond, &wd_lock, &ts); /* CLOCK_MONOTONIC (cond attr) */
    const double now = mpi_now_s();
    mpi_comm_t *late = NULL;
    for (mpi_comm_t *c = wd_list; c && !late; c = c->wd_next)
      if (wd_late(c, now)) late = c;
    if (!late) continue;
    /* report on this rank, then end the job through MPI */
    fprintf(stderr,
            "[accel:error] comm: rank %d: %s on rank %d of %d did not complete within %.3g s "
            "(ACCEL_COMM_TIMEOUT): a peer is dead, missing or issued a different sequence of "
            "collectives; ending the job (MPI_Abort)\n",
            late->rank, mpi_call_names[atomic_load(&late->kind)], late->rank, late->size,
            atomic_load(&late->timeout_ms) * 1e-3);
    fflush(stderr);
    MPI_Comm comm = late->comm;
    pthread_mutex_unlock(&wd_lock);
    /* the peers' deadlines fall within moments of this one: a short grace lets each of them
     * report before the first abort takes the job down */
    sleep(1);
    MPI_Abort(comm, 1);
    pthread_mutex_lock(&wd_lock);
  }
  return NULL;
}

static void start_watchdog(void) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&wd_cond, &attr);
  pthread_condattr_destroy(&attr);
  wd_started = accel_service_thread_start(watchdog, NULL);
}

/* Puts c on the watchdog's list; 0 when no watchdog could be started. */
int mpi_watch_add(mpi_comm_t *c) {
  pthread_once(&wd_once, start_watchdog);
  if (!wd_started) return 0;
  pthread_mutex_lock(&wd_lock);
  c->wd_next = wd_list;
  wd_list = c;
  pthread_mutex_unlock(&wd_lock);
  return 1;
}

void mpi_watch_remove(mpi_comm_t *c) {
  pthread_mutex_lock(&wd_lock);
  for (mpi_comm_t **p = &wd_list; *p; p = &(*p)->wd_next)
    if (*p == c) {
      *p = c->wd_next;
      break;
    }
  pthread_mutex_unlock(&wd_lock);
}

/* A timeout the communicator has not used yet: the watchdog wakes at least every tenth of it. */
void mpi_watch_timeout(mpi_comm_t *c, double timeout_s) {
  const uint64_t ms = timeout_s * 1e3 < 1 ? 1 : (uint64_t)(timeout_s * 1e3);
  if (atomic_load(&c->timeout_ms) == ms) return;
  atomic_store(&c->timeout_ms, ms);
  pthread_mutex_lock(&wd_lock);
  const double period = timeout_s / 10 < 0.05 ? 0.05 : timeout_s / 10;
  if (period < wd_period) wd_period = period;
  pthread_mutex_unlock(&wd_lock);
}

const char *const mpi_call_names[2 * NUM_KINDS] = {
    "MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Allgather", "MPI_Bcast", "MPI_Send",
    "MPI_Recv", "MPI_Sendrecv", "the persistent allreduce request",
    "the persistent reduce_scatter_block request", "the persistent allgather request",
    "the persistent bcast request", "the MPI_Send_init request", "the MPI_Recv_init request",
    "(no persistent sendrecv: replays call MPI_Sendrecv)"};

/* Whether a blocking call is in flight on some communicator: a thread is inside MPI. */
int mpi_calls_in_flight(void) {
  int busy = 0;
  pthread_mutex_lock(&wd_lock);
  for (mpi_comm_t *c = wd_list; c && !busy; c = c->wd_next)
    busy = atomic_load(&c->coll.started) != atomic_load(&c->coll.finished) ||
           atomic_load(&c->p2p.started) != atomic_load(&c->p2p.finished);
  pthread_mutex_unlock(&wd_lock);
  return busy;
}
