/*
 * Layer 4, stream (docs/ARCHITECTURE.md, "Rooms and layers"): an event, recorded on a stream
 * or into a capture (opaque here: capture.h).
 */
#ifndef ACCEL_CORE_EVENT_H
#define ACCEL_CORE_EVENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/accel_plugin.h"
#include "handle.h"
#include "stream.h"

struct accel_event {
  accel_handle_t hdr;
  accel_device_t *dev;
  accel_be_event_t *impl;
  unsigned flags;
  pthread_mutex_t lock;
  bool recorded;
  /* the last record was captured into a graph (it stays so after the capture ended): such a
   * record has no backend event, and the earlier real record's one is stale */
  bool record_captured;
  /* set when the last record happened inside a capture (the event holds a reference to it) */
  accel_capture_t *capture;
  uint32_t capture_event_slot;
  size_t capture_position;
  uint32_t capture_stream_slot;
};

/* An event holds a reference to its device; captures hold references to their events. */
void accel_event_retain(accel_event_t *e);
void accel_event_release_ref(accel_event_t *e);

/* A point in a stream for core's own watchers (the ACCEL_COMM_TIMEOUT watchdog): the backend's
 * event recorded after everything submitted to the stream so far. Neither a user handle nor
 * subject to the capture rules, so another thread may query it while a user captures (in
 * GLOBAL mode too), and nothing is enqueued that a runtime's capture of a wrapped stream would
 * keep (a backend event record is captured as a mere dependency and then queries as done). */
typedef struct accel_stream_marker {
  accel_device_t *dev; /* referenced until the release */
  accel_be_event_t *impl;
} accel_stream_marker_t;
/* STATE while the stream captures (an accel capture: its work runs at replays, not now). */
accel_status_t accel_stream_marker_record(accel_stream_t *s, accel_stream_marker_t *out);
/* OK when the stream got past the marker, NOT_READY before, another status on a device error. */
accel_status_t accel_stream_marker_query(const accel_stream_marker_t *m);
void accel_stream_marker_release(accel_stream_marker_t *m);

#endif
