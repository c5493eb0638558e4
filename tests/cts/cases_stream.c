/*
 * accel CTS: streams — ordering, query, cross-stream waits, the default stream, destruction
 * with pending work, and host functions ordered with device work.
 */
#include <stdlib.h>
#include <string.h>

#include "cts_internal.h"

/* Each step: memset a device buffer to the step's byte, copy it to host memory, then a host
 * function checks the host copy holds that byte and appends the step number to a log. Any
 * reordering of device work and host functions shows up as a wrong byte or a wrong log. */
enum { ORDER_STEPS = 200, ORDER_BYTES = 64 };

typedef struct order_step {
  struct order_job *job;
  int index;
} order_step_t;

typedef struct order_job {
  unsigned char *dev;
  unsigned char host[ORDER_BYTES];
  order_step_t steps[ORDER_STEPS];
  int log[ORDER_STEPS * 4];
  atomic_int count;
  atomic_int mismatches;
} order_job_t;

static void order_host_fn(void *user) {
  order_step_t *step = user;
  order_job_t *j = step->job;
  if (cts_find_not_byte(j->host, ORDER_BYTES, (unsigned char)step->index) != ORDER_BYTES)
    atomic_fetch_add(&j->mismatches, 1);
  int at = atomic_fetch_add(&j->count, 1);
  if (at < (int)(sizeof(j->log) / sizeof(j->log[0]))) j->log[at] = step->index;
}

static accel_status_t order_body(accel_stream_t *s, void *user) {
  order_job_t *j = user;
  accel_status_t st = ACCEL_OK;
  for (int i = 0; i < ORDER_STEPS && st == ACCEL_OK; i++) {
    st = accel_memset_async(s, j->dev, i, ORDER_BYTES);
    if (st == ACCEL_OK) st = accel_memcpy_async(s, j->host, j->dev, ORDER_BYTES);
    if (st == ACCEL_OK) st = accel_launch_host_func(s, order_host_fn, &j->steps[i]);
  }
  return st;
}

CTS_CASE(stream_in_order, CTS_TAG_NONE) {
  order_job_t *j = calloc(1, sizeof(*j));
  CTS_CHECK(j != NULL, "out of host memory");
  for (int i = 0; i < ORDER_STEPS; i++) j->steps[i] = (order_step_t){j, i};
  atomic_init(&j->count, 0);
  atomic_init(&j->mismatches, 0);
  CTS_OK(accel_malloc(ctx->dev, ORDER_BYTES, (void **)&j->dev));
  enum { RUNS = 2 };
  CTS_OK(cts_exec(ctx, order_body, j, RUNS));
  int count = atomic_load(&j->count), mismatches = atomic_load(&j->mismatches);
  CTS_CHECK(count == ORDER_STEPS * RUNS, "%d host functions ran, want %d", count,
            ORDER_STEPS * RUNS);
  CTS_CHECK(mismatches == 0, "%d host functions saw data of another step", mismatches);
  for (int i = 0; i < count; i++)
    CTS_CHECK(j->log[i] == i % ORDER_STEPS, "host function %d ran as number %d", j->log[i], i);
  CTS_OK(accel_free(ctx->dev, j->dev));
  free(j);
  return CTS_PASS;
}

CTS_CASE(stream_query_not_ready, CTS_TAG_NONE) {
  accel_stream_t *s = NULL;
  cts_gate_t gate;
  cts_gate_init(&gate);
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_stream_query(s)); /* empty stream */
  CTS_OK(accel_launch_host_func(s, cts_gate_host_fn, &gate));
  accel_status_t flushed = accel_stream_flush(s);
  accel_status_t busy = accel_stream_query(s);
  /* Open the gate before any check so that a failing check cannot leave the stream blocked. */
  cts_gate_open(&gate);
  CTS_OK(flushed);
  CTS_CHECK(busy == ACCEL_ERROR_NOT_READY, "query while a host function blocks -> %s",
            accel_status_name(busy));
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_stream_query(s));
  CTS_CHECK_GATE_RELEASED(&gate);
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

/* Stream B's host function must observe what stream A did before the event it waits on. */
typedef struct cross_job {
  atomic_int a_done;
  atomic_int b_saw;
} cross_job_t;

static void cross_a_fn(void *user) {
  cts_sleep_ms(20); /* give B every chance to run early */
  atomic_store(&((cross_job_t *)user)->a_done, 1);
}

static void cross_b_fn(void *user) {
  cross_job_t *j = user;
  atomic_store(&j->b_saw, atomic_load(&j->a_done) ? 1 : -1);
}

CTS_CASE(stream_wait_event_cross, CTS_TAG_NONE) {
  accel_stream_t *a = NULL, *b = NULL;
  accel_event_t *e = NULL;
  cross_job_t j;
  atomic_init(&j.a_done, 0);
  atomic_init(&j.b_saw, 0);
  unsigned flags = cts_stream_flags(ctx);
  CTS_OK(accel_stream_create_ex(ctx->dev, flags, &a));
  CTS_OK(accel_stream_create_ex(ctx->dev, flags, &b));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DISABLE_TIMING, &e));
  CTS_OK(accel_launch_host_func(a, cross_a_fn, &j));
  CTS_OK(accel_event_record(e, a));
  CTS_OK(accel_stream_flush(a));
  CTS_OK(accel_stream_wait_event(b, e));
  CTS_OK(accel_launch_host_func(b, cross_b_fn, &j));
  CTS_OK(accel_stream_flush(b));
  CTS_OK(accel_stream_synchronize(b));
  int saw = atomic_load(&j.b_saw);
  CTS_CHECK(saw == 1, saw < 0 ? "stream B ran before stream A's work it waited for"
                              : "stream B's host function did not run");
  CTS_OK(accel_event_destroy(e));
  CTS_OK(accel_stream_destroy(a));
  CTS_OK(accel_stream_destroy(b));
  return CTS_PASS;
}

CTS_CASE(stream_default, CTS_TAG_NONE) {
  accel_stream_t *d1 = NULL, *d2 = NULL;
  CTS_OK(accel_stream_default(ctx->dev, &d1));
  CTS_OK(accel_stream_default(ctx->dev, &d2));
  CTS_CHECK(d1 && d1 == d2, "accel_stream_default returned %p then %p", (void *)d1, (void *)d2);
  int capturing = -1;
  CTS_OK(accel_stream_is_capturing(d1, &capturing));
  CTS_CHECK(capturing == 0, "idle default stream reports capturing = %d", capturing);
  /* Work on the default stream is ordered with the blocking copy (which uses it). */
  unsigned char *dev = NULL;
  unsigned char host[300];
  CTS_OK(accel_malloc(ctx->dev, sizeof(host), (void **)&dev));
  CTS_OK(accel_memset_async(d1, dev, 0x61, sizeof(host)));
  CTS_OK(accel_memset_async(d1, dev + 100, 0x62, 100));
  CTS_OK(accel_memcpy(ctx->dev, host, dev, sizeof(host)));
  CTS_CHECK(host[0] == 0x61 && host[150] == 0x62 && host[299] == 0x61,
            "default stream work not ordered before the blocking copy");
  CTS_OK(accel_stream_synchronize(d1));
  CTS_OK(accel_free(ctx->dev, dev));
  accel_status_t st = accel_stream_destroy(d1);
  CTS_CHECK(st != ACCEL_OK, "destroying the default stream succeeded");
  CTS_CHECK(accel_last_error()[0] != '\0', "no message for destroying the default stream");
  CTS_OK(accel_stream_query(d1)); /* still alive */
  return CTS_PASS;
}

CTS_CASE(stream_destroy_pending, CTS_TAG_NONE) {
  accel_stream_t *s = NULL;
  atomic_int flag;
  atomic_init(&flag, 0);
  unsigned char *dev = NULL;
  static unsigned char host[4096];
  memset(host, 0, sizeof(host));
  CTS_OK(accel_malloc(ctx->dev, sizeof(host), (void **)&dev));
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_launch_host_func(s, cts_sleep_host_fn, (void *)(uintptr_t)30));
  CTS_OK(accel_memset_async(s, dev, 0x2F, sizeof(host)));
  CTS_OK(accel_memcpy_async(s, host, dev, sizeof(host)));
  CTS_OK(accel_launch_host_func(s, cts_flag_host_fn, &flag));
  /* No flush, no synchronize: destroy must run and wait for all of it. */
  CTS_OK(accel_stream_destroy(s));
  CTS_CHECK(atomic_load(&flag) == 1, "destroy returned before the stream's work finished");
  size_t bad = cts_find_not_byte(host, sizeof(host), 0x2F);
  CTS_CHECK(bad == sizeof(host), "work queued before destroy did not complete (byte %zu)", bad);
  CTS_OK(accel_free(ctx->dev, dev));
  return CTS_PASS;
}

CTS_CASE(stream_lazy_flags, CTS_TAG_NONE) {
  accel_stream_t *lazy = NULL, *eager = NULL, *plain = NULL;
  int is_lazy = -1;
  CTS_OK(accel_stream_create_ex(ctx->dev, ACCEL_STREAM_LAZY, &lazy));
  CTS_OK(accel_stream_is_lazy(lazy, &is_lazy));
  CTS_CHECK(is_lazy == 1, "ACCEL_STREAM_LAZY stream reports lazy = %d", is_lazy);
  CTS_OK(accel_stream_create_ex(ctx->dev, ACCEL_STREAM_EAGER, &eager));
  CTS_OK(accel_stream_is_lazy(eager, &is_lazy));
  CTS_CHECK(is_lazy == 0, "ACCEL_STREAM_EAGER stream reports lazy = %d", is_lazy);
  CTS_OK(accel_stream_create(ctx->dev, &plain));
  CTS_OK(accel_stream_is_lazy(plain, &is_lazy));
  /* The suite sets ACCEL_LAZY=1 in lazy mode; otherwise the backend's default applies. */
  int want = ctx->mode == CTS_MODE_LAZY ? 1 : (int)ctx->info.lazy_default;
  if (ctx->mode != CTS_MODE_LAZY && getenv("ACCEL_LAZY")) want = atoi(getenv("ACCEL_LAZY")) != 0;
  CTS_CHECK(is_lazy == want, "default-flag stream reports lazy = %d, want %d", is_lazy, want);
  accel_stream_t *both = NULL;
  CTS_CHECK(accel_stream_create_ex(ctx->dev, ACCEL_STREAM_LAZY | ACCEL_STREAM_EAGER, &both) ==
                    ACCEL_ERROR_INVALID_ARGUMENT && both == NULL,
            "LAZY|EAGER flags accepted");
  CTS_OK(accel_stream_destroy(lazy));
  CTS_OK(accel_stream_destroy(eager));
  CTS_OK(accel_stream_destroy(plain));
  return CTS_PASS;
}

/* Host functions see the results of device work queued before them: a copy chain lands in
 * host memory that a host function then reads. */
typedef struct readback_job {
  unsigned char *src_host, *dev_a, *dev_b, *dst_host;
  size_t size;
  atomic_int ok;
  atomic_int runs;
} readback_job_t;

static void readback_fn(void *user) {
  readback_job_t *j = user;
  if (cts_check_pattern(j->dst_host, j->size, 5) != j->size) atomic_store(&j->ok, 0);
  /* Clear it so that the next run must copy again to pass. */
  memset(j->dst_host, 0, j->size);
  atomic_fetch_add(&j->runs, 1);
}

static accel_status_t readback_body(accel_stream_t *s, void *user) {
  readback_job_t *j = user;
  accel_status_t st = accel_memcpy_async(s, j->dev_a, j->src_host, j->size);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->dev_b, j->dev_a, j->size);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->dst_host, j->dev_b, j->size);
  if (st == ACCEL_OK) st = accel_launch_host_func(s, readback_fn, j);
  if (st == ACCEL_OK) st = accel_memset_async(s, j->dev_b, 0, j->size);
  return st;
}

CTS_CASE(stream_host_func_sees_copy, CTS_TAG_NONE) {
  readback_job_t j = {.size = 100000};
  atomic_init(&j.ok, 1);
  atomic_init(&j.runs, 0);
  CTS_OK(accel_host_alloc(ctx->dev, j.size, (void **)&j.src_host));
  CTS_OK(accel_host_alloc(ctx->dev, j.size, (void **)&j.dst_host));
  CTS_OK(accel_malloc(ctx->dev, j.size, (void **)&j.dev_a));
  CTS_OK(accel_malloc(ctx->dev, j.size, (void **)&j.dev_b));
  cts_fill_pattern(j.src_host, j.size, 5);
  memset(j.dst_host, 0, j.size);
  CTS_OK(cts_exec(ctx, readback_body, &j, 3));
  CTS_CHECK(atomic_load(&j.runs) == 3, "host function ran %d times, want 3", atomic_load(&j.runs));
  CTS_CHECK(atomic_load(&j.ok), "a host function did not see the copied data");
  CTS_OK(accel_free(ctx->dev, j.dev_a));
  CTS_OK(accel_free(ctx->dev, j.dev_b));
  CTS_OK(accel_host_free(ctx->dev, j.src_host));
  CTS_OK(accel_host_free(ctx->dev, j.dst_host));
  return CTS_PASS;
}
