/*
 * ACCEL_TRACE=file.json: a Chrome/Perfetto trace-event file (JSON array format) with one track
 * per device and stream. Every API operation (launch, copy, sync, flush, capture, replay) is a
 * complete event ("ph":"X") with its host-side duration and arguments. The file is closed with
 * a valid JSON terminator at exit (also when the program leaves through exit() on an error
 * path). Each device's memory is a counter ("ph":"C": allocated, reserved, graph pools) and its
 * out-of-memory retries and cache empties instant events ("ph":"i"; docs/MEMORY.md). Zero cost
 * beyond one branch when tracing is off.
 */
#ifndef ACCEL_CORE_TRACE_H
#define ACCEL_CORE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct accel_trace_scope {
  uint64_t track;
  const char *name;
  uint64_t t0;  /* 0 when tracing is off */
} accel_trace_scope_t;

bool accel_trace_enabled(void);
/* A new track id ("device cpu:0", "stream 3 (cpu:0)"); 0 when tracing is off. */
uint64_t accel_trace_new_track(const char *kind, const char *name, int index);
accel_trace_scope_t accel_trace_begin(uint64_t track, const char *name);
void accel_trace_end(accel_trace_scope_t *s);
/* Ends a scope with an "args" object built from printf-style JSON members, e.g.
 * accel_trace_end_args(&s, "\"bytes\":%zu", n). */
void accel_trace_end_args(accel_trace_scope_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A counter sample ("ph":"C") named name, one track per member of the printf-style JSON
 * members of args (memory of a device: docs/MEMORY.md). No-op when tracing is off. */
void accel_trace_counter(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* An instant event ("ph":"i") on track, with printf-style JSON members as its args. */
void accel_trace_instant(uint64_t track, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
