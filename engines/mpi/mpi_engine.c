/*
 * The MPI collective engine (libaccelcomm-mpi.so), built against the system MPI.
 *
 * A host engine: the core calls `run` from a host function in stream order, on the stream's
 * thread, with host-accessible device memory. ACCEL_COMM_TIMEOUT bounds every collective in
 * one of two ways (ACCEL_COMM_MPI_WAIT):
 *  - block (default): the blocking MPI call (MPI_Allreduce...: the library's tuned algorithms,
 *    as fast as a bare MPI loop), watched by a watchdog thread. A call still running at its
 *    deadline is reported ("rank R: ... did not complete within T s") and, after a grace of
 *    1 s that lets the other ranks report too, the job is ended with MPI_Abort: a blocking MPI
 *    call cannot be interrupted, and an error return would leave the stream's thread stuck
 *    inside it (mpi_watchdog.c).
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
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_comm_engine.h"
#include "prelude_c.h"
#include "accel_kernel_abi.h"
#include "convert.h"
#include "mpi_internal.h"

const accel_host_api_t *mpi_host;
int mpi_poll_mode;

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

MPI_Op mpi_op(uint32_t dtype, uint32_t reduce) {
  if (dtype == ACCEL_F32)
    return reduce == ACCEL_REDUCE_SUM ? MPI_SUM : reduce == ACCEL_REDUCE_MAX ? MPI_MAX : MPI_MIN;
  return ops16[dtype == ACCEL_BF16][reduce];
}

/* ---------------------------------------------------------------------------------------- */

accel_status_t mpi_error(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "?");
  return mpi_host->set_error(ACCEL_ERROR_BACKEND, "%s: %s (MPI error %d)", call, text, code);
}

/* Spins first (latency), then yields (an oversubscribed node, where the peer needs this core
 * to make progress). */
accel_status_t mpi_wait_req(mpi_comm_t *c, MPI_Request *req, const char *call,
                            double timeout_s, MPI_Status *status) {
  const double deadline = mpi_now_s() + timeout_s;
  for (unsigned long i = 0;; ++i) {
    int done = 0;
    int rc = MPI_Test(req, &done, status);
    if (rc != MPI_SUCCESS) return mpi_error(call, rc);
    if (done) return ACCEL_OK;
    if (i > 2000) sched_yield();
    if ((i & 255u) == 0 && mpi_now_s() > deadline) {
      atomic_store(&c->stuck, 1);
      return mpi_host->set_error(ACCEL_ERROR_BACKEND,
                                 "%s on rank %d of %d did not complete within %.3g s "
                                 "(ACCEL_COMM_TIMEOUT): a peer is dead, missing or issued a "
                                 "different sequence of collectives",
                                 call, c->rank, c->size, timeout_s);
    }
  }
}

accel_status_t mpi_check_count(mpi_comm_t *c, const accel_comm_op_t *op,
                               const MPI_Status *status) {
  const int sendrecv = op->kind == ACCEL_COMM_SENDRECV;
  const size_t want = sendrecv ? op->recv_count : op->count;
  int got = 0;
  MPI_Get_count(status, mpi_type(op->dtype), &got);
  if ((size_t)got == want) return ACCEL_OK;
  return mpi_host->set_error(ACCEL_ERROR_BACKEND,
                             "%s on rank %d: %d elements arrived from rank %d, %zu were "
                             "expected (mismatched count)", sendrecv ? "accel_sendrecv" :
                             "accel_recv", c->rank, got, sendrecv ? op->recv_peer : op->peer,
                             want);
}

/* ---------------------------------------------------------------------------------------- */
/* communicators */

/* The core has let the streams finish their collectives before this runs (core/comm_exit.c);
 * one still in flight then (it outlived its deadline) is not finalized under. */
static void finalize_at_exit(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (mpi_calls_in_flight())
    mpi_host->log(ACCEL_LOG_WARN, "comm", "MPI engine: a collective is still running at exit; "
                  "MPI_Finalize skipped");
  else
    MPI_Finalize();
}

static accel_status_t ensure_mpi(void) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized)
    return mpi_host->set_error(ACCEL_ERROR_STATE, "MPI: MPI_Finalize was already called");
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
    return mpi_host->set_error(ACCEL_ERROR_UNSUPPORTED,
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
    return mpi_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "MPI: out of host memory");
  }
  c->comm = comm;
  c->side = side;
  MPI_Comm_set_errhandler(side, MPI_ERRORS_RETURN);
  c->watched = !mpi_poll_mode && mpi_watch_add(c);
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
  if (c->watched) mpi_watch_remove(c);
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
  mpi_host = h;
  const char *wait = getenv("ACCEL_COMM_MPI_WAIT");
  mpi_poll_mode = wait && strcmp(wait, "poll") == 0;
  if (wait && *wait && !mpi_poll_mode && strcmp(wait, "block") != 0)
    mpi_host->log(ACCEL_LOG_WARN, "comm",
                  "ACCEL_COMM_MPI_WAIT=%s is not block or poll; using block", wait);
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
  mpi_host->log(ACCEL_LOG_INFO, "comm", "MPI engine (%s waits, persistent collectives %s): %s",
                mpi_poll_mode ? "poll" : "block",
                mpi_persistent_available() ? "available" : "absent", version);
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
