/*
 * Native handles (accel_interop.h): the backend's own device, context, queue and event objects
 * out, a runtime's own context and queue in. Validation and ownership live here; the plugin
 * slots (accel_plugin.h, interop section) only translate. A NULL slot is UNSUPPORTED, named.
 *
 * Ownership: a wrapped device is an ordinary accel device (streams, events and graphs hold it;
 * the last release tears it down) whose plugin retained, and later releases, only its own
 * references to the runtime's objects. A wrapped stream holds its device like any user stream,
 * is always eager (a lazy queue would run accel's work after native work enqueued later), and
 * its destroy waits for the queue but never destroys it.
 */
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "core_util.h"
#include "trace.h"

/* The caller's struct must have room for every field this library writes or reads. */
static accel_status_t check_native_struct(const accel_native_t *n, const char *fn,
                                          const char *what) {
  if (!n) return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
  if (n->struct_size < sizeof(accel_native_t))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s->struct_size is %u, expected at least sizeof(accel_native_t) "
                           "= %zu (set it before the call)",
                           fn, what, n->struct_size, sizeof(accel_native_t));
  return ACCEL_OK;
}

/* Clears every field but struct_size and names the backend. */
static void native_reset(accel_native_t *out, const accel_backend_t *b) {
  uint32_t size = out->struct_size;
  memset(out, 0, sizeof *out);
  out->struct_size = size;
  snprintf(out->backend, sizeof out->backend, "%s", b->name);
}

/* The reason is the backend's own (vtable no_native_reason): core names no backend. */
static accel_status_t no_slot(const accel_backend_t *b, const char *fn, const char *what) {
  const char *why = b->vt->no_native_reason; /* NULL in an older plugin's copy */
  return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                         "%s: the %s backend has no native %s (%s)", fn, b->name, what,
                         why && why[0] ? why : "its plugin does not offer them");
}

/* A native struct given to a wrap call names the backend it came from, or nothing. */
static accel_status_t check_native_backend(const accel_native_t *n, const char *backend,
                                           const char *fn) {
  if (n->backend[0] && strncmp(n->backend, backend, sizeof n->backend) != 0)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: native->backend is '%.*s', but the target backend is '%s'", fn,
                           (int)sizeof n->backend, n->backend, backend);
  return ACCEL_OK;
}

/* Device fields of out (reset first). */
static accel_status_t device_fields(accel_device_t *dev, accel_native_t *out, const char *fn) {
  const accel_backend_t *b = dev->backend;
  if (!b->vt->device_native) return no_slot(b, fn, "handles");
  native_reset(out, b);
  accel_status_t st = b->vt->device_native(dev->impl, out);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", fn, accel_last_error());
  return ACCEL_OK;
}

accel_status_t accel_device_native(accel_device_t *dev, accel_native_t *out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st == ACCEL_OK) st = check_native_struct(out, __func__, "out");
  if (st != ACCEL_OK) return st;
  return device_fields(dev, out, __func__);
}

accel_status_t accel_stream_native(accel_stream_t *s, accel_native_t *out) {
  accel_device_t *dev = NULL;
  accel_status_t st = accel_stream_check(s, __func__, &dev);
  if (st == ACCEL_OK) st = check_native_struct(out, __func__, "out");
  if (st != ACCEL_OK) return st;
  if (!dev->backend->vt->stream_native) return no_slot(dev->backend, __func__, "queues");
  if ((st = device_fields(dev, out, __func__)) != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, __func__);
  pthread_mutex_lock(&s->lock);
  /* native work enqueued after this call must run after accel's: submit the lazy queue (a
   * capture records instead of submitting; its work runs only at replay) */
  if (!s->capture) st = accel_lazy_flush_locked(s);
  if (st == ACCEL_OK) st = dev->backend->vt->stream_native(s->impl, out);
  pthread_mutex_unlock(&s->lock);
  accel_trace_end(&t);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  return ACCEL_OK;
}

accel_status_t accel_event_native(accel_event_t *e, accel_native_t *out) {
  accel_status_t st = accel_handle_check(e, ACCEL_HANDLE_EVENT, __func__);
  if (st == ACCEL_OK) st = check_native_struct(out, __func__, "out");
  if (st != ACCEL_OK) return st;
  accel_device_t *dev = e->dev;
  if (!dev->backend->vt->event_native) return no_slot(dev->backend, __func__, "events");
  if ((st = device_fields(dev, out, __func__)) != ACCEL_OK) return st;
  pthread_mutex_lock(&e->lock);
  /* the backend event of an earlier real record would not wait for the captured one */
  bool recorded = e->recorded, captured = e->record_captured;
  pthread_mutex_unlock(&e->lock);
  if (captured)
    return accel_set_error(ACCEL_ERROR_STATE,
                           "%s: the event's last record was captured into a graph; a captured "
                           "record has no native event, during the capture or after it (record "
                           "it outside a capture)",
                           __func__);
  if (!recorded) return ACCEL_OK; /* out->event stays NULL */
  st = dev->backend->vt->event_native(e->impl, out);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  return ACCEL_OK;
}

accel_status_t accel_stream_wait_native_event(accel_stream_t *s, void *native_event) {
  accel_device_t *dev = NULL;
  accel_status_t st = accel_stream_check(s, __func__, &dev);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(native_event, __func__, "native_event is NULL");
  if (!dev->backend->vt->stream_wait_native_event)
    return no_slot(dev->backend, __func__, "events");
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, __func__);
  pthread_mutex_lock(&s->lock);
  if (s->capture) {
    /* a replay would run without the wait: the recorded sequence would be wrong */
    accel_capture_invalidate(s->capture, "%s on the capturing stream", __func__);
    st = accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                         "%s: the stream is capturing; a native event cannot be recorded into "
                         "an accel graph (the capture is invalidated)",
                         __func__);
  } else {
    st = accel_lazy_flush_locked(s);
    if (st == ACCEL_OK) {
      st = dev->backend->vt->stream_wait_native_event(s->impl, native_event);
      if (st != ACCEL_OK) st = accel_set_error(st, "%s: %s", __func__, accel_last_error());
    }
  }
  pthread_mutex_unlock(&s->lock);
  accel_trace_end(&t);
  return st;
}

accel_status_t accel_device_wrap_native(const char *backend, const accel_native_t *native,
                                        accel_device_t **out) {
  ACCEL_REQUIRE_ARG(backend, __func__, "backend is NULL");
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  accel_status_t st = check_native_struct(native, __func__, "native");
  if (st == ACCEL_OK) st = check_native_backend(native, backend, __func__);
  if (st != ACCEL_OK) return st;
  accel_backend_t *b = NULL;
  if ((st = accel_backend_find(backend, &b)) != ACCEL_OK ||
      (st = accel_backend_ensure_init(b)) != ACCEL_OK)
    return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  if (!b->vt->device_wrap_native) return no_slot(b, __func__, "contexts to adopt");
  accel_trace_scope_t t = accel_trace_begin(0, __func__);
  st = accel_device_create_wrapped(b, native, out);
  accel_trace_end(&t);
  return st;
}

accel_status_t accel_stream_wrap_native(accel_device_t *dev, const accel_native_t *native,
                                        accel_stream_t **out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  if ((st = check_native_struct(native, __func__, "native")) != ACCEL_OK ||
      (st = check_native_backend(native, dev->backend->name, __func__)) != ACCEL_OK)
    return st;
  ACCEL_REQUIRE_ARG(native->queue, __func__, "native->queue is NULL");
  if (!dev->backend->vt->stream_wrap_native)
    return no_slot(dev->backend, __func__, "queues to adopt");
  st = accel_stream_create_wrapped(dev, native, out);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  return ACCEL_OK;
}
