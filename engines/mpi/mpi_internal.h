/*
 * The MPI engine's rooms (engines/mpi): the engine and its communicators (mpi_engine.c), the
 * watchdog of blocking calls (mpi_watchdog.c), running collectives and their persistent forms
 * (mpi_run.c). See mpi_engine.c for the engine as a whole.
 */
#ifndef ACCEL_ENGINES_MPI_INTERNAL_H
#define ACCEL_ENGINES_MPI_INTERNAL_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "accel/accel_comm_engine.h"

extern const accel_host_api_t *mpi_host; /* set by engine_init */
extern int mpi_poll_mode;                /* ACCEL_COMM_MPI_WAIT=poll */

/* Blocking calls of one class on a communicator, for the watchdog: numbered as they start;
 * finished is the number of the latest that ended. since/seen: the watchdog's own, guarded by
 * wd_lock (when it first saw call number `seen` in flight). */
typedef struct wd_calls {
  atomic_uint_least64_t started, finished;
  uint64_t seen;
  double since;
} wd_calls_t;

typedef struct mpi_comm {
  MPI_Comm comm;
  MPI_Comm side; /* a duplicate for host_all_gather: the core's collective check and bootstrap
                  * never meet a data collective of a rank that skipped them */
  int rank, size;
  atomic_int stuck; /* a request timed out: the communicator cannot be freed safely */
  /* the watchdog's view (blocking mode): the blocking collectives and sends/receives in
   * flight, the kind of the latest call, the timeout in ms */
  int watched;
  wd_calls_t coll, p2p;
  atomic_uint_least64_t timeout_ms;
  atomic_uint kind;
  struct mpi_comm *wd_next; /* guarded by wd_lock */
} mpi_comm_t;

/* ---------------------------------------------------------------------------------------- */
/* mpi_engine.c */

static inline double mpi_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline MPI_Datatype mpi_type(uint32_t dtype) {
  return dtype == ACCEL_F32 ? MPI_FLOAT : MPI_UINT16_T;
}
/* The reduction of dtype (F16 and BF16: the engine's user-defined operations). */
MPI_Op mpi_op(uint32_t dtype, uint32_t reduce);
/* BACKEND naming call and MPI's text for code. */
accel_status_t mpi_error(const char *call, int code);
/* Polls req to completion or the deadline (then c is stuck and the error names call). */
accel_status_t mpi_wait_req(mpi_comm_t *c, MPI_Request *req, const char *call,
                            double timeout_s, MPI_Status *status);
/* A receive must get the count it asked for (MPI itself only refuses longer messages). */
accel_status_t mpi_check_count(mpi_comm_t *c, const accel_comm_op_t *op,
                               const MPI_Status *status);

/* ---------------------------------------------------------------------------------------- */
/* mpi_watchdog.c */

/* Puts c on the watchdog's list; 0 when no watchdog could be started. */
int mpi_watch_add(mpi_comm_t *c);
void mpi_watch_remove(mpi_comm_t *c);
/* A timeout the communicator has not used yet: the watchdog wakes at least every tenth of it. */
void mpi_watch_timeout(mpi_comm_t *c, double timeout_s);
/* Whether a blocking call is in flight on some communicator: a thread is inside MPI. */
int mpi_calls_in_flight(void);

/* The blocking calls by op kind, then (kind + NUM_KINDS) the persistent requests, which are
 * waited for with MPI_Wait (block) or polled with MPI_Test (poll): named by their request. */
#define NUM_KINDS 7
extern const char *const mpi_call_names[2 * NUM_KINDS];

static inline int mpi_is_p2p(unsigned kind) { return kind >= ACCEL_COMM_SEND; }

/* Numbers a blocking call of `kind` (its name: `name`) as it starts; returns its number. */
static inline uint64_t mpi_wd_begin(mpi_comm_t *c, unsigned kind, unsigned name) {
  atomic_store_explicit(&c->kind, name, memory_order_relaxed);
  if (mpi_is_p2p(kind)) return atomic_fetch_add(&c->p2p.started, 1) + 1;
  const uint64_t n = atomic_load_explicit(&c->coll.started, memory_order_relaxed) + 1;
  atomic_store_explicit(&c->coll.started, n, memory_order_relaxed);
  return n;
}

static inline void mpi_wd_end(mpi_comm_t *c, unsigned kind, uint64_t n) {
  if (mpi_is_p2p(kind)) {
    atomic_fetch_add(&c->p2p.finished, 1);
  } else if (atomic_load_explicit(&c->coll.started, memory_order_relaxed) == n) {
    atomic_store_explicit(&c->coll.finished, n, memory_order_relaxed);
  }
}

/* ---------------------------------------------------------------------------------------- */
/* mpi_run.c: the engine's run, prepare, run_prepared, release_prepared, host_all_gather */

accel_status_t mpi_run(accel_ce_comm_t *cc, const accel_comm_op_t *op, double timeout_s);
accel_status_t mpi_prepare(accel_ce_comm_t *cc, const accel_comm_op_t *op, void **handle);
accel_status_t mpi_run_prepared(void *handle, double timeout_s);
void mpi_release_prepared(void *handle);
accel_status_t mpi_host_all_gather(accel_ce_comm_t *cc, const void *send, void *recv,
                                   size_t bytes, double timeout_s);
/* Whether this MPI has persistent collectives (MPI-4, or Open MPI's pcollreq extension). */
int mpi_persistent_available(void);

#endif
