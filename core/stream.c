/*
 * Streams and the one submission path every operation takes:
 *   capturing stream -> recorded into the capture (capture.c)
 *   lazy stream      -> appended to the stream's queue, submitted at a flush (lazy.c)
 *   otherwise        -> dispatched to the backend right away
 */
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "fault.h"
#include "stream.h"
#include "trace.h"

/* stream.h: filled by lazy.c at load. */
accel_status_t (*accel_lazy_flush_slot)(accel_stream_t *s);

/* Makes s (its impl already created) a live stream of dev. */
static void stream_init(accel_stream_t *s, accel_device_t *dev, unsigned flags, bool is_default,
                        bool internal) {
  /* the device's own streams (default, upload) go with it and hold no reference to it */
  if (!is_default && !internal) accel_device_retain(dev);
  s->dev = dev;
  s->is_default = is_default;
  s->internal = internal;
  /* a wrapped queue is eager: queued work would run after native work enqueued later */
  s->lazy = s->wrapped                    ? false
            : (flags & ACCEL_STREAM_LAZY)  ? true
            : (flags & ACCEL_STREAM_EAGER) ? false
                                           : dev->lazy_default && !internal;
  pthread_mutex_init(&s->lock, NULL);
  accel_cmdlist_init(&s->lazy_queue);
  accel_handle_register(&s->hdr, ACCEL_HANDLE_STREAM, dev->backend->vt);
  static atomic_int stream_serial;
  s->trace_id = accel_trace_new_track(is_default ? "default stream"
                                      : s->wrapped ? "wrapped stream"
                                                   : "stream",
                                      dev->backend->name, atomic_fetch_add(&stream_serial, 1));
  pthread_mutex_lock(&dev->lock);
  s->next_in_device = dev->streams;
  dev->streams = s;
  pthread_mutex_unlock(&dev->lock);
}

accel_status_t accel_stream_create_internal(accel_device_t *dev, unsigned flags, bool is_default,
                                            bool internal, accel_stream_t **out) {
  accel_stream_t *s = calloc(1, sizeof *s);
  if (!s) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  accel_status_t st = dev->backend->vt->stream_create(dev->impl, &s->impl);
  if (st != ACCEL_OK) {
    free(s);
    return st;
  }
  stream_init(s, dev, flags, is_default, internal);
  *out = s;
  return ACCEL_OK;
}

accel_status_t accel_stream_create_wrapped(accel_device_t *dev, const accel_native_t *native,
                                           accel_stream_t **out) {
  accel_stream_t *s = calloc(1, sizeof *s);
  if (!s) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  accel_status_t st = dev->backend->vt->stream_wrap_native(dev->impl, native, &s->impl);
  if (st != ACCEL_OK) {
    free(s);
    return st;
  }
  s->wrapped = true;
  stream_init(s, dev, ACCEL_STREAM_EAGER, false, false);
  *out = s;
  return ACCEL_OK;
}

void **accel_stream_kop_memo(accel_stream_t *s) { return s->kop_memo; }

/* Tears a stream down (its work is drained first) and drops its device reference. */
static void stream_teardown(accel_stream_t *s) {
  accel_device_t *dev = s->dev;
  accel_stream_sync_internal(s);
  /* its free blocks are idle now: any stream may reuse them (allocator.h) */
  accel_allocator_retag(dev->mem, NULL, s, NULL);
  accel_handle_unregister(&s->hdr); /* internal streams are still registered */
  accel_kernel_stream_forget(s);
  dev->backend->vt->stream_destroy(s->impl);
  accel_cmdlist_free(&s->lazy_queue);
  for (int i = 0; i < ACCEL_LAZY_CACHE_SIZE; ++i) {
    accel_lazy_cache_entry_t *e = &s->lazy_cache[i];
    if (e->native) dev->backend->vt->graph_destroy(e->native);
    accel_cmdlist_free(&e->cmds);
  }
  bool holds_device = !s->is_default && !s->internal;
  pthread_mutex_destroy(&s->lock);
  free(s);
  if (holds_device) accel_device_release_ref(dev);
}

void accel_stream_retain(accel_stream_t *s) { atomic_fetch_add(&s->hdr.refcount, 1); }

void accel_stream_release_ref(accel_stream_t *s) {
  int old = atomic_load(&s->hdr.refcount);
  while (old > 1)
    if (atomic_compare_exchange_weak(&s->hdr.refcount, &old, old - 1)) return;
  /* possibly the last reference: decided under the device lock, so that listing the device's
   * streams (accel_device_streams) never retains a stream whose teardown began */
  accel_device_t *dev = s->dev;
  pthread_mutex_lock(&dev->lock);
  bool last = atomic_fetch_sub(&s->hdr.refcount, 1) == 1;
  if (last) {
    for (accel_stream_t **pp = &dev->streams; *pp; pp = &(*pp)->next_in_device) {
      if (*pp == s) {
        *pp = s->next_in_device;
        break;
      }
    }
  }
  pthread_mutex_unlock(&dev->lock);
  if (last) stream_teardown(s);
}

accel_status_t accel_stream_check(accel_stream_t *s, const char *fn, accel_device_t **device) {
  if (!accel_handle_is_live(s, ACCEL_HANDLE_STREAM) || s->internal)
    return accel_set_error(ACCEL_ERROR_INVALID_HANDLE, "%s: invalid or destroyed stream %p", fn,
                           (void *)s);
  if (device) *device = s->dev;
  return ACCEL_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* dispatch */

static accel_status_t dispatch(accel_stream_t *s, const accel_cmd_t *c) {
  const accel_backend_vtable_t *vt = s->dev->backend->vt;
  switch (c->type) {
    case ACCEL_CMD_KERNEL: {
      accel_status_t st = accel_fault_launches(c, 1, "launch_kernel");
      return st == ACCEL_OK ? vt->launch_kernel(s->impl, &c->u.kernel) : st;
    }
    case ACCEL_CMD_MEMCPY:
      return vt->memcpy_async(s->impl, c->u.memcpy.dst, c->u.memcpy.src, c->u.memcpy.size,
                              (accel_copy_kind_t)c->u.memcpy.kind);
    case ACCEL_CMD_MEMSET:
      return vt->memset_async(s->impl, c->u.memset.dst, (uint8_t)c->u.memset.value,
                              c->u.memset.size);
    case ACCEL_CMD_HOST_FUNC:
      return vt->launch_host_func(s->impl, c->u.host_func.fn, c->u.host_func.user);
    case ACCEL_CMD_NATIVE: {
      accel_native_t native = {.struct_size = sizeof native};
      accel_status_t st = vt->stream_native(s->impl, &native); /* checked by the enqueuer */
      return st == ACCEL_OK ? c->u.native.enqueue(c->u.native.ctx, &native) : st;
    }
    default:
      return ACCEL_OK; /* fork/join edges: stream order already satisfies them */
  }
}

accel_status_t accel_stream_run_batch(accel_stream_t *s, const accel_cmd_t *cmds, size_t n) {
  if (n == 0) return ACCEL_OK;
  const accel_backend_vtable_t *vt = s->dev->backend->vt;
  if (vt->submit_batch) {
    accel_status_t st = accel_fault_launches(cmds, n, "submit_batch");
    return st == ACCEL_OK ? vt->submit_batch(s->impl, cmds, n) : st;
  }
  for (size_t i = 0; i < n; ++i) {
    accel_status_t st = dispatch(s, &cmds[i]);
    if (st != ACCEL_OK) return st;
  }
  return ACCEL_OK;
}

static size_t lazy_threshold(void) {
  static atomic_size_t cached;
  size_t v = atomic_load(&cached);
  if (!v) {
    const char *e = accel_env("ACCEL_LAZY_MAX_OPS");
    long n = e ? strtol(e, NULL, 10) : 0;
    v = n > 0 ? (size_t)n : 4096;
    atomic_store(&cached, v);
  }
  return v;
}

accel_status_t accel_stream_submit_locked(accel_stream_t *s, const accel_cmd_t *cmd,
                                          accel_keepalive_t *keep) {
  if (s->capture) return accel_capture_ops.record_locked(s, cmd, keep);
  if (!s->lazy) return dispatch(s, cmd);
  accel_status_t st = accel_cmdlist_append(&s->lazy_queue, cmd, keep);
  if (st != ACCEL_OK) return st;
  s->lazy_stats.ops_queued++;
  if (s->lazy_queue.count >= lazy_threshold()) return accel_lazy_flush_locked(s);
  return ACCEL_OK;
}

/* Validates the stream, then submits one command under its lock, traced. A capture pins the
 * allocations under ranges (kernels; copies and fills are pinned from the command). */
static accel_status_t submit(accel_stream_t *s, const char *fn, const accel_cmd_t *cmd,
                             accel_keepalive_t *keep, size_t bytes, accel_range_fn ranges,
                             void *ctx, size_t nranges) {
  accel_status_t st = accel_stream_check(s, fn, NULL);
  if (st != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, fn);
  pthread_mutex_lock(&s->lock);
  st = accel_stream_submit_locked(s, cmd, keep);
  bool captured = s->capture != NULL;
  if (st == ACCEL_OK && captured && nranges)
    st = accel_capture_ops.pin_locked(s, ranges, ctx, nranges, NULL);
  pthread_mutex_unlock(&s->lock);
  if (cmd->type == ACCEL_CMD_KERNEL)
    accel_trace_end_args(&t, "\"kernel\":\"%s\",\"blocks\":%u,\"captured\":%d",
                         cmd->u.kernel.kernel_name, cmd->u.kernel.num_blocks, captured);
  else
    accel_trace_end_args(&t, "\"bytes\":%zu,\"captured\":%d", bytes, captured);
  return st;
}

accel_status_t accel_enqueue_kernel(accel_stream_t *s, const accel_kernel_launch_t *launch,
                                    accel_keepalive_t *keep, accel_range_fn ranges, void *ctx,
                                    size_t nranges) {
  /* the launch fault site is counted where the kernel reaches the backend (dispatch, batch,
   * replay: core/fault.h), once, not here as well */
  accel_cmd_t c = {.type = ACCEL_CMD_KERNEL};
  c.u.kernel = *launch;
  return submit(s, "launch", &c, keep, 0, ranges, ctx, nranges);
}

accel_status_t accel_launch_host_func(accel_stream_t *s, accel_host_fn_t fn, void *user) {
  ACCEL_REQUIRE_ARG(fn, __func__, "fn is NULL");
  accel_cmd_t c = {.type = ACCEL_CMD_HOST_FUNC};
  c.u.host_func.fn = fn;
  c.u.host_func.user = user;
  return submit(s, __func__, &c, NULL, 0, NULL, NULL, 0);
}

static void host_op_trampoline(void *user) {
  accel_host_op_t *op = user;
  op->run(op);
  if (op->oneshot) accel_keepalive_release(&op->keep);
}

accel_status_t accel_enqueue_host_op(accel_stream_t *s, const char *name, accel_host_op_t *op,
                                     accel_range_fn ranges, void *ctx, size_t nranges) {
  accel_status_t st = accel_stream_check(s, name, NULL);
  if (st != ACCEL_OK) return st;
  accel_cmd_t c = {.type = ACCEL_CMD_HOST_FUNC};
  c.u.host_func.fn = host_op_trampoline;
  c.u.host_func.user = op;
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, name);
  pthread_mutex_lock(&s->lock);
  const bool captured = s->capture != NULL;
  if (!captured && !s->lazy) {
    op->oneshot = 1;
    accel_keepalive_retain(&op->keep); /* the run's reference */
    st = dispatch(s, &c);
    if (st != ACCEL_OK) accel_keepalive_release(&op->keep); /* never runs */
  } else {
    st = accel_stream_submit_locked(s, &c, &op->keep);
    if (st == ACCEL_OK && captured && nranges)
      st = accel_capture_ops.pin_locked(s, ranges, ctx, nranges, NULL);
  }
  pthread_mutex_unlock(&s->lock);
  accel_trace_end_args(&t, "\"captured\":%d", captured);
  return st;
}

bool accel_stream_run_on_caller(accel_stream_t *s, const char *name, void (*run)(void *ctx),
                                void *ctx) {
  const accel_backend_vtable_t *vt = s->dev->backend->vt;
  accel_be_stream_t *impl = s->impl;
  /* Without s->lock and without a reference: each is a locked instruction, and the four were
   * a third of a 4 KB all_reduce's cost beyond MPI's. The backend's hold excludes concurrent
   * submissions itself, and its synchronize and destroy wait for the release (the plugin
   * contract), so the teardown of a stream released meanwhile waits for us. A capture that
   * begins between this check and the hold comes after the command, which is still eager.
   * (lazy is fixed at creation.) */
  if (!vt->stream_try_hold || !vt->stream_release_hold || s->lazy ||
      atomic_load_explicit(&s->capturing, memory_order_acquire) || !vt->stream_try_hold(impl))
    return false;
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, name);
  run(ctx); /* other threads keep submitting, behind the hold */
  vt->stream_release_hold(impl); /* s may be gone from here on */
  accel_trace_end(&t);
  return true;
}

accel_status_t accel_enqueue_native(accel_stream_t *s, const char *name,
                                    accel_status_t (*enqueue)(void *ctx,
                                                              const accel_native_t *stream),
                                    void *ctx, accel_keepalive_t *keep, accel_range_fn ranges,
                                    void *rctx, size_t nranges) {
  accel_status_t st = accel_stream_check(s, name, NULL);
  if (st != ACCEL_OK) return st;
  const accel_backend_t *b = s->dev->backend;
  accel_cmd_t c = {.type = ACCEL_CMD_NATIVE};
  c.u.native.enqueue = enqueue;
  c.u.native.ctx = ctx;
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, name);
  pthread_mutex_lock(&s->lock);
  const bool captured = s->capture != NULL;
  if (!b->vt->native_commands && captured) {
    /* the plugin cannot put native work into its graph: the capture cannot be completed */
    accel_capture_ops.invalidate(s->capture, "%s: backend '%s' cannot capture native work "
                             "(a stream engine's collective)", name, b->name);
    st = accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                         "%s: backend '%s' cannot capture native work (a stream engine's "
                         "collective); the capture is invalidated", name, b->name);
  } else if (!b->vt->stream_native) {
    st = accel_set_error(ACCEL_ERROR_UNSUPPORTED, "%s: backend '%s' exposes no native stream",
                         name, b->name);
  } else if (!b->vt->native_commands && s->lazy) {
    st = accel_lazy_flush_locked(s); /* the plugin's batches cannot carry it: run it now */
    if (st == ACCEL_OK) st = dispatch(s, &c);
  } else {
    st = accel_stream_submit_locked(s, &c, keep);
    if (st == ACCEL_OK && captured && nranges)
      st = accel_capture_ops.pin_locked(s, ranges, rctx, nranges, NULL);
  }
  pthread_mutex_unlock(&s->lock);
  accel_trace_end_args(&t, "\"captured\":%d", captured);
  return st;
}

accel_copy_kind_t accel_copy_kind(accel_device_t *dev, void *dst, const void *src) {
  bool d = accel_allocator_contains(dev->mem, dst);
  bool sr = accel_allocator_contains(dev->mem, src);
  return d ? (sr ? ACCEL_COPY_DEVICE_TO_DEVICE : ACCEL_COPY_HOST_TO_DEVICE)
           : (sr ? ACCEL_COPY_DEVICE_TO_HOST : ACCEL_COPY_HOST_TO_HOST);
}

/* A range that touches device memory anywhere (not only at its start: a host range may run
 * into an allocation) must lie inside one live allocation; host ranges cannot be checked. */
static accel_status_t check_device_range(accel_device_t *dev, const char *fn, const char *what,
                                         const void *p, size_t size) {
  if (accel_allocator_intersects(dev->mem, p, size) &&
      !accel_allocator_range_valid(dev->mem, p, size))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s range [%p, +%zu) is not inside one live allocation", fn, what,
                           p, size);
  return ACCEL_OK;
}

/* A destination must not lie in a read-only registration. */
static accel_status_t check_writable(accel_device_t *dev, const char *fn, const void *dst,
                                     size_t size) {
  if (accel_allocator_range_read_only(dev->mem, dst, size))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: destination [%p, +%zu) lies in a read-only registration", fn,
                           dst, size);
  return ACCEL_OK;
}

accel_status_t accel_memcpy_async(accel_stream_t *s, void *dst, const void *src, size_t size) {
  accel_device_t *dev = NULL;
  accel_status_t st = accel_stream_check(s, __func__, &dev);
  if (st != ACCEL_OK) return st;
  if (size == 0) return ACCEL_OK;
  ACCEL_REQUIRE_ARG(dst && src, __func__, "dst or src is NULL");
  if ((uintptr_t)dst > UINTPTR_MAX - size || (uintptr_t)src > UINTPTR_MAX - size)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: size overflows", __func__);
  if ((const char *)dst < (const char *)src + size && (const char *)src < (const char *)dst + size)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: source and destination overlap", __func__);
  if ((st = check_device_range(dev, __func__, "dst", dst, size)) != ACCEL_OK ||
      (st = check_device_range(dev, __func__, "src", src, size)) != ACCEL_OK ||
      (st = check_writable(dev, __func__, dst, size)) != ACCEL_OK)
    return st;
  accel_cmd_t c = {.type = ACCEL_CMD_MEMCPY};
  c.u.memcpy.dst = dst;
  c.u.memcpy.src = src;
  c.u.memcpy.size = size;
  c.u.memcpy.kind = accel_copy_kind(dev, dst, src);
  return submit(s, __func__, &c, NULL, size, NULL, NULL, 0);
}

accel_status_t accel_memset_async(accel_stream_t *s, void *dst, int value, size_t size) {
  accel_device_t *dev = NULL;
  accel_status_t st = accel_stream_check(s, __func__, &dev);
  if (st != ACCEL_OK) return st;
  if (size == 0) return ACCEL_OK;
  ACCEL_REQUIRE_ARG(dst, __func__, "dst is NULL");
  if (!accel_allocator_range_valid(dev->mem, dst, size))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: [%p, +%zu) is not inside one live device "
                           "allocation", __func__,
                           dst, size);
  if ((st = check_writable(dev, __func__, dst, size)) != ACCEL_OK) return st;
  accel_cmd_t c = {.type = ACCEL_CMD_MEMSET};
  c.u.memset.dst = dst;
  c.u.memset.size = size;
  c.u.memset.value = (uint8_t)value;
  return submit(s, __func__, &c, NULL, size, NULL, NULL, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* public stream API */

accel_status_t accel_stream_create(accel_device_t *dev, accel_stream_t **out) {
  return accel_stream_create_ex(dev, ACCEL_STREAM_DEFAULT, out);
}

accel_status_t accel_stream_create_ex(accel_device_t *dev, unsigned flags, accel_stream_t **out) {
  accel_status_t st = accel_device_check(dev, "accel_stream_create");
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, "accel_stream_create", "out is NULL");
  if (flags & ~(unsigned)(ACCEL_STREAM_LAZY | ACCEL_STREAM_EAGER) ||
      (flags & ACCEL_STREAM_LAZY && flags & ACCEL_STREAM_EAGER))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "accel_stream_create: bad flags 0x%x",
                           flags);
  return accel_stream_create_internal(dev, flags, false, false, out);
}

static accel_status_t stream_release_user(accel_stream_t *s, const char *fn) {
  accel_status_t st = accel_stream_check(s, fn, NULL);
  if (st != ACCEL_OK) return st;
  if (s->is_default)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the default stream belongs to its device", fn);
  pthread_mutex_lock(&s->lock);
  bool capturing = s->capture != NULL;
  pthread_mutex_unlock(&s->lock);
  if (capturing)
    return accel_set_error(ACCEL_ERROR_STATE,
                           "%s: the stream is capturing; end the capture first", fn);
  if ((st = accel_handle_drop_user(s, ACCEL_HANDLE_STREAM, fn)) != ACCEL_OK)
    return st;
  /* Waits for the stream's work here, before letting go: an internal holder (a fence, a graph's
   * replay ordering) may then drop the last reference from any thread without waiting. */
  accel_stream_sync_internal(s);
  accel_device_t *dev = s->dev;
  accel_device_retain(dev);
  accel_stream_release_ref(s);
  /* fences on this stream are complete now: a retired release they held back may be all
   * that keeps the device alive once its user closed it (see accel_device_close) */
  accel_device_reap(dev, false);
  accel_device_release_ref(dev);
  return ACCEL_OK;
}

ACCEL_DEFINE_RELEASE(accel_stream_t, accel_stream_release, accel_stream_destroy,
                     stream_release_user)

accel_status_t accel_stream_default(accel_device_t *dev, accel_stream_t **out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  *out = dev->default_stream;
  return ACCEL_OK;
}

/* Submits s's lazy queue unless s captures (device.h, accel_device_stream_ops.flush). */
static accel_status_t stream_flush(accel_stream_t *s) {
  pthread_mutex_lock(&s->lock);
  accel_status_t st = s->capture ? ACCEL_OK : accel_lazy_flush_locked(s);
  pthread_mutex_unlock(&s->lock);
  return st;
}

accel_status_t accel_stream_sync_internal(accel_stream_t *s) {
  accel_status_t st = stream_flush(s);
  accel_status_t st2 = s->dev->backend->vt->stream_synchronize(s->impl);
  return st != ACCEL_OK ? st : st2;
}

accel_status_t accel_stream_synchronize(accel_stream_t *s) {
  accel_status_t st = accel_stream_check(s, __func__, NULL);
  if (st != ACCEL_OK) return st;
  st = accel_capture_ops.check_unsafe(__func__, s);
  if (st != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, __func__);
  st = accel_stream_sync_internal(s);
  accel_trace_end(&t);
  return st;
}

accel_status_t accel_stream_query(accel_stream_t *s) {
  accel_status_t st = accel_stream_check(s, __func__, NULL);
  if (st != ACCEL_OK) return st;
  st = accel_capture_ops.check_unsafe(__func__, s);
  if (st != ACCEL_OK) return st;
  /* the backend's query is serialized with submissions (accel_plugin.h) */
  pthread_mutex_lock(&s->lock);
  st = accel_lazy_flush_locked(s);
  if (st == ACCEL_OK) st = s->dev->backend->vt->stream_query(s->impl);
  pthread_mutex_unlock(&s->lock);
  return st;
}

accel_status_t accel_stream_flush(accel_stream_t *s) {
  accel_status_t st = accel_stream_check(s, __func__, NULL);
  if (st != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, __func__);
  pthread_mutex_lock(&s->lock);
  size_t queued = s->lazy_queue.count;
  st = s->capture ? ACCEL_OK : accel_lazy_flush_locked(s);
  pthread_mutex_unlock(&s->lock);
  accel_trace_end_args(&t, "\"ops\":%zu", queued);
  return st;
}

/* The checks of a query of a stream's state: a live user stream, an output (named what). */
static accel_status_t state_check(accel_stream_t *s, const void *out, const char *fn,
                                  const char *what) {
  accel_status_t st = accel_stream_check(s, fn, NULL);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, fn, what);
  return ACCEL_OK;
}

accel_status_t accel_stream_is_capturing(accel_stream_t *s, int *capturing) {
  accel_status_t st = state_check(s, capturing, __func__, "capturing is NULL");
  if (st != ACCEL_OK) return st;
  pthread_mutex_lock(&s->lock);
  *capturing = s->capture != NULL;
  pthread_mutex_unlock(&s->lock);
  return ACCEL_OK;
}

accel_status_t accel_stream_is_lazy(accel_stream_t *s, int *lazy) {
  accel_status_t st = state_check(s, lazy, __func__, "lazy is NULL");
  if (st == ACCEL_OK) *lazy = s->lazy;
  return st;
}

accel_status_t accel_stream_lazy_stats(accel_stream_t *s, accel_lazy_stats_t *out) {
  accel_status_t st = state_check(s, out, __func__, "out is NULL");
  if (st != ACCEL_OK) return st;
  pthread_mutex_lock(&s->lock);
  *out = s->lazy_stats;
  pthread_mutex_unlock(&s->lock);
  return ACCEL_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* the device's calls into this room (device.h) */

static accel_status_t stream_list(accel_device_t *dev, accel_stream_t ***out, size_t *n) {
  pthread_mutex_lock(&dev->lock);
  size_t count = 0;
  for (accel_stream_t *s = dev->streams; s; s = s->next_in_device) count++;
  accel_stream_t **list = malloc((count ? count : 1) * sizeof *list);
  if (list) {
    count = 0;
    for (accel_stream_t *s = dev->streams; s; s = s->next_in_device) {
      accel_stream_retain(s); /* linked streams are alive: their refcount is above zero */
      list[count++] = s;
    }
  }
  pthread_mutex_unlock(&dev->lock);
  if (!list) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  *out = list;
  *n = count;
  return ACCEL_OK;
}

static void stream_list_release(accel_stream_t **streams, size_t n) {
  for (size_t i = 0; i < n; ++i) accel_stream_release_ref(streams[i]);
  free(streams);
}

static bool stream_fence(accel_stream_t *s, bool record, bool *busy, accel_be_event_t **ev) {
  const accel_backend_vtable_t *vt = s->dev->backend->vt;
  pthread_mutex_lock(&s->lock);
  /* a capturing stream submits nothing to the backend: its work before the capture is what
   * the event must cover, and that is submitted already */
  bool ok = s->capture || accel_lazy_flush_locked(s) == ACCEL_OK;
  if (ok && vt->stream_query(s->impl) != ACCEL_OK) { /* busy (or failed): fence it */
    *busy = true;
    if (record) ok = vt->event_create(s->dev->impl, ACCEL_EVENT_DISABLE_TIMING, ev) == ACCEL_OK;
    if (ok && record && vt->event_record(*ev, s->impl) != ACCEL_OK) {
      vt->event_destroy(*ev);
      ok = false;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return ok;
}

static accel_status_t check_unsafe(const char *fn, accel_stream_t *s) {
  return accel_capture_ops.check_unsafe(fn, s);
}

const accel_device_stream_ops_t accel_device_stream_ops = {
    .create = accel_stream_create_internal,
    .release = accel_stream_release_ref,
    .list = stream_list,
    .list_release = stream_list_release,
    .flush = stream_flush,
    .sync = accel_stream_sync_internal,
    .fence = stream_fence,
    .check_unsafe = check_unsafe,
};
