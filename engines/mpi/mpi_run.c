/*
 * Running the MPI engine's collectives (mpi_engine.c describes the modes): `run` as a blocking
 * call under the watchdog or a polled nonblocking one, the persistent requests that graph
 * replays start (`prepare`, `run_prepared`, `release_prepared`), and the host all-gather.
 */
#include <mpi.h>
#if MPI_VERSION < 4 && defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_*_init: Open MPI's pcollreq extension (MPI-4 persistent collectives) */
#endif
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* The blocking form of op under the watchdog. */
static accel_status_t run_blocking(mpi_comm_t *c, const accel_comm_op_t *op, double timeout_s,
                                   MPI_Status *status) {
  const int n = (int)op->count;
  const MPI_Datatype t = mpi_type(op->dtype);
  if (!c->watched)
    return mpi_host->set_error(ACCEL_ERROR_BACKEND, "MPI: no watchdog thread for %s (set "
                               "ACCEL_COMM_MPI_WAIT=poll)", mpi_call_names[op->kind]);
  mpi_watch_timeout(c, timeout_s);
  const uint64_t call = mpi_wd_begin(c, op->kind, op->kind);
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
    case ACCEL_COMM_RECV:
      rc = MPI_Recv(op->recv, n, t, op->peer, 0, c->comm, status);
      break;
    default: /* ACCEL_COMM_SENDRECV */
      rc = MPI_Sendrecv(op->send, n, t, op->peer, 0, op->recv, (int)op->recv_count, t,
                        op->recv_peer, 0, c->comm, status);
      break;
  }
  mpi_wd_end(c, op->kind, call);
  return rc == MPI_SUCCESS ? ACCEL_OK : mpi_error(mpi_call_names[op->kind], rc);
}

/* Whether a completed op received a message whose count is to be checked. */
static int receives(unsigned kind) {
  return kind == ACCEL_COMM_RECV || kind == ACCEL_COMM_SENDRECV;
}

/* Polled sendrecv: both requests posted before either is waited for, so they progress
 * together as MPI_Sendrecv's do. */
static accel_status_t sendrecv_polled(mpi_comm_t *c, const accel_comm_op_t *op,
                                      double timeout_s, MPI_Status *status) {
  const MPI_Datatype t = mpi_type(op->dtype);
  MPI_Request sreq = MPI_REQUEST_NULL, rreq = MPI_REQUEST_NULL;
  int rc = MPI_Irecv(op->recv, (int)op->recv_count, t, op->recv_peer, 0, c->comm, &rreq);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Irecv", rc);
  rc = MPI_Isend(op->send, (int)op->count, t, op->peer, 0, c->comm, &sreq);
  if (rc != MPI_SUCCESS) {
    MPI_Cancel(&rreq);
    MPI_Request_free(&rreq);
    return mpi_error("MPI_Isend", rc);
  }
  MPI_Status sent;
  accel_status_t st = mpi_wait_req(c, &rreq, "MPI_Irecv (sendrecv)", timeout_s, status);
  /* a failed receive leaves the send to the communicator's failure (it is marked stuck) */
  return st == ACCEL_OK ? mpi_wait_req(c, &sreq, "MPI_Isend (sendrecv)", timeout_s, &sent) : st;
}

accel_status_t mpi_run(accel_ce_comm_t *cc, const accel_comm_op_t *op, double timeout_s) {
  mpi_comm_t *c = cc;
  if (op->count > (size_t)INT32_MAX ||
      (op->kind == ACCEL_COMM_SENDRECV && op->recv_count > (size_t)INT32_MAX))
    return mpi_host->set_error(ACCEL_ERROR_UNSUPPORTED, "MPI: count %zu exceeds an MPI int",
                               op->count > (size_t)INT32_MAX ? op->count : op->recv_count);
  if (op->kind > ACCEL_COMM_SENDRECV)
    return mpi_host->set_error(ACCEL_ERROR_UNSUPPORTED, "MPI: unknown collective %u", op->kind);
  const int n = (int)op->count;
  const MPI_Datatype t = mpi_type(op->dtype);
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Status status;
  if (!mpi_poll_mode || op->kind == ACCEL_COMM_SENDRECV) {
    accel_status_t st = !mpi_poll_mode ? run_blocking(c, op, timeout_s, &status)
                                       : sendrecv_polled(c, op, timeout_s, &status);
    return st == ACCEL_OK && receives(op->kind) ? mpi_check_count(c, op, &status) : st;
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
  accel_status_t st = mpi_wait_req(c, &req, call, timeout_s, &status);
  return st == ACCEL_OK && receives(op->kind) ? mpi_check_count(c, op, &status) : st;
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

int mpi_persistent_available(void) { return PERSISTENT_COLLECTIVES; }

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

accel_status_t mpi_prepare(accel_ce_comm_t *cc, const accel_comm_op_t *op,
                                  void **handle) {
  mpi_comm_t *c = cc;
  *handle = NULL;
  /* counts past an int and unknown kinds stay on `run`, which reports them; so does sendrecv
   * (two requests: MPI_Sendrecv itself is as fast a replay) */
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
  if (!p) return mpi_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "MPI: out of host memory");
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
accel_status_t mpi_run_prepared(void *handle, double timeout_s) {
  mpi_prepared_t *p = handle;
  mpi_comm_t *c = p->comm;
  const unsigned name = p->op.kind + NUM_KINDS;
  if (!mpi_poll_mode && !c->watched)
    return mpi_host->set_error(ACCEL_ERROR_BACKEND, "MPI: no watchdog thread for %s (set "
                               "ACCEL_COMM_MPI_WAIT=poll)", mpi_call_names[name]);
  int rc = MPI_Start(&p->req);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Start", rc);
  MPI_Status status;
  accel_status_t st = ACCEL_OK;
  if (mpi_poll_mode) {
    st = mpi_wait_req(c, &p->req, mpi_call_names[name], timeout_s, &status);
  } else {
    mpi_watch_timeout(c, timeout_s);
    const uint64_t call = mpi_wd_begin(c, p->op.kind, name);
    rc = MPI_Wait(&p->req, &status);
    mpi_wd_end(c, p->op.kind, call);
    if (rc != MPI_SUCCESS) st = mpi_error(mpi_call_names[name], rc);
  }
  return st == ACCEL_OK && p->op.kind == ACCEL_COMM_RECV ? mpi_check_count(c, &p->op, &status) : st;
}

void mpi_release_prepared(void *handle) {
  mpi_prepared_t *p = handle;
  int finalized = 0;
  MPI_Finalized(&finalized);
  /* a request that timed out is still active: MPI cannot free it, it stays to the end */
  if (!finalized && !atomic_load(&p->comm->stuck)) MPI_Request_free(&p->req);
  atomic_fetch_sub(&prepared_live, 1);
  free(p);
}

accel_status_t mpi_host_all_gather(accel_ce_comm_t *cc, const void *send, void *recv,
                                          size_t bytes, double timeout_s) {
  mpi_comm_t *c = cc;
  if (bytes > (size_t)INT32_MAX)
    return mpi_host->set_error(ACCEL_ERROR_UNSUPPORTED, "MPI: %zu bytes exceed an MPI int", bytes);
  MPI_Request req;
  int rc = MPI_Iallgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, c->side, &req);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Iallgather", rc);
  MPI_Status status;
  return mpi_wait_req(c, &req, "MPI_Iallgather", timeout_s, &status);
}
