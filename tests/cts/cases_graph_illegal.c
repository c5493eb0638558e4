/*
 * accel CTS: calls that are illegal while a capture is active. Each case begins a capture,
 * records some legal work, makes one call, and checks (1) the call's status, (2) what
 * capture_end returns (CAPTURE_INVALIDATED when the call was illegal), and (3) that the same
 * stream then captures and replays correctly.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cts_internal.h"

typedef struct illegal_env {
  cts_ctx_t *ctx;
  accel_stream_t *s;     /* the capturing stream */
  accel_stream_t *other; /* not capturing */
  accel_event_t *done;   /* recorded on `other` before the capture, completed */
  accel_graph_t *g;
  unsigned char *dev;    /* 256 bytes */
  char thread_message[512]; /* accel_last_error() of a call made on another thread */
} illegal_env_t;

typedef accel_status_t (*illegal_call_fn)(illegal_env_t *env);

static accel_status_t call_stream_sync(illegal_env_t *e) { return accel_stream_synchronize(e->s); }
static accel_status_t call_other_stream_sync(illegal_env_t *e) {
  return accel_stream_synchronize(e->other);
}
static accel_status_t call_device_sync(illegal_env_t *e) {
  return accel_device_synchronize(e->ctx->dev);
}
static accel_status_t call_event_sync(illegal_env_t *e) { return accel_event_synchronize(e->done); }
static accel_status_t call_stream_query(illegal_env_t *e) { return accel_stream_query(e->s); }
static accel_status_t call_event_query(illegal_env_t *e) { return accel_event_query(e->done); }
static accel_status_t call_blocking_memcpy(illegal_env_t *e) {
  unsigned char host[64];
  return accel_memcpy(e->ctx->dev, host, e->dev, sizeof(host));
}
static accel_status_t call_malloc(illegal_env_t *e) {
  void *p = NULL;
  accel_status_t st = accel_malloc(e->ctx->dev, 1024, &p);
  /* Relaxed mode allows it; give the block back (accel_free is not an unsafe call). */
  if (st == ACCEL_OK) accel_free(e->ctx->dev, p);
  return st;
}
static accel_status_t call_second_capture(illegal_env_t *e) {
  accel_graph_t *g2 = NULL;
  accel_status_t st = accel_graph_create(e->ctx->dev, &g2);
  if (st != ACCEL_OK) return st;
  st = accel_graph_capture_begin(g2, e->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  /* Keep the status of capture_begin as the result; the message belongs to it as well. */
  if (st == ACCEL_OK) accel_graph_capture_end(g2);
  accel_graph_destroy(g2);
  return st;
}

/* The call made from a second thread; its message is in that thread's last-error slot, so
 * the thread copies it into env->thread_message. */
typedef struct thread_call {
  illegal_env_t *env;
  accel_status_t status;
} thread_call_t;

static void *other_thread_main(void *user) {
  thread_call_t *t = user;
  t->status = accel_stream_synchronize(t->env->other);
  snprintf(t->env->thread_message, sizeof(t->env->thread_message), "%s", accel_last_error());
  return NULL;
}

static accel_status_t call_other_stream_sync_from_thread(illegal_env_t *e) {
  thread_call_t t = {e, ACCEL_OK};
  pthread_t th;
  if (pthread_create(&th, NULL, other_thread_main, &t) != 0) {
    snprintf(e->thread_message, sizeof(e->thread_message), "pthread_create failed");
    return ACCEL_ERROR_BACKEND;
  }
  pthread_join(th, NULL);
  return t.status;
}

/* Fork to another stream inside the capture and never join back. */
static accel_status_t call_unjoined_fork(illegal_env_t *e) {
  accel_event_t *ev = NULL;
  accel_status_t st = accel_event_create(e->ctx->dev, ACCEL_EVENT_DISABLE_TIMING, &ev);
  if (st != ACCEL_OK) return st;
  st = accel_event_record(ev, e->s);
  if (st == ACCEL_OK) st = accel_stream_wait_event(e->other, ev);
  if (st == ACCEL_OK) st = accel_memset_async(e->other, e->dev + 128, 0x0F, 64);
  accel_event_destroy(ev);
  return st;
}

static cts_result_t env_setup(cts_ctx_t *ctx, illegal_env_t *e) {
  memset(e, 0, sizeof(*e));
  e->ctx = ctx;
  unsigned flags = cts_stream_flags(ctx);
  CTS_OK(accel_stream_create_ex(ctx->dev, flags, &e->s));
  CTS_OK(accel_stream_create_ex(ctx->dev, flags, &e->other));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DISABLE_TIMING, &e->done));
  CTS_OK(accel_event_record(e->done, e->other));
  CTS_OK(accel_stream_synchronize(e->other));
  CTS_OK(accel_graph_create(ctx->dev, &e->g));
  CTS_OK(accel_malloc(ctx->dev, 256, (void **)&e->dev));
  return CTS_PASS;
}

static void env_teardown(illegal_env_t *e) {
  accel_graph_destroy(e->g);
  accel_event_destroy(e->done);
  accel_stream_destroy(e->s);
  accel_stream_destroy(e->other);
  accel_free(e->ctx->dev, e->dev);
}

/* After the capture: the stream is idle and captures + replays a fresh graph correctly. */
static cts_result_t check_stream_recovers(cts_ctx_t *ctx, illegal_env_t *e) {
  int capturing = -1;
  CTS_OK(accel_stream_is_capturing(e->s, &capturing));
  CTS_CHECK(capturing == 0, "stream still capturing after capture_end");
  CTS_OK(accel_stream_is_capturing(e->other, &capturing));
  CTS_CHECK(capturing == 0, "the other stream is still part of a capture");
  accel_graph_t *g = NULL;
  unsigned char host[256];
  memset(host, 0, sizeof(host));
  CTS_OK(accel_graph_create(ctx->dev, &g));
  CTS_OK(accel_graph_capture_begin(g, e->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  CTS_OK(accel_memset_async(e->s, e->dev, 0x42, 256));
  CTS_OK(accel_memcpy_async(e->s, host, e->dev, 256));
  CTS_OK(accel_graph_capture_end(g));
  CTS_OK(accel_graph_replay(g, e->s));
  CTS_OK(accel_stream_synchronize(e->s));
  CTS_OK(accel_graph_destroy(g));
  size_t bad = cts_find_not_byte(host, sizeof(host), 0x42);
  CTS_CHECK(bad == sizeof(host), "recapture after the failed capture: byte %zu is 0x%02x", bad,
            host[bad]);
  return CTS_PASS;
}

static cts_result_t run_capture_call(cts_ctx_t *ctx, accel_capture_mode_t mode,
                                     illegal_call_fn call, accel_status_t want_call,
                                     accel_status_t want_end) {
  illegal_env_t e;
  cts_result_t r = env_setup(ctx, &e);
  if (r != CTS_PASS) return r;
  CTS_OK(accel_graph_capture_begin(e.g, e.s, NULL, mode));
  CTS_OK(accel_memset_async(e.s, e.dev, 0x10, 256));
  accel_status_t got = call(&e);
  int has_message = accel_last_error()[0] != '\0' || e.thread_message[0] != '\0';
  accel_status_t end = accel_graph_capture_end(e.g);
  CTS_CHECK(got == want_call, "call during %s capture -> %s, want %s",
            mode == ACCEL_CAPTURE_MODE_GLOBAL         ? "GLOBAL"
            : mode == ACCEL_CAPTURE_MODE_THREAD_LOCAL ? "THREAD_LOCAL"
                                                      : "RELAXED",
            accel_status_name(got), accel_status_name(want_call));
  CTS_CHECK(got == ACCEL_OK || has_message, "%s without a message", accel_status_name(got));
  CTS_CHECK(end == want_end, "capture_end -> %s, want %s", accel_status_name(end),
            accel_status_name(want_end));
  size_t nodes = 99;
  CTS_OK(accel_graph_node_count(e.g, &nodes));
  if (want_end == ACCEL_ERROR_CAPTURE_INVALIDATED) {
    CTS_CHECK(nodes == 0, "invalidated graph kept %zu nodes", nodes);
    CTS_STATUS(accel_graph_replay(e.g, e.s), ACCEL_ERROR_STATE);
  } else {
    /* The capture survived the call: its recorded memset replays. */
    unsigned char zeros[256] = {0};
    CTS_OK(cts_upload(ctx, e.dev, zeros, sizeof(zeros)));
    CTS_OK(accel_graph_replay(e.g, e.s));
    CTS_OK(accel_stream_synchronize(e.s));
    unsigned char host[256];
    CTS_OK(cts_download(ctx, host, e.dev, sizeof(host)));
    CTS_CHECK(cts_find_not_byte(host, sizeof(host), 0x10) == sizeof(host),
              "the surviving capture did not replay its memset");
  }
  r = check_stream_recovers(ctx, &e);
  if (r != CTS_PASS) return r;
  env_teardown(&e);
  return CTS_PASS;
}

#define ILLEGAL_CASE(name, mode, call)                                                      \
  CTS_CASE(graph_illegal_##name, CTS_TAG_NONE) {                                            \
    return run_capture_call(ctx, (mode), (call), ACCEL_ERROR_ILLEGAL_IN_CAPTURE,            \
                            ACCEL_ERROR_CAPTURE_INVALIDATED);                               \
  }

#define ALLOWED_CASE(name, mode, call)                                                      \
  CTS_CASE(graph_allowed_##name, CTS_TAG_NONE) {                                            \
    return run_capture_call(ctx, (mode), (call), ACCEL_OK, ACCEL_OK);                       \
  }

ILLEGAL_CASE(stream_sync, ACCEL_CAPTURE_MODE_GLOBAL, call_stream_sync)
ILLEGAL_CASE(other_stream_sync, ACCEL_CAPTURE_MODE_GLOBAL, call_other_stream_sync)
ILLEGAL_CASE(device_sync, ACCEL_CAPTURE_MODE_GLOBAL, call_device_sync)
ILLEGAL_CASE(event_sync, ACCEL_CAPTURE_MODE_GLOBAL, call_event_sync)
ILLEGAL_CASE(stream_query, ACCEL_CAPTURE_MODE_GLOBAL, call_stream_query)
ILLEGAL_CASE(event_query, ACCEL_CAPTURE_MODE_GLOBAL, call_event_query)
ILLEGAL_CASE(blocking_memcpy, ACCEL_CAPTURE_MODE_GLOBAL, call_blocking_memcpy)
ILLEGAL_CASE(malloc, ACCEL_CAPTURE_MODE_GLOBAL, call_malloc)
ILLEGAL_CASE(second_capture_same_stream, ACCEL_CAPTURE_MODE_GLOBAL, call_second_capture)
ILLEGAL_CASE(global_other_thread_sync, ACCEL_CAPTURE_MODE_GLOBAL,
             call_other_stream_sync_from_thread)
ILLEGAL_CASE(thread_local_same_thread_sync, ACCEL_CAPTURE_MODE_THREAD_LOCAL,
             call_other_stream_sync)
ILLEGAL_CASE(relaxed_capturing_stream_sync, ACCEL_CAPTURE_MODE_RELAXED, call_stream_sync)
ILLEGAL_CASE(relaxed_capturing_stream_query, ACCEL_CAPTURE_MODE_RELAXED, call_stream_query)

ALLOWED_CASE(thread_local_other_thread_sync, ACCEL_CAPTURE_MODE_THREAD_LOCAL,
             call_other_stream_sync_from_thread)
ALLOWED_CASE(relaxed_other_stream_sync, ACCEL_CAPTURE_MODE_RELAXED, call_other_stream_sync)
ALLOWED_CASE(relaxed_other_thread_sync, ACCEL_CAPTURE_MODE_RELAXED,
             call_other_stream_sync_from_thread)
ALLOWED_CASE(relaxed_malloc, ACCEL_CAPTURE_MODE_RELAXED, call_malloc)

/* A stream that joined the capture by waiting on its event but never rejoined the origin. */
CTS_CASE(graph_unjoined_fork_invalidates, CTS_TAG_NONE) {
  return run_capture_call(ctx, ACCEL_CAPTURE_MODE_GLOBAL, call_unjoined_fork, ACCEL_OK,
                          ACCEL_ERROR_CAPTURE_INVALIDATED);
}
