/*
 * Native handles (verified here only by compiling; docs/INTEROP.md lists what each call relies
 * on). The queue of a stream is its immediate command list: what native code appends there
 * runs in the list's order with accel's eager commands (accel puts a barrier before each of its
 * commands on a shared list, since commands of a list may finish out of order). Lazy batches
 * and graphs run on the stream's own command queue; switching between the two waits on the
 * host, and on a shared list that wait covers the native appends as well.
 *
 * A wrapped device uses the runtime's ze_context (never destroyed here; Level Zero has no
 * context reference count, so the runtime keeps it alive until the accel device is gone).
 * A wrapped list is never destroyed here either.
 */
#include "ze_internal.h"

accel_status_t accel_ze_device_native(accel_be_device_t *device, accel_native_t *out) {
  accel_ze_device_t *dev = device;
  out->platform = dev->driver;
  out->device = dev->dev;
  out->context = dev->ctx;
  return ACCEL_OK;
}

accel_status_t accel_ze_device_wrap_native(accel_be_backend_t *backend,
                                           const accel_native_t *native, int *index,
                                           accel_be_device_t **out) {
  accel_ze_backend_t *be = backend;
  if (!native->context || !native->device)
    return accel_ze_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                                    "native->context and native->device are required (a "
                                    "ze_context_handle_t and the ze_device_handle_t to run on)");
  int found = -1;
  for (int i = 0; i < be->device_count && found < 0; ++i)
    if (be->devices[i] == native->device) found = i;
  if (found < 0)
    return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                    "ze_device_handle_t %p is not one of the %d root devices "
                                    "accel enumerated (sub-devices are not supported)",
                                    native->device, be->device_count);
  if (native->platform && native->platform != (void *)be->drivers[found])
    return accel_ze_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                                    "native->platform %p is not the device's driver (%p)",
                                    native->platform, (void *)be->drivers[found]);
  accel_status_t st = accel_ze_device_setup(be, found, native->context, out);
  if (st == ACCEL_OK) *index = found;
  return st;
}

/* From now on native code may append to s's immediate list. */
static void share(accel_ze_stream_t *s) {
  s->shared = 1;
  s->imm_used = 1; /* every later accel command starts with a barrier */
}

accel_status_t accel_ze_stream_native(accel_be_stream_t *stream, accel_native_t *out) {
  accel_ze_stream_t *s = stream;
  /* queue-path work (lazy batches, graphs) is not ordered with the list: wait for it */
  accel_status_t st = accel_ze_stream_use_path(s, ACCEL_ZE_PATH_IMMEDIATE);
  if (st != ACCEL_OK) return st;
  share(s);
  out->queue = s->imm;
  return ACCEL_OK;
}

accel_status_t accel_ze_stream_wrap_native(accel_be_device_t *device,
                                           const accel_native_t *native,
                                           accel_be_stream_t **out) {
  /* Level Zero 1.4 cannot tell a list's context or whether it is immediate: the runtime
   * promises an immediate list of the device's context (docs/INTEROP.md). */
  accel_ze_stream_t *s = NULL;
  accel_status_t st = accel_ze_stream_setup(device, native->queue, &s);
  if (st != ACCEL_OK) return st;
  share(s);
  s->path = ACCEL_ZE_PATH_IMMEDIATE; /* the runtime's earlier work is on the list */
  *out = s;
  return ACCEL_OK;
}

accel_status_t accel_ze_event_native(accel_be_event_t *event, accel_native_t *out) {
  accel_ze_event_t *e = event;
  out->event = e->ev; /* reset and signaled again by each record */
  return ACCEL_OK;
}

accel_status_t accel_ze_stream_wait_native_event(accel_be_stream_t *stream, void *native_event) {
  accel_ze_stream_t *s = stream;
  ze_event_handle_t ev = native_event;
  ze_command_list_handle_t list;
  accel_ze_slot_t *slot;
  accel_status_t st = accel_ze_stream_control_begin(s, &list, &slot);
  if (st != ACCEL_OK) return st;
  ACCEL_ZE_TRY(s->dev->api, zeCommandListAppendWaitOnEvents, list, 1, &ev);
  return accel_ze_stream_control_end(s, slot);
}
