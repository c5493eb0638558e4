/*
 * accel CTS: events — timing, query/synchronize semantics, cross-stream waits on device work,
 * and events without timing.
 */
#include <string.h>

#include "cts_internal.h"

CTS_CASE(event_elapsed_timing, CTS_TAG_TIMING) {
  accel_stream_t *s = NULL;
  accel_event_t *start = NULL, *end = NULL;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DEFAULT, &start));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DEFAULT, &end));
  CTS_OK(accel_event_record(start, s));
  CTS_OK(accel_launch_host_func(s, cts_sleep_host_fn, (void *)(uintptr_t)20));
  CTS_OK(accel_event_record(end, s));
  CTS_OK(accel_stream_flush(s));
  CTS_OK(accel_event_synchronize(end));
  float ms = -1.0f;
  CTS_OK(accel_event_elapsed_ms(start, end, &ms));
  /* The sleep is at least 20 ms; allow for timer granularity, not for early timestamps. */
  CTS_CHECK(ms >= 19.5f, "elapsed %.3f ms around a 20 ms host sleep", (double)ms);
  CTS_CHECK(ms < 5000.0f, "elapsed %.3f ms around a 20 ms host sleep", (double)ms);
  CTS_OK(accel_event_destroy(start));
  CTS_OK(accel_event_destroy(end));
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

CTS_CASE(event_query_synchronize, CTS_TAG_NONE) {
  accel_stream_t *s = NULL;
  accel_event_t *e = NULL;
  cts_gate_t gate;
  cts_gate_init(&gate);
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DEFAULT, &e));
  CTS_OK(accel_event_query(e));       /* never recorded */
  CTS_OK(accel_event_synchronize(e)); /* never recorded: returns at once */
  CTS_OK(accel_launch_host_func(s, cts_gate_host_fn, &gate));
  accel_status_t st = accel_event_record(e, s);
  accel_status_t flushed = st == ACCEL_OK ? accel_stream_flush(s) : st;
  accel_status_t pending = accel_event_query(e);
  cts_gate_open(&gate); /* before any check: a failing check must not leave the stream blocked */
  CTS_OK(st);
  CTS_OK(flushed);
  CTS_CHECK(pending == ACCEL_ERROR_NOT_READY, "query of a pending record -> %s",
            accel_status_name(pending));
  CTS_OK(accel_event_synchronize(e));
  CTS_OK(accel_event_query(e));
  CTS_CHECK_GATE_RELEASED(&gate);
  /* Re-recording moves the event to the new point. */
  atomic_int flag;
  atomic_init(&flag, 0);
  CTS_OK(accel_launch_host_func(s, cts_sleep_host_fn, (void *)(uintptr_t)5));
  CTS_OK(accel_launch_host_func(s, cts_flag_host_fn, &flag));
  CTS_OK(accel_event_record(e, s));
  CTS_OK(accel_stream_flush(s));
  CTS_OK(accel_event_synchronize(e));
  CTS_CHECK(atomic_load(&flag) == 1, "event_synchronize returned before the re-recorded point");
  CTS_OK(accel_event_destroy(e));
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

CTS_CASE(event_cross_stream_device_work, CTS_TAG_NONE) {
  enum { N = 1 << 16 };
  accel_stream_t *a = NULL, *b = NULL;
  accel_event_t *e = NULL;
  unsigned char *dev = NULL;
  static unsigned char host[N];
  memset(host, 0, sizeof(host));
  unsigned flags = cts_stream_flags(ctx);
  CTS_OK(accel_stream_create_ex(ctx->dev, flags, &a));
  CTS_OK(accel_stream_create_ex(ctx->dev, flags, &b));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DEFAULT, &e));
  CTS_OK(accel_malloc(ctx->dev, N, (void **)&dev));
  CTS_OK(cts_upload(ctx, dev, host, N));
  /* A is held back by a sleep, so B would read zeros if it ignored the event. */
  CTS_OK(accel_launch_host_func(a, cts_sleep_host_fn, (void *)(uintptr_t)15));
  CTS_OK(accel_memset_async(a, dev, 7, N));
  CTS_OK(accel_event_record(e, a));
  CTS_OK(accel_stream_flush(a));
  CTS_OK(accel_stream_wait_event(b, e));
  CTS_OK(accel_memcpy_async(b, host, dev, N));
  CTS_OK(accel_stream_flush(b));
  CTS_OK(accel_stream_synchronize(b));
  size_t bad = cts_find_not_byte(host, N, 7);
  CTS_CHECK(bad == N, "stream B read byte %zu = 0x%02x before stream A wrote it", bad, host[bad]);
  CTS_OK(accel_event_query(e)); /* B finished after A, so the record completed */
  CTS_OK(accel_free(ctx->dev, dev));
  CTS_OK(accel_event_destroy(e));
  CTS_OK(accel_stream_destroy(a));
  CTS_OK(accel_stream_destroy(b));
  return CTS_PASS;
}

CTS_CASE(event_disable_timing, CTS_TAG_NONE) {
  accel_stream_t *s = NULL;
  accel_event_t *a = NULL, *b = NULL, *timed = NULL, *unrecorded = NULL;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DISABLE_TIMING, &a));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DISABLE_TIMING, &b));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DEFAULT, &timed));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DEFAULT, &unrecorded));
  CTS_OK(accel_event_record(a, s));
  CTS_OK(accel_event_record(timed, s));
  CTS_OK(accel_event_record(b, s));
  CTS_OK(accel_stream_flush(s));
  CTS_OK(accel_stream_synchronize(s));
  float ms = 123.0f;
  accel_status_t st = accel_event_elapsed_ms(a, b, &ms);
  CTS_CHECK(st != ACCEL_OK, "elapsed between two DISABLE_TIMING events succeeded");
  CTS_CHECK(accel_last_error()[0] != '\0', "no message for elapsed without timing");
  st = accel_event_elapsed_ms(timed, b, &ms);
  CTS_CHECK(st != ACCEL_OK, "elapsed with one DISABLE_TIMING event succeeded");
  st = accel_event_elapsed_ms(timed, unrecorded, &ms);
  CTS_CHECK(st != ACCEL_OK, "elapsed with a never-recorded event succeeded");
  CTS_CHECK(ms == 123.0f, "output written on failure");
  /* The events still work for ordering. */
  CTS_OK(accel_stream_wait_event(s, a));
  CTS_OK(accel_event_query(b));
  CTS_OK(accel_event_destroy(a));
  CTS_OK(accel_event_destroy(b));
  CTS_OK(accel_event_destroy(timed));
  CTS_OK(accel_event_destroy(unrecorded));
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}
