/*
 * Deferred release: objects that queued device work may still use (a destroyed graph's native
 * graph, chunk tables and pool, evicted chunk tables, an unreferenced graph pool's memory) are
 * retired with a fence, one backend event recorded on every stream of the device after the
 * work that could use them, and released once the fence completed. Nothing here waits for the
 * device while a lock is held, and a retire never waits at all unless the fence cannot be made
 * (out of events), in which case it drains the device first, holding no lock.
 */
#include <stdlib.h>

#include "internal.h"

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

uint64_t accel_retire_covered_epoch(void) { return covered_epoch; }

/* Records one event on every busy stream after its submitted (and lazily queued) work. */
static accel_retired_t *fence_new(accel_device_t *dev) {
  const uint64_t epoch = accel_allocator_free_generation(dev->mem);
  accel_stream_t **streams = NULL;
  size_t n = 0;
  if (accel_device_streams(dev, &streams, &n) != ACCEL_OK) return NULL;
  const accel_backend_vtable_t *vt = dev->backend->vt;
  accel_retired_t *r = calloc(1, sizeof *r + n * sizeof r->events[0]);
  bool ok = r != NULL;
  if (r) r->epoch = epoch;
  for (size_t i = 0; ok && i < n; ++i) {
    accel_stream_t *s = streams[i];
    pthread_mutex_lock(&s->lock);
    /* a capturing stream submits nothing to the backend: its work before the capture is what
     * the event must cover, and that is submitted already */
    if (!s->capture) ok = accel_lazy_flush_locked(s) == ACCEL_OK;
    accel_be_event_t *ev = NULL;
    if (ok && vt->stream_query(s->impl) != ACCEL_OK) { /* busy (or failed): fence it */
      ok = vt->event_create(dev->impl, ACCEL_EVENT_DISABLE_TIMING, &ev) == ACCEL_OK;
      if (ok) r->events[r->nevents++] = ev;
      if (ok) ok = vt->event_record(ev, s->impl) == ACCEL_OK;
    }
    pthread_mutex_unlock(&s->lock);
  }
  accel_device_streams_release(streams, n);
  if (ok) return r;
  for (size_t i = 0; r && i < r->nevents; ++i) vt->event_destroy(r->events[i]);
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

static void enqueue(accel_device_t *dev, accel_retired_t *r) {
  pthread_mutex_lock(&dev->retire_lock);
  r->next = dev->retired;
  dev->retired = r;
  atomic_fetch_add(&dev->nretired, 1);
  pthread_mutex_unlock(&dev->retire_lock);
}

void accel_stream_retire_locked(accel_stream_t *s, void (*fn)(void *ctx), void *ctx) {
  accel_device_t *dev = s->dev;
  const accel_backend_vtable_t *vt = dev->backend->vt;
  accel_retired_t *r = calloc(1, sizeof *r + sizeof r->events[0]);
  accel_be_event_t *ev = NULL;
  if (r && vt->event_create(dev->impl, ACCEL_EVENT_DISABLE_TIMING, &ev) == ACCEL_OK) {
    r->events[r->nevents++] = ev;
    if (vt->event_record(ev, s->impl) == ACCEL_OK) {
      r->fn = fn;
      r->ctx = ctx;
      r->epoch = accel_allocator_free_generation(dev->mem);
      enqueue(dev, r);
      return;
    }
    vt->event_destroy(ev);
  }
  free(r);
  /* no event: wait for the stream here (out of host memory or a failed device) */
  vt->stream_synchronize(s->impl);
  fn(ctx);
}

void accel_device_retire(accel_device_t *dev, void (*fn)(void *ctx), void *ctx) {
  accel_retired_t *r = fence_new(dev);
  if (!r) {
    accel_log(ACCEL_LOG_WARN, "accel", "no fence for a deferred release (%s); draining the "
                                        "device instead", accel_last_error());
    const uint64_t epoch = accel_allocator_free_generation(dev->mem);
    accel_device_drain(dev);
    run_covered(fn, ctx, epoch);
    return;
  }
  r->fn = fn;
  r->ctx = ctx;
  if (r->nevents == 0) { /* every stream was idle */
    run(dev, r);
    return;
  }
  enqueue(dev, r);
  accel_device_reap(dev, false);
}

void accel_device_reap(accel_device_t *dev, bool wait) {
  if (atomic_load_explicit(&dev->nretired, memory_order_acquire) == 0) return;
  pthread_mutex_lock(&dev->retire_lock);
  accel_retired_t *list = dev->retired;
  dev->retired = NULL;
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
    tail->next = dev->retired;
    dev->retired = pending;
  }
  atomic_fetch_sub(&dev->nretired, (int)done);
  pthread_mutex_unlock(&dev->retire_lock);
}
