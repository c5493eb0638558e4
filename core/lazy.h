/*
 * Layer 5, capture / lazy (docs/ARCHITECTURE.md, "Rooms and layers"): lazy mode's queue and
 * graph cache live in the stream (stream.h); lazy.c submits them.
 */
#ifndef ACCEL_CORE_LAZY_H
#define ACCEL_CORE_LAZY_H

#include "accel/accel.h"

/* Submits a queued lazy sequence (caller holds s->lock). */
accel_status_t accel_lazy_flush_locked(accel_stream_t *s);

#endif
