/*
 * Lazy mode: a lazy stream queues its commands and submits them at a flush point
 * (synchronize, accel_stream_flush, a query, an event record/wait, or ACCEL_LAZY_MAX_OPS
 * commands). A flushed sequence identical to one seen before (same commands, pointers, sizes
 * and kernel arguments) is a cache hit: it is replayed from the cached graph — instantiated as
 * a native graph on its second hit when the backend has native graphs, otherwise submitted as
 * one batch of the cached list.
 */
#include <stdlib.h>

#include "fault.h"
#include "log.h"
#include "stream.h"
#include "trace.h"

static bool native_allowed(const accel_device_t *dev) {
  return dev->backend->vt->graph_instantiate && dev->info.native_graphs;
}

static accel_status_t replay_cached(accel_stream_t *s, accel_lazy_cache_entry_t *e) {
  accel_device_t *dev = s->dev;
  const accel_backend_vtable_t *vt = dev->backend->vt;
  if (!e->native && e->hits >= 2 && native_allowed(dev)) {
    if (vt->graph_instantiate(dev->impl, e->cmds.cmds, e->cmds.count, &e->native) != ACCEL_OK) {
      accel_log(ACCEL_LOG_DEBUG, "lazy", "native instantiation declined (%s); using batches",
                accel_last_error());
      e->native = NULL;
    }
  }
  if (e->native) {
    accel_status_t st = accel_fault_launches(e->cmds.cmds, e->cmds.count, "graph_launch");
    return st == ACCEL_OK ? vt->graph_launch(e->native, s->impl) : st;
  }
  return accel_stream_run_batch(s, e->cmds.cmds, e->cmds.count);
}

typedef struct native_remains {
  const accel_backend_vtable_t *vt;
  accel_be_graph_t *native;
} native_remains_t;

static void native_free(void *ctx) {
  native_remains_t *n = ctx;
  n->vt->graph_destroy(n->native);
  free(n);
}

/* An evicted cached graph may still run on s: it is destroyed once s finished it. */
static void retire_native(accel_stream_t *s, accel_be_graph_t *native) {
  const accel_backend_vtable_t *vt = s->dev->backend->vt;
  native_remains_t *n = malloc(sizeof *n);
  if (!n) {
    vt->stream_synchronize(s->impl); /* out of host memory: wait for it here */
    vt->graph_destroy(native);
    return;
  }
  n->vt = vt;
  n->native = native;
  accel_stream_retire_locked(s, native_free, n);
}

static accel_lazy_cache_entry_t *cache_victim(accel_stream_t *s) {
  accel_lazy_cache_entry_t *v = &s->lazy_cache[0];
  for (int i = 1; i < ACCEL_LAZY_CACHE_SIZE; ++i)
    if (s->lazy_cache[i].last_use < v->last_use) v = &s->lazy_cache[i];
  return v;
}

static accel_status_t lazy_flush_locked(accel_stream_t *s) {
  accel_cmdlist_t *q = &s->lazy_queue;
  if (q->count == 0) return ACCEL_OK;
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, "lazy_flush");
  uint64_t h = accel_cmdlist_hash(q);
  s->lazy_stats.flushes++;
  s->lazy_clock++;
  accel_status_t st = ACCEL_OK;
  accel_lazy_cache_entry_t *hit = NULL;
  for (int i = 0; i < ACCEL_LAZY_CACHE_SIZE && !hit; ++i) {
    accel_lazy_cache_entry_t *e = &s->lazy_cache[i];
    if (e->cmds.count && e->hash == h && accel_cmdlist_equal(&e->cmds, q)) hit = e;
  }
  if (hit) {
    hit->hits++;
    hit->last_use = s->lazy_clock;
    s->lazy_stats.cache_hits++;
    st = replay_cached(s, hit);
  } else {
    s->lazy_stats.cache_misses++;
    st = accel_stream_run_batch(s, q->cmds, q->count);
    accel_lazy_cache_entry_t *v = cache_victim(s);
    if (v->native) retire_native(s, v->native);
    v->native = NULL;
    if (accel_cmdlist_copy(&v->cmds, q, false) == ACCEL_OK) {
      v->hash = h;
      v->hits = 0;
      v->last_use = s->lazy_clock;
    } else {
      accel_cmdlist_clear(&v->cmds);
    }
  }
  size_t n = q->count;
  accel_cmdlist_clear(q);
  accel_trace_end_args(&t, "\"ops\":%zu,\"cache_hit\":%d", n, hit != NULL);
  return st;
}

/* Fills the stream's slot (stream.h) when libaccel is loaded, before any call can flush. */
__attribute__((constructor)) static void lazy_register(void) {
  accel_lazy_flush_slot = lazy_flush_locked;
}
