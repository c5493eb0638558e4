/*
 * Events are marker commands (clEnqueueMarkerWithWaitList): recording replaces the event's
 * marker, queries read CL_EVENT_COMMAND_EXECUTION_STATUS, and elapsed time is the difference
 * of the markers' CL_PROFILING_COMMAND_END stamps (nanoseconds). A timed event (created
 * without ACCEL_EVENT_DISABLE_TIMING) is recorded on a profiling queue: its first record on a
 * stream switches that stream to one (acl_stream_use_profiling).
 */
#include <stdlib.h>

#include "acl_internal.h"

accel_status_t acl_event_create(accel_be_device_t *device, unsigned flags,
                                accel_be_event_t **out) {
  acl_event_t *e = calloc(1, sizeof *e);
  if (!e) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "opencl event_create: out of memory");
  e->dev = device;
  e->timed = !(flags & ACCEL_EVENT_DISABLE_TIMING); /* the core refuses elapsed_ms otherwise */
  pthread_mutex_init(&e->lock, NULL);
  *out = e;
  return ACCEL_OK;
}

void acl_event_destroy(accel_be_event_t *event) {
  acl_event_t *e = event;
  if (e->ev) clReleaseEvent(e->ev);
  pthread_mutex_destroy(&e->lock);
  free(e);
}

cl_event acl_event_retain_marker(acl_event_t *e) {
  pthread_mutex_lock(&e->lock);
  cl_event ev = e->ev;
  if (ev) clRetainEvent(ev);
  pthread_mutex_unlock(&e->lock);
  return ev;
}

accel_status_t acl_event_record(accel_be_event_t *event, accel_be_stream_t *stream) {
  acl_event_t *e = event;
  acl_stream_t *s = stream;
  if (e->timed) {
    accel_status_t st = acl_stream_use_profiling(s);
    if (st != ACCEL_OK) return st;
  }
  cl_event marker = NULL;
  cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &marker);
  if (err != CL_SUCCESS) return acl_fail("clEnqueueMarkerWithWaitList", err);
  clRetainEvent(marker);
  acl_stream_set_last(s, marker);
  pthread_mutex_lock(&e->lock);
  cl_event old = e->ev;
  e->ev = marker;
  e->ev_timed = s->profiling; /* a shared queue without profiling stays without it */
  pthread_mutex_unlock(&e->lock);
  if (old) clReleaseEvent(old);
  return acl_stream_flush(s, ACCEL_OK);
}

accel_status_t acl_event_synchronize(accel_be_event_t *event) {
  cl_event ev = acl_event_retain_marker(event);
  if (!ev) return ACCEL_OK;
  cl_int err = clWaitForEvents(1, &ev);
  accel_status_t st = ACCEL_OK;
  if (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) st = acl_event_status(ev, "event_synchronize");
  else if (err != CL_SUCCESS) st = acl_fail("clWaitForEvents", err);
  clReleaseEvent(ev);
  return st;
}

accel_status_t acl_event_query(accel_be_event_t *event) {
  cl_event ev = acl_event_retain_marker(event);
  if (!ev) return ACCEL_OK; /* never recorded */
  accel_status_t st = acl_event_status(ev, "event_query");
  clReleaseEvent(ev);
  return st;
}

static accel_status_t end_time(cl_event ev, cl_ulong *ns) {
  cl_int err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof *ns, ns, NULL);
  return err == CL_SUCCESS ? ACCEL_OK
                           : acl_fail("clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", err);
}

/* 1 when e's marker carries profiling information. */
static int marker_timed(acl_event_t *e) {
  pthread_mutex_lock(&e->lock);
  int timed = e->ev_timed;
  pthread_mutex_unlock(&e->lock);
  return timed;
}

accel_status_t acl_event_elapsed_ms(accel_be_event_t *start, accel_be_event_t *end, float *ms) {
  cl_event a = acl_event_retain_marker(start), b = acl_event_retain_marker(end);
  accel_status_t st = ACCEL_OK;
  cl_ulong ta = 0, tb = 0;
  if (!a || !b) {
    st = acl_host->set_error(ACCEL_ERROR_STATE, "event_elapsed_ms: an event was never recorded");
  } else if (!marker_timed(start) || !marker_timed(end)) {
    st = acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                             "event_elapsed_ms: an event was recorded on a queue without "
                             "CL_QUEUE_PROFILING_ENABLE that accel may not replace (a wrapped "
                             "queue, or one handed out by accel_stream_native before its first "
                             "timed record); create that queue with profiling to time it");
  } else if ((st = acl_event_status(a, "event_elapsed_ms(start)")) == ACCEL_OK &&
             (st = acl_event_status(b, "event_elapsed_ms(end)")) == ACCEL_OK &&
             (st = end_time(a, &ta)) == ACCEL_OK && (st = end_time(b, &tb)) == ACCEL_OK) {
    *ms = (float)((double)((int64_t)(tb - ta)) / 1e6);
  }
  if (a) clReleaseEvent(a);
  if (b) clReleaseEvent(b);
  return st;
}
