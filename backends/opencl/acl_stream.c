/*
 * Streams are in-order command queues.
 *
 * Per-command cost is what matters for small launches, so plain commands (kernels, copies,
 * fills) are enqueued without a cl_event and usually without a clFlush:
 *
 *  - stream_query needs no per-command event: s->last is the event of the newest command that
 *    has one (event-record markers, host-function and wait barriers), s->untracked counts the
 *    commands enqueued after it. With untracked work a query enqueues one marker with an event,
 *    flushes and reads its status; the queue is in order, so the marker completes after all
 *    earlier work. NOT_READY until it completes; OK, and the stream is known idle, once it has
 *    (a marker does not complete at once even on an idle queue: queries poll it). A failed
 *    command fails the marker, so the error is reported as before.
 *
 *  - Flush rule. A command that another queue or the host may wait on is flushed at once:
 *    event records, stream_wait_event barriers, host functions, graph launches, the end of a
 *    submit_batch, and a query's marker (synchronize and destroy use clFinish, which flushes).
 *    That keeps cross-stream waits and host polling from waiting on unsubmitted work. Plain
 *    commands flush when s->unflushed reaches s->flush_at, which starts at 1 whenever the
 *    stream is known idle (creation, synchronize, a query that saw it complete) and doubles
 *    with every flush up to ACL_FLUSH_MAX: the first command after an idle point reaches the
 *    device at once, later ones go in batches of up to ACL_FLUSH_MAX while the device is busy.
 *    (PoCL starts commands without a flush; drivers that batch until clFlush get bounded
 *    batches.)
 *
 *  - Profiling (CL_QUEUE_PROFILING_ENABLE) is needed only for timed event records
 *    (elapsed_ms reads the markers' CL_PROFILING_COMMAND_END). It costs per command on PoCL,
 *    so a stream starts without it and switches to a profiling queue at its first timed record
 *    (acl_stream_use_profiling); see docs/backends/opencl.md for the measurements.
 */
#include <stdlib.h>

#include "acl_internal.h"

/* Largest batch of plain commands enqueued between two flushes. */
#define ACL_FLUSH_MAX 16u

accel_status_t acl_stream_adopt(acl_device_t *dev, cl_command_queue q, int profiling,
                                acl_stream_t **out) {
  acl_stream_t *s = calloc(1, sizeof *s);
  if (!s) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "opencl stream_create: out of memory");
  cl_int err = clRetainCommandQueue(q);
  if (err != CL_SUCCESS) {
    free(s);
    return acl_fail("clRetainCommandQueue", err);
  }
  s->dev = dev;
  s->queue = q;
  s->profiling = profiling;
  s->flush_at = 1;
  atomic_init(&s->seq, 0u);
  atomic_init(&s->idle_at, 0u);
  *out = s;
  return ACCEL_OK;
}

accel_status_t acl_stream_create(accel_be_device_t *device, accel_be_stream_t **out) {
  acl_device_t *dev = device;
  cl_command_queue q = NULL;
  accel_status_t st = acl_queue_create(dev, 0, &q);
  if (st != ACCEL_OK) return st;
  acl_stream_t *s = NULL;
  st = acl_stream_adopt(dev, q, 0, &s);
  clReleaseCommandQueue(q); /* the stream holds its own reference */
  if (st == ACCEL_OK) *out = s;
  return st;
}

void acl_stream_destroy(accel_be_stream_t *stream) {
  acl_stream_t *s = stream;
  clFinish(s->queue); /* also waits for pending host functions (their barriers) */
  acl_hostq_destroy(s->hostq);
  if (s->last) clReleaseEvent(s->last);
  acl_kernel_set_release(&s->kernels);
  acl_pred_destroy(s->dev, s->pred);
  clReleaseCommandQueue(s->queue); /* the stream's reference: a wrapped queue lives on */
  if (s->retired) {
    clFinish(s->retired); /* already drained: the new queue's first command waited for it */
    clReleaseCommandQueue(s->retired);
  }
  free(s);
}

/* Everything enqueued so far has completed (serialized calls only). */
static void stream_idle(acl_stream_t *s) {
  if (s->last) clReleaseEvent(s->last);
  s->last = NULL;
  s->untracked = 0;
  s->unflushed = 0;
  s->flush_at = 1;
}

/* Applies a synchronize that saw every command enqueued so far complete. */
static void apply_sync(acl_stream_t *s) {
  if (atomic_load_explicit(&s->idle_at, memory_order_acquire) ==
      atomic_load_explicit(&s->seq, memory_order_relaxed))
    stream_idle(s);
}

static void count_command(acl_stream_t *s) {
  atomic_store_explicit(&s->seq, atomic_load_explicit(&s->seq, memory_order_relaxed) + 1u,
                        memory_order_release);
}

/* May run while another thread submits to the stream: reads the command count and the queue
 * (which a timed event record may switch) atomically, and publishes what it saw complete. */
accel_status_t acl_stream_synchronize(accel_be_stream_t *stream) {
  acl_stream_t *s = stream;
  const uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
  cl_int err = clFinish(__atomic_load_n(&s->queue, __ATOMIC_ACQUIRE));
  if (err != CL_SUCCESS) return acl_fail("clFinish", err);
  uint64_t seen = atomic_load(&s->idle_at);
  while (seen < seq && !atomic_compare_exchange_weak(&s->idle_at, &seen, seq)) {
  }
  return ACCEL_OK;
}

accel_status_t acl_event_status(cl_event ev, const char *what) {
  cl_int status = CL_QUEUED;
  cl_int err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                              NULL);
  if (err != CL_SUCCESS) return acl_fail("clGetEventInfo(COMMAND_EXECUTION_STATUS)", err);
  if (status == CL_COMPLETE) return ACCEL_OK;
  if (status < 0)
    return acl_host->set_error(ACCEL_ERROR_BACKEND, "%s: command failed with %s (%d)", what,
                               acl_error_name(status), (int)status);
  return ACCEL_ERROR_NOT_READY;
}

void acl_stream_set_last(acl_stream_t *s, cl_event ev) {
  apply_sync(s);
  if (s->last) clReleaseEvent(s->last);
  s->last = ev;
  s->untracked = 0;
  s->unflushed++;
  count_command(s);
}

void acl_stream_note(acl_stream_t *s) {
  apply_sync(s);
  s->untracked++;
  s->unflushed++;
  count_command(s);
}

/* Flushes when the flush rule (top of the file) says a plain command is due. */
static accel_status_t flush_if_due(acl_stream_t *s, accel_status_t st) {
  return s->unflushed >= s->flush_at ? acl_stream_flush(s, st) : st;
}

accel_status_t acl_stream_query(accel_be_stream_t *stream) {
  acl_stream_t *s = stream;
  apply_sync(s);
  if (!s->last && !s->untracked) return ACCEL_OK; /* known idle */
  if (s->untracked) {
    cl_event marker = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &marker);
    if (err != CL_SUCCESS) return acl_fail("clEnqueueMarkerWithWaitList", err);
    acl_stream_set_last(s, marker);
  }
  if (s->unflushed) {
    accel_status_t st = acl_stream_flush(s, ACCEL_OK);
    if (st != ACCEL_OK) return st;
  }
  accel_status_t st = acl_event_status(s->last, "stream_query");
  if (st == ACCEL_OK) stream_idle(s);
  return st;
}

accel_status_t acl_stream_use_profiling(acl_stream_t *s) {
  if (s->profiling || s->shared) return ACCEL_OK; /* a shared queue is never replaced */
  cl_command_queue q = NULL;
  accel_status_t st = acl_queue_create(s->dev, 1, &q);
  if (st != ACCEL_OK) return st;
  /* The new queue's first command waits for everything on the old one. */
  cl_event drained = NULL;
  const char *call = "clEnqueueMarkerWithWaitList";
  cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &drained);
  if (err == CL_SUCCESS) {
    call = "clFlush";
    err = clFlush(s->queue);
  }
  if (err == CL_SUCCESS) {
    call = "clEnqueueBarrierWithWaitList";
    err = clEnqueueBarrierWithWaitList(q, 1, &drained, NULL);
  }
  if (err != CL_SUCCESS) {
    if (drained) clReleaseEvent(drained); /* the old queue stays in use */
    clReleaseCommandQueue(q);
    return acl_fail(call, err);
  }
  s->retired = s->queue;
  __atomic_store_n(&s->queue, q, __ATOMIC_RELEASE); /* read concurrently by synchronize */
  s->profiling = 1;
  acl_stream_set_last(s, drained); /* completes with the old queue's work */
  s->untracked = 1;                /* the barrier, the new queue's only command so far */
  s->unflushed = 1;
  return ACCEL_OK;
}

accel_status_t acl_stream_wait_event(accel_be_stream_t *stream, accel_be_event_t *event) {
  acl_stream_t *s = stream;
  cl_event marker = acl_event_retain_marker(event);
  if (!marker) return ACCEL_OK; /* never recorded: nothing to wait for */
  cl_event ev = NULL;
  cl_int err = clEnqueueBarrierWithWaitList(s->queue, 1, &marker, &ev);
  clReleaseEvent(marker);
  if (err != CL_SUCCESS) return acl_fail("clEnqueueBarrierWithWaitList", err);
  acl_stream_set_last(s, ev);
  return acl_stream_flush(s, ACCEL_OK);
}

/* --- plain commands: no event, flushed by the callers ------------------------------------- */

static accel_status_t enqueue_memcpy(acl_stream_t *s, void *dst, const void *src, size_t size) {
  /* clEnqueueSVMMemcpy accepts SVM and ordinary host pointers on either side. */
  cl_int err = clEnqueueSVMMemcpy(s->queue, CL_FALSE, dst, src, size, 0, NULL, NULL);
  if (err != CL_SUCCESS) return acl_fail("clEnqueueSVMMemcpy", err);
  acl_stream_note(s);
  return ACCEL_OK;
}

static accel_status_t enqueue_memset(acl_stream_t *s, void *dst, uint8_t value, size_t size) {
  cl_int err = clEnqueueSVMMemFill(s->queue, dst, &value, 1, size, 0, NULL, NULL);
  if (err != CL_SUCCESS) return acl_fail("clEnqueueSVMMemFill", err);
  acl_stream_note(s);
  return ACCEL_OK;
}

static accel_status_t enqueue_kernel(acl_stream_t *s, const accel_kernel_launch_t *launch,
                                     const int32_t *pred) {
  cl_kernel k;
  size_t global, local;
  accel_status_t st = acl_kernel_prepare(s->dev, &s->kernels, launch, pred, &k, &global, &local);
  if (st != ACCEL_OK) return st;
  cl_int err = clEnqueueNDRangeKernel(s->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
  if (err != CL_SUCCESS) return acl_fail("clEnqueueNDRangeKernel", err);
  acl_stream_note(s);
  return ACCEL_OK;
}

accel_status_t acl_stream_flush(acl_stream_t *s, accel_status_t st) {
  cl_int err = clFlush(s->queue);
  s->unflushed = 0;
  if (s->flush_at < ACL_FLUSH_MAX) s->flush_at *= 2;
  if (st == ACCEL_OK && err != CL_SUCCESS) return acl_fail("clFlush", err);
  return st;
}

accel_status_t acl_memcpy_async(accel_be_stream_t *stream, void *dst, const void *src,
                                size_t size, accel_copy_kind_t kind) {
  (void)kind; /* SVM: one call for every direction */
  acl_stream_t *s = stream;
  if (size == 0) return ACCEL_OK;
  return flush_if_due(s, enqueue_memcpy(s, dst, src, size));
}

accel_status_t acl_memset_async(accel_be_stream_t *stream, void *dst, uint8_t value,
                                size_t size) {
  acl_stream_t *s = stream;
  if (size == 0) return ACCEL_OK;
  return flush_if_due(s, enqueue_memset(s, dst, value, size));
}

accel_status_t acl_launch_kernel(accel_be_stream_t *stream, const accel_kernel_launch_t *launch) {
  acl_stream_t *s = stream;
  return flush_if_due(s, enqueue_kernel(s, launch, NULL));
}

/* One command at depth (cond_walk.h): predicated on the innermost region's slot when
 * depth > 0. */
static accel_status_t issue(void *ctx, const accel_cmd_t *c, uint32_t depth) {
  acl_stream_t *s = ctx;
  const int32_t *pred = acl_pred_slot(s, depth);
  switch (c->type) {
    case ACCEL_CMD_KERNEL: return enqueue_kernel(s, &c->u.kernel, pred);
    case ACCEL_CMD_MEMCPY:
      if (c->u.memcpy.size == 0) return ACCEL_OK;
      return pred ? acl_pred_copy(s, pred, c->u.memcpy.dst, c->u.memcpy.src, c->u.memcpy.size)
                  : enqueue_memcpy(s, c->u.memcpy.dst, c->u.memcpy.src, c->u.memcpy.size);
    case ACCEL_CMD_MEMSET:
      if (c->u.memset.size == 0) return ACCEL_OK;
      return pred ? acl_pred_fill(s, pred, c->u.memset.dst, (uint8_t)c->u.memset.value,
                                  c->u.memset.size)
                  : enqueue_memset(s, c->u.memset.dst, (uint8_t)c->u.memset.value,
                                   c->u.memset.size);
    case ACCEL_CMD_HOST_FUNC:
      return acl_enqueue_host_func(s, c->u.host_func.fn, c->u.host_func.user, pred);
    default:
      return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                                 "submit_batch: command type %u is not allowed here", c->type);
  }
}

static accel_status_t enter(void *ctx, const accel_cmd_t *begin, uint32_t depth, int first) {
  return acl_pred_enter(ctx, depth, first, begin->u.cond.flag);
}

accel_status_t acl_submit_batch(accel_be_stream_t *stream, const accel_cmd_t *cmds, size_t n) {
  acl_stream_t *s = stream;
  const accel_cond_walk_t walk = {acl_host, "opencl submit_batch", s, enter, issue};
  /* Flush what was enqueued even when a later command failed: it must still run. */
  return acl_stream_flush(s, accel_cond_walk(&walk, cmds, n));
}
