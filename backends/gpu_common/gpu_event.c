/* Events: ordering between streams and timing. */
#include <stdlib.h>

#include "gpu_backend.h"

accel_status_t gpu_event_create(accel_be_device_t *device, unsigned flags,
                                accel_be_event_t **out) {
  gpu_device_t *d = device;
  gpu_event_t *e = calloc(1, sizeof *e);
  if (!e) return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: event", GPU_BACKEND_NAME);
  e->device = d;
  unsigned vendor_flags =
      (flags & ACCEL_EVENT_DISABLE_TIMING) ? GPU_EVENT_DISABLE_TIMING : GPU_EVENT_DEFAULT;
  GPU_ENTER(st, d);
  if (st == ACCEL_OK) st = GPU_TRY(d->backend, EventCreate, &e->handle, vendor_flags);
  if (st != ACCEL_OK) {
    free(e);
    return st;
  }
  *out = e;
  return ACCEL_OK;
}

void gpu_event_destroy(accel_be_event_t *event) {
  gpu_event_t *e = event;
  GPU_ENTER_OR_WARN(current, e->device);
  if (current)
    GPU_WARN(e->device->backend, EventDestroy, e->handle);
  free(e);
}

accel_status_t gpu_event_record(accel_be_event_t *event, accel_be_stream_t *stream) {
  gpu_event_t *e = event;
  gpu_stream_t *s = stream;
  GPU_ENTER(st, e->device);
  return st != ACCEL_OK ? st : GPU_TRY(e->device->backend, EventRecord, e->handle, s->handle);
}

accel_status_t gpu_event_synchronize(accel_be_event_t *event) {
  gpu_event_t *e = event;
  GPU_ENTER(st, e->device);
  return st != ACCEL_OK ? st : GPU_TRY(e->device->backend, EventSynchronize, e->handle);
}

accel_status_t gpu_event_query(accel_be_event_t *event) {
  gpu_event_t *e = event;
  GPU_ENTER(st, e->device);
  if (st != ACCEL_OK) return st;
  gpuError_t err = e->device->backend->api.EventQuery(e->handle);
  if (err == GPU_ERROR_NOT_READY) return ACCEL_ERROR_NOT_READY;
  return gpu_check(e->device->backend, err, gpu_api_names.EventQuery);
}

accel_status_t gpu_event_elapsed_ms(accel_be_event_t *start, accel_be_event_t *end, float *ms) {
  gpu_event_t *a = start, *b = end;
  GPU_ENTER(st, a->device);
  return st != ACCEL_OK ? st
                        : GPU_TRY(a->device->backend, EventElapsedTime, ms, a->handle, b->handle);
}
