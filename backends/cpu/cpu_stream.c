#include "cpu_stream.h"

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_event.h"
#include "cpu_graph.h"

/* Drops what an executed entry owns. */
static void entry_release(cpu_entry_t *e) {
  if (e->op.type == CPU_OP_RECORD || e->op.type == CPU_OP_WAIT)
    cpu_record_release(e->op.u.record.record);
  if (e->op.type == CPU_OP_GRAPH) cpu_graph_release(e->op.u.graph.graph);
  free(e->heap);
}

static int worker_should_wake(void *arg) {
  cpu_stream_t *s = arg;
  return s->queue.taken != cpu_queue_submitted(&s->queue) || atomic_load(&s->shutdown);
}

static int not_held(void *arg) {
  return atomic_load(&((cpu_stream_t *)arg)->held) != CPU_HOLD_HELD;
}

/* Returns once no caller holds s and the last release is done with it (a new hold may have
 * begun since). */
static void wait_hold_ended(cpu_stream_t *s) {
  cpu_notifier_wait(&s->hold_released, not_held, s);
  /* the releaser is between its notify and its last store: a few instructions, unless it
   * was preempted there */
  while (atomic_load(&s->held) == CPU_HOLD_ENDING) sched_yield();
}

static void *worker_main(void *arg) {
  cpu_stream_t *s = arg;
  struct sched_param sp = {0};
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
  for (;;) {
    cpu_entry_t *e = cpu_queue_peek(&s->queue);
    if (e == NULL) {
      /* Shutdown is only honoured once the queue is drained. */
      if (atomic_load(&s->shutdown)) break;
      cpu_notifier_wait(&s->work_available, worker_should_wake, s);
      continue;
    }
    /* submitted during a hold: it starts after the caller's command (shutdown, too, waits
     * for the hold to end) */
    if (atomic_load(&s->held) == CPU_HOLD_HELD) {
      cpu_notifier_wait(&s->hold_released, not_held, s);
      continue;
    }
    cpu_op_execute(s->device, &e->op);
    entry_release(e);
    cpu_queue_pop(&s->queue);
    cpu_notifier_notify_level(&s->work_done, cpu_queue_completed(&s->queue));
  }
  return NULL;
}

accel_status_t cpu_stream_reserve(cpu_stream_t *stream, const char *what, cpu_entry_t **entry) {
  cpu_entry_t *e = cpu_queue_reserve(&stream->queue);
  if (e == NULL)
    return stream->device->host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                           "cpu: %s: malloc of a stream queue chunk failed",
                                           what);
  *entry = e;
  return ACCEL_OK;
}

void cpu_stream_submit(cpu_stream_t *stream) {
  cpu_queue_publish(&stream->queue);
  cpu_notifier_notify(&stream->work_available);
}

accel_status_t cpu_stream_enqueue(cpu_stream_t *stream, const char *what, const cpu_op_t *op,
                                  void *heap) {
  cpu_entry_t *e = NULL;
  accel_status_t st = cpu_stream_reserve(stream, what, &e);
  if (st != ACCEL_OK) return st;
  e->op = *op;
  e->heap = heap;
  cpu_stream_submit(stream);
  return ACCEL_OK;
}

/* The stream's notifiers, made and destroyed together. */
#define NUM_NOTIFIERS 3
static void stream_notifiers(cpu_stream_t *s, cpu_notifier_t *n[NUM_NOTIFIERS]) {
  n[0] = &s->work_available;
  n[1] = &s->work_done;
  n[2] = &s->hold_released;
}

/* Destroys the first count of them. */
static void destroy_notifiers(cpu_stream_t *s, int count) {
  cpu_notifier_t *n[NUM_NOTIFIERS];
  stream_notifiers(s, n);
  while (count > 0) cpu_notifier_destroy(n[--count]);
}

/* 0, or the error of the first that failed (then none is left made). */
static int init_notifiers(cpu_stream_t *s, uint64_t spin_ns) {
  cpu_notifier_t *n[NUM_NOTIFIERS];
  stream_notifiers(s, n);
  for (int i = 0; i < NUM_NOTIFIERS; ++i) {
    const int rc = cpu_notifier_init(n[i], spin_ns);
    if (rc != 0) {
      destroy_notifiers(s, i);
      return rc;
    }
  }
  return 0;
}

accel_status_t cpu_stream_create(accel_be_device_t *device, accel_be_stream_t **out) {
  cpu_device_t *dev = device;
  const accel_host_api_t *host = dev->host;
  char err[128];
  /* aligned: the queue's sides sit on cache lines of their own (cpu_queue.h) */
  cpu_stream_t *s = aligned_alloc(_Alignof(cpu_stream_t), sizeof(*s));
  if (s == NULL)
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                           "cpu: stream_create: aligned_alloc(%zu) failed", sizeof(*s));
  memset(s, 0, sizeof *s);
  s->device = dev;
  atomic_init(&s->shutdown, 0);
  atomic_init(&s->held, CPU_HOLD_NONE);
  int rc = cpu_queue_init(&s->queue);
  if (rc != 0) {
    free(s);
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                           "cpu: stream_create: malloc of the queue failed");
  }
  const char *call = "pthread_mutex_init/pthread_cond_init";
  rc = init_notifiers(s, dev->spin_ns);
  if (rc == 0) {
    call = "pthread_create";
    rc = pthread_create(&s->worker, NULL, worker_main, s);
    if (rc != 0) destroy_notifiers(s, NUM_NOTIFIERS);
  }
  if (rc != 0) {
    cpu_queue_destroy(&s->queue);
    free(s);
    return host->set_error(ACCEL_ERROR_BACKEND, "cpu: stream_create: %s failed: %s", call,
                           cpu_strerror(rc, err, sizeof(err)));
  }
  char name[16];
  snprintf(name, sizeof(name), "accel-cpu-s%u", atomic_fetch_add(&dev->next_stream_id, 1u));
  pthread_setname_np(s->worker, name);
  *out = s;
  return ACCEL_OK;
}

void cpu_stream_destroy(accel_be_stream_t *stream) {
  cpu_stream_t *s = stream;
  wait_hold_ended(s);
  atomic_store(&s->shutdown, 1);
  cpu_notifier_notify(&s->work_available);
  pthread_join(s->worker, NULL);
  destroy_notifiers(s, NUM_NOTIFIERS);
  cpu_queue_destroy(&s->queue);
  free(s);
}

typedef struct sync_target {
  cpu_stream_t *stream;
  uint64_t submitted;
} sync_target_t;

static int reached(void *arg) {
  const sync_target_t *t = arg;
  return cpu_queue_completed(&t->stream->queue) >= t->submitted;
}

accel_status_t cpu_stream_synchronize(accel_be_stream_t *stream) {
  cpu_stream_t *s = stream;
  sync_target_t t = {s, cpu_queue_submitted(&s->queue)};
  cpu_notifier_wait_level(&s->work_done, reached, &t, t.submitted);
  wait_hold_ended(s); /* a caller's command on an idle stream */
  return ACCEL_OK;
}

static bool idle(cpu_stream_t *s) {
  /* completed first: equal to a later read of submitted, nothing was pending at that read */
  const uint64_t completed = cpu_queue_completed(&s->queue);
  return completed == cpu_queue_submitted(&s->queue);
}

accel_status_t cpu_stream_query(accel_be_stream_t *stream) {
  cpu_stream_t *s = stream;
  return idle(s) && atomic_load(&s->held) != CPU_HOLD_HELD ? ACCEL_OK : ACCEL_ERROR_NOT_READY;
}

int cpu_stream_try_hold(accel_be_stream_t *stream) {
  cpu_stream_t *s = stream;
  if (!s->device->run_on_caller || !idle(s)) return 0; /* (no locked instruction) */
  int none = CPU_HOLD_NONE;
  if (!atomic_compare_exchange_strong(&s->held, &none, CPU_HOLD_HELD)) return 0;
  /* Dekker with the worker (all seq_cst): we set held, then read the queue; the worker reads
   * the queue (peek), then held. If this read misses a submission, the worker that finds it
   * also finds held set and waits for the release. */
  if (idle(s)) return 1;
  cpu_stream_release_hold(s); /* a submission came first: it runs, not the caller */
  return 0;
}

void cpu_stream_release_hold(accel_be_stream_t *stream) {
  cpu_stream_t *s = stream;
  /* release, not seq_cst: the notify's own fence orders it (cpu_sync.h); a second full
   * barrier here cost a few percent of a 4 KB all_reduce run on the caller */
  atomic_store_explicit(&s->held, CPU_HOLD_ENDING, memory_order_release);
  /* not work_available: an idle worker sleeping there would wake for nothing, a context
   * switch per collective run on the caller (measured: 1-2 per all_reduce at -np 2) */
  cpu_notifier_notify(&s->hold_released);
  /* the last access to s: synchronize and destroy wait for it */
  atomic_store_explicit(&s->held, CPU_HOLD_NONE, memory_order_release);
}

accel_status_t cpu_stream_wait_event(accel_be_stream_t *stream, accel_be_event_t *event) {
  cpu_stream_t *s = stream;
  cpu_record_t *r = cpu_event_last_record(event);
  /* Never recorded, or already complete: nothing to wait for. */
  if (r == NULL) return ACCEL_OK;
  if (cpu_record_is_done(r)) {
    cpu_record_release(r);
    return ACCEL_OK;
  }
  const cpu_op_t op = {.type = CPU_OP_WAIT, .u.record = {.record = r, .timed = 0}};
  accel_status_t st = cpu_stream_enqueue(s, "stream_wait_event", &op, NULL);
  if (st != ACCEL_OK) cpu_record_release(r);
  return st;
}
