/*
 * The MPI collective engine (libaccelcomm-mpi.so), built against the system MPI.
 *
 * A host engine: the core calls `run` from a host function in stream order, on the stream's
 * thread, with host-accessible device memory. ACCEL_COMM_TIMEOUT bounds every collective in
 * one of two ways (ACCEL_COMM_MPI_WAIT):
 *  - block (default): the blocking MPI call (MPI_Allreduce...: the library's tuned algorithms,
 *    as fast as a bare MPI loop), watched by a watchdog thread. A call still running at its
 *    deadline is reported ("rank R: ... did not complete within T s") and, after a grace of
 *    1 s that lets the other ranks report too, the job is ended with MPI_Abort: a blocking MPI call cannot be interrupted, and an error return would
 *    leave the stream's thread stuck inside it.
 *  - poll: the nonblocking call (MPI_Iallreduce...) polled with MPI_Test until it completes
 *    or the deadline passes; then run returns an error, the core marks the communicator failed
 *    and the application decides (accel_comm_get_error, accel_comm_abort). The incomplete
 *    request cannot be cancelled (MPI has no cancel for collectives), so that communicator is
 *    never freed. Open MPI's nonblocking collectives (libnbc) cost several microseconds more
 *    per small operation than the blocking ones: accel-bench comm measures both.
 *
 * Graphs: with ACCEL_COMM_MPI_PERSISTENT=1 a collective recorded in a graph is prepared at its
 * first replay as a persistent request (MPI-4 MPI_*_init, or Open MPI 4.1's MPIX_*_init from
 * the pcollreq extension; MPI_Send_init / MPI_Recv_init) and later replays MPI_Start it, then
 * wait as above (MPI_Wait under the watchdog, or MPI_Test polling). Off by default: on this
 * machine it cost 4 us more per 4 KB all-reduce and halved the time of a 64 MB one
 * (docs/DISTRIBUTED.md).
 *
 * F16 and BF16 travel as 16-bit words; their reductions are user-defined MPI operations that
 * widen to fp32, combine, and round back to nearest even with the kernels' conversions.
 */
#include <dlfcn.h>
#include <mpi.h>
#if MPI_VERSION < 4 && defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_*_init: Open MPI's pcollreq extension (MPI-4 persistent collectives) */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accel/accel_comm_engine.h"
#include "prelude_c.h"
#include "accel_kernel_abi.h"
#include "convert.h"

static const accel_host_api_t *host;
static int poll_mode; /* ACCEL_COMM_MPI_WAIT=poll */

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
/* F16 / BF16 reductions */

typedef acc_f32 (*widen_fn)(acc_u32);
typedef acc_u32 (*narrow_fn)(acc_f32);

static void reduce16(const void *in, void *inout, int len, widen_fn w, narrow_fn nrw, int op) {
  const uint16_t *a = in;
  uint16_t *b = inout;
  for (int i = 0; i < len; ++i) {
    const float x = w(a[i]), y = w(b[i]);
    float r = op == ACCEL_REDUCE_SUM ? x + y
            : op == ACCEL_REDUCE_MAX ? (x > y || x != x ? x : y)
                                     : (x < y || x != x ? x : y);
    b[i] = (uint16_t)nrw(r);
  }
}

#define REDUCE16(NAME, W, N, OP)                                                               \
  static void NAME(void *in, void *inout, int *len, MPI_Datatype *dt) {                        \
    (void)dt;                                                                                  \
    reduce16(in, inout, *len, W, N, OP);                                                       \
  }
REDUCE16(f16_sum, acc_f16_to_f32, acc_f32_to_f16, ACCEL_REDUCE_SUM)
REDUCE16(f16_max, acc_f16_to_f32, acc_f32_to_f16, ACCEL_REDUCE_MAX)
REDUCE16(f16_min, acc_f16_to_f32, acc_f32_to_f16, ACCEL_REDUCE_MIN)
REDUCE16(bf16_sum, acc_bf16_to_f32, acc_f32_to_bf16, ACCEL_REDUCE_SUM)
REDUCE16(bf16_max, acc_bf16_to_f32, acc_f32_to_bf16, ACCEL_REDUCE_MAX)
REDUCE16(bf16_min, acc_bf16_to_f32, acc_f32_to_bf16, ACCEL_REDUCE_MIN)

static pthread_once_t ops_once = PTHREAD_ONCE_INIT;
static MPI_Op ops16[2][3]; /* [bf16][reduce] */
static int ops_status = MPI_SUCCESS;

static void create_ops(void) {
  MPI_User_function *fns[2][3] = {{f16_sum, f16_max, f16_min}, {bf16_sum, bf16_max, bf16_min}};
  for (int d = 0; d < 2; ++d)
    for (int o = 0; o < 3; ++o)
      if (ops_status == MPI_SUCCESS) ops_status = MPI_Op_create(fns[d][o], 1, &ops16[d][o]);
}

static MPI_Datatype mpi_type(uint32_t dtype) {
  return dtype == ACCEL_F32 ? MPI_FLOAT : MPI_UINT16_T;
}

static MPI_Op mpi_op(uint32_t dtype, uint32_t reduce) {
  if (dtype == ACCEL_F32)
    return reduce == ACCEL_REDUCE_SUM ? MPI_SUM : reduce == ACCEL_REDUCE_MAX ? MPI_MAX : MPI_MIN;
  return ops16[dtype == ACCEL_BF16][reduce];
}

/* ---------------------------------------------------------------------------------------- */

static accel_status_t mpi_error(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "?");
  return host->set_error(ACCEL_ERROR_BACKEND, "%s: %s (MPI error %d)", call, text, code);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Polls req to completion or the deadline. Spins first (latency), then yields (an
 * oversubscribed node, where the peer needs this core to make progress). */
static accel_status_t wait_req(mpi_comm_t *c, MPI_Request *req, const char *call,
                               double timeout_s, MPI_Status *status) {
  const double deadline = now_s() + timeout_s;
  for (unsigned long i = 0;; ++i) {
    int done = 0;
    int rc = MPI_Test(req, &done, status);
    if (rc != MPI_SUCCESS) return mpi_error(call, rc);
    if (done) return ACCEL_OK;
    if (i > 2000) sched_yield();
    if ((i & 255u) == 0 && now_s() > deadline) {
      atomic_store(&c->stuck, 1);
      return host->set_error(ACCEL_ERROR_BACKEND,
                             "%s on rank %d of %d did not complete within %.3g s "
                             "(ACCEL_COMM_TIMEOUT): a peer is dead, missing or issued a "
                             "different sequence of collectives",
                             call, c->rank, c->size, timeout_s);
    }
  }
}

/* A receive must get the count it asked for (MPI itself only refuses longer messages). */
static accel_status_t check_count(mpi_comm_t *c, const accel_comm_op_t *op,
                                  const MPI_Status *status) {
  int got = 0;
  MPI_Get_count(status, mpi_type(op->dtype), &got);
  if ((size_t)got == op->count) return ACCEL_OK;
  return host->set_error(ACCEL_ERROR_BACKEND,
                         "accel_recv on rank %d: %d elements arrived from rank %d, %zu were "
                         "expected (mismatched count)", c->rank, got, op->peer, op->count);
}

/* ---------------------------------------------------------------------------------------- */
/* the watchdog of blocking calls */

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

/* The blocking calls by op kind, then (kind + NUM_KINDS) the persistent requests, which are
 * waited for with MPI_Wait (block) or polled with MPI_Test (poll): named by their request. */
#define NUM_KINDS 6
static const char *const call_names[] = {
    "MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Allgather", "MPI_Bcast", "MPI_Send",
    "MPI_Recv", "the persistent allreduce request", "the persistent reduce_scatter_block request",
    "the persistent allgather request", "the persistent bcast request",
    "the MPI_Send_init request", "the MPI_Recv_init request"};

static int is_p2p(unsigned kind) { return kind == ACCEL_COMM_SEND || kind == ACCEL_COMM_RECV; }

/* Numbers a blocking call of `kind` (its name: `name`) as it starts; returns its number. */
static uint64_t wd_begin(mpi_comm_t *c, unsigned kind, unsigned name) {
  atomic_store_explicit(&c->kind, name, memory_order_relaxed);
  if (is_p2p(kind)) return atomic_fetch_add(&c->p2p.started, 1) + 1;
  const uint64_t n = atomic_load_explicit(&c->coll.started, memory_order_relaxed) + 1;
  atomic_store_explicit(&c->coll.started, n, memory_order_relaxed);
  return n;
}

static void wd_end(mpi_comm_t *c, unsigned kind, uint64_t n) {
  if (is_p2p(kind)) {
    atomic_fetch_add(&c->p2p.finished, 1);
  } else if (atomic_load_explicit(&c->coll.started, memory_order_relaxed) == n) {
    atomic_store_explicit(&c->coll.finished, n, memory_order_relaxed);
  }
}

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
    const double wake = now_s() + wd_period;
    struct timespec ts;
    ts.tv_sec = (time_t)wake;
    ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&wd_cond, &wd_lock, &ts); /* CLOCK_MONOTONIC (cond attr) */
    const double now = now_s();
    mpi_comm_t *late = NULL;
    for (mpi_comm_t *c = wd_list; c && !late; c = c->wd_next)
      if (wd_late(c, now)) late = c;
    if (!late) continue;
    /* report on this rank, then end the job through MPI */
    fprintf(stderr,
            "[accel:error] comm: rank %d: %s on rank %d of %d did not complete within %.3g s "
            "(ACCEL_COMM_TIMEOUT): a peer is dead, missing or issued a different sequence of "
            "collectives; ending the job (MPI_Abort)\n",
            late->rank, call_names[atomic_load(&late->kind)], late->rank, late->size,
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
  pthread_t t;
  pthread_attr_t ta;
  pthread_attr_init(&ta);
  pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
  wd_started = pthread_create(&t, &ta, watchdog, NULL) == 0;
  pthread_attr_destroy(&ta);
}

/* Puts c on the watchdog's list; 0 when no watchdog could be started. */
static int watch_add(mpi_comm_t *c) {
  pthread_once(&wd_once, start_watchdog);
  if (!wd_started) return 0;
  pthread_mutex_lock(&wd_lock);
  c->wd_next = wd_list;
  wd_list = c;
  pthread_mutex_unlock(&wd_lock);
  return 1;
}

static void watch_remove(mpi_comm_t *c) {
  pthread_mutex_lock(&wd_lock);
  for (mpi_comm_t **p = &wd_list; *p; p = &(*p)->wd_next)
    if (*p == c) {
      *p = c->wd_next;
      break;
    }
  pthread_mutex_unlock(&wd_lock);
}

/* A timeout the communicator has not used yet: the watchdog wakes at least every tenth of it. */
static void watch_timeout(mpi_comm_t *c, double timeout_s) {
  const uint64_t ms = timeout_s * 1e3 < 1 ? 1 : (uint64_t)(timeout_s * 1e3);
  if (atomic_load(&c->timeout_ms) == ms) return;
  atomic_store(&c->timeout_ms, ms);
  pthread_mutex_lock(&wd_lock);
  const double period = timeout_s / 10 < 0.05 ? 0.05 : timeout_s / 10;
  if (period < wd_period) wd_period = period;
  pthread_mutex_unlock(&wd_lock);
}

/* The blocking form of op under the watchdog. */
static accel_status_t run_blocking(mpi_comm_t *c, const accel_comm_op_t *op, double timeout_s,
                                   MPI_Status *status) {
  const int n = (int)op->count;
  const MPI_Datatype t = mpi_type(op->dtype);
  if (!c->watched)
    return host->set_error(ACCEL_ERROR_BACKEND, "MPI: no watchdog thread for %s (set "
                           "ACCEL_COMM_MPI_WAIT=poll)", call_names[op->kind]);
  watch_timeout(c, timeout_s);
  const uint64_t call = wd_begin(c, op->kind, op->kind);
  int rc = MPI_SUCCESS;
  switch (op->kind) {
    case ACCEL_COMM_ALL_REDUCE:
      rc = MPI_Allreduce(op->send == op->recv ? MPI_IN_PLACE : op->send, op->recv, n, t,
                         mpi_op(op->dtype, op->reduce), c->comm);
      break;
    case ACCEL_COMM_REDUCE_SCATTER:
      rc = MPI_Reduce_scatter_block(op->send, op->recv, n, t, mpi_op(op->dtype, op->reduce),
                                    c->comm);
      break;
    case ACCEL_COMM_ALL_GATHER:
      rc = op->send ? MPI_Allgather(op->send, n, t, op->recv, n, t, c->comm)
                    : MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, op->recv, n, t,
                                    c->comm);
      break;
    case ACCEL_COMM_BROADCAST:
      rc = MPI_Bcast(op->recv, n, t, op->peer, c->comm);
      break;
    case ACCEL_COMM_SEND:
      rc = MPI_Send(op->send, n, t, op->peer, 0, c->comm);
      break;
    default: /* ACCEL_COMM_RECV */
      rc = MPI_Recv(op->recv, n, t, op->peer, 0, c->comm, status);
      break;
  }
  wd_end(c, op->kind, call);
  return rc == MPI_SUCCESS ? ACCEL_OK : mpi_error(call_names[op->kind], rc);
}

static accel_status_t mpi_run(accel_ce_comm_t *cc, const accel_comm_op_t *op, double timeout_s) {
  mpi_comm_t *c = cc;
  if (op->count > (size_t)INT32_MAX)
    return host->set_error(ACCEL_ERROR_UNSUPPORTED, "MPI: count %zu exceeds an MPI int",
                           op->count);
  if (op->kind > ACCEL_COMM_RECV)
    return host->set_error(ACCEL_ERROR_UNSUPPORTED, "MPI: unknown collective %u", op->kind);
  const int n = (int)op->count;
  const MPI_Datatype t = mpi_type(op->dtype);
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Status status;
  if (!poll_mode) {
    accel_status_t st = run_blocking(c, op, timeout_s, &status);
    return st == ACCEL_OK && op->kind == ACCEL_COMM_RECV ? check_count(c, op, &status) : st;
  }
  const char *call = "?";
  int rc = MPI_SUCCESS;
  switch (op->kind) {
    case ACCEL_COMM_ALL_REDUCE:
      call = "MPI_Iallreduce";
      rc = MPI_Iallreduce(op->send == op->recv ? MPI_IN_PLACE : op->send, op->recv, n, t,
                          mpi_op(op->dtype, op->reduce), c->comm, &req);
      break;
    case ACCEL_COMM_REDUCE_SCATTER:
      call = "MPI_Ireduce_scatter_block";
      rc = MPI_Ireduce_scatter_block(op->send, op->recv, n, t, mpi_op(op->dtype, op->reduce),
                                     c->comm, &req);
      break;
    case ACCEL_COMM_ALL_GATHER:
      call = "MPI_Iallgather";
      rc = op->send ? MPI_Iallgather(op->send, n, t, op->recv, n, t, c->comm, &req)
                    : MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, op->recv, n, t,
                                     c->comm, &req);
      break;
    case ACCEL_COMM_BROADCAST:
      call = "MPI_Ibcast";
      rc = MPI_Ibcast(op->recv, n, t, op->peer, c->comm, &req);
      break;
    case ACCEL_COMM_SEND:
      call = "MPI_Isend";
      rc = MPI_Isend(op->send, n, t, op->peer, 0, c->comm, &req);
      break;
    default: /* ACCEL_COMM_RECV */
      call = "MPI_Irecv";
      rc = MPI_Irecv(op->recv, n, t, op->peer, 0, c->comm, &req);
      break;
  }
  if (rc != MPI_SUCCESS) return mpi_error(call, rc);
  accel_status_t st = wait_req(c, &req, call, timeout_s, &status);
  return st == ACCEL_OK && op->kind == ACCEL_COMM_RECV ? check_count(c, op, &status) : st;
}

/* ---------------------------------------------------------------------------------------- */
/* persistent requests: collectives that graphs replay */

#if MPI_VERSION >= 4
#define PERSISTENT_COLLECTIVES 1
#define PCOLL(name) MPI_##name##_init
#define PCOLL_PREFIX "MPI_"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define PERSISTENT_COLLECTIVES 1
#define PCOLL(name) MPIX_##name##_init
#define PCOLL_PREFIX "MPIX_"
#else
#define PERSISTENT_COLLECTIVES 0
#endif

/* Whether replays use persistent requests when ACCEL_COMM_MPI_PERSISTENT is unset: no. Open
 * MPI 4.1 runs them on libnbc: measured 2-4x slower than the blocking call at 4 KB, 2x faster
 * at 64 MB (accel-bench comm, docs/DISTRIBUTED.md); small collectives are the common case of a
 * captured step (flags, norms), so the default stays blocking. */
#define PERSISTENT_DEFAULT 0

typedef struct mpi_prepared {
  mpi_comm_t *comm;
  MPI_Request req;
  accel_comm_op_t op;
} mpi_prepared_t;

static atomic_long prepared_live;

/* Prepared requests not yet released: a leak check for the tests (dlsym on this plugin). */
ACCEL_PLUGIN_EXPORT long accel_comm_mpi_prepared_live(void) {
  return atomic_load(&prepared_live);
}

/* ACCEL_COMM_MPI_PERSISTENT=1|0, read at every prepare (a collective's first replay), so one
 * process can compare both forms (accel-bench comm). */
static int persistent_enabled(void) {
  const char *e = getenv("ACCEL_COMM_MPI_PERSISTENT");
  if (!e || !*e) return PERSISTENT_DEFAULT;
  return strcmp(e, "0") != 0;
}

static accel_status_t mpi_prepare(accel_ce_comm_t *cc, const accel_comm_op_t *op,
                                  void **handle) {
  mpi_comm_t *c = cc;
  *handle = NULL;
  /* counts past an int and unknown kinds stay on `run`, which reports them */
  if (!persistent_enabled() || op->count > (size_t)INT32_MAX || op->kind > ACCEL_COMM_RECV)
    return ACCEL_OK;
  if (!PERSISTENT_COLLECTIVES && op->kind < ACCEL_COMM_SEND) return ACCEL_OK;
  /* F16/BF16 sums round at every pairwise step, so their result depends on the order of the
   * reduction: Open MPI's persistent (libnbc) reduce_scatter_block combined 4 ranks in another
   * order than the blocking call (comm-persist-np4). They stay on `run`, so that a replayed
   * graph equals eager bitwise. */
  if (op->dtype != ACCEL_F32 && op->reduce == ACCEL_REDUCE_SUM &&
      (op->kind == ACCEL_COMM_ALL_REDUCE || op->kind == ACCEL_COMM_REDUCE_SCATTER))
    return ACCEL_OK;
  mpi_prepared_t *p = calloc(1, sizeof *p);
  if (!p) return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "MPI: out of host memory");
  p->comm = c;
  p->op = *op;
  p->req = MPI_REQUEST_NULL;
  const int n = (int)op->count;
  const MPI_Datatype t = mpi_type(op->dtype);
  const char *call = "?";
  int rc = MPI_SUCCESS;
  switch (op->kind) {
#if PERSISTENT_COLLECTIVES
    case ACCEL_COMM_ALL_REDUCE:
      call = PCOLL_PREFIX "Allreduce_init";
      rc = PCOLL(Allreduce)(op->send == op->recv ? MPI_IN_PLACE : op->send, op->recv, n, t,
                            mpi_op(op->dtype, op->reduce), c->comm, MPI_INFO_NULL, &p->req);
      break;
    case ACCEL_COMM_REDUCE_SCATTER:
      call = PCOLL_PREFIX "Reduce_scatter_block_init";
      rc = PCOLL(Reduce_scatter_block)(op->send, op->recv, n, t, mpi_op(op->dtype, op->reduce),
                                       c->comm, MPI_INFO_NULL, &p->req);
      break;
    case ACCEL_COMM_ALL_GATHER:
      call = PCOLL_PREFIX "Allgather_init";
      rc = op->send ? PCOLL(Allgather)(op->send, n, t, op->recv, n, t, c->comm, MPI_INFO_NULL,
                                       &p->req)
                    : PCOLL(Allgather)(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, op->recv, n, t,
                                       c->comm, MPI_INFO_NULL, &p->req);
      break;
    case ACCEL_COMM_BROADCAST:
      call = PCOLL_PREFIX "Bcast_init";
      rc = PCOLL(Bcast)(op->recv, n, t, op->peer, c->comm, MPI_INFO_NULL, &p->req);
      break;
#endif
    case ACCEL_COMM_SEND:
      call = "MPI_Send_init";
      rc = MPI_Send_init(op->send, n, t, op->peer, 0, c->comm, &p->req);
      break;
    default: /* ACCEL_COMM_RECV */
      call = "MPI_Recv_init";
      rc = MPI_Recv_init(op->recv, n, t, op->peer, 0, c->comm, &p->req);
      break;
  }
  if (rc != MPI_SUCCESS) {
    free(p);
    return mpi_error(call, rc);
  }
  atomic_fetch_add(&prepared_live, 1);
  *handle = p;
  return ACCEL_OK;
}

/* MPI_Start, then the wait of the mode in use: MPI_Wait under the watchdog (block) or
 * MPI_Test until the deadline (poll). */
static accel_status_t mpi_run_prepared(void *handle, double timeout_s) {
  mpi_prepared_t *p = handle;
  mpi_comm_t *c = p->comm;
  const unsigned name = p->op.kind + NUM_KINDS;
  if (!poll_mode && !c->watched)
    return host->set_error(ACCEL_ERROR_BACKEND, "MPI: no watchdog thread for %s (set "
                           "ACCEL_COMM_MPI_WAIT=poll)", call_names[name]);
  int rc = MPI_Start(&p->req);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Start", rc);
  MPI_Status status;
  accel_status_t st = ACCEL_OK;
  if (poll_mode) {
    st = wait_req(c, &p->req, call_names[name], timeout_s, &status);
  } else {
    watch_timeout(c, timeout_s);
    const uint64_t call = wd_begin(c, p->op.kind, name);
    rc = MPI_Wait(&p->req, &status);
    wd_end(c, p->op.kind, call);
    if (rc != MPI_SUCCESS) st = mpi_error(call_names[name], rc);
  }
  return st == ACCEL_OK && p->op.kind == ACCEL_COMM_RECV ? check_count(c, &p->op, &status) : st;
}

static void mpi_release_prepared(void *handle) {
  mpi_prepared_t *p = handle;
  int finalized = 0;
  MPI_Finalized(&finalized);
  /* a request that timed out is still active: MPI cannot free it, it stays to the end */
  if (!finalized && !atomic_load(&p->comm->stuck)) MPI_Request_free(&p->req);
  atomic_fetch_sub(&prepared_live, 1);
  free(p);
}

static accel_status_t mpi_host_all_gather(accel_ce_comm_t *cc, const void *send, void *recv,
                                          size_t bytes, double timeout_s) {
  mpi_comm_t *c = cc;
  if (bytes > (size_t)INT32_MAX)
    return host->set_error(ACCEL_ERROR_UNSUPPORTED, "MPI: %zu bytes exceed an MPI int", bytes);
  MPI_Request req;
  int rc = MPI_Iallgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, c->side, &req);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Iallgather", rc);
  MPI_Status status;
  return wait_req(c, &req, "MPI_Iallgather", timeout_s, &status);
}

/* ---------------------------------------------------------------------------------------- */
/* communicators */

/* Whether a blocking call is in flight on some communicator: a thread is inside MPI. */
static int calls_in_flight(void) {
  int busy = 0;
  pthread_mutex_lock(&wd_lock);
  for (mpi_comm_t *c = wd_list; c && !busy; c = c->wd_next)
    busy = atomic_load(&c->coll.started) != atomic_load(&c->coll.finished) ||
           atomic_load(&c->p2p.started) != atomic_load(&c->p2p.finished);
  pthread_mutex_unlock(&wd_lock);
  return busy;
}

/* The core has let the streams finish their collectives before this runs (core/comm_exit.c);
 * one still in flight then (it outlived its deadline) is not finalized under. */
static void finalize_at_exit(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (calls_in_flight())
    host->log(ACCEL_LOG_WARN, "comm", "MPI engine: a collective is still running at exit; "
              "MPI_Finalize skipped");
  else
    MPI_Finalize();
}

static accel_status_t ensure_mpi(void) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized)
    return host->set_error(ACCEL_ERROR_STATE, "MPI: MPI_Finalize was already called");
  int provided = 0;
  if (!inited) {
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return mpi_error("MPI_Init_thread", rc);
    atexit(finalize_at_exit);
    /* MPI is accel's: Open MPI reports a failed nonblocking collective (the poll mode's) to
     * MPI_COMM_WORLD's handler, which would end the job instead of failing the communicator */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE)
    return host->set_error(ACCEL_ERROR_UNSUPPORTED,
                           "MPI: thread level %d < MPI_THREAD_MULTIPLE (collectives run on the "
                           "stream's thread): initialise MPI with MPI_Init_thread(..., "
                           "MPI_THREAD_MULTIPLE, ...)", provided);
  pthread_once(&ops_once, create_ops);
  return ops_status == MPI_SUCCESS ? ACCEL_OK : mpi_error("MPI_Op_create", ops_status);
}

static accel_status_t wrap(MPI_Comm comm, accel_ce_comm_t **out, int *rank, int *size) {
  mpi_comm_t *c = calloc(1, sizeof *c);
  MPI_Comm side = MPI_COMM_NULL;
  int rc = c ? MPI_Comm_dup(comm, &side) : MPI_SUCCESS; /* collective, as the caller's call */
  if (!c || rc != MPI_SUCCESS) {
    free(c);
    MPI_Comm_free(&comm);
    if (rc != MPI_SUCCESS) return mpi_error("MPI_Comm_dup", rc);
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "MPI: out of host memory");
  }
  c->comm = comm;
  c->side = side;
  MPI_Comm_set_errhandler(side, MPI_ERRORS_RETURN);
  c->watched = !poll_mode && watch_add(c);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &c->rank);
  MPI_Comm_size(comm, &c->size);
  *rank = c->rank;
  *size = c->size;
  *out = c;
  return ACCEL_OK;
}

static accel_status_t mpi_comm_create(const void *mpi_comm, accel_ce_comm_t **out, int *rank,
                                      int *size) {
  accel_status_t st = ensure_mpi();
  if (st != ACCEL_OK) return st;
  MPI_Comm dup;
  int rc = MPI_Comm_dup(mpi_comm ? *(const MPI_Comm *)mpi_comm : MPI_COMM_WORLD, &dup);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Comm_dup", rc);
  return wrap(dup, out, rank, size);
}

static accel_status_t mpi_comm_split(accel_ce_comm_t *cc, int color, int key,
                                     accel_ce_comm_t **out, int *rank, int *size) {
  mpi_comm_t *c = cc;
  MPI_Comm sub;
  int rc = MPI_Comm_split(c->comm, color < 0 ? MPI_UNDEFINED : color, key, &sub);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Comm_split", rc);
  *out = NULL;
  if (sub == MPI_COMM_NULL) return ACCEL_OK;
  return wrap(sub, out, rank, size);
}

static void mpi_comm_destroy(accel_ce_comm_t *cc) {
  mpi_comm_t *c = cc;
  if (c->watched) watch_remove(c);
  int finalized = 0;
  MPI_Finalized(&finalized);
  /* a communicator with a request that never completed is left to the process's end */
  if (!finalized && !atomic_load(&c->stuck)) {
    MPI_Comm_free(&c->comm);
    MPI_Comm_free(&c->side);
  }
  free(c);
}

static void mpi_abort(accel_ce_comm_t *cc, int code) {
  mpi_comm_t *c = cc;
  MPI_Abort(c->comm, code);
}

static accel_status_t mpi_engine_init(const accel_host_api_t *h) {
  host = h;
  const char *wait = getenv("ACCEL_COMM_MPI_WAIT");
  poll_mode = wait && strcmp(wait, "poll") == 0;
  if (wait && *wait && !poll_mode && strcmp(wait, "block") != 0)
    host->log(ACCEL_LOG_WARN, "comm", "ACCEL_COMM_MPI_WAIT=%s is not block or poll; using block",
              wait);
  /* Open MPI opens its own components with dlopen and they expect libmpi's symbols to be
   * global; this plugin was opened RTLD_LOCAL, so promote the already loaded libmpi. */
  Dl_info info;
  if (dladdr((void *)MPI_Init_thread, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  char *nl = strchr(version, '\n');
  if (nl) *nl = '\0';
  host->log(ACCEL_LOG_INFO, "comm", "MPI engine (%s waits, persistent collectives %s): %s",
            poll_mode ? "poll" : "block",
            PERSISTENT_COLLECTIVES ? "available" : "absent", version);
  return ACCEL_OK;
}

static const accel_comm_engine_vtable_t vtable = {
    .abi_version = ACCEL_COMM_ENGINE_ABI_VERSION,
    .struct_size = sizeof(accel_comm_engine_vtable_t),
    .name = "mpi",
    .description = "MPI (blocking calls under a watchdog, or polled: ACCEL_COMM_MPI_WAIT; "
                   "graph replays on persistent requests: ACCEL_COMM_MPI_PERSISTENT=1)",
    .host_engine = 1,
    .engine_init = mpi_engine_init,
    .comm_create_mpi = mpi_comm_create,
    .comm_split = mpi_comm_split,
    .comm_destroy = mpi_comm_destroy,
    .run = mpi_run,
    .abort = mpi_abort,
    .host_all_gather = mpi_host_all_gather,
    .prepare = mpi_prepare,
    .run_prepared = mpi_run_prepared,
    .release_prepared = mpi_release_prepared,
};

ACCEL_COMM_ENGINE_DEFINE_QUERY(vtable, "MPI")
