/*
 * Host functions on a stream.
 *
 * OpenCL has no "run this on the host in queue order" command. Construction used here:
 *
 *   queue:  ... | marker M | barrier(wait U) | later work ...
 *
 * M completes when all earlier work did; its completion callback hands the call to the
 * stream's host-function thread, which runs fn(user) and then completes the user event U, so
 * later work starts only after fn returned. The thread is needed because an implementation
 * may run a completion callback inline, inside clSetEventCallback, when M already completed
 * (PoCL does): fn would then run in the caller's thread while the core holds the stream.
 * One thread per stream keeps the calls in stream order and independent across streams.
 *
 * If M fails (an earlier command failed), fn is skipped and U takes M's error status, so the
 * failure propagates to later work instead of being hidden.
 *
 * Inside a conditional region (acl_predicate.c) a copy of the region's predicate slot into the
 * call goes before M: when M completes, the call knows whether the region is taken, as read in
 * stream order on the device, and fn runs only if it is.
 */
#include <stdlib.h>

#include "acl_internal.h"

typedef struct acl_host_call {
  struct acl_host_call *next;
  acl_hostq_t *q;
  accel_host_fn_t fn;
  void *user;
  cl_event done;  /* user event the barrier waits on */
  cl_int status;  /* M's completion status */
  int32_t runs;   /* nonzero: fn runs (the region's predicate, copied before M) */
} acl_host_call_t;

struct acl_hostq {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  acl_host_call_t *head, *tail;
  int stop;
  pthread_t thread;
};

static void *hostq_main(void *arg) {
  acl_hostq_t *q = arg;
  pthread_mutex_lock(&q->lock);
  for (;;) {
    while (!q->head && !q->stop) pthread_cond_wait(&q->cond, &q->lock);
    acl_host_call_t *call = q->head;
    if (!call) break; /* stop requested and nothing left */
    q->head = call->next;
    if (!q->head) q->tail = NULL;
    pthread_mutex_unlock(&q->lock);
    if (call->status == CL_COMPLETE && call->runs) call->fn(call->user);
    clSetUserEventStatus(call->done, call->status); /* CL_COMPLETE or M's error */
    clReleaseEvent(call->done);
    free(call);
    pthread_mutex_lock(&q->lock);
  }
  pthread_mutex_unlock(&q->lock);
  return NULL;
}

static accel_status_t hostq_get(acl_stream_t *s, acl_hostq_t **out) {
  if (!s->hostq) {
    acl_hostq_t *q = calloc(1, sizeof *q);
    if (!q) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "launch_host_func: out of memory");
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL);
    int rc = pthread_create(&q->thread, NULL, hostq_main, q);
    if (rc != 0) {
      pthread_cond_destroy(&q->cond);
      pthread_mutex_destroy(&q->lock);
      free(q);
      return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                 "launch_host_func: pthread_create failed (%d)", rc);
    }
    s->hostq = q;
  }
  *out = s->hostq;
  return ACCEL_OK;
}

void acl_hostq_destroy(acl_hostq_t *q) {
  if (!q) return;
  pthread_mutex_lock(&q->lock);
  q->stop = 1;
  pthread_cond_signal(&q->cond);
  pthread_mutex_unlock(&q->lock);
  pthread_join(q->thread, NULL);
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->lock);
  free(q);
}

/* Completion callback of M: may run on an OpenCL thread or inline; only queues the call. */
static void CL_CALLBACK marker_done(cl_event marker, cl_int status, void *data) {
  acl_host_call_t *call = data;
  acl_hostq_t *q = call->q;
  call->status = status;
  clReleaseEvent(marker);
  pthread_mutex_lock(&q->lock);
  if (q->tail) q->tail->next = call;
  else q->head = call;
  q->tail = call;
  pthread_cond_signal(&q->cond);
  pthread_mutex_unlock(&q->lock);
}

/* Frees a call that was never handed to the callback. A predicate copy into it may be queued
 * already: it completes before the call's memory goes. */
static void call_drop(acl_stream_t *s, acl_host_call_t *call, const int32_t *pred) {
  if (pred) clFinish(s->queue);
  clReleaseEvent(call->done);
  free(call);
}

accel_status_t acl_enqueue_host_func(acl_stream_t *s, accel_host_fn_t fn, void *user,
                                     const int32_t *pred) {
  acl_hostq_t *q = NULL;
  accel_status_t st = hostq_get(s, &q);
  if (st != ACCEL_OK) return st;
  acl_host_call_t *call = calloc(1, sizeof *call);
  if (!call) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "launch_host_func: out of memory");
  call->q = q;
  call->fn = fn;
  call->user = user;
  call->runs = 1;
  cl_int err = CL_SUCCESS;
  call->done = clCreateUserEvent(s->dev->ctx, &err);
  if (err != CL_SUCCESS) {
    free(call);
    return acl_fail("clCreateUserEvent", err);
  }
  const char *what = "clEnqueueSVMMemcpy(predicate)";
  if (pred)
    err = clEnqueueSVMMemcpy(s->queue, CL_FALSE, &call->runs, pred, sizeof call->runs, 0, NULL,
                             NULL);
  cl_event marker = NULL;
  if (err == CL_SUCCESS) {
    what = "clEnqueueMarkerWithWaitList";
    err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &marker);
  }
  if (err != CL_SUCCESS) {
    call_drop(s, call, pred);
    return acl_fail(what, err);
  }
  cl_event barrier = NULL;
  err = clEnqueueBarrierWithWaitList(s->queue, 1, &call->done, &barrier);
  if (err != CL_SUCCESS) {
    /* The marker is queued but harmless without a callback; fn is not run. */
    clReleaseEvent(marker);
    call_drop(s, call, pred);
    return acl_fail("clEnqueueBarrierWithWaitList", err);
  }
  acl_stream_set_last(s, barrier);
  /* From here the callback owns call and marker; the host thread owns call->done. */
  err = clSetEventCallback(marker, CL_COMPLETE, marker_done, call);
  if (err != CL_SUCCESS) {
    /* Unblock the barrier with an error so later work does not hang and the failure shows. */
    clSetUserEventStatus(call->done, CL_INVALID_OPERATION);
    clReleaseEvent(marker);
    call_drop(s, call, pred);
    return acl_fail("clSetEventCallback", err);
  }
  return ACCEL_OK;
}

accel_status_t acl_launch_host_func(accel_be_stream_t *stream, accel_host_fn_t fn, void *user) {
  acl_stream_t *s = stream;
  return acl_stream_flush(s, acl_enqueue_host_func(s, fn, user, NULL));
}
