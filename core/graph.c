/*
 * Graphs: capture_begin/end, replay, reset and graph memory pools. A captured graph replays
 * through the backend's native graph when it has one (unless ACCEL_DISABLE_GRAPHS=1 or the
 * backend declines the command list), otherwise as one batch of the recorded commands.
 */
#include <stdio.h>
#include <stdlib.h>

#include "capture.h"
#include "internal.h"
#include "trace.h"

static accel_status_t graph_check(accel_graph_t *g, const char *fn) {
  return accel_handle_check(g, ACCEL_HANDLE_GRAPH, fn);
}

static accel_status_t pool_check(accel_pool_t *p, const char *fn) {
  return accel_handle_check(p, ACCEL_HANDLE_POOL, fn);
}

/* ---------------------------------------------------------------------------------------- */
/* pools: a handle over a graph-pool arena; graphs and users hold references */

static void pool_retain(accel_pool_t *p) { atomic_fetch_add(&p->hdr.refcount, 1); }

static void pool_release(accel_pool_t *p) {
  if (atomic_fetch_sub(&p->hdr.refcount, 1) != 1) return;
  accel_device_t *dev = p->dev;
  accel_handle_unregister(&p->hdr);
  if (accel_mempool_arena_release(p->arena)) {
    /* the pool's memory goes back once no queued work (a replay) can still use it */
    accel_device_drain(dev);
    accel_mempool_collect(dev->mem);
  }
  free(p);
  accel_device_release(dev);
}

accel_status_t accel_graph_pool_create(accel_device_t *dev, accel_pool_t **out) {
  accel_status_t st = accel_device_check(dev, "accel_graph_pool_create");
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, "accel_graph_pool_create", "out is NULL");
  accel_pool_t *p = calloc(1, sizeof *p);
  if (!p) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if ((st = accel_mempool_arena_create(dev->mem, &p->arena)) != ACCEL_OK) {
    free(p);
    return st;
  }
  p->dev = dev;
  accel_device_retain(dev);
  accel_handle_register(&p->hdr, ACCEL_HANDLE_POOL, dev->backend->vt);
  *out = p;
  return ACCEL_OK;
}

accel_status_t accel_pool_release(accel_pool_t *p) {
  accel_status_t st = pool_check(p, "accel_pool_release");
  if (st != ACCEL_OK) return st;
  pool_release(p);
  return ACCEL_OK;
}

accel_status_t accel_graph_pool(accel_graph_t *g, accel_pool_t **out) {
  accel_status_t st = graph_check(g, "accel_graph_pool");
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, "accel_graph_pool", "out is NULL");
  pthread_mutex_lock(&g->lock);
  accel_pool_t *p = g->pool;
  if (p) pool_retain(p);
  pthread_mutex_unlock(&g->lock);
  if (!p)
    return accel_set_error(ACCEL_ERROR_STATE,
                           "accel_graph_pool: the graph has no pool (never captured or reset)");
  *out = p;
  return ACCEL_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* graphs */

accel_status_t accel_graph_create(accel_device_t *dev, accel_graph_t **out) {
  accel_status_t st = accel_device_check(dev, "accel_graph_create");
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, "accel_graph_create", "out is NULL");
  accel_graph_t *g = calloc(1, sizeof *g);
  if (!g) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  g->dev = dev;
  pthread_mutex_init(&g->lock, NULL);
  accel_cmdlist_init(&g->cmds);
  accel_cmdlist_init(&g->flat);
  accel_device_retain(dev);
  accel_handle_register(&g->hdr, ACCEL_HANDLE_GRAPH, dev->backend->vt);
  static atomic_int serial;
  g->trace_id = accel_trace_new_track("graph", dev->backend->name, atomic_fetch_add(&serial, 1));
  *out = g;
  return ACCEL_OK;
}

/* Drops captured work and the pool reference (graph lock held, not capturing). */
static void graph_clear(accel_graph_t *g) {
  /* a replay may still be running: its memory and native graph must outlive it */
  if (g->replays) accel_device_drain(g->dev);
  if (g->native) g->dev->backend->vt->graph_destroy(g->native);
  g->native = NULL;
  accel_cmdlist_clear(&g->cmds);
  accel_cmdlist_clear(&g->flat);
  if (g->pool) pool_release(g->pool);
  g->pool = NULL;
  g->replays = 0;
  g->state = ACCEL_GRAPH_EMPTY;
}

accel_status_t accel_graph_capture_begin(accel_graph_t *g, accel_stream_t *s, accel_pool_t *pool,
                                         accel_capture_mode_t mode) {
  accel_status_t st = graph_check(g, "accel_graph_capture_begin");
  if (st != ACCEL_OK) return st;
  accel_device_t *dev = NULL;
  if ((st = accel_stream_check(s, "accel_graph_capture_begin", &dev)) != ACCEL_OK) return st;
  if (pool && (st = pool_check(pool, "accel_graph_capture_begin")) != ACCEL_OK) return st;
  if (dev != g->dev || (pool && pool->dev != dev))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "accel_graph_capture_begin: graph, stream and pool must belong to one "
                           "device");
  if (mode != ACCEL_CAPTURE_MODE_GLOBAL && mode != ACCEL_CAPTURE_MODE_THREAD_LOCAL &&
      mode != ACCEL_CAPTURE_MODE_RELAXED)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "accel_graph_capture_begin: unknown capture mode %d", (int)mode);
  if (s->is_default)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "accel_graph_capture_begin: the default stream cannot capture; use a "
                           "stream from accel_stream_create");
  /* the private pool is made before taking locks (it takes the device's locks) */
  accel_pool_t *use = pool;
  if (use) pool_retain(use);
  else if ((st = accel_graph_pool_create(dev, &use)) != ACCEL_OK) return st;
  pthread_mutex_lock(&g->lock);
  pthread_mutex_lock(&s->lock);
  if (s->capture) {
    accel_capture_invalidate(s->capture, "a second capture was begun on the same stream");
    st = accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                         "accel_graph_capture_begin: the stream is already capturing; that "
                         "capture is invalidated");
  } else if (g->state != ACCEL_GRAPH_EMPTY) {
    st = accel_set_error(ACCEL_ERROR_STATE,
                         "accel_graph_capture_begin: the graph already holds a capture; call "
                         "accel_graph_reset first");
  } else {
    st = accel_lazy_flush_locked(s); /* queued lazy work is not part of the capture */
    if (st == ACCEL_OK) st = accel_capture_begin(g, s, use, mode, &g->capture);
    if (st == ACCEL_OK) {
      g->pool = use;
      g->capture_stream = s;
      g->state = ACCEL_GRAPH_CAPTURING;
      use = NULL;
    }
  }
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_unlock(&g->lock);
  if (use) pool_release(use);
  return st;
}

accel_status_t accel_graph_capture_end(accel_graph_t *g) {
  accel_status_t st = graph_check(g, "accel_graph_capture_end");
  if (st != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(g->trace_id, "accel_graph_capture_end");
  pthread_mutex_lock(&g->lock);
  if (g->state != ACCEL_GRAPH_CAPTURING) {
    pthread_mutex_unlock(&g->lock);
    return accel_set_error(ACCEL_ERROR_STATE, "accel_graph_capture_end: the graph is not "
                                              "capturing");
  }
  accel_capture_t *c = g->capture;
  accel_stream_t *origin = g->capture_stream;
  pthread_mutex_lock(&origin->lock);
  bool valid = false;
  accel_cmdlist_t cmds;
  accel_cmdlist_init(&cmds);
  st = accel_capture_end(c, &cmds, &valid);
  pthread_mutex_unlock(&origin->lock);
  g->capture = NULL;
  g->capture_stream = NULL;
  if (valid) {
    accel_cmdlist_free(&g->cmds); /* storage kept by an earlier graph_clear */
    g->cmds = cmds;
    st = accel_cmdlist_copy(&g->flat, &g->cmds, true);
  }
  if (valid && st == ACCEL_OK) {
    const accel_backend_vtable_t *vt = g->dev->backend->vt;
    if (vt->graph_instantiate && g->dev->info.native_graphs &&
        vt->graph_instantiate(g->dev->impl, g->cmds.cmds, g->cmds.count, &g->native) !=
            ACCEL_OK) {
      accel_log(ACCEL_LOG_INFO, "graph", "native graph declined (%s); replaying the recorded "
                                         "commands as one batch",
                accel_last_error());
      g->native = NULL;
    }
    g->state = ACCEL_GRAPH_READY;
  } else {
    accel_status_t keep = st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", accel_last_error());
    graph_clear(g);
    st = accel_set_error(keep, "%s", msg);
  }
  size_t n = g->cmds.count;
  pthread_mutex_unlock(&g->lock);
  accel_trace_end_args(&t, "\"nodes\":%zu,\"ok\":%d", n, st == ACCEL_OK);
  return st;
}

accel_status_t accel_graph_replay(accel_graph_t *g, accel_stream_t *s) {
  accel_status_t st = graph_check(g, "accel_graph_replay");
  if (st != ACCEL_OK) return st;
  accel_device_t *dev = NULL;
  if ((st = accel_stream_check(s, "accel_graph_replay", &dev)) != ACCEL_OK) return st;
  if (dev != g->dev)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "accel_graph_replay: the stream belongs to another device");
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, "accel_graph_replay");
  pthread_mutex_lock(&g->lock);
  if (g->state != ACCEL_GRAPH_READY) {
    pthread_mutex_unlock(&g->lock);
    return accel_set_error(ACCEL_ERROR_STATE,
                           g->state == ACCEL_GRAPH_CAPTURING
                               ? "accel_graph_replay: the graph is still capturing"
                               : "accel_graph_replay: the graph holds no capture (never "
                                 "captured, reset, or its capture failed)");
  }
  pthread_mutex_lock(&s->lock);
  if (s->capture) {
    /* replay inside a capture: the graph's commands become part of the new capture */
    for (size_t i = 0; i < g->flat.count && st == ACCEL_OK; ++i)
      st = accel_capture_record_locked(s, &g->flat.cmds[i], NULL);
    for (size_t i = 0; i < g->flat.nkeeps && st == ACCEL_OK; ++i)
      st = accel_capture_keep_locked(s, g->flat.keeps[i]);
  } else {
    st = accel_lazy_flush_locked(s);
    if (st == ACCEL_OK)
      st = g->native ? dev->backend->vt->graph_launch(g->native, s->impl)
                     : accel_stream_run_batch(s, g->flat.cmds, g->flat.count);
  }
  pthread_mutex_unlock(&s->lock);
  if (st == ACCEL_OK) g->replays++;
  size_t n = g->flat.count;
  pthread_mutex_unlock(&g->lock);
  accel_trace_end_args(&t, "\"nodes\":%zu,\"native\":%d", n, g->native != NULL);
  return st;
}

accel_status_t accel_graph_reset(accel_graph_t *g) {
  accel_status_t st = graph_check(g, "accel_graph_reset");
  if (st != ACCEL_OK) return st;
  pthread_mutex_lock(&g->lock);
  if (g->state == ACCEL_GRAPH_CAPTURING) {
    st = accel_set_error(ACCEL_ERROR_STATE, "accel_graph_reset: the graph is capturing; end the "
                                            "capture first");
  } else {
    graph_clear(g);
  }
  pthread_mutex_unlock(&g->lock);
  return st;
}

accel_status_t accel_graph_destroy(accel_graph_t *g) {
  accel_status_t st = graph_check(g, "accel_graph_destroy");
  if (st != ACCEL_OK) return st;
  pthread_mutex_lock(&g->lock);
  if (g->state == ACCEL_GRAPH_CAPTURING) {
    pthread_mutex_unlock(&g->lock);
    return accel_set_error(ACCEL_ERROR_STATE, "accel_graph_destroy: the graph is capturing; end "
                                              "the capture first");
  }
  graph_clear(g);
  accel_handle_unregister(&g->hdr);
  pthread_mutex_unlock(&g->lock);
  accel_device_t *dev = g->dev;
  accel_cmdlist_free(&g->cmds);
  accel_cmdlist_free(&g->flat);
  pthread_mutex_destroy(&g->lock);
  free(g);
  accel_device_release(dev);
  return ACCEL_OK;
}

accel_status_t accel_graph_node_count(accel_graph_t *g, size_t *count) {
  accel_status_t st = graph_check(g, "accel_graph_node_count");
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(count, "accel_graph_node_count", "count is NULL");
  pthread_mutex_lock(&g->lock);
  *count = g->state == ACCEL_GRAPH_READY ? g->flat.count : 0;
  pthread_mutex_unlock(&g->lock);
  return ACCEL_OK;
}
