/*
 * Events of the CPU backend.
 *
 * Every event_record creates a cpu_record_t: a small reference-counted completion flag (plus
 * a CLOCK_MONOTONIC timestamp) that the recording stream's worker sets when it reaches the
 * record. The event points to its LAST record only, so query/synchronize/elapsed refer to the
 * last record at the time of the call (CUDA semantics), and a stream_wait_event holds a
 * reference to the record that was last at the time of the wait, however often the event is
 * recorded again afterwards. A never-recorded event has no record and counts as complete.
 */
#ifndef ACCEL_CPU_EVENT_H
#define ACCEL_CPU_EVENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "accel/accel_plugin.h"
#include "backend_slots.h"
#include "cpu_device.h"

typedef struct cpu_record cpu_record_t;

struct cpu_record {
  atomic_uint refcount;
  atomic_int done;
  uint64_t time_ns; /* written before done is set; read after done is seen */
};

typedef struct cpu_event {
  cpu_device_t *device;
  unsigned flags;        /* ACCEL_EVENT_* */
  pthread_mutex_t mutex; /* protects last */
  cpu_record_t *last;    /* NULL until the first record */
} cpu_event_t;

/* A new record with two references (the event's and the queue entry's), or NULL. */
cpu_record_t *cpu_record_new(void);
void cpu_record_release(cpu_record_t *record);
/* The worker reached the record: stamp it (when timed), mark it done, wake waiters. */
void cpu_record_complete(cpu_device_t *device, cpu_record_t *record, int timed);
/* Blocks until the record completed. */
void cpu_record_wait(cpu_device_t *device, cpu_record_t *record);
static inline int cpu_record_is_done(const cpu_record_t *record) {
  return atomic_load((atomic_int *)&record->done);
}

/* The event's last record with a new reference, or NULL if it was never recorded. */
cpu_record_t *cpu_event_last_record(cpu_event_t *event);
/* Makes record the event's last record (takes over one reference). */
void cpu_event_set_last_record(cpu_event_t *event, cpu_record_t *record);

/* vtable entry points */
ACCEL_BACKEND_DECLARE_EVENTS(cpu);

#endif
