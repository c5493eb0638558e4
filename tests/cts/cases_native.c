/*
 * accel CTS: native handles (accel_interop.h) on any backend that has them: accel's own native
 * objects out, an accel event's native event waited on through accel_stream_wait_native_event,
 * and a stream's own queue wrapped as a second accel stream (both share one queue order).
 * Backends without native handles (the CPU backend) are SKIPPED with their reason.
 */
#include <string.h>

#include "accel/accel_interop.h"
#include "cts_internal.h"

static accel_native_t native_init(void) {
  accel_native_t n;
  memset(&n, 0, sizeof n);
  n.struct_size = sizeof n;
  return n;
}

CTS_CASE(native_handles_events_and_queues, CTS_TAG_NONE) {
  accel_native_t dn = native_init();
  accel_status_t st = accel_device_native(ctx->dev, &dn);
  if (st == ACCEL_ERROR_UNSUPPORTED) return cts_skip(ctx, "%s", accel_last_error());
  CTS_OK(st);
  accel_device_info_t info;
  CTS_OK(accel_device_get_info(ctx->dev, &info));
  CTS_CHECK(strcmp(dn.backend, info.backend) == 0, "native backend '%s', device backend '%s'",
            dn.backend, info.backend);
  CTS_CHECK(!dn.queue && !dn.event, "accel_device_native filled queue or event");

  accel_stream_t *a = NULL, *b = NULL, *w = NULL;
  accel_event_t *e = NULL;
  unsigned flags = cts_stream_flags(ctx);
  CTS_OK(accel_stream_create_ex(ctx->dev, flags, &a));
  CTS_OK(accel_stream_create_ex(ctx->dev, flags, &b));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DISABLE_TIMING, &e));
  accel_native_t en = native_init();
  CTS_OK(accel_event_native(e, &en));
  CTS_CHECK(en.event == NULL, "the native event of a never-recorded event is not NULL");

  /* a is held by a gate; b waits for a's event through its native event; w is a's own queue
   * wrapped: its work follows the gate too */
  cts_gate_t gate;
  cts_gate_init(&gate);
  atomic_int on_b, on_w;
  atomic_init(&on_b, 0);
  atomic_init(&on_w, 0);
  CTS_OK(accel_launch_host_func(a, cts_gate_host_fn, &gate));
  accel_status_t s1 = accel_event_record(e, a);
  accel_status_t s2 = s1 == ACCEL_OK ? accel_event_native(e, &en) : s1;
  accel_status_t s3 = s2 == ACCEL_OK ? accel_stream_wait_native_event(b, en.event) : s2;
  accel_status_t s4 = s3 == ACCEL_OK ? accel_launch_host_func(b, cts_flag_host_fn, &on_b) : s3;
  accel_status_t s5 = s4 == ACCEL_OK ? accel_stream_flush(b) : s4;
  accel_native_t an = native_init();
  accel_status_t s6 = s5 == ACCEL_OK ? accel_stream_native(a, &an) : s5;
  accel_status_t s7 = s6 == ACCEL_OK ? accel_stream_wrap_native(ctx->dev, &an, &w) : s6;
  accel_status_t s8 = s7 == ACCEL_OK ? accel_launch_host_func(w, cts_flag_host_fn, &on_w) : s7;
  cts_sleep_ms(30);
  int early_b = atomic_load(&on_b), early_w = atomic_load(&on_w);
  cts_gate_open(&gate); /* before any check: a failing check must not leave a blocked */
  CTS_OK(s1);
  CTS_OK(s2);
  CTS_CHECK(en.event != NULL, "no native event after a record");
  CTS_OK(s3);
  CTS_OK(s4);
  CTS_OK(s5);
  CTS_OK(s6);
  CTS_CHECK(an.queue != NULL, "accel_stream_native gave no queue");
  CTS_OK(s7);
  CTS_OK(s8);
  CTS_CHECK(!early_b, "a stream waiting on a native event ran before the event's work");
  CTS_CHECK(!early_w, "work on a wrapped queue ran before earlier work on that queue");
  int lazy = -1;
  CTS_OK(accel_stream_is_lazy(w, &lazy));
  CTS_CHECK(lazy == 0, "a wrapped stream is lazy");
  CTS_OK(accel_stream_synchronize(b));
  CTS_OK(accel_stream_synchronize(w));
  CTS_CHECK(atomic_load(&on_b) == 1 && atomic_load(&on_w) == 1, "host functions did not run");
  CTS_CHECK_GATE_RELEASED(&gate);
  CTS_OK(accel_stream_destroy(w));
  /* a's queue survived the wrapped stream's destroy */
  atomic_store(&on_w, 0);
  CTS_OK(accel_launch_host_func(a, cts_flag_host_fn, &on_w));
  CTS_OK(accel_stream_synchronize(a));
  CTS_CHECK(atomic_load(&on_w) == 1, "the stream's queue no longer works after the wrap ended");
  CTS_OK(accel_event_destroy(e));
  CTS_OK(accel_stream_destroy(a));
  CTS_OK(accel_stream_destroy(b));
  return CTS_PASS;
}
