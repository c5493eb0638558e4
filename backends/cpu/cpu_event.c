#include "cpu_event.h"

#include <stdlib.h>

#include "cpu_stream.h"

cpu_record_t *cpu_record_new(void) {
  cpu_record_t *r = malloc(sizeof(*r));
  if (r == NULL) return NULL;
  atomic_init(&r->refcount, 2u);
  atomic_init(&r->done, 0);
  r->time_ns = 0;
  return r;
}

void cpu_record_release(cpu_record_t *record) {
  if (atomic_fetch_sub_explicit(&record->refcount, 1u, memory_order_acq_rel) == 1u)
    free(record);
}

void cpu_record_complete(cpu_device_t *device, cpu_record_t *record, int timed) {
  if (timed) record->time_ns = cpu_monotonic_ns();
  atomic_store(&record->done, 1);
  cpu_notifier_notify(&device->record_done);
}

static int record_ready(void *arg) { return cpu_record_is_done(arg); }

void cpu_record_wait(cpu_device_t *device, cpu_record_t *record) {
  cpu_notifier_wait(&device->record_done, record_ready, record);
}

cpu_record_t *cpu_event_last_record(cpu_event_t *event) {
  pthread_mutex_lock(&event->mutex);
  cpu_record_t *r = event->last;
  if (r != NULL) atomic_fetch_add_explicit(&r->refcount, 1u, memory_order_relaxed);
  pthread_mutex_unlock(&event->mutex);
  return r;
}

void cpu_event_set_last_record(cpu_event_t *event, cpu_record_t *record) {
  pthread_mutex_lock(&event->mutex);
  cpu_record_t *old = event->last;
  event->last = record;
  pthread_mutex_unlock(&event->mutex);
  if (old != NULL) cpu_record_release(old);
}

accel_status_t cpu_event_create(accel_be_device_t *device, unsigned flags,
                                accel_be_event_t **out) {
  cpu_device_t *dev = device;
  cpu_event_t *ev = calloc(1, sizeof(*ev));
  if (ev == NULL)
    return dev->host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                "cpu: event_create: calloc(%zu) failed", sizeof(*ev));
  ev->device = dev;
  ev->flags = flags;
  pthread_mutex_init(&ev->mutex, NULL);
  *out = ev;
  return ACCEL_OK;
}

void cpu_event_destroy(accel_be_event_t *event) {
  cpu_event_t *ev = event;
  /* A pending record keeps its own reference; the worker frees it after completing it. */
  if (ev->last != NULL) cpu_record_release(ev->last);
  pthread_mutex_destroy(&ev->mutex);
  free(ev);
}

accel_status_t cpu_event_record(accel_be_event_t *event, accel_be_stream_t *stream) {
  cpu_event_t *ev = event;
  cpu_stream_t *s = stream;
  cpu_entry_t *e = NULL;
  accel_status_t st = cpu_stream_reserve(s, "event_record", &e);
  if (st != ACCEL_OK) return st;
  cpu_record_t *r = cpu_record_new();
  if (r == NULL)
    return ev->device->host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                       "cpu: event_record: malloc(%zu) failed", sizeof(*r));
  e->op.type = CPU_OP_RECORD;
  e->op.u.record.record = r;
  e->op.u.record.timed = !(ev->flags & ACCEL_EVENT_DISABLE_TIMING);
  e->heap = NULL;
  cpu_event_set_last_record(ev, r);
  cpu_stream_submit(s);
  return ACCEL_OK;
}

/* Whether the event's last record completed (one never recorded has), after waiting for it
 * with wait. */
static int last_record_done(cpu_event_t *ev, int wait) {
  cpu_record_t *r = cpu_event_last_record(ev);
  if (r == NULL) return 1;
  if (wait) cpu_record_wait(ev->device, r);
  int done = wait || cpu_record_is_done(r);
  cpu_record_release(r);
  return done;
}

accel_status_t cpu_event_synchronize(accel_be_event_t *event) {
  last_record_done(event, 1);
  return ACCEL_OK;
}

accel_status_t cpu_event_query(accel_be_event_t *event) {
  return last_record_done(event, 0) ? ACCEL_OK : ACCEL_ERROR_NOT_READY;
}

accel_status_t cpu_event_elapsed_ms(accel_be_event_t *start, accel_be_event_t *end, float *ms) {
  cpu_event_t *a = start, *b = end;
  const accel_host_api_t *host = a->device->host;
  if ((a->flags | b->flags) & ACCEL_EVENT_DISABLE_TIMING)
    return host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "cpu: event_elapsed_ms: the %s event was created with "
                           "ACCEL_EVENT_DISABLE_TIMING",
                           (a->flags & ACCEL_EVENT_DISABLE_TIMING) ? "start" : "end");
  cpu_record_t *ra = cpu_event_last_record(a);
  cpu_record_t *rb = cpu_event_last_record(b);
  accel_status_t st = ACCEL_OK;
  if (ra == NULL || rb == NULL) {
    st = host->set_error(ACCEL_ERROR_STATE, "cpu: event_elapsed_ms: the %s event was never "
                         "recorded", ra == NULL ? "start" : "end");
  } else if (!cpu_record_is_done(ra) || !cpu_record_is_done(rb)) {
    st = host->set_error(ACCEL_ERROR_NOT_READY, "cpu: event_elapsed_ms: the last record of the "
                         "%s event has not completed", cpu_record_is_done(ra) ? "end" : "start");
  } else {
    int64_t delta = (int64_t)(rb->time_ns - ra->time_ns);
    *ms = (float)((double)delta / 1e6);
  }
  if (ra != NULL) cpu_record_release(ra);
  if (rb != NULL) cpu_record_release(rb);
  return st;
}
