/*
 * Deferred release: objects that queued device work may still use (a destroyed graph's native
 * graph, chunk tables and pool, evicted chunk tables, an unreferenced graph pool's memory) are
 * retired with a fence, one backend event recorded on every stream of the device after the
 * work that could use them, and released once the fence completed. Nothing here waits for the
 * device while a lock is held, and a retire never waits at all unless the fence cannot be made
 * (out of events), in which case it drains the device first, holding no lock.
 *
 * Releases that run user code (DLPack deleters) wait in a list of their own, run only where a
 * deleter that waits for the device cannot deadlock (device.h: never inside a host function
 * of the device), so the allocation paths never meet them.
 */
#include <stdlib.h>

#include "device.h"
#include "kernel_support.h"
#include "log.h"

typedef struct accel_retired {
  struct accel_retired *next;
  void (*fn)(void *ctx);
  void *ctx;
  uint64_t epoch; /* the allocator's free generation when the fence was made */
  size_t nevents;
  accel_be_event_t *events[]; /* the fence: streams that were idle need none */
} accel_retired_t;

/* While a retired release runs: the free generation its fence covers (0: none). */
static _Thread_local uint64_t covered_epoch;
/* Callback scopes the thread is in (accel_callbacks_begin). */
static _Thread_local int callbacks_ok;

void accel_callbacks_begin(void) { callbacks_ok++; }
void accel_callbacks_end(void) { callbacks_ok--; }

uint64_t accel_retire_covered_epoch(void) { return covered_epoch; }

/* Records one event on every busy stream after its submitted (and lazily queued) work; without
 * record, only counts the busy streams (nevents, no events). */
static accel_retired_t *fence_new(accel_device_t *dev, bool record) {
  const uint64_t epoch = accel_allocator_free_generation(dev->mem);
  accel_stream_t **streams = NULL;
  size_t n = 0;
  if (accel_device_streams(dev, &streams, &n) != ACCEL_OK) return NULL;
  const accel_backend_vtable_t *vt = dev->backend->vt;
  accel_retired_t *r = calloc(1, sizeof *r + n * sizeof r->events[0]);
  bool ok = r != NULL;
  if (r) r->epoch = epoch;
  for (size_t i = 0; ok && i < n; ++i) {
    bool busy = false;
    accel_be_event_t *ev = NULL;
    ok = accel_device_stream_ops.fence(streams[i], record, &busy, &ev);
    if (ok && busy) r->events[r->nevents++] = ev;
  }
  accel_device_streams_release(streams, n);
  if (ok) return r;
  for (size_t i = 0; r && record && i < r->nevents; ++i) vt->event_destroy(r->events[i]);
  free(r);
  return NULL;
}

static bool fence_done(accel_device_t *dev, accel_retired_t *r, bool wait) {
  const accel_backend_vtable_t *vt = dev->backend->vt;
  for (size_t i = 0; i < r->nevents; ++i) {
    accel_status_t st = wait ? vt->event_synchronize(r->events[i]) : vt->event_query(r->events[i]);
    /* a failed event (device error) completes the fence: its stream ran nothing more */
    if (st == ACCEL_ERROR_NOT_READY) return false;
  }
  return true;
}

/* Runs fn(ctx) as a release whose fence covers frees up to epoch. */
static void run_covered(void (*fn)(void *ctx), void *ctx, uint64_t epoch) {
  const uint64_t outer = covered_epoch;
  covered_epoch = epoch;
  fn(ctx);
  covered_epoch = outer;
}

static void run(accel_device_t *dev, accel_retired_t *r) {
  for (size_t i = 0; i < r->nevents; ++i) dev->backend->vt->event_destroy(r->events[i]);
  run_covered(r->fn, r->ctx, r->epoch);
  free(r);
}

/* One of the device's two lists (lock: dev->retire_lock). */
typedef struct retire_list {
  accel_retired_t **head;
  atomic_int *n;
} retire_list_t;

static retire_list_t releases(accel_device_t *dev) {
  return (retire_list_t){&dev->retired, &dev->nretired};
}
static retire_list_t callbacks(accel_device_t *dev) {
  return (retire_list_t){&dev->callbacks, &dev->ncallbacks};
}

static void enqueue(accel_device_t *dev, retire_list_t l, accel_retired_t *r) {
  pthread_mutex_lock(&dev->retire_lock);
  r->next = *l.head;
  *l.head = r;
  atomic_fetch_add(l.n, 1);
  pthread_mutex_unlock(&dev->retire_lock);
}

void accel_device_retire_after(accel_device_t *dev, accel_be_stream_t *impl,
                               void (*fn)(void *ctx), void *ctx) {
  const accel_backend_vtable_t *vt = dev->backend->vt;
  accel_retired_t *r = calloc(1, sizeof *r + sizeof r->events[0]);
  accel_be_event_t *ev = NULL;
  if (r && vt->event_create(dev->impl, ACCEL_EVENT_DISABLE_TIMING, &ev) == ACCEL_OK) {
    r->events[r->nevents++] = ev;
    if (vt->event_record(ev, impl) == ACCEL_OK) {
      r->fn = fn;
      r->ctx = ctx;
      r->epoch = accel_allocator_free_generation(dev->mem);
      enqueue(dev, releases(dev), r);
      return;
    }
    vt->event_destroy(ev);
  }
  free(r);
  /* no event: wait for the stream here (out of host memory or a failed device) */
  vt->stream_synchronize(impl);
  fn(ctx);
}

/* The entries of l whose fence completed (waiting for them first with wait) are run. */
static void reap_list(accel_device_t *dev, retire_list_t l, bool wait) {
  if (atomic_load_explicit(l.n, memory_order_acquire) == 0) return;
  pthread_mutex_lock(&dev->retire_lock);
  accel_retired_t *list = *l.head;
  *l.head = NULL;
  pthread_mutex_unlock(&dev->retire_lock);
  accel_retired_t *pending = NULL, *tail = NULL;
  size_t done = 0;
  for (accel_retired_t *r = list, *next; r; r = next) {
    next = r->next;
    if (fence_done(dev, r, wait)) {
      run(dev, r);
      done++;
    } else {
      r->next = pending;
      pending = r;
      if (!tail) tail = r;
    }
  }
  pthread_mutex_lock(&dev->retire_lock);
  if (pending) {
    tail->next = *l.head;
    *l.head = pending;
  }
  atomic_fetch_sub(l.n, (int)done);
  pthread_mutex_unlock(&dev->retire_lock);
}

void accel_device_reap(accel_device_t *dev, bool wait) {
  reap_list(dev, releases(dev), wait);
  if (callbacks_ok) reap_list(dev, callbacks(dev), wait);
}

/* A fence for fn(ctx), or NULL after running it at once (no fence could be made: drained). */
static accel_retired_t *fenced(accel_device_t *dev, void (*fn)(void *ctx), void *ctx) {
  accel_retired_t *r = fence_new(dev, true);
  if (!r) {
    accel_log(ACCEL_LOG_WARN, "accel", "no fence for a deferred release (%s); draining the "
                                        "device instead", accel_last_error());
    const uint64_t epoch = accel_allocator_free_generation(dev->mem);
    accel_device_drain(dev);
    run_covered(fn, ctx, epoch);
    return NULL;
  }
  r->fn = fn;
  r->ctx = ctx;
  return r;
}

void accel_device_retire(accel_device_t *dev, void (*fn)(void *ctx), void *ctx) {
  accel_retired_t *r = fenced(dev, fn, ctx);
  if (!r) return;
  if (r->nevents == 0) { /* every stream was idle */
    run(dev, r);
    return;
  }
  enqueue(dev, releases(dev), r);
  accel_device_reap(dev, false);
}

/* Runs the ready callbacks (and first) in a scope: the device is idle, so the caller is no host
 * function of it. Its own reference: a deleter may drop the last other one. */
static void callbacks_idle(accel_device_t *dev, accel_retired_t *first) {
  accel_device_retain(dev);
  accel_callbacks_begin();
  if (first) run(dev, first);
  reap_list(dev, callbacks(dev), false);
  accel_callbacks_end();
  accel_device_release_ref(dev);
}

void accel_device_retire_callback(accel_device_t *dev, void (*fn)(void *ctx), void *ctx) {
  accel_retired_t *r = fenced(dev, fn, ctx); /* (a drain is no host function's either) */
  if (!r) return;
  if (r->nevents == 0) callbacks_idle(dev, r);
  else enqueue(dev, callbacks(dev), r);
}

void accel_device_defer_callback(accel_device_t *dev, void (*fn)(void *ctx), void *ctx) {
  if (callbacks_ok) {
    run_covered(fn, ctx, accel_retire_covered_epoch());
    return;
  }
  accel_retired_t *r = calloc(1, sizeof *r);
  if (!r) { /* out of host memory: a deleter in the wrong place beats a leak */
    fn(ctx);
    return;
  }
  r->fn = fn;
  r->ctx = ctx; /* no fence: ready, it only waits for a place to run */
  enqueue(dev, callbacks(dev), r);
}

void accel_device_callbacks_if_idle(accel_device_t *dev) {
  if (atomic_load_explicit(&dev->ncallbacks, memory_order_acquire) == 0) return;
  accel_retired_t *probe = fence_new(dev, false);
  const bool idle = probe && probe->nevents == 0;
  free(probe);
  if (idle) callbacks_idle(dev, NULL);
}
