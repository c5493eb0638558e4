/*
 * Graphs: capture_begin/end, replay, reset and graph memory pools. A captured graph replays
 * through the backend's native graph when it has one (unless ACCEL_DISABLE_GRAPHS=1 or the
 * backend declines the command list), otherwise as one batch of the recorded commands.
 * Replays of one graph run one at a time, in the order they were issued. A graph that is reset
 * or destroyed after replays retires what they use (native graph, chunk tables, pool) until
 * every stream finished them (retire.c): neither call waits for the device. accel_graph_update
 * (graph_update.c) swaps in a new capture's contents and retires the old ones the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "capture.h"
#include "core_util.h"
#include "fault.h"
#include "graph.h"
#include "graph_parts.h"
#include "log.h"
#include "trace.h"

static accel_status_t graph_check(accel_graph_t *g, const char *fn) {
  return accel_handle_check(g, ACCEL_HANDLE_GRAPH, fn);
}

static accel_status_t pool_check(accel_pool_t *p, const char *fn) {
  return accel_handle_check(p, ACCEL_HANDLE_POOL, fn);
}

/* ---------------------------------------------------------------------------------------- */
/* graphs */

accel_status_t accel_graph_create(accel_device_t *dev, accel_graph_t **out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  accel_graph_t *g = calloc(1, sizeof *g);
  if (!g) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  g->dev = dev;
  pthread_mutex_init(&g->lock, NULL);
  accel_device_retain(dev);
  accel_handle_register(&g->hdr, ACCEL_HANDLE_GRAPH, dev->backend->vt);
  static atomic_int serial;
  g->trace_id = accel_trace_new_track("graph", dev->backend->name, atomic_fetch_add(&serial, 1));
  *out = g;
  return ACCEL_OK;
}

/* What a graph's replays use, released together once they are finished. */
struct accel_graph_remains {
  accel_device_t *dev;
  accel_be_graph_t *native;
  accel_be_event_t *replay_done;
  accel_graph_lists_t *lists; /* its flat list holds the keepalives (chunk tables, pools) */
  accel_pool_t *pool;
  accel_allocator_pins_t pins;
  accel_stream_t *last_replay_stream; /* released with no lock held (its teardown waits) */
};
typedef accel_graph_remains_t graph_remains_t;

void accel_graph_lists_retain(accel_graph_lists_t *l) { atomic_fetch_add(&l->refs, 1u); }

void accel_graph_lists_release(accel_graph_lists_t *l) {
  if (!l || atomic_fetch_sub(&l->refs, 1u) != 1u) return;
  accel_cmdlist_free(&l->cmds);
  accel_cmdlist_free(&l->flat);
  free(l);
}

/* The lists of a capture: its commands (moved from *cmds, emptied) and their flat copy. */
static accel_status_t lists_new(accel_cmdlist_t *cmds, accel_graph_lists_t **out) {
  accel_graph_lists_t *l = calloc(1, sizeof *l);
  if (!l) {
    accel_cmdlist_free(cmds);
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  atomic_init(&l->refs, 1u);
  l->cmds = *cmds;
  accel_cmdlist_init(cmds);
  accel_status_t st = accel_cmdlist_copy(&l->flat, &l->cmds, ACCEL_CMDLIST_SKIP_EVENTS);
  if (st != ACCEL_OK) {
    accel_graph_lists_release(l);
    return st;
  }
  *out = l;
  return ACCEL_OK;
}

/* Releases what r holds. */
static void remains_release(graph_remains_t *r) {
  const accel_backend_vtable_t *vt = r->dev->backend->vt;
  if (r->native) vt->graph_destroy(r->native);
  if (r->replay_done) vt->event_destroy(r->replay_done);
  accel_graph_lists_release(r->lists);
  accel_allocator_unpin(r->dev->mem, &r->pins); /* completes frees deferred by the graph */
  if (r->pool) accel_pool_release_ref(r->pool);
  if (r->last_replay_stream) accel_stream_release_ref(r->last_replay_stream);
}

/* The retired release of a heap-held r (it holds a device reference). */
static void remains_free(void *ctx) {
  graph_remains_t *r = ctx;
  accel_device_t *dev = r->dev;
  remains_release(r);
  free(r);
  accel_device_release_ref(dev);
}

/* Hands what replays issued so far may still use to the caller (graph lock held), for
 * accel_graph_release_remains once g->lock is dropped; without replays, or out of host memory
 * (after a drain), it is released here and the result is NULL. */
static graph_remains_t *remains_hold(accel_graph_t *g, graph_remains_t held) {
  graph_remains_t *r = g->replays ? malloc(sizeof *r) : NULL;
  if (r) {
    *r = held;
    /* the holder is gone: an unregister of memory it used waits for the replays, not refuses */
    accel_allocator_pins_retiring(g->dev->mem, &r->pins);
    accel_device_retain(g->dev);
  } else {
    if (g->replays) accel_device_drain(g->dev); /* out of host memory: nothing to defer with */
    remains_release(&held);
  }
  return r;
}

/* Drops captured work and the pool reference (graph lock held, not capturing); what replays
 * may still use goes to *remains (remains_hold). */
static void graph_clear(accel_graph_t *g, graph_remains_t **remains) {
  graph_remains_t held = {.dev = g->dev,
                          .native = g->native,
                          .replay_done = g->replay_done,
                          .lists = g->lists,
                          .pool = g->pool,
                          .pins = g->pins,
                          .last_replay_stream = g->last_replay_stream};
  g->lists = NULL; /* moved into held, like the rest */
  memset(&g->pins, 0, sizeof g->pins);
  if (g->pool) atomic_fetch_sub(&g->pool->graphs, 1); /* before held's reference may go */
  *remains = remains_hold(g, held);
  g->native = NULL;
  g->replay_done = NULL;
  g->pool = NULL;
  g->replays = 0;
  g->last_replay_stream = NULL;
  g->state = ACCEL_GRAPH_EMPTY;
}

accel_graph_remains_t *accel_graph_swap_contents(accel_graph_t *g, accel_graph_contents_t *next) {
  graph_remains_t held = {.dev = g->dev,
                          .native = g->native != next->native ? g->native : NULL,
                          .lists = g->lists,
                          .pool = g->pool,
                          .pins = g->pins};
  if (next->pool != g->pool) { /* the graphs holding each pool (accel_graph_memory_info) */
    if (next->pool) atomic_fetch_add(&next->pool->graphs, 1);
    if (g->pool) atomic_fetch_sub(&g->pool->graphs, 1);
  }
  g->lists = next->lists;
  g->pool = next->pool;
  g->pins = next->pins;
  g->native = next->native;
  memset(next, 0, sizeof *next);
  return remains_hold(g, held);
}

void accel_graph_release_remains(accel_device_t *dev, accel_graph_remains_t *r) {
  if (r) accel_device_retire(dev, remains_free, r);
}

accel_be_graph_t *accel_graph_instantiate_native(accel_device_t *dev, const accel_cmdlist_t *cmds) {
  const accel_backend_vtable_t *vt = dev->backend->vt;
  accel_be_graph_t *native = NULL;
  if (!vt->graph_instantiate || !dev->info.native_graphs) return NULL;
  if (vt->graph_instantiate(dev->impl, cmds->cmds, cmds->count, &native) == ACCEL_OK)
    return native;
  /* Results stay right but the replay is slower (a batch of the recorded commands), so the
   * first decline of the process is a warning: a run that expects native graphs notices it
   * (the device check counts them); later ones are INFO. capture_end's trace event says
   * "native":0 for each. */
  static atomic_int declined_once;
  accel_log(atomic_exchange(&declined_once, 1) ? ACCEL_LOG_INFO : ACCEL_LOG_WARN, "graph",
            "native graph declined (%s); replaying the recorded commands as one batch",
            accel_last_error());
  return NULL;
}

accel_status_t accel_graph_capture_begin(accel_graph_t *g, accel_stream_t *s, accel_pool_t *pool,
                                         accel_capture_mode_t mode) {
  accel_status_t st = graph_check(g, __func__);
  if (st != ACCEL_OK) return st;
  accel_device_t *dev = NULL;
  if ((st = accel_stream_check(s, __func__, &dev)) != ACCEL_OK) return st;
  if (pool && (st = pool_check(pool, __func__)) != ACCEL_OK) return st;
  if (dev != g->dev || (pool && pool->dev != dev))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: graph, stream and pool must belong to one "
                           "device", __func__);
  if (mode != ACCEL_CAPTURE_MODE_GLOBAL && mode != ACCEL_CAPTURE_MODE_THREAD_LOCAL &&
      mode != ACCEL_CAPTURE_MODE_RELAXED)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: unknown capture mode %d", __func__, (int)mode);
  if (s->is_default)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the default stream cannot capture; use a "
                           "stream from accel_stream_create", __func__);
  /* the private pool is made before taking locks (it takes the allocator's); the graph holds
   * its only reference (the device handle may be closed: the stream keeps the device) */
  accel_pool_t *use = pool;
  if (use) accel_pool_retain(use);
  else if ((st = accel_pool_create_internal(dev, false, &use)) != ACCEL_OK) return st;
  pthread_mutex_lock(&g->lock);
  pthread_mutex_lock(&s->lock);
  if (s->capture) {
    accel_capture_invalidate(s->capture, "a second capture was begun on the same stream");
    st = accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                         "%s: the stream is already capturing; that "
                         "capture is invalidated", __func__);
  } else if (g->state != ACCEL_GRAPH_EMPTY) {
    st = accel_set_error(ACCEL_ERROR_STATE,
                         "%s: the graph already holds a capture; call "
                         "accel_graph_reset first", __func__);
  } else {
    st = accel_lazy_flush_locked(s); /* queued lazy work is not part of the capture */
    if (st == ACCEL_OK) st = accel_capture_begin(g, s, use, mode, &g->capture);
    if (st == ACCEL_OK) {
      atomic_fetch_add(&use->graphs, 1);
      accel_allocator_arena_reset_peaks(use->arena);
      g->pool = use;
      g->capture_stream = s;
      g->state = ACCEL_GRAPH_CAPTURING;
      use = NULL;
    }
  }
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_unlock(&g->lock);
  if (use) accel_pool_release_ref(use);
  return st;
}

accel_status_t accel_graph_capture_end(accel_graph_t *g) {
  accel_status_t st = graph_check(g, __func__);
  if (st != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(g->trace_id, __func__);
  pthread_mutex_lock(&g->lock);
  if (g->state != ACCEL_GRAPH_CAPTURING) {
    pthread_mutex_unlock(&g->lock);
    return accel_set_error(ACCEL_ERROR_STATE, "%s: the graph is not "
                                              "capturing", __func__);
  }
  accel_capture_t *c = g->capture;
  if (!accel_capture_ended_by_caller(c)) {
    pthread_mutex_unlock(&g->lock);
    return accel_set_error(ACCEL_ERROR_STATE,
                           "%s: a GLOBAL or THREAD_LOCAL capture must be ended by the thread "
                           "that began it (as in CUDA); the capture goes on",
                           __func__);
  }
  accel_stream_t *origin = g->capture_stream;
  pthread_mutex_lock(&origin->lock);
  bool valid = false;
  accel_cmdlist_t cmds;
  accel_cmdlist_init(&cmds);
  accel_allocator_pins_t pins = {0};
  st = accel_capture_end(c, &cmds, &pins, &valid);
  pthread_mutex_unlock(&origin->lock);
  /* the capture's reference to the origin, then ours to the capture: an invalid capture's
   * commands may hold the last reference to a replayed graph's pool, whose collection fences
   * every stream, the origin included */
  accel_stream_release_ref(origin);
  accel_capture_release(c);
  g->capture = NULL;
  g->capture_stream = NULL;
  if (valid) {
    accel_allocator_arena_info_t a; /* its pool's peaks during the capture (memory info) */
    accel_allocator_arena_info(g->pool->arena, &a);
    g->capture_peak_allocated = a.peak_allocated;
    g->capture_peak_reserved = a.peak_reserved;
    g->pins = pins;
    st = lists_new(&cmds, &g->lists);
  }
  accel_cmdlist_free(&cmds); /* an invalid capture's, if it left any */
  if (valid && st == ACCEL_OK) {
    g->native = accel_graph_instantiate_native(g->dev, &g->lists->cmds);
    g->state = ACCEL_GRAPH_READY;
  } else {
    accel_status_t keep = st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", accel_last_error());
    graph_remains_t *r = NULL;
    graph_clear(g, &r);
    pthread_mutex_unlock(&g->lock);
    accel_graph_release_remains(g->dev, r);
    pthread_mutex_lock(&g->lock);
    st = accel_set_error(keep, "%s", msg);
  }
  size_t n = g->lists ? g->lists->cmds.count : 0u;
  pthread_mutex_unlock(&g->lock);
  accel_trace_end_args(&t, "\"nodes\":%zu,\"ok\":%d,\"native\":%d", n, st == ACCEL_OK,
                       g->native != NULL);
  return st;
}

/* A replay on another stream than the last replay's waits for it: the last stream records
 * g->replay_done (covering that replay) and s waits on it. One stream lock at a time (graph
 * lock held). */
static accel_status_t order_after_last_replay(accel_graph_t *g, accel_stream_t *s) {
  accel_stream_t *last = g->last_replay_stream;
  if (!last || last == s) return ACCEL_OK;
  const accel_backend_vtable_t *vt = g->dev->backend->vt;
  accel_status_t st = ACCEL_OK;
  if (!g->replay_done)
    st = vt->event_create(g->dev->impl, ACCEL_EVENT_DISABLE_TIMING, &g->replay_done);
  if (st != ACCEL_OK) return st;
  pthread_mutex_lock(&last->lock);
  st = vt->event_record(g->replay_done, last->impl); /* the replay was submitted, not queued */
  pthread_mutex_unlock(&last->lock);
  if (st != ACCEL_OK) return st;
  pthread_mutex_lock(&s->lock);
  if (!s->capture) st = accel_lazy_flush_locked(s);
  if (st == ACCEL_OK && !s->capture) st = vt->stream_wait_event(s->impl, g->replay_done);
  pthread_mutex_unlock(&s->lock);
  return st;
}

/* Remembers the stream of the last eager replay (graph lock held). Returns the previous one,
 * whose reference the caller drops once it holds no lock: it may be the stream's last, and a
 * stream's teardown synchronizes it. */
static accel_stream_t *note_replay(accel_graph_t *g, accel_stream_t *s) {
  accel_stream_t *previous = g->last_replay_stream;
  if (previous == s) return NULL;
  accel_stream_retain(s);
  g->last_replay_stream = s;
  return previous;
}

accel_status_t accel_graph_replay(accel_graph_t *g, accel_stream_t *s) {
  accel_status_t st = graph_check(g, __func__);
  if (st != ACCEL_OK) return st;
  accel_device_t *dev = NULL;
  if ((st = accel_stream_check(s, __func__, &dev)) != ACCEL_OK) return st;
  if (dev != g->dev)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the stream belongs to another device", __func__);
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, __func__);
  pthread_mutex_lock(&g->lock);
  if (g->state != ACCEL_GRAPH_READY) {
    pthread_mutex_unlock(&g->lock);
    return accel_set_error(ACCEL_ERROR_STATE, "%s: %s", __func__,
                           g->state == ACCEL_GRAPH_CAPTURING
                               ? "the graph is still capturing"
                               : "the graph holds no capture (never captured, reset, or its "
                                 "capture failed)");
  }
  const accel_cmdlist_t *flat = &g->lists->flat;
  st = order_after_last_replay(g, s);
  accel_stream_t *previous = NULL;
  pthread_mutex_lock(&s->lock);
  if (st != ACCEL_OK) {
    /* the previous replay could not be ordered before this one */
  } else if (s->capture) {
    /* replay inside a capture: the graph's commands become part of the new capture, which
     * keeps what they use: chunk tables and the graph's pool */
    for (size_t i = 0; i < flat->count && st == ACCEL_OK; ++i)
      st = accel_capture_record_locked(s, &flat->cmds[i], NULL);
    for (size_t i = 0; i < flat->nkeeps && st == ACCEL_OK; ++i)
      st = accel_capture_keep_locked(s, flat->keeps[i]);
    if (st == ACCEL_OK) st = accel_capture_pin_locked(s, NULL, NULL, 0, &g->pins);
    if (st == ACCEL_OK && g->pool) {
      accel_keepalive_t *k = accel_pool_keepalive(g->pool);
      st = k ? accel_capture_keep_locked(s, k)
             : accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
      if (k) accel_keepalive_release(k);
    }
  } else {
    st = accel_lazy_flush_locked(s);
    if (st == ACCEL_OK && !g->native) st = accel_stream_run_batch(s, flat->cmds, flat->count);
    if (st == ACCEL_OK && g->native)
      st = accel_fault_launches(flat->cmds, flat->count, "graph_launch");
    if (st == ACCEL_OK && g->native) st = dev->backend->vt->graph_launch(g->native, s->impl);
    if (st == ACCEL_OK) previous = note_replay(g, s);
  }
  pthread_mutex_unlock(&s->lock);
  if (st == ACCEL_OK) g->replays++;
  size_t n = flat->count;
  pthread_mutex_unlock(&g->lock);
  if (previous) accel_stream_release_ref(previous);
  accel_trace_end_args(&t, "\"nodes\":%zu,\"native\":%d", n, g->native != NULL);
  return st;
}

accel_status_t accel_graph_reset(accel_graph_t *g) {
  accel_status_t st = graph_check(g, __func__);
  if (st != ACCEL_OK) return st;
  graph_remains_t *r = NULL;
  pthread_mutex_lock(&g->lock);
  if (g->state == ACCEL_GRAPH_CAPTURING) {
    st = accel_set_error(ACCEL_ERROR_STATE, "%s: the graph is capturing; end the "
                                            "capture first", __func__);
  } else {
    graph_clear(g, &r);
  }
  pthread_mutex_unlock(&g->lock);
  accel_graph_release_remains(g->dev, r);
  return st;
}

static accel_status_t graph_release_user(accel_graph_t *g, const char *fn) {
  accel_status_t st = graph_check(g, fn);
  if (st != ACCEL_OK) return st;
  pthread_mutex_lock(&g->lock);
  if (g->state == ACCEL_GRAPH_CAPTURING) {
    pthread_mutex_unlock(&g->lock);
    return accel_set_error(ACCEL_ERROR_STATE, "%s: the graph is capturing; end "
                                              "the capture first", fn);
  }
  /* of two concurrent destroys, one drops the user's reference; the other gets INVALID_HANDLE */
  if ((st = accel_handle_drop_user(g, ACCEL_HANDLE_GRAPH, fn)) != ACCEL_OK) {
    pthread_mutex_unlock(&g->lock);
    return st;
  }
  graph_remains_t *r = NULL;
  graph_clear(g, &r);
  pthread_mutex_unlock(&g->lock);
  accel_device_t *dev = g->dev;
  accel_graph_release_remains(dev, r);
  pthread_mutex_destroy(&g->lock);
  free(g);
  accel_device_release_ref(dev);
  return ACCEL_OK;
}

ACCEL_DEFINE_RELEASE(accel_graph_t, accel_graph_release, accel_graph_destroy, graph_release_user)

void accel_graph_release_owned(accel_graph_t *g, const char *fn) {
  (void)graph_release_user(g, fn);
}

accel_status_t accel_graph_node_count(accel_graph_t *g, size_t *count) {
  accel_status_t st = graph_check(g, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(count, __func__, "count is NULL");
  pthread_mutex_lock(&g->lock);
  *count = g->state == ACCEL_GRAPH_READY ? g->lists->flat.count : 0;
  pthread_mutex_unlock(&g->lock);
  return ACCEL_OK;
}

/* The pool a graph holds, as a user reference (graph_pool.c keeps pools). */
accel_status_t accel_graph_pool(accel_graph_t *g, accel_pool_t **out) {
  accel_status_t st = accel_handle_check(g, ACCEL_HANDLE_GRAPH, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  pthread_mutex_lock(&g->lock);
  accel_pool_t *p = g->pool;
  if (p) {
    accel_pool_retain(p);
    accel_handle_add_user(&p->hdr); /* the caller's reference, released with accel_pool_release */
  }
  pthread_mutex_unlock(&g->lock);
  if (!p)
    return accel_set_error(ACCEL_ERROR_STATE,
                           "%s: the graph has no pool (never captured or reset)", __func__);
  *out = p;
  return ACCEL_OK;
}
