/*
 * Native handles: the platform, device, context, queue and event objects behind accel's, and
 * a runtime's own context and in-order queue adopted as an accel device and stream.
 *
 * A wrapped device is an acl_device_t over the runtime's cl_context (retained; device_close
 * releases that one reference): accel's SVM allocations and its kernel program live in that
 * context, so the runtime's kernels can take accel memory (clSetKernelArgSVMPointer) and
 * accel's kernels can run on the runtime's queues. The program is built per acl_device_t from
 * the device binary cache (a binary, never a cl_program, is shared between contexts).
 *
 * A wrapped queue is retained, never replaced (no switch to a profiling queue: a timed record
 * on a queue without CL_QUEUE_PROFILING_ENABLE is untimed, and elapsed_ms says so) and never
 * released beyond accel's own reference. Queues must be in order: accel relies on it.
 */
#include <stdlib.h>

#include "acl_internal.h"

accel_status_t acl_device_native(accel_be_device_t *device, accel_native_t *out) {
  acl_device_t *dev = device;
  out->platform = dev->phys->platform;
  out->device = dev->phys->id;
  out->context = dev->ctx;
  return ACCEL_OK;
}

/* A vendor error code from a query on a handle the caller passed: INVALID_ARGUMENT. */
static accel_status_t bad_handle(const char *what, const char *call, cl_int err) {
  return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s is not usable: %s: %s (%d)", what,
                             call, acl_error_name(err), (int)err);
}

/* The devices of ctx (malloc'ed). */
static accel_status_t context_devices(cl_context ctx, cl_device_id **ids, cl_uint *n) {
  cl_int err = clGetContextInfo(ctx, CL_CONTEXT_NUM_DEVICES, sizeof *n, n, NULL);
  if (err != CL_SUCCESS)
    return bad_handle("native->context", "clGetContextInfo(CL_CONTEXT_NUM_DEVICES)", err);
  *ids = calloc(*n ? *n : 1, sizeof **ids);
  if (!*ids) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "opencl: out of memory");
  err = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, *n * sizeof **ids, *ids, NULL);
  if (err != CL_SUCCESS) {
    free(*ids);
    return bad_handle("native->context", "clGetContextInfo(CL_CONTEXT_DEVICES)", err);
  }
  return ACCEL_OK;
}

/* The device to run on: native->device (which ctx must contain), or ctx's only device. */
static accel_status_t pick_device(cl_context ctx, const accel_native_t *native,
                                  cl_device_id *out) {
  cl_device_id *ids = NULL;
  cl_uint n = 0;
  accel_status_t st = context_devices(ctx, &ids, &n);
  if (st != ACCEL_OK) return st;
  cl_device_id want = native->device;
  if (!want && n == 1) want = ids[0];
  int found = 0;
  for (cl_uint i = 0; i < n && want; i++) found |= ids[i] == want;
  free(ids);
  if (!want)
    return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native->device is NULL and the context has %u devices: name "
                               "the one to run on", n);
  if (!found)
    return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native->device %p is not a device of native->context %p",
                               (void *)want, (void *)ctx);
  *out = want;
  return ACCEL_OK;
}

accel_status_t acl_device_wrap_native(accel_be_backend_t *backend, const accel_native_t *native,
                                      int *index, accel_be_device_t **out) {
  acl_backend_t *be = backend;
  cl_context ctx = native->context;
  if (!ctx)
    return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native->context is NULL (the cl_context to adopt)");
  cl_device_id id = NULL;
  accel_status_t st = pick_device(ctx, native, &id);
  if (st != ACCEL_OK) return st;
  int found = -1;
  for (int i = 0; i < be->count && found < 0; i++)
    if (be->devs[i].id == id) found = i;
  if (found < 0)
    return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "cl_device_id %p is not one of the %d devices accel enumerated "
                               "(sub-devices are not supported)", (void *)id, be->count);
  if (native->platform && native->platform != (void *)be->devs[found].platform)
    return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native->platform %p is not the platform of the device (%p)",
                               native->platform, (void *)be->devs[found].platform);
  acl_device_t *dev = NULL;
  st = acl_device_init(be, found, ctx, &dev);
  if (st != ACCEL_OK) return st;
  *index = found;
  *out = dev;
  return ACCEL_OK;
}

accel_status_t acl_stream_native(accel_be_stream_t *stream, accel_native_t *out) {
  acl_stream_t *s = stream;
  /* Native work may now land between accel's: the queue stays this one (no profiling switch)
   * and queries ask it. */
  s->shared = 1;
  out->queue = s->queue;
  return ACCEL_OK;
}

accel_status_t acl_stream_wrap_native(accel_be_device_t *device, const accel_native_t *native,
                                      accel_be_stream_t **out) {
  acl_device_t *dev = device;
  cl_command_queue q = native->queue;
  cl_context qctx = NULL;
  cl_device_id qdev = NULL;
  cl_command_queue_properties props = 0;
  cl_int err = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
  if (err != CL_SUCCESS) return bad_handle("native->queue", "clGetCommandQueueInfo", err);
  if (qctx != dev->ctx)
    return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native->queue belongs to cl_context %p, the device's is %p: "
                               "open the device over that context (accel_device_wrap_native)",
                               (void *)qctx, (void *)dev->ctx);
  if ((err = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL)) != CL_SUCCESS ||
      (err = clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL)) !=
          CL_SUCCESS)
    return bad_handle("native->queue", "clGetCommandQueueInfo", err);
  if (qdev != dev->phys->id)
    return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native->queue runs on cl_device_id %p, the device is %p (%s)",
                               (void *)qdev, (void *)dev->phys->id, dev->phys->name);
  if (props & (CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_ON_DEVICE))
    return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "native->queue is %s: accel needs an in-order host queue "
                               "(commands of a stream run in order)",
                               (props & CL_QUEUE_ON_DEVICE) ? "a device-side queue"
                                                            : "out of order");
  acl_stream_t *s = NULL;
  accel_status_t st = acl_stream_adopt(dev, q, (props & CL_QUEUE_PROFILING_ENABLE) != 0, &s);
  if (st != ACCEL_OK) return st;
  s->shared = 1;
  *out = s;
  return ACCEL_OK;
}

accel_status_t acl_event_native(accel_be_event_t *event, accel_native_t *out) {
  acl_event_t *e = event;
  pthread_mutex_lock(&e->lock);
  out->event = e->ev; /* accel's reference: valid until the next record or the destroy */
  pthread_mutex_unlock(&e->lock);
  return ACCEL_OK;
}

accel_status_t acl_stream_wait_native_event(accel_be_stream_t *stream, void *native_event) {
  acl_stream_t *s = stream;
  cl_event ev = native_event;
  cl_context ectx = NULL;
  cl_int err = clGetEventInfo(ev, CL_EVENT_CONTEXT, sizeof ectx, &ectx, NULL);
  if (err != CL_SUCCESS) return bad_handle("native_event", "clGetEventInfo", err);
  if (ectx != s->dev->ctx)
    return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native_event belongs to cl_context %p, the stream's is %p (an "
                               "OpenCL queue waits only on events of its own context)",
                               (void *)ectx, (void *)s->dev->ctx);
  cl_event barrier = NULL;
  err = clEnqueueBarrierWithWaitList(s->queue, 1, &ev, &barrier);
  if (err != CL_SUCCESS) return acl_fail("clEnqueueBarrierWithWaitList", err);
  acl_stream_set_last(s, barrier);
  return acl_stream_flush(s, ACCEL_OK);
}
