/* Events: record/wait across streams, queries, timing; fork/join edges while capturing. */
#include <stdlib.h>

#include "core_util.h"
#include "event.h"
#include "trace.h"

static accel_status_t event_check(accel_event_t *e, const char *fn) {
  return accel_handle_check(e, ACCEL_HANDLE_EVENT, fn);
}

accel_status_t accel_event_create(accel_device_t *dev, unsigned flags, accel_event_t **out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  if (flags & ~(unsigned)ACCEL_EVENT_DISABLE_TIMING)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: bad flags 0x%x", __func__,
                           flags);
  accel_event_t *e = calloc(1, sizeof *e);
  if (!e) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  st = dev->backend->vt->event_create(dev->impl, flags, &e->impl);
  if (st != ACCEL_OK) {
    free(e);
    return st;
  }
  e->dev = dev;
  e->flags = flags;
  pthread_mutex_init(&e->lock, NULL);
  accel_device_retain(dev);
  accel_handle_register(&e->hdr, ACCEL_HANDLE_EVENT, dev->backend->vt);
  *out = e;
  return ACCEL_OK;
}

void accel_event_retain(accel_event_t *e) { atomic_fetch_add(&e->hdr.refcount, 1); }

void accel_event_release_ref(accel_event_t *e) {
  if (atomic_fetch_sub(&e->hdr.refcount, 1) != 1) return;
  accel_device_t *dev = e->dev;
  if (e->capture) accel_capture_ops.release(e->capture);
  dev->backend->vt->event_destroy(e->impl);
  pthread_mutex_destroy(&e->lock);
  free(e);
  accel_device_release_ref(dev);
}

static accel_status_t event_release_user(accel_event_t *e, const char *fn) {
  accel_status_t st = accel_handle_drop_user(e, ACCEL_HANDLE_EVENT, fn);
  if (st != ACCEL_OK) return st;
  accel_event_release_ref(e); /* a capture that recorded it keeps it until the capture ends */
  return ACCEL_OK;
}

ACCEL_DEFINE_RELEASE(accel_event_t, accel_event_release, accel_event_destroy, event_release_user)

/* A live event and a live stream of the same device (*dev). */
static accel_status_t event_stream_check(accel_event_t *e, accel_stream_t *s, const char *fn,
                                         accel_device_t **dev) {
  accel_status_t st = event_check(e, fn);
  if (st != ACCEL_OK) return st;
  if ((st = accel_stream_check(s, fn, dev)) != ACCEL_OK) return st;
  if (*dev != e->dev)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: event and stream belong to different devices", fn);
  return ACCEL_OK;
}

accel_status_t accel_event_record(accel_event_t *e, accel_stream_t *s) {
  accel_device_t *dev = NULL;
  accel_status_t st = event_stream_check(e, s, __func__, &dev);
  if (st != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, __func__);
  pthread_mutex_lock(&s->lock);
  if (s->capture) {
    st = accel_capture_ops.event_record_locked(s, e);
  } else {
    /* an event marks everything submitted before it: lazy work is submitted first */
    st = accel_lazy_flush_locked(s);
    if (st == ACCEL_OK) st = dev->backend->vt->event_record(e->impl, s->impl);
    if (st == ACCEL_OK) {
      pthread_mutex_lock(&e->lock);
      accel_capture_t *old = e->capture;
      e->recorded = true;
      e->record_captured = false;
      e->capture = NULL;
      pthread_mutex_unlock(&e->lock);
      if (old) accel_capture_ops.release(old);
    }
  }
  pthread_mutex_unlock(&s->lock);
  accel_trace_end(&t);
  return st;
}

accel_status_t accel_stream_wait_event(accel_stream_t *s, accel_event_t *e) {
  accel_device_t *dev = NULL;
  accel_status_t st = event_stream_check(e, s, __func__, &dev);
  if (st != ACCEL_OK) return st;
  uint32_t slot = 0;
  accel_capture_t *ec = accel_capture_ops.event_capture_get(e, &slot);
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, __func__);
  pthread_mutex_lock(&s->lock);
  if (ec || s->capture) {
    st = accel_capture_ops.event_wait_locked(s, ec, slot);
  } else {
    /* the record flushed the recording stream's lazy queue: what it covers is submitted */
    st = accel_lazy_flush_locked(s);
    pthread_mutex_lock(&e->lock);
    bool recorded = e->recorded;
    pthread_mutex_unlock(&e->lock);
    if (st == ACCEL_OK && recorded) st = dev->backend->vt->stream_wait_event(s->impl, e->impl);
  }
  pthread_mutex_unlock(&s->lock);
  if (ec) accel_capture_ops.release(ec);
  accel_trace_end(&t);
  return st;
}

/* Query/synchronize on an event recorded inside an active capture is illegal. */
static accel_status_t check_event_capture(accel_event_t *e, const char *fn) {
  accel_capture_t *c = accel_capture_ops.event_capture_get(e, NULL);
  if (c) {
    accel_capture_ops.invalidate(c, "%s on an event recorded inside the capture", fn);
    accel_capture_ops.release(c);
    return accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                           "%s: the event was recorded inside an active capture", fn);
  }
  return accel_capture_ops.check_unsafe(fn, NULL);
}

static bool event_recorded(accel_event_t *e) {
  pthread_mutex_lock(&e->lock);
  bool recorded = e->recorded;
  pthread_mutex_unlock(&e->lock);
  return recorded;
}

accel_status_t accel_event_query(accel_event_t *e) {
  accel_status_t st = event_check(e, __func__);
  if (st != ACCEL_OK) return st;
  if ((st = check_event_capture(e, __func__)) != ACCEL_OK) return st;
  if (!event_recorded(e)) return ACCEL_OK;
  return e->dev->backend->vt->event_query(e->impl);
}

accel_status_t accel_event_synchronize(accel_event_t *e) {
  accel_status_t st = event_check(e, __func__);
  if (st != ACCEL_OK) return st;
  if ((st = check_event_capture(e, __func__)) != ACCEL_OK) return st;
  if (!event_recorded(e)) return ACCEL_OK;
  accel_trace_scope_t t = accel_trace_begin(e->dev->trace_id, __func__);
  st = e->dev->backend->vt->event_synchronize(e->impl);
  accel_trace_end(&t);
  return st;
}

accel_status_t accel_event_elapsed_ms(accel_event_t *start, accel_event_t *end, float *ms) {
  accel_status_t st = event_check(start, __func__);
  if (st == ACCEL_OK) st = event_check(end, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(ms, __func__, "ms is NULL");
  if (start->dev != end->dev)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: events belong to different devices", __func__);
  if ((start->flags | end->flags) & ACCEL_EVENT_DISABLE_TIMING)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: an event was created with "
                           "ACCEL_EVENT_DISABLE_TIMING", __func__);
  pthread_mutex_lock(&start->lock);
  bool ok = start->recorded && !start->record_captured;
  pthread_mutex_unlock(&start->lock);
  pthread_mutex_lock(&end->lock);
  ok = ok && end->recorded && !end->record_captured;
  pthread_mutex_unlock(&end->lock);
  if (!ok)
    return accel_set_error(ACCEL_ERROR_STATE,
                           "%s: both events must have been recorded "
                           "outside a capture", __func__);
  return start->dev->backend->vt->event_elapsed_ms(start->impl, end->impl, ms);
}

accel_status_t accel_stream_marker_record(accel_stream_t *s, accel_stream_marker_t *out) {
  static const char fn[] = "accel_stream_marker_record";
  accel_device_t *dev = NULL;
  accel_status_t st = accel_stream_check(s, fn, &dev);
  if (st != ACCEL_OK) return st;
  const accel_backend_vtable_t *vt = dev->backend->vt;
  accel_be_event_t *impl = NULL;
  if ((st = vt->event_create(dev->impl, ACCEL_EVENT_DISABLE_TIMING, &impl)) != ACCEL_OK)
    return st;
  pthread_mutex_lock(&s->lock);
  if (s->capture)
    st = accel_set_error(ACCEL_ERROR_STATE, "%s: the stream is capturing", fn);
  else if ((st = accel_lazy_flush_locked(s)) == ACCEL_OK)
    st = vt->event_record(impl, s->impl);
  pthread_mutex_unlock(&s->lock);
  if (st != ACCEL_OK) {
    vt->event_destroy(impl);
    return st;
  }
  accel_device_retain(dev);
  *out = (accel_stream_marker_t){dev, impl};
  return ACCEL_OK;
}

accel_status_t accel_stream_marker_query(const accel_stream_marker_t *m) {
  return m->dev->backend->vt->event_query(m->impl);
}

void accel_stream_marker_release(accel_stream_marker_t *m) {
  m->dev->backend->vt->event_destroy(m->impl);
  accel_device_release_ref(m->dev);
  m->dev = NULL;
  m->impl = NULL;
}
