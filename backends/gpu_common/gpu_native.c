/*
 * Native handles (compiled for CUDA and HIP; verified here only by compiling, see
 * docs/INTEROP.md for what each call relies on).
 *
 * CUDA: the device is (CUdevice)(intptr_t) + its context. accel uses the primary context, the
 * one PyTorch, CuPy and Warp use, so their CUstreams can be wrapped directly. A device wrapped
 * over another context (cuCtxCreate, a green context's CUcontext) uses that context for
 * everything; CUDA has no reference count for such contexts, so the runtime must keep it alive
 * until the accel device is gone. HIP has no context to adopt: the device is its ordinal.
 * A wrapped stream is never destroyed by accel; kernels, copies, fills and host functions on it
 * are ordinary stream work, so a capture the runtime runs on the stream records them.
 */
#include <stdlib.h>

#include "gpu_backend.h"

accel_status_t gpu_device_native(accel_be_device_t *device, accel_native_t *out) {
  gpu_device_t *d = device;
  out->device = (void *)(intptr_t)d->handle;
#if GPU_HAS_PRIMARY_CONTEXT
  out->context = d->context;
#endif
  return ACCEL_OK;
}

#if GPU_HAS_PRIMARY_CONTEXT
static accel_status_t missing(const gpu_backend_t *be, const char *entry) {
  return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: %s does not export %s",
                             GPU_BACKEND_NAME, be->library_path, entry);
}

/* The ordinal of dev (CUdevice values are handles, not promised to be ordinals). */
static accel_status_t ordinal_of(gpu_backend_t *be, gpuDevice_t dev, int *ordinal) {
  for (int i = 0; i < be->device_count; i++) {
    gpuDevice_t h;
    accel_status_t st = GPU_TRY(be, DeviceGet, &h, i);
    if (st != ACCEL_OK) return st;
    if (h == dev) {
      *ordinal = i;
      return ACCEL_OK;
    }
  }
  return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                             "%s: the context's device %d is not one of the %d enumerated "
                             "(CUDA_VISIBLE_DEVICES?)", GPU_BACKEND_NAME, (int)dev,
                             be->device_count);
}

/* Sets d's handle, ordinal and context from the runtime's context (current on the calling
 * thread meanwhile, the caller's put back when it returns, as in every entry point). */
static accel_status_t adopt_context(gpu_device_t *d, const accel_native_t *native) {
  gpu_backend_t *be = d->backend;
  if (!native->context)
    return gpu_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native->context is NULL (the CUcontext to adopt)");
  if (!be->api.CtxGetDevice) return missing(be, gpu_api_names.CtxGetDevice);
  if (!be->api.PrimaryCtxGetState) return missing(be, gpu_api_names.PrimaryCtxGetState);
  d->context = native->context;
  GPU_ENTER(st, d);
  if (st == ACCEL_OK) st = GPU_TRY(be, CtxGetDevice, &d->handle);
  if (st == ACCEL_OK) st = ordinal_of(be, d->handle, &d->ordinal);
  if (st != ACCEL_OK) return st;
  if (native->device && (gpuDevice_t)(intptr_t)native->device != d->handle)
    return gpu_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native->device %d is not the context's device %d",
                               (int)(intptr_t)native->device, (int)d->handle);
  /* The primary context is reference counted: hold it like an opened device. It can only be
   * the runtime's context while active; retaining an inactive one would create it. */
  unsigned flags = 0;
  int active = 0;
  st = GPU_TRY(be, PrimaryCtxGetState, d->handle, &flags, &active);
  if (st != ACCEL_OK || !active) return st;
  gpuContext_t primary = NULL;
  if ((st = GPU_TRY(be, PrimaryCtxRetain, &primary, d->handle)) != ACCEL_OK) return st;
  if (primary == d->context) d->primary = 1;
  else GPU_WARN(be, PrimaryCtxRelease, d->handle);
  return ACCEL_OK;
}
#endif

accel_status_t gpu_device_wrap_native(accel_be_backend_t *backend, const accel_native_t *native,
                                      int *index, accel_be_device_t **out) {
  gpu_backend_t *be = backend;
  gpu_device_t *d = calloc(1, sizeof *d);
  if (!d) return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: device state", GPU_BACKEND_NAME);
  d->backend = be;
#if GPU_HAS_PRIMARY_CONTEXT
  accel_status_t st = adopt_context(d, native);
  if (st != ACCEL_OK) {
    if (d->primary) GPU_WARN(be, PrimaryCtxRelease, d->handle);
    free(d);
    return st;
  }
#else
  /* HIP: the device is its ordinal (hipDevice_t); there is no context to adopt */
  accel_status_t st = ACCEL_OK;
  int ordinal = (int)(intptr_t)native->device;
  if (native->context)
    st = gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                             "native->context: %s contexts are not adopted (name the device; "
                             "every HIP stream of it can be wrapped)", GPU_BACKEND_NAME);
  else if (ordinal < 0 || ordinal >= be->device_count)
    st = gpu_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                             "native->device %d is not a device ordinal (0..%d)", ordinal,
                             be->device_count - 1);
  else
    st = GPU_TRY(be, DeviceGet, &d->handle, ordinal);
  if (st != ACCEL_OK) {
    free(d);
    return st;
  }
  d->ordinal = ordinal;
#endif
  *index = d->ordinal;
  return gpu_device_finish(d, out);
}

accel_status_t gpu_stream_native(accel_be_stream_t *stream, accel_native_t *out) {
  gpu_stream_t *s = stream;
  s->shared = 1; /* native code may now capture it */
  out->queue = s->handle;
  return ACCEL_OK;
}

accel_status_t gpu_stream_wrap_native(accel_be_device_t *device, const accel_native_t *native,
                                      accel_be_stream_t **out) {
  gpu_device_t *d = device;
  gpu_backend_t *be = d->backend;
  gpuStream_t handle = native->queue;
  GPU_ENTER(st, d);
  if (st != ACCEL_OK) return st;
#if GPU_HAS_PRIMARY_CONTEXT
  /* CU_STREAM_LEGACY and CU_STREAM_PER_THREAD answer with the current context: d's */
  if (!be->api.StreamGetCtx) return missing(be, gpu_api_names.StreamGetCtx);
  gpuContext_t ctx = NULL;
  if ((st = GPU_TRY(be, StreamGetCtx, handle, &ctx)) != ACCEL_OK) return st;
  if (ctx != d->context)
    return gpu_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "native->queue belongs to CUcontext %p, the device's is %p "
                               "(open the device over that context: accel_device_wrap_native)",
                               (void *)ctx, (void *)d->context);
#else
  (void)be; /* this HIP has no hipStreamGetDevice: the stream's device cannot be checked */
#endif
  gpu_stream_t *s = calloc(1, sizeof *s);
  if (!s) return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: stream", GPU_BACKEND_NAME);
  s->device = d;
  s->handle = handle;
  s->borrowed = 1;
  s->shared = 1;
  *out = s;
  return ACCEL_OK;
}

accel_status_t gpu_event_native(accel_be_event_t *event, accel_native_t *out) {
  gpu_event_t *e = event;
  out->event = e->handle; /* one vendor event for every record: it marks the last one */
  return ACCEL_OK;
}

accel_status_t gpu_stream_wait_native_event(accel_be_stream_t *stream, void *native_event) {
  gpu_stream_t *s = stream;
  GPU_ENTER(st, s->device);
  /* the event may belong to another context or device of the process (cuStreamWaitEvent) */
  return st != ACCEL_OK ? st
                        : GPU_TRY(s->device->backend, StreamWaitEvent, s->handle,
                                  (gpuEvent_t)native_event, 0u);
}
