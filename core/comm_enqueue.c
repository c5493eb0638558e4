/*
 * Issuing collectives (include/accel/accel_comm.h): argument checks, the per-thread cache of
 * what was last validated, the command a recording keeps, the host engine's run in stream
 * order, the stream engine's native command and its watch, and the fused all-gather downcast
 * (the distributed norms built on the collectives are core/comm_norm.c's). The communicator's
 * lifecycle is core/comm.c's (see there for the failure model).
 *
 * A collective on a host engine (MPI) is a host operation of the stream (accel_host_op_t): it
 * runs in stream order on the stream's thread, is recorded by captures and lazy queues like any
 * command, and holds a reference to its communicator for as long as a recording of it exists.
 * A stream engine (NCCL, RCCL, oneCCL) enqueues on the backend's native stream instead; that
 * path is eager only (see docs/DISTRIBUTED.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/accel_kernels.h"
#include "comm_internal.h"
#include "core_util.h"
#include "kernel_ops_internal.h"
#include "log.h"

/* One issued collective: what a recording keeps alive. */
typedef struct comm_cmd {
  accel_host_op_t op; /* first: the keepalive is the command */
  accel_comm_t *comm; /* reference held */
  accel_comm_op_t cop;
  accel_dtype_t downcast; /* all_gather_downcast: recv dtype; F32 otherwise */
  const float *downcast_src;
  /* issued during a capture to an engine with `prepare`: replays run its prepared form */
  bool replayed;
  atomic_int running;  /* a replay is in cmd_run: guards the two fields below */
  bool prepare_tried;  /* prepare was called (at the first replay) */
  void *prepared;      /* the engine's handle; NULL: this op stays on `run` */
} comm_cmd_t;

static void cmd_release(accel_keepalive_t *k) {
  comm_cmd_t *cmd = (comm_cmd_t *)k;
  if (cmd->prepared) cmd->comm->ev->release_prepared(cmd->prepared);
  accel_comm_release_ref(cmd->comm);
  free(cmd);
}

/* (the loader pads an older engine's vtable with NULL slots: no struct_size check here) */
static bool engine_prepares(const accel_comm_engine_vtable_t *ev) {
  return ev->prepare && ev->run_prepared && ev->release_prepared;
}

/* A collective that a graph replays: the engine's persistent form of it, made at the first
 * replay and run by every later one (freed with the recording, cmd_release). Making it may be
 * collective (MPI-4 persistent collectives): it happens here, on the stream's thread in stream
 * order, so every rank makes it at the same point of the same sequence of collectives. */
static accel_status_t run_replayed(comm_cmd_t *cmd) {
  accel_comm_t *c = cmd->comm;
  if (atomic_exchange(&cmd->running, 1))
    return accel_set_error(ACCEL_ERROR_STATE,
                           "a recorded collective runs on two streams at once: replays of "
                           "graphs with collectives on one communicator must be ordered "
                           "(docs/DISTRIBUTED.md)");
  accel_status_t st = ACCEL_OK;
  if (!cmd->prepare_tried) {
    cmd->prepare_tried = true;
    st = c->ev->prepare(c->impl, &cmd->cop, &cmd->prepared);
  }
  if (st == ACCEL_OK)
    st = cmd->prepared ? c->ev->run_prepared(cmd->prepared, c->timeout_s)
                       : c->ev->run(c->impl, &cmd->cop, c->timeout_s);
  atomic_store(&cmd->running, 0);
  return st;
}

/* A host engine's collective, in stream order: on the stream's thread, or on the issuing
 * thread (run_on_caller). replayed: the recorded command whose prepared form a replay runs. */
static void run_collective(accel_comm_t *c, const accel_comm_op_t *cop, accel_dtype_t downcast,
                           const float *downcast_src, comm_cmd_t *replayed) {
  if (atomic_load(&c->failed)) return; /* skipped: the peers may be gone */
  accel_clear_error();
  accel_status_t st = accel_comm_checker_run(&c->check, cop);
  if (st == ACCEL_OK && downcast != ACCEL_F32)
    accel_comm_downcast((char *)cop->recv + (size_t)c->rank * cop->count * 2, downcast_src,
                        cop->count, downcast);
  if (st == ACCEL_OK)
    st = replayed ? run_replayed(replayed) : c->ev->run(c->impl, cop, c->timeout_s);
  if (st != ACCEL_OK) accel_comm_fail(c, st, accel_last_error());
}

static void cmd_run(accel_host_op_t *op) {
  comm_cmd_t *cmd = (comm_cmd_t *)op;
  run_collective(cmd->comm, &cmd->cop, cmd->downcast, cmd->downcast_src,
                 cmd->replayed ? cmd : NULL);
}

/* Stream engines: issues the collective on the native stream, at once (eager, lazy flush) or
 * while a backend captures its graph (gpu_graph_instantiate), so a replay does not come here. */
static accel_status_t cmd_enqueue(void *ctx, const accel_native_t *stream) {
  comm_cmd_t *cmd = ctx;
  accel_comm_t *c = cmd->comm;
  pthread_mutex_lock(&c->engine_lock);
  if (atomic_load(&c->failed) || atomic_load(&c->cancelled)) {
    pthread_mutex_unlock(&c->engine_lock);
    return accel_set_error(ACCEL_ERROR_BACKEND, "engine '%s': the communicator failed earlier "
                           "(accel_comm_get_error)", c->ev->name);
  }
  accel_status_t st = c->ev->enqueue(c->impl, &cmd->cop, stream);
  pthread_mutex_unlock(&c->engine_lock);
  if (st != ACCEL_OK) accel_comm_fail(c, st, accel_last_error());
  return st;
}

/* The watchdog's view of an eager stream-engine collective (core/comm_watchdog.c). After
 * comm_cancel the engine's communicator is gone (ncclCommAbort frees it): the other watches of
 * the same communicator are not polled any more (the communicator has already failed; they end
 * when their marker is reached or at their deadline). Only the watchdog thread polls and
 * cancels, so the check needs no lock. */
static accel_status_t watch_async_error(void *owner) {
  accel_comm_t *c = ((comm_cmd_t *)owner)->comm;
  if (atomic_load(&c->cancelled)) return ACCEL_OK;
  return c->ev->comm_async_error ? c->ev->comm_async_error(c->impl) : ACCEL_OK;
}

static void watch_expired(void *owner, const char *why) {
  accel_comm_t *c = ((comm_cmd_t *)owner)->comm;
  char msg[512];
  snprintf(msg, sizeof msg, "rank %d of %d: %s", c->rank, c->size, why);
  accel_comm_fail(c, ACCEL_ERROR_BACKEND, msg);
  if (!c->ev->comm_cancel) return;
  /* No enqueue inside the engine while it aborts; but an enqueue stuck in the engine's host
   * code (NCCL's connection setup with a dead peer) is exactly what the abort unblocks, so
   * after 1 s the cancel goes ahead without the lock. */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 1;
  const bool locked = pthread_mutex_timedlock(&c->engine_lock, &until) == 0;
  if (!locked)
    accel_log(ACCEL_LOG_WARN, "comm", "rank %d: an enqueue has been inside engine '%s' for over "
              "1 s; cancelling the communicator anyway (the abort unblocks it)", c->rank,
              c->ev->name);
  if (!atomic_exchange(&c->cancelled, 1)) c->ev->comm_cancel(c->impl);
  if (locked) pthread_mutex_unlock(&c->engine_lock);
}

static void watch_release(void *owner) { accel_keepalive_release(&((comm_cmd_t *)owner)->op.keep); }

static const accel_watch_ops_t watch_ops = {watch_async_error, watch_expired, watch_release};

/* ACCEL_COMM_TIMEOUT on an eager collective of a stream engine; captured and lazily queued
 * ones are not watched (they run later, at a time the core does not see). */
static void watch_collective(comm_cmd_t *cmd, accel_stream_t *s, const char *fn) {
  int capturing = 0, lazy = 0;
  accel_stream_is_capturing(s, &capturing);
  accel_stream_is_lazy(s, &lazy);
  if (capturing || lazy) return;
  accel_keepalive_retain(&cmd->op.keep); /* the watch's */
  if (accel_watch_stream(s, cmd->comm->timeout_s, fn, &watch_ops, cmd) != ACCEL_OK) {
    /* the collective is issued: report that it goes unwatched rather than failing it */
    accel_log(ACCEL_LOG_WARN, "comm", "%s: not watched (ACCEL_COMM_TIMEOUT): %s", fn,
              accel_last_error());
    accel_keepalive_release(&cmd->op.keep);
  }
}

/* The memory a collective touches: range i is [p[i], +size[i]), access[i] 1 read, 2 write
 * (the allocator's convention: a write may not land in a read-only registration). */
typedef struct cmd_ranges {
  const void *p[2];
  size_t size[2];
  int access[2];
  const char *name[2];
} cmd_ranges_t;

static int cmd_range(void *ctx, size_t i, const void **ptr, size_t *size) {
  cmd_ranges_t *r = ctx;
  *ptr = r->p[i];
  *size = r->size[i];
  return r->p[i] != NULL && r->size[i] != 0 ? r->access[i] : 0;
}

/* What this thread last validated, for a training loop that issues the same collective on
 * the same buffers step after step, where validating again cost a visible share of a 2 us
 * collective (issue 21's 4 KB target):
 * - the communicator and stream found live while the handle registry's version was `version`
 *   (and belonging to the same device);
 * - the ranges found valid for a communicator (by serial) while the device's free generation
 *   was gen (the allocator lookup takes a lock);
 * - the last call that passed every check (`call`, valid when call_ok): with the same
 *   communicator, stream, version and generation, the same call passes them again. */
static _Thread_local struct {
  unsigned version;
  const accel_comm_t *comm;
  const accel_stream_t *stream;
  uint64_t serial, gen;
  cmd_ranges_t r;
  bool call_ok;
  accel_comm_op_t call;
} valid_cache = {.version = 1u}; /* odd: matches no version a lookup is remembered at */

static bool same_ranges(const cmd_ranges_t *a, const cmd_ranges_t *b) {
  for (int i = 0; i < 2; ++i)
    if (a->p[i] != b->p[i] || a->size[i] != b->size[i] || a->access[i] != b->access[i])
      return false;
  return true;
}

/* Every range inside one live allocation of the communicator's device, none written in a
 * read-only registration. */
static accel_status_t check_ranges(accel_comm_t *c, const char *fn, const cmd_ranges_t *r) {
  /* read before the lookup: a free after it changes the generation stored below */
  const uint64_t gen = accel_device_free_generation(c->dev);
  if (valid_cache.serial == c->serial && valid_cache.gen == gen && same_ranges(&valid_cache.r, r))
    return ACCEL_OK;
  const size_t bad = accel_device_ranges_valid(c->dev, 2, cmd_range, (void *)r);
  if (bad == SIZE_MAX) {
    valid_cache.serial = c->serial;
    valid_cache.gen = gen;
    valid_cache.r = *r;
    valid_cache.call_ok = false; /* it was validated with other ranges */
    return ACCEL_OK;
  }
  if (accel_device_range_is_valid(c->dev, r->p[bad], r->size[bad]))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s [%p, +%zu) is written but lies in a read-only registration",
                           fn, r->name[bad], r->p[bad], r->size[bad]);
  return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: %s [%p, +%zu) is not inside one live allocation of the "
                         "communicator's device", fn, r->name[bad], r->p[bad], r->size[bad]);
}

static bool overlap(const void *a, size_t na, const void *b, size_t nb) {
  return a && b && na && nb && (const char *)a < (const char *)b + nb &&
         (const char *)b < (const char *)a + na;
}

/* c and s were found live (and of one device) at this registry version. */
static bool handles_remembered(const accel_comm_t *c, const accel_stream_t *s,
                               unsigned version) {
  return valid_cache.version == version && valid_cache.comm == c && valid_cache.stream == s;
}

static accel_status_t check_handles(accel_comm_t *c, accel_stream_t *s, const char *fn) {
  /* read before the lookups: a change after them moves the version stored below */
  const unsigned version = accel_handle_registry_version();
  if (handles_remembered(c, s, version)) return ACCEL_OK;
  accel_status_t st = accel_comm_handle_check(c, fn);
  if (st != ACCEL_OK) return st;
  accel_device_t *dev = NULL;
  st = accel_stream_check(s, fn, &dev);
  if (st != ACCEL_OK) return st;
  if (dev != c->dev)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the stream belongs to another device than the communicator", fn);
  if (version & 1u) return ACCEL_OK; /* a change was under way: not remembered */
  valid_cache.version = version;
  valid_cache.comm = c;
  valid_cache.stream = s;
  valid_cache.call_ok = false; /* it was validated with other handles */
  return ACCEL_OK;
}

accel_status_t accel_comm_check_args(accel_comm_t *c, accel_stream_t *s, accel_dtype_t dtype,
                                     const char *fn, size_t *esize) {
  accel_status_t st = check_handles(c, s, fn);
  if (st != ACCEL_OK) return st;
  if (dtype == ACCEL_U8)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: U8 (the 8-bit state format's codes) is not a collective dtype: "
                           "F32, F16 or BF16", fn);
  *esize = accel_dtype_size(dtype);
  if (!*esize)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown dtype %d", fn, (int)dtype);
  return ACCEL_OK;
}

/* A device range of n elements: NULL only when empty, aligned (check_ranges looks it up). */
static accel_status_t check_buffer(const char *fn, const char *what, const void *p, size_t n,
                                   size_t esize, size_t *bytes) {
  /* (no division: two on every collective showed in its profile; esize is a power of 2) */
  if (__builtin_mul_overflow(n, esize, bytes))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s: %zu elements overflow", fn,
                           what, n);
  if (*bytes == 0) return ACCEL_OK;
  if (!p) return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
  if ((uintptr_t)p & (esize - 1))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s %p is not aligned to %zu bytes",
                           fn, what, p, esize);
  return ACCEL_OK;
}

typedef struct direct_run {
  accel_comm_t *comm;
  const accel_comm_op_t *cop;
  accel_dtype_t downcast;
  const float *downcast_src;
} direct_run_t;

static void run_direct(void *ctx) {
  const direct_run_t *d = ctx;
  run_collective(d->comm, d->cop, d->downcast, d->downcast_src, NULL);
}

/* A host engine's collective on a stream the backend lets us hold while it is idle
 * (accel_stream_run_on_caller): run here, with no command to allocate and no reference to c
 * beyond the caller's for the length of the call. Not point to point (send, recv, sendrecv):
 * a pipeline's ranks may both send before they receive, which needs the sends to wait on
 * streams, not in their calls.
 * false: not run, nothing done. */
static bool run_on_caller(accel_comm_t *c, accel_stream_t *s, const char *fn,
                          const accel_comm_op_t *cop, accel_dtype_t downcast,
                          const float *downcast_src) {
  if (!c->ev->host_engine || cop->kind >= ACCEL_COMM_SEND) return false;
  direct_run_t d = {c, cop, downcast, downcast_src};
  return accel_stream_run_on_caller(s, fn, run_direct, &d);
}

static bool same_op(const accel_comm_op_t *a, const accel_comm_op_t *b) {
  return a->kind == b->kind && a->dtype == b->dtype && a->reduce == b->reduce &&
         a->peer == b->peer && a->send == b->send && a->recv == b->recv &&
         a->count == b->count && a->recv_peer == b->recv_peer && a->recv_count == b->recv_count;
}

/* The call this thread validated last, again (valid_cache): run on the caller without
 * checking it again when nothing the checks depend on has changed. false: the caller
 * validates and issues it. */
static bool rerun_validated(accel_comm_t *c, accel_stream_t *s, const char *fn,
                            const accel_comm_op_t *cop) {
  /* c is dereferenced only once the version shows it still live */
  if (!valid_cache.call_ok || !handles_remembered(c, s, accel_handle_registry_version()) ||
      !same_op(&valid_cache.call, cop) ||
      valid_cache.gen != accel_device_free_generation(c->dev))
    return false;
  return run_on_caller(c, s, fn, cop, ACCEL_F32, NULL);
}

static accel_status_t issue(accel_comm_t *c, accel_stream_t *s, const char *fn,
                            const accel_comm_op_t *cop, const cmd_ranges_t *ranges,
                            accel_dtype_t downcast, const float *downcast_src) {
  accel_status_t vst = check_ranges(c, fn, ranges);
  if (vst != ACCEL_OK) return vst;
  if (downcast == ACCEL_F32) { /* every check passed: remembered for rerun_validated */
    valid_cache.call = *cop;
    valid_cache.call_ok = valid_cache.comm == c && valid_cache.stream == s;
  }
  if (run_on_caller(c, s, fn, cop, downcast, downcast_src)) return ACCEL_OK;
  comm_cmd_t *cmd = calloc(1, sizeof *cmd);
  if (!cmd) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  cmd->op.keep.refcount = 1;
  cmd->op.keep.release = cmd_release;
  cmd->op.run = cmd_run;
  cmd->comm = c;
  accel_comm_retain(c);
  cmd->cop = *cop;
  cmd->downcast = downcast;
  cmd->downcast_src = downcast_src;
  int capturing = 0;
  accel_stream_is_capturing(s, &capturing);
  cmd->replayed = capturing && engine_prepares(c->ev);
  cmd_ranges_t r = *ranges;
  accel_status_t st =
      c->ev->host_engine
          ? accel_enqueue_host_op(s, fn, &cmd->op, cmd_range, &r, 2)
          : accel_enqueue_native(s, fn, cmd_enqueue, cmd, &cmd->op.keep, cmd_range, &r, 2);
  if (st == ACCEL_OK && !c->ev->host_engine) watch_collective(cmd, s, fn);
  accel_keepalive_release(&cmd->op.keep); /* the issuer's reference */
  return st;
}

accel_status_t accel_all_reduce(accel_comm_t *c, accel_stream_t *s, const void *send,
                                void *recv, size_t count, accel_dtype_t dtype,
                                accel_reduce_op_t op) {
  const accel_comm_op_t cop = {.kind = ACCEL_COMM_ALL_REDUCE, .dtype = dtype, .reduce = op,
                               .send = send, .recv = recv, .count = count};
  if (rerun_validated(c, s, __func__, &cop)) return ACCEL_OK;
  size_t es = 0, bytes = 0;
  accel_status_t st = accel_comm_check_args(c, s, dtype, __func__, &es);
  if (st != ACCEL_OK) return st;
  if ((unsigned)op > ACCEL_REDUCE_MIN)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown reduce op %d", __func__,
                           (int)op);
  if ((st = check_buffer(__func__, "send", send, count, es, &bytes)) != ACCEL_OK ||
      (st = check_buffer(__func__, "recv", recv, count, es, &bytes)) != ACCEL_OK)
    return st;
  if (send != recv && overlap(send, bytes, recv, bytes))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: send and recv overlap (in place needs send == recv)", __func__);
  cmd_ranges_t r = {{send, recv}, {bytes, bytes}, {1, 2}, {"send", "recv"}};
  return issue(c, s, __func__, &cop, &r, ACCEL_F32, NULL);
}

accel_status_t accel_reduce_scatter(accel_comm_t *c, accel_stream_t *s, const void *send,
                                    void *recv, size_t recv_count, accel_dtype_t dtype,
                                    accel_reduce_op_t op) {
  size_t es = 0, sbytes = 0, rbytes = 0;
  accel_status_t st = accel_comm_check_args(c, s, dtype, __func__, &es);
  if (st != ACCEL_OK) return st;
  if ((unsigned)op > ACCEL_REDUCE_MIN)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown reduce op %d", __func__,
                           (int)op);
  if (recv_count > SIZE_MAX / (size_t)c->size)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: size * recv_count overflows",
                           __func__);
  if ((st = check_buffer(__func__, "send", send, recv_count * (size_t)c->size, es,
                         &sbytes)) != ACCEL_OK ||
      (st = check_buffer(__func__, "recv", recv, recv_count, es, &rbytes)) != ACCEL_OK)
    return st;
  if (overlap(send, sbytes, recv, rbytes))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: send and recv overlap", __func__);
  accel_comm_op_t cop = {.kind = ACCEL_COMM_REDUCE_SCATTER, .dtype = dtype, .reduce = op,
                         .send = send, .recv = recv, .count = recv_count};
  cmd_ranges_t r = {{send, recv}, {sbytes, rbytes}, {1, 2}, {"send", "recv"}};
  return issue(c, s, __func__, &cop, &r, ACCEL_F32, NULL);
}

/* recv of size * send_count elements; send NULL means in place. */
static accel_status_t gather_args(accel_comm_t *c, const char *fn, const void *send,
                                  size_t send_bytes, void *recv, size_t send_count, size_t es,
                                  size_t *rbytes, const void **send_out) {
  if (send_count > SIZE_MAX / (size_t)c->size)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: size * send_count overflows", fn);
  accel_status_t st = check_buffer(fn, "recv", recv, send_count * (size_t)c->size, es,
                                   rbytes);
  if (st != ACCEL_OK) return st;
  const char *own = recv ? (const char *)recv + (size_t)c->rank * send_count * es : NULL;
  *send_out = send;
  if (send == own && es * send_count == send_bytes) *send_out = NULL; /* in place */
  else if (overlap(send, send_bytes, recv, *rbytes))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: send overlaps recv (in place needs send == recv + rank * "
                           "send_count)", fn);
  return ACCEL_OK;
}

accel_status_t accel_all_gather(accel_comm_t *c, accel_stream_t *s, const void *send,
                                void *recv, size_t send_count, accel_dtype_t dtype) {
  size_t es = 0, sbytes = 0, rbytes = 0;
  accel_status_t st = accel_comm_check_args(c, s, dtype, __func__, &es);
  if (st != ACCEL_OK) return st;
  if ((st = check_buffer(__func__, "send", send, send_count, es, &sbytes)) != ACCEL_OK)
    return st;
  const void *snd = NULL;
  st = gather_args(c, __func__, send, sbytes, recv, send_count, es, &rbytes, &snd);
  if (st != ACCEL_OK) return st;
  accel_comm_op_t cop = {.kind = ACCEL_COMM_ALL_GATHER, .dtype = dtype, .send = snd,
                         .recv = recv, .count = send_count};
  cmd_ranges_t r = {{send, recv}, {sbytes, rbytes}, {1, 2}, {"send", "recv"}};
  return issue(c, s, __func__, &cop, &r, ACCEL_F32, NULL);
}

accel_status_t accel_broadcast(accel_comm_t *c, accel_stream_t *s, void *buf, size_t count,
                               accel_dtype_t dtype, int root) {
  size_t es = 0, bytes = 0;
  accel_status_t st = accel_comm_check_args(c, s, dtype, __func__, &es);
  if (st != ACCEL_OK) return st;
  if (root < 0 || root >= c->size)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: root %d outside [0, %d)", __func__,
                           root, c->size);
  if ((st = check_buffer(__func__, "buf", buf, count, es, &bytes)) != ACCEL_OK) return st;
  accel_comm_op_t cop = {.kind = ACCEL_COMM_BROADCAST, .dtype = dtype, .peer = root,
                         .recv = buf, .count = count};
  /* the root's buffer is only read (it may be a read-only registration) */
  cmd_ranges_t r = {{buf, NULL}, {bytes, 0}, {c->rank == root ? 1 : 2, 0}, {"buf", NULL}};
  return issue(c, s, __func__, &cop, &r, ACCEL_F32, NULL);
}

static accel_status_t check_peer(accel_comm_t *c, const char *fn, const char *what, int peer) {
  if (peer < 0 || peer >= c->size || peer == c->rank)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s %d is not another rank of [0, %d) (this rank is %d)", fn, what,
                           peer, c->size, c->rank);
  return ACCEL_OK;
}

static accel_status_t point_to_point(accel_comm_t *c, accel_stream_t *s, const char *fn,
                                     accel_comm_op_kind_t kind, const void *buf, size_t count,
                                     accel_dtype_t dtype, int peer) {
  size_t es = 0, bytes = 0;
  accel_status_t st = accel_comm_check_args(c, s, dtype, fn, &es);
  if (st != ACCEL_OK) return st;
  if ((st = check_peer(c, fn, "peer", peer)) != ACCEL_OK) return st;
  if ((st = check_buffer(fn, "buf", buf, count, es, &bytes)) != ACCEL_OK) return st;
  accel_comm_op_t cop = {.kind = kind, .dtype = dtype, .peer = peer, .count = count};
  if (kind == ACCEL_COMM_SEND) cop.send = buf;
  else cop.recv = (void *)(uintptr_t)buf;
  cmd_ranges_t r = {{buf, NULL}, {bytes, 0}, {kind == ACCEL_COMM_SEND ? 1 : 2, 0}, {"buf", NULL}};
  return issue(c, s, fn, &cop, &r, ACCEL_F32, NULL);
}

accel_status_t accel_send(accel_comm_t *c, accel_stream_t *s, const void *buf, size_t count,
                          accel_dtype_t dtype, int peer) {
  return point_to_point(c, s, __func__, ACCEL_COMM_SEND, buf, count, dtype, peer);
}

accel_status_t accel_recv(accel_comm_t *c, accel_stream_t *s, void *buf, size_t count,
                          accel_dtype_t dtype, int peer) {
  return point_to_point(c, s, __func__, ACCEL_COMM_RECV, buf, count, dtype, peer);
}

accel_status_t accel_sendrecv(accel_comm_t *c, accel_stream_t *s, const void *send_buf,
                              size_t send_count, int dest, void *recv_buf, size_t recv_count,
                              int source, accel_dtype_t dtype) {
  size_t es = 0, sbytes = 0, rbytes = 0;
  accel_status_t st = accel_comm_check_args(c, s, dtype, __func__, &es);
  if (st != ACCEL_OK) return st;
  if ((st = check_peer(c, __func__, "dest", dest)) != ACCEL_OK ||
      (st = check_peer(c, __func__, "source", source)) != ACCEL_OK ||
      (st = check_buffer(__func__, "send_buf", send_buf, send_count, es, &sbytes)) != ACCEL_OK ||
      (st = check_buffer(__func__, "recv_buf", recv_buf, recv_count, es, &rbytes)) != ACCEL_OK)
    return st;
  if (overlap(send_buf, sbytes, recv_buf, rbytes))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: send_buf and recv_buf overlap",
                           __func__);
  accel_comm_op_t cop = {.kind = ACCEL_COMM_SENDRECV, .dtype = dtype, .peer = dest,
                         .send = send_buf, .count = send_count, .recv = recv_buf,
                         .recv_peer = source, .recv_count = recv_count};
  cmd_ranges_t r = {{send_buf, recv_buf}, {sbytes, rbytes}, {1, 2}, {"send_buf", "recv_buf"}};
  return issue(c, s, __func__, &cop, &r, ACCEL_F32, NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* distributed kernels */

accel_status_t accel_all_gather_downcast(accel_comm_t *c, accel_stream_t *s, const float *send,
                                         void *recv, size_t send_count,
                                         accel_dtype_t recv_dtype) {
  size_t es = 0, sbytes = 0, rbytes = 0;
  accel_status_t st = accel_comm_check_args(c, s, recv_dtype, __func__, &es);
  if (st != ACCEL_OK) return st;
  if (recv_dtype != ACCEL_BF16 && recv_dtype != ACCEL_F16)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: recv_dtype must be BF16 or F16",
                           __func__);
  if ((st = check_buffer(__func__, "send", send, send_count, sizeof(float), &sbytes)) !=
      ACCEL_OK)
    return st;
  const void *snd = NULL;
  st = gather_args(c, __func__, NULL, 0, recv, send_count, es, &rbytes, &snd);
  if (st != ACCEL_OK) return st;
  if (overlap(send, sbytes, recv, rbytes))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: send overlaps recv", __func__);
  accel_comm_op_t cop = {.kind = ACCEL_COMM_ALL_GATHER, .dtype = recv_dtype, .send = NULL,
                         .recv = recv, .count = send_count};
  cmd_ranges_t r = {{send, recv}, {sbytes, rbytes}, {1, 2}, {"send", "recv"}};
  if (c->ev->host_engine) return issue(c, s, __func__, &cop, &r, recv_dtype, send);
  /* stream engines: the cast kernel writes this rank's block, then an in-place all-gather */
  accel_tensor_t src = {(void *)send, send_count, ACCEL_F32};
  accel_tensor_t dst = {(char *)recv + (size_t)c->rank * send_count * es, send_count,
                        recv_dtype};
  if (send_count && (st = accel_cast(s, &src, &dst, 1, NULL)) != ACCEL_OK) return st;
  return issue(c, s, __func__, &cop, &r, ACCEL_F32, NULL);
}
