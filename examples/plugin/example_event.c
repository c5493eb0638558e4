/*
 * Events. A record is a fence that the recording stream's worker signals when it reaches it
 * (with a CLOCK_MONOTONIC timestamp); the event points to its last record. Waits, queries and
 * elapsed times look at that fence. One lock and one condition variable for every fence of the
 * plugin keep this short; a real backend maps events to vendor events.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdlib.h>
#include <time.h>

#include "example_internal.h"

static pthread_mutex_t fence_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fence_done = PTHREAD_COND_INITIALIZER;

example_fence_t *example_fence_new(void) {
  example_fence_t *f = calloc(1, sizeof *f);
  if (f) atomic_init(&f->refs, 1);
  return f;
}

void example_fence_release(example_fence_t *fence) {
  if (fence && atomic_fetch_sub(&fence->refs, 1) == 1) free(fence);
}

void example_fence_signal(example_fence_t *fence) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  pthread_mutex_lock(&fence_lock);
  fence->done_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  fence->done = 1;
  pthread_cond_broadcast(&fence_done);
  pthread_mutex_unlock(&fence_lock);
}

void example_fence_wait(example_fence_t *fence) {
  pthread_mutex_lock(&fence_lock);
  while (!fence->done) pthread_cond_wait(&fence_done, &fence_lock);
  pthread_mutex_unlock(&fence_lock);
}

example_fence_t *example_event_last(example_event_t *event) {
  pthread_mutex_lock(&fence_lock);
  example_fence_t *f = event->last;
  if (f) atomic_fetch_add(&f->refs, 1);
  pthread_mutex_unlock(&fence_lock);
  return f;
}

void example_event_set_last(example_event_t *event, example_fence_t *fence) {
  pthread_mutex_lock(&fence_lock);
  example_fence_t *old = event->last;
  event->last = fence;
  pthread_mutex_unlock(&fence_lock);
  example_fence_release(old);
}

accel_status_t example_event_create(accel_be_device_t *device, unsigned flags,
                                    accel_be_event_t **out) {
  (void)device;
  (void)flags; /* a timestamp per record costs nothing: ACCEL_EVENT_DISABLE_TIMING changes
                * nothing here (the core refuses elapsed_ms on such events itself) */
  example_event_t *e = calloc(1, sizeof *e);
  if (!e)
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": calloc(%zu) for an event failed", sizeof *e);
  *out = e;
  return ACCEL_OK;
}

/* May come while the last record is pending: the queued record holds its own reference. */
void example_event_destroy(accel_be_event_t *event) {
  example_event_set_last(event, NULL);
  free(event);
}

accel_status_t example_event_record(accel_be_event_t *event, accel_be_stream_t *stream) {
  example_fence_t *f = example_fence_new();
  if (!f)
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": out of host memory recording an event");
  atomic_fetch_add(&f->refs, 1); /* one for the event, one for the queued record */
  accel_status_t st = example_stream_record(stream, f);
  if (st != ACCEL_OK) {
    example_fence_release(f);
    example_fence_release(f);
    return st;
  }
  example_event_set_last(event, f);
  return ACCEL_OK;
}

/* The core calls these only for recorded events. */
accel_status_t example_event_synchronize(accel_be_event_t *event) {
  example_fence_t *f = example_event_last(event);
  if (f) example_fence_wait(f);
  example_fence_release(f);
  return ACCEL_OK;
}

accel_status_t example_event_query(accel_be_event_t *event) {
  example_fence_t *f = example_event_last(event);
  pthread_mutex_lock(&fence_lock);
  int done = !f || f->done;
  pthread_mutex_unlock(&fence_lock);
  example_fence_release(f);
  return done ? ACCEL_OK : ACCEL_ERROR_NOT_READY; /* NOT_READY is no error: no message */
}

/* Both events recorded with timing (the core checked); a pending record is NOT_READY with a
 * message, as in cudaEventElapsedTime. */
accel_status_t example_event_elapsed_ms(accel_be_event_t *start, accel_be_event_t *end,
                                        float *ms) {
  example_fence_t *a = example_event_last(start), *b = example_event_last(end);
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&fence_lock);
  if (!a || !b || !a->done || !b->done)
    st = ACCEL_ERROR_NOT_READY;
  else
    *ms = (float)((double)(int64_t)(b->done_ns - a->done_ns) / 1e6);
  pthread_mutex_unlock(&fence_lock);
  example_fence_release(a);
  example_fence_release(b);
  if (st != ACCEL_OK)
    return example_host->set_error(st, EXAMPLE_NAME ": event_elapsed_ms: a record has not "
                                       "completed yet");
  return ACCEL_OK;
}
