/*
 * Events: one host-visible Level Zero event per accel event, from its own one-event pool
 * (with ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP unless timing is disabled). A record appends a
 * device-side reset and a barrier that signals the event once all earlier work finished; the
 * barrier's kernel timestamp gives elapsed_ms.
 */
#include <stdlib.h>

#include "ze_internal.h"

accel_status_t accel_ze_single_event(accel_ze_device_t *dev, int timing,
                                     ze_event_pool_handle_t *pool, ze_event_handle_t *ev) {
  const accel_ze_api_t *api = dev->api;
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                             .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
                                      (timing ? ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP : 0),
                             .count = 1};
  ze_device_handle_t d = dev->dev;
  ACCEL_ZE_TRY(api, zeEventPoolCreate, dev->ctx, &pd, 1, &d, pool);
  ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                        .index = 0,
                        .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                        .wait = ZE_EVENT_SCOPE_FLAG_HOST};
  ze_result_t r = api->zeEventCreate(*pool, &ed, ev);
  if (r != ZE_RESULT_SUCCESS) {
    api->zeEventPoolDestroy(*pool);
    *pool = NULL;
    return accel_ze_fail("zeEventCreate", r);
  }
  return ACCEL_OK;
}

accel_status_t accel_ze_event_create(accel_be_device_t *device, unsigned flags,
                                     accel_be_event_t **out) {
  accel_ze_event_t *e = calloc(1, sizeof(*e));
  if (!e) return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  e->dev = device;
  e->timing = (flags & ACCEL_EVENT_DISABLE_TIMING) ? 0 : 1;
  accel_status_t st = accel_ze_single_event(e->dev, e->timing, &e->pool, &e->ev);
  if (st != ACCEL_OK) {
    free(e);
    return st;
  }
  *out = e;
  return ACCEL_OK;
}

void accel_ze_event_destroy(accel_be_event_t *event) {
  accel_ze_event_t *e = event;
  e->dev->api->zeEventDestroy(e->ev);
  e->dev->api->zeEventPoolDestroy(e->pool);
  free(e);
}

accel_status_t accel_ze_event_record(accel_be_event_t *event, accel_be_stream_t *stream) {
  accel_ze_event_t *e = event;
  accel_ze_stream_t *s = stream;
  const accel_ze_api_t *api = s->dev->api;
  ze_command_list_handle_t list;
  accel_ze_slot_t *slot;
  accel_status_t st = accel_ze_stream_control_begin(s, &list, &slot);
  if (st != ACCEL_OK) return st;
  /* The reset must not overtake an earlier record of this event still waiting in the list. */
  ze_result_t r = api->zeCommandListAppendBarrier(list, NULL, 0, NULL);
  if (r != ZE_RESULT_SUCCESS) return accel_ze_fail("zeCommandListAppendBarrier", r);
  r = api->zeCommandListAppendEventReset(list, e->ev);
  if (r != ZE_RESULT_SUCCESS) return accel_ze_fail("zeCommandListAppendEventReset", r);
  r = api->zeCommandListAppendBarrier(list, e->ev, 0, NULL);
  if (r != ZE_RESULT_SUCCESS) return accel_ze_fail("zeCommandListAppendBarrier", r);
  st = accel_ze_stream_control_end(s, slot);
  if (st == ACCEL_OK) e->recorded = 1;
  return st;
}

accel_status_t accel_ze_stream_wait_event(accel_be_stream_t *stream, accel_be_event_t *event) {
  accel_ze_event_t *e = event;
  accel_ze_stream_t *s = stream;
  if (!e->recorded) return ACCEL_OK; /* like CUDA: waiting on a never-recorded event is a no-op */
  ze_command_list_handle_t list;
  accel_ze_slot_t *slot;
  accel_status_t st = accel_ze_stream_control_begin(s, &list, &slot);
  if (st != ACCEL_OK) return st;
  ACCEL_ZE_TRY(s->dev->api, zeCommandListAppendWaitOnEvents, list, 1, &e->ev);
  return accel_ze_stream_control_end(s, slot);
}

accel_status_t accel_ze_event_synchronize(accel_be_event_t *event) {
  accel_ze_event_t *e = event;
  if (!e->recorded) return ACCEL_OK;
  ACCEL_ZE_TRY(e->dev->api, zeEventHostSynchronize, e->ev, UINT64_MAX);
  return ACCEL_OK;
}

accel_status_t accel_ze_event_query(accel_be_event_t *event) {
  accel_ze_event_t *e = event;
  if (!e->recorded) return ACCEL_OK;
  return accel_ze_poll_result("zeEventQueryStatus", e->dev->api->zeEventQueryStatus(e->ev));
}

accel_status_t accel_ze_event_elapsed_ms(accel_be_event_t *start, accel_be_event_t *end,
                                         float *ms) {
  accel_ze_event_t *a = start, *b = end;
  if (!a->timing || !b->timing)
    return accel_ze_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                                    "level_zero: elapsed_ms needs two events created with timing");
  if (!a->recorded || !b->recorded)
    return accel_ze_host->set_error(ACCEL_ERROR_STATE,
                                    "level_zero: elapsed_ms needs two recorded events");
  accel_status_t st = accel_ze_event_query(a);
  if (st == ACCEL_OK) st = accel_ze_event_query(b);
  if (st != ACCEL_OK) return st;
  const accel_ze_api_t *api = a->dev->api;
  ze_kernel_timestamp_result_t ta, tb;
  ACCEL_ZE_TRY(api, zeEventQueryKernelTimestamp, a->ev, &ta);
  ACCEL_ZE_TRY(api, zeEventQueryKernelTimestamp, b->ev, &tb);
  /* Kernel timestamps are counters of kernelTimestampValidBits bits that wrap; with
   * ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, timerResolution is nanoseconds per tick. */
  const ze_device_properties_t *p = &a->dev->props;
  uint32_t bits = p->kernelTimestampValidBits ? p->kernelTimestampValidBits : 64;
  uint64_t mask = bits >= 64 ? UINT64_MAX : ((1ull << bits) - 1);
  uint64_t ticks = (tb.global.kernelEnd - ta.global.kernelEnd) & mask;
  *ms = (float)((double)ticks * (double)p->timerResolution / 1e6);
  return ACCEL_OK;
}
