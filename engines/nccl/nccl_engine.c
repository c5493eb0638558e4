/*
 * The NCCL engine (libaccelcomm-nccl.so) and, built from this file with ACCEL_CCL_RCCL, the
 * RCCL engine (libaccelcomm-rccl.so): stream engines that enqueue every collective on the
 * CUDA / HIP stream under the accel stream (the backend's stream_native slot). The library is
 * dlopen'ed with a symbol table (vendor_nccl.h), so the engine loads anywhere and reports
 * UNAVAILABLE without it. Bootstrap: rank 0's ncclUniqueId is all-gathered over MPI (the
 * core's bootstrap), then ncclCommInitRank with the accel device made current on the calling
 * thread (NCCL binds the communicator to the CUDA runtime's current device, which follows the
 * driver's current context: the device's primary context, cuCtxSetCurrent; RCCL: hipSetDevice
 * of its ordinal) and the caller's context / device restored afterwards. The vendor runtime is
 * the one the backend plugin already loaded (dlopen RTLD_NOLOAD). libnccl.so.2 is searched on
 * the loader's path: the pip wheel's (nvidia/nccl/lib) needs LD_LIBRARY_PATH.
 *
 * Verified here only by compiling, loading and reporting UNAVAILABLE (no GPU, no libnccl).
 * Graph capture: the core records each collective as an ACCEL_CMD_NATIVE command and the
 * CUDA/HIP backend calls ccl_enqueue while it captures its private stream into the accel graph
 * (NCCL >= 2.9 and RCCL can be captured), so a replay runs the captured NCCL kernels.
 * ACCEL_COMM_TIMEOUT: the core's watchdog (core/comm_watchdog.c) polls ccl_async_error while
 * eager collectives run and calls ccl_cancel (ncclCommAbort) when one fails or passes the
 * deadline. Not done: non-blocking communicators (ncclCommInitRankConfig with blocking = 0), so
 * an NCCL call that blocks on the host (connection setup) is not interrupted; a fused downcast
 * (the core refuses accel_all_gather_downcast on stream engines).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel_comm_engine.h"
#include "vendor_lib.h"
#include "vendor_nccl.h"

#ifdef ACCEL_CCL_RCCL
#define ENGINE_NAME "rccl"
#define ENGINE_LIBS {"librccl.so.1", "librccl.so"}
#define RUNTIME_LIBS {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}
#else
#define RUNTIME_LIBS {"libcuda.so.1", "libcuda.so"}
#define ENGINE_NAME "nccl"
#define ENGINE_LIBS {"libnccl.so.2", "libnccl.so"}
#endif

static const accel_host_api_t *host;

static struct {
#define CCL_FIELD(field, symbol, ret, params) ret(*field) params;
  CCL_API_TABLE(CCL_FIELD, CCL_FIELD)
#undef CCL_FIELD
} ccl;

/* Current device of the calling thread (int is CUresult / hipError_t; 0 is success). */
static struct {
#ifdef ACCEL_CCL_RCCL
  int (*get)(int *ordinal);  /* hipGetDevice */
  int (*set)(int ordinal);   /* hipSetDevice */
#else
  int (*get)(void **ctx);    /* cuCtxGetCurrent */
  int (*set)(void *ctx);     /* cuCtxSetCurrent */
#endif
} rt;

typedef struct ccl_engine_comm {
  ccl_comm_t comm;
  int rank, size;
  int aborted; /* ncclCommAbort freed comm (ccl_cancel); __atomic */
} ccl_engine_comm_t;

static accel_status_t ccl_error(const char *call, ccl_result_t r) {
  return host->set_error(ACCEL_ERROR_BACKEND, "%s: %s (%u)", call, ccl.GetErrorString(r), r);
}

static accel_status_t ccl_init(const accel_host_api_t *h) {
  host = h;
  static const char *const names[] = ENGINE_LIBS;
  const char *chosen = NULL;
  char tried[1024];
  void *lib = accel_vendor_open(names, sizeof names / sizeof names[0], &chosen, tried,
                                sizeof tried);
  if (!lib)
    return host->set_error(ACCEL_ERROR_UNAVAILABLE, ENGINE_NAME " engine: %s", tried);
  static const accel_vendor_symbol_t syms[] = {
#define CCL_REQ(field, symbol, ret, params) {symbol, symbol, (void **)&ccl.field, 1},
#define CCL_OPT(field, symbol, ret, params) {symbol, symbol, (void **)&ccl.field, 0},
      CCL_API_TABLE(CCL_REQ, CCL_OPT)
#undef CCL_REQ
#undef CCL_OPT
  };
  char missing[512];
  if (accel_vendor_resolve(lib, NULL, NULL, syms, sizeof syms / sizeof syms[0], missing,
                           sizeof missing))
    return host->set_error(ACCEL_ERROR_UNAVAILABLE, ENGINE_NAME " engine: %s lacks %s", chosen,
                           missing);
  /* the runtime the backend plugin loaded (never dlclose'd, like every vendor library) */
  static const char *const rt_names[] = RUNTIME_LIBS;
  for (size_t i = 0; i < sizeof rt_names / sizeof rt_names[0] && !rt.set; ++i) {
    void *r = dlopen(rt_names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!r) r = dlopen(rt_names[i], RTLD_NOW | RTLD_LOCAL);
    if (!r) continue;
#ifdef ACCEL_CCL_RCCL
    rt.get = (__typeof__(rt.get))dlsym(r, "hipGetDevice");
    rt.set = (__typeof__(rt.set))dlsym(r, "hipSetDevice");
#else
    rt.get = (__typeof__(rt.get))dlsym(r, "cuCtxGetCurrent");
    rt.set = (__typeof__(rt.set))dlsym(r, "cuCtxSetCurrent");
#endif
    if (!rt.get || !rt.set) rt.get = NULL, rt.set = NULL;
  }
  if (!rt.set)
    host->log(ACCEL_LOG_INFO, "comm", ENGINE_NAME " engine: no %s to select the device with; "
              "communicators use the calling thread's current device", rt_names[0]);
  int version = 0;
  ccl.GetVersion(&version);
  host->log(ACCEL_LOG_INFO, "comm", ENGINE_NAME " engine: %s, version %d", chosen, version);
  return ACCEL_OK;
}

static accel_status_t wrap(ccl_comm_t comm, accel_ce_comm_t **out) {
  ccl_engine_comm_t *c = calloc(1, sizeof *c);
  if (!c) {
    ccl.CommDestroy(comm);
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, ENGINE_NAME ": out of host memory");
  }
  c->comm = comm;
  ccl.CommUserRank(comm, &c->rank);
  ccl.CommCount(comm, &c->size);
  *out = c;
  return ACCEL_OK;
}

/* Makes the accel device current for NCCL; *saved receives the caller's. 0: not switched. */
static int device_enter(const accel_native_t *dev, void **saved_ctx, int *saved_ordinal) {
  if (!rt.set) return 0;
#ifdef ACCEL_CCL_RCCL
  (void)saved_ctx;
  if (rt.get(saved_ordinal) != 0) return 0;
  int r = rt.set((int)(intptr_t)dev->device);
#else
  (void)saved_ordinal;
  if (rt.get(saved_ctx) != 0) return 0;
  int r = rt.set(dev->context);
#endif
  if (r != 0) {
    host->log(ACCEL_LOG_WARN, "comm", ENGINE_NAME ": selecting the accel device failed (%d); "
              "the communicator uses the thread's current device", r);
    return 0;
  }
  return 1;
}

static void device_leave(void *saved_ctx, int saved_ordinal) {
#ifdef ACCEL_CCL_RCCL
  (void)saved_ctx;
  int r = rt.set(saved_ordinal);
#else
  (void)saved_ordinal;
  int r = rt.set(saved_ctx); /* NULL is valid: no context was current */
#endif
  if (r != 0)
    host->log(ACCEL_LOG_WARN, "comm", ENGINE_NAME ": restoring the caller's device failed (%d)",
              r);
}

static accel_status_t ccl_create(const accel_comm_bootstrap_t *boot, const accel_native_t *dev,
                                 accel_ce_comm_t **out) {
  ccl_unique_id_t id;
  memset(&id, 0, sizeof id);
  if (boot->rank == 0) {
    ccl_result_t r = ccl.GetUniqueId(&id);
    if (r != CCL_SUCCESS) return ccl_error("ncclGetUniqueId", r);
  }
  ccl_unique_id_t *all = calloc((size_t)boot->size, sizeof id);
  if (!all) return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, ENGINE_NAME ": out of memory");
  accel_status_t st = boot->all_gather(boot->ctx, &id, all, sizeof id);
  if (st == ACCEL_OK) id = all[0];
  free(all);
  if (st != ACCEL_OK) return st;
  ccl_comm_t comm = NULL;
  void *saved_ctx = NULL;
  int saved_ordinal = 0;
  const int switched = device_enter(dev, &saved_ctx, &saved_ordinal);
  ccl_result_t r = ccl.CommInitRank(&comm, boot->size, id, boot->rank);
  if (switched) device_leave(saved_ctx, saved_ordinal);
  return r == CCL_SUCCESS ? wrap(comm, out) : ccl_error("ncclCommInitRank", r);
}

static accel_status_t ccl_split(accel_ce_comm_t *cc, int color, int key, accel_ce_comm_t **out,
                                int *rank, int *size) {
  ccl_engine_comm_t *c = cc;
  if (!ccl.CommSplit)
    return host->set_error(ACCEL_ERROR_UNSUPPORTED, ENGINE_NAME ": ncclCommSplit is absent "
                           "(NCCL < 2.18)");
  ccl_comm_t sub = NULL;
  ccl_result_t r = ccl.CommSplit(c->comm, color < 0 ? CCL_SPLIT_NOCOLOR : color, key, &sub, NULL);
  if (r != CCL_SUCCESS) return ccl_error("ncclCommSplit", r);
  *out = NULL;
  if (!sub) return ACCEL_OK;
  accel_status_t st = wrap(sub, out);
  if (st == ACCEL_OK) {
    *rank = ((ccl_engine_comm_t *)*out)->rank;
    *size = ((ccl_engine_comm_t *)*out)->size;
  }
  return st;
}

static void ccl_destroy(accel_ce_comm_t *cc) {
  ccl_engine_comm_t *c = cc;
  if (!__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) ccl.CommDestroy(c->comm);
  free(c);
}

/* The watchdog's probe (ACCEL_COMM_TIMEOUT): an error a collective hit asynchronously. */
static accel_status_t ccl_async_error(accel_ce_comm_t *cc) {
  ccl_engine_comm_t *c = cc;
  /* ncclCommAbort freed the communicator: never hand it to NCCL again */
  if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
    return host->set_error(ACCEL_ERROR_BACKEND, ENGINE_NAME ": the communicator was aborted "
                           "(ACCEL_COMM_TIMEOUT or an earlier asynchronous error)");
  ccl_result_t async = CCL_SUCCESS, r = ccl.CommGetAsyncError(c->comm, &async);
  if (r != CCL_SUCCESS) return ccl_error("ncclCommGetAsyncError", r);
  return async == CCL_SUCCESS ? ACCEL_OK
                               : ccl_error("a collective (ncclCommGetAsyncError)", async);
}

/* The watchdog gave up on a collective: ncclCommAbort makes the communicator's kernels return
 * (so the stream moves on) and frees it; the core issues nothing on it afterwards. */
static void ccl_cancel(accel_ce_comm_t *cc) {
  ccl_engine_comm_t *c = cc;
  __atomic_store_n(&c->aborted, 1, __ATOMIC_RELEASE);
  ccl_result_t r = ccl.CommAbort(c->comm);
  if (r != CCL_SUCCESS)
    host->log(ACCEL_LOG_ERROR, ENGINE_NAME, "ncclCommAbort: %s (%u)", ccl.GetErrorString(r), r);
}

static ccl_datatype_t dtype_of(uint32_t dt) {
  return dt == ACCEL_F32 ? CCL_FLOAT32 : dt == ACCEL_F16 ? CCL_FLOAT16 : CCL_BFLOAT16;
}

/* accel_sendrecv: the send and the receive in one group, so NCCL progresses them together (a
 * ring or pairwise exchange whose ranks all send first would deadlock otherwise). The group is
 * ended even when a call in it failed, as NCCL requires. */
static accel_status_t ccl_sendrecv(ccl_engine_comm_t *c, const accel_comm_op_t *op,
                                   ccl_datatype_t t, ccl_stream_t s) {
  ccl_result_t r = ccl.GroupStart();
  if (r != CCL_SUCCESS) return ccl_error("ncclGroupStart", r);
  const char *call = "ncclSend";
  r = ccl.Send(op->send, op->count, t, op->peer, c->comm, s);
  if (r == CCL_SUCCESS) {
    call = "ncclRecv";
    r = ccl.Recv(op->recv, op->recv_count, t, op->recv_peer, c->comm, s);
  }
  const ccl_result_t end = ccl.GroupEnd();
  if (r != CCL_SUCCESS) return ccl_error(call, r);
  return end == CCL_SUCCESS ? ACCEL_OK : ccl_error("ncclGroupEnd", end);
}

static accel_status_t ccl_enqueue(accel_ce_comm_t *cc, const accel_comm_op_t *op,
                                  const accel_native_t *stream) {
  ccl_engine_comm_t *c = cc;
  if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
    return host->set_error(ACCEL_ERROR_BACKEND, ENGINE_NAME ": the communicator was aborted");
  ccl_stream_t s = (ccl_stream_t)stream->queue;
  const ccl_datatype_t t = dtype_of(op->dtype);
  const ccl_redop_t red = op->reduce == ACCEL_REDUCE_SUM   ? CCL_SUM
                          : op->reduce == ACCEL_REDUCE_MAX ? CCL_MAX
                                                           : CCL_MIN;
  const size_t es = op->dtype == ACCEL_F32 ? 4 : 2;
  /* an earlier collective or a peer failed asynchronously: report it instead of queueing more
   * work behind it (the core then marks the communicator failed) */
  ccl_result_t r = CCL_SUCCESS, async = CCL_SUCCESS;
  if ((r = ccl.CommGetAsyncError(c->comm, &async)) != CCL_SUCCESS)
    return ccl_error("ncclCommGetAsyncError", r);
  if (async != CCL_SUCCESS)
    return ccl_error("an earlier collective (ncclCommGetAsyncError)", async);
  const char *call = "?";
  switch (op->kind) {
    case ACCEL_COMM_ALL_REDUCE:
      call = "ncclAllReduce";
      r = ccl.AllReduce(op->send, op->recv, op->count, t, red, c->comm, s);
      break;
    case ACCEL_COMM_REDUCE_SCATTER:
      call = "ncclReduceScatter";
      r = ccl.ReduceScatter(op->send, op->recv, op->count, t, red, c->comm, s);
      break;
    case ACCEL_COMM_ALL_GATHER: /* in place: NCCL's convention is send == recv + rank block */
      call = "ncclAllGather";
      r = ccl.AllGather(op->send ? op->send : (char *)op->recv + (size_t)c->rank * op->count * es,
                        op->recv, op->count, t, c->comm, s);
      break;
    case ACCEL_COMM_BROADCAST:
      call = "ncclBroadcast";
      r = ccl.Broadcast(op->recv, op->recv, op->count, t, op->peer, c->comm, s);
      break;
    case ACCEL_COMM_SEND:
      call = "ncclSend";
      r = ccl.Send(op->send, op->count, t, op->peer, c->comm, s);
      break;
    case ACCEL_COMM_RECV:
      call = "ncclRecv";
      r = ccl.Recv(op->recv, op->count, t, op->peer, c->comm, s);
      break;
    default:
      return ccl_sendrecv(c, op, t, s);
  }
  return r == CCL_SUCCESS ? ACCEL_OK : ccl_error(call, r);
}

static void ccl_abort(accel_ce_comm_t *cc, int code) {
  ccl_engine_comm_t *c = cc;
  ccl.CommAbort(c->comm); /* the peers see the failure through their own async error */
  _exit(code);
}

static const accel_comm_engine_vtable_t vtable = {
    .abi_version = ACCEL_COMM_ENGINE_ABI_VERSION,
    .struct_size = sizeof(accel_comm_engine_vtable_t),
    .name = ENGINE_NAME,
#ifdef ACCEL_CCL_RCCL
    .description = "RCCL on HIP streams (dlopen librccl)",
#else
    .description = "NCCL on CUDA streams (dlopen libnccl)",
#endif
    .host_engine = 0,
    .engine_init = ccl_init,
    .comm_create_bootstrap = ccl_create,
    .comm_split = ccl_split,
    .comm_destroy = ccl_destroy,
    .enqueue = ccl_enqueue,
    .abort = ccl_abort,
    .comm_async_error = ccl_async_error,
    .comm_cancel = ccl_cancel,
};

ACCEL_COMM_ENGINE_DEFINE_QUERY(vtable, ENGINE_NAME)
