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
void accel_event_release(accel_event_t *e);

#endif
