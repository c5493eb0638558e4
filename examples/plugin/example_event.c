/*
 * Events. A record completes at once (the stream has already run everything before it), so
 * the event's timestamp is taken at record time, query and synchronize always succeed, and
 * elapsed time is the difference of two timestamps.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdlib.h>
#include <time.h>

#include "example_internal.h"

accel_status_t example_event_create(accel_be_device_t *device, unsigned flags,
                                    accel_be_event_t **out) {
  (void)device;
  (void)flags; /* a timestamp per record costs nothing: ACCEL_EVENT_DISABLE_TIMING changes
                * nothing here (the core refuses elapsed_ms on such events itself) */
  example_event_t *e = calloc(1, sizeof *e);
  if (!e)
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": calloc(%zu) for an event failed", sizeof *e);
  atomic_init(&e->recorded_ns, 0);
  *out = e;
  return ACCEL_OK;
}

void example_event_destroy(accel_be_event_t *event) { free(event); }

accel_status_t example_event_record(accel_be_event_t *event, accel_be_stream_t *stream) {
  (void)stream;
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
    return example_host->set_error(ACCEL_ERROR_BACKEND,
                                   EXAMPLE_NAME ": clock_gettime(CLOCK_MONOTONIC) failed");
  uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  atomic_store(&((example_event_t *)event)->recorded_ns, ns);
  return ACCEL_OK;
}

accel_status_t example_event_synchronize(accel_be_event_t *event) {
  (void)event;
  return ACCEL_OK;
}

accel_status_t example_event_query(accel_be_event_t *event) {
  (void)event;
  return ACCEL_OK;
}

accel_status_t example_event_elapsed_ms(accel_be_event_t *start, accel_be_event_t *end,
                                        float *ms) {
  /* The core only calls this for two timing events that were both recorded (it validates
   * every argument before a plugin sees it), so both timestamps are set. */
  uint64_t t0 = atomic_load(&((example_event_t *)start)->recorded_ns);
  uint64_t t1 = atomic_load(&((example_event_t *)end)->recorded_ns);
  *ms = (float)((double)((int64_t)(t1 - t0)) / 1e6);
  return ACCEL_OK;
}
