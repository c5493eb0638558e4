/*
 * Stream capture, enforced in core with CUDA's rules for every backend:
 *  - work submitted to a capturing stream is recorded, not run;
 *  - a stream that waits on an event recorded in the capture joins it (fork); every joined
 *    stream's work must flow back into the origin stream through event waits before
 *    capture_end (join), otherwise the capture is invalid; the default stream (and the
 *    device's internal streams) never join;
 *  - potentially unsafe calls (synchronize, query, blocking copy, accel_malloc) invalidate the
 *    capture when it covers the calling thread: GLOBAL from any thread, THREAD_LOCAL from the
 *    capturing thread, RELAXED never (calls on the capturing streams themselves always do).
 * Lifetime: the graph holds a reference while capturing, every event whose last record was
 * recorded in the capture holds one, and so does whoever read such an event's capture; the
 * capture holds its joined streams' and recorded events' references until it ends.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"

#define MAX_CAPTURE_STREAMS 64

struct accel_capture {
  atomic_int refs;
  accel_graph_t *graph;
  accel_device_t *dev;
  accel_capture_mode_t mode;
  pthread_t thread;
  bool invalidated;             /* guarded by active_lock */
  bool ended;                   /* guarded by active_lock */
  char reason[512];
  accel_pool_t *pool;
  pthread_mutex_t lock;         /* cmds, events, next_event_slot: joined streams record too */
  accel_cmdlist_t cmds;
  /* slot -> stream (a reference each; slot 0 is the origin); written under active_lock */
  accel_stream_t *streams[MAX_CAPTURE_STREAMS];
  uint32_t nstreams;
  accel_allocator_pins_t pins;  /* allocations the recorded work uses */
  accel_event_t **events;       /* events recorded in the capture, a reference each */
  size_t nevents, capevents;
  uint32_t next_event_slot;
  /* open conditional regions (accel_graph_capture_if / _while), innermost last, all on the
   * stream of slot cond_slot; private: the capture exists for one region opened outside a
   * capture (graph_cond.c ends and replays it when the region closes). Guarded by lock. */
  uint32_t cond_kinds[ACCEL_CAPTURE_COND_DEPTH];
  uint32_t cond_depth, cond_slot;
  bool cond_private;
  accel_capture_t *next;
};

static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;
static accel_capture_t *active;
atomic_int accel_active_captures;

/* Points s at the capture it records into (NULL: none); the caller holds s->lock. */
static void set_capture(accel_stream_t *s, accel_capture_t *c) {
  s->capture = c;
  atomic_store_explicit(&s->capturing, c != NULL, memory_order_release);
}

static void invalidate_locked(accel_capture_t *c, const char *reason) {
  if (c->invalidated) return;
  c->invalidated = true;
  snprintf(c->reason, sizeof c->reason, "%s", reason);
}

void accel_capture_invalidate(accel_capture_t *c, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&active_lock);
  invalidate_locked(c, buf);
  pthread_mutex_unlock(&active_lock);
}

static bool is_invalid(accel_capture_t *c) {
  pthread_mutex_lock(&active_lock);
  bool inv = c->invalidated;
  pthread_mutex_unlock(&active_lock);
  return inv;
}

/* Invalidates the captures a call of fn covers (every one when any, else per their modes and
 * stream) and refuses the call when there were some. */
static accel_status_t check_captures(const char *fn, accel_stream_t *stream, bool any) {
  if (atomic_load(&accel_active_captures) == 0) return ACCEL_OK;
  pthread_t self = pthread_self();
  int hits = 0;
  pthread_mutex_lock(&active_lock);
  for (accel_capture_t *c = active; c; c = c->next) {
    bool on_stream = false;
    for (uint32_t i = 0; stream && i < c->nstreams; ++i) on_stream |= c->streams[i] == stream;
    bool covered = any || on_stream || c->mode == ACCEL_CAPTURE_MODE_GLOBAL ||
                   (c->mode == ACCEL_CAPTURE_MODE_THREAD_LOCAL && pthread_equal(c->thread, self));
    if (!covered) continue;
    char why[256];
    snprintf(why, sizeof why, "%s called during capture%s", fn,
             on_stream ? " on a capturing stream" : "");
    invalidate_locked(c, why);
    hits++;
  }
  pthread_mutex_unlock(&active_lock);
  if (!hits) return ACCEL_OK;
  return accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                         "%s is not allowed while %s; the capture is invalidated", fn,
                         any ? "any stream captures (in any mode)"
                         : stream ? "a stream capture is active on this stream"
                                  : "a stream capture is active");
}

accel_status_t accel_capture_check_unsafe(const char *fn, accel_stream_t *stream) {
  return check_captures(fn, stream, false);
}

accel_status_t accel_capture_check_none(const char *fn) { return check_captures(fn, NULL, true); }

void accel_capture_retain(accel_capture_t *c) { atomic_fetch_add(&c->refs, 1); }

void accel_capture_release(accel_capture_t *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  accel_allocator_unpin(c->dev->mem, &c->pins);
  accel_cmdlist_free(&c->cmds);
  free(c->events);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

accel_capture_t *accel_event_capture_get(accel_event_t *e, uint32_t *slot) {
  pthread_mutex_lock(&e->lock);
  accel_capture_t *c = e->capture;
  if (c) accel_capture_retain(c);
  if (slot) *slot = e->capture_event_slot;
  pthread_mutex_unlock(&e->lock);
  if (!c) return NULL;
  pthread_mutex_lock(&active_lock);
  bool ended = c->ended;
  pthread_mutex_unlock(&active_lock);
  if (!ended) return c;
  accel_capture_release(c);
  return NULL;
}

bool accel_capture_ended_by_caller(const accel_capture_t *c) {
  return c->mode == ACCEL_CAPTURE_MODE_RELAXED || pthread_equal(c->thread, pthread_self());
}

static accel_status_t invalidated_error(accel_capture_t *c) {
  return accel_set_error(ACCEL_ERROR_CAPTURE_INVALIDATED,
                         "the capture was invalidated earlier (%s); end it and capture again",
                         c->reason);
}

accel_status_t accel_capture_begin(accel_graph_t *g, accel_stream_t *s, accel_pool_t *pool,
                                   accel_capture_mode_t mode, accel_capture_t **out) {
  accel_capture_t *c = calloc(1, sizeof *c);
  if (!c) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  atomic_init(&c->refs, 1); /* the graph's, dropped by accel_capture_end */
  pthread_mutex_init(&c->lock, NULL);
  c->graph = g;
  c->dev = s->dev;
  c->mode = mode;
  c->thread = pthread_self();
  c->pool = pool;
  c->pins.owner_kind = "graph"; /* the pins move to the graph at capture end */
  c->pins.owner = g;
  accel_cmdlist_init(&c->cmds);
  accel_stream_retain(s);
  c->streams[0] = s;
  c->nstreams = 1;
  set_capture(s, c);
  s->capture_slot = 0;
  pthread_mutex_lock(&active_lock);
  c->next = active;
  active = c;
  atomic_fetch_add(&accel_active_captures, 1);
  pthread_mutex_unlock(&active_lock);
  *out = c;
  return ACCEL_OK;
}

accel_allocator_arena_t *accel_capture_arena(accel_capture_t *c) { return c->pool->arena; }

/* Invalidates c for what happened inside one of its conditional regions (c->lock held). */
static accel_status_t cond_refuse(accel_capture_t *c, const char *what) {
  accel_capture_invalidate(c, "%s inside a conditional region", what);
  return accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                         "%s inside a conditional region (accel_graph_capture_if / _while): a "
                         "region's work stays on its stream, without event edges; the capture "
                         "is invalidated", what);
}

accel_status_t accel_capture_record_locked(accel_stream_t *s, const accel_cmd_t *cmd,
                                           accel_keepalive_t *keep) {
  accel_capture_t *c = s->capture;
  if (is_invalid(c)) return invalidated_error(c);
  accel_cmd_t rec = *cmd;
  rec.stream_slot = s->capture_slot;
  accel_allocator_t *mem = s->dev->mem;
  pthread_mutex_lock(&c->lock);
  accel_status_t st = c->cond_depth && rec.stream_slot != c->cond_slot
                          ? cond_refuse(c, "work of another stream of the capture")
                          : accel_cmdlist_append(&c->cmds, &rec, keep);
  if (st == ACCEL_OK && cmd->type == ACCEL_CMD_MEMCPY) {
    st = accel_allocator_pin(mem, cmd->u.memcpy.dst, cmd->u.memcpy.size, &c->pins);
    if (st == ACCEL_OK)
      st = accel_allocator_pin(mem, cmd->u.memcpy.src, cmd->u.memcpy.size, &c->pins);
  } else if (st == ACCEL_OK && cmd->type == ACCEL_CMD_MEMSET) {
    st = accel_allocator_pin(mem, cmd->u.memset.dst, cmd->u.memset.size, &c->pins);
  }
  pthread_mutex_unlock(&c->lock);
  return st;
}

accel_status_t accel_capture_pin_locked(accel_stream_t *s, accel_range_fn ranges, void *ctx,
                                        size_t n, const accel_allocator_pins_t *more) {
  accel_capture_t *c = s->capture;
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < n && st == ACCEL_OK; ++i) {
    const void *ptr;
    size_t size;
    if (ranges(ctx, i, &ptr, &size)) st = accel_allocator_pin(s->dev->mem, ptr, size, &c->pins);
  }
  if (st == ACCEL_OK && more) st = accel_allocator_pin_again(s->dev->mem, more, &c->pins);
  pthread_mutex_unlock(&c->lock);
  return st;
}

accel_status_t accel_capture_keep_locked(accel_stream_t *s, accel_keepalive_t *keep) {
  accel_capture_t *c = s->capture;
  pthread_mutex_lock(&c->lock);
  accel_status_t st = accel_cmdlist_keep(&c->cmds, keep);
  pthread_mutex_unlock(&c->lock);
  return st;
}

accel_status_t accel_capture_check_free_locked(accel_stream_t *s, void *ptr) {
  accel_capture_t *c = s->capture;
  if (is_invalid(c)) return invalidated_error(c);
  if (accel_allocator_block_arena(s->dev->mem, ptr) != c->pool->arena) {
    accel_capture_invalidate(c, "accel_free_async of memory not allocated from the capture's "
                                "pool");
    return accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                           "accel_free_async: %p was not allocated from the capturing graph's "
                           "pool; the capture is invalidated",
                           ptr);
  }
  return ACCEL_OK;
}

accel_status_t accel_capture_event_record_locked(accel_stream_t *s, accel_event_t *e) {
  accel_capture_t *c = s->capture;
  if (is_invalid(c)) return invalidated_error(c);
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&c->lock);
  if (c->cond_depth) {
    st = cond_refuse(c, "an event record");
    pthread_mutex_unlock(&c->lock);
    return st;
  }
  if (c->nevents == c->capevents) {
    size_t cap = c->capevents ? c->capevents * 2 : 8;
    accel_event_t **n = realloc(c->events, cap * sizeof *n);
    if (n) {
      c->events = n;
      c->capevents = cap;
    } else {
      st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
  }
  accel_cmd_t rec = {.type = ACCEL_CMD_EVENT_RECORD, .stream_slot = s->capture_slot};
  rec.u.event.event_slot = c->next_event_slot;
  if (st == ACCEL_OK) st = accel_cmdlist_append(&c->cmds, &rec, NULL);
  size_t position = c->cmds.count - 1;
  if (st == ACCEL_OK) {
    c->next_event_slot++;
    accel_event_retain(e);
    c->events[c->nevents++] = e;
  }
  pthread_mutex_unlock(&c->lock);
  if (st != ACCEL_OK) return st;
  accel_capture_retain(c);
  pthread_mutex_lock(&e->lock);
  accel_capture_t *old = e->capture;
  e->capture = c;
  e->record_captured = true;
  e->capture_event_slot = rec.u.event.event_slot;
  e->capture_position = position;
  e->capture_stream_slot = s->capture_slot;
  pthread_mutex_unlock(&e->lock);
  if (old) accel_capture_release(old);
  return ACCEL_OK;
}

/* ec: the capture e was recorded in (a reference held by the caller), or NULL. */
accel_status_t accel_capture_event_wait_locked(accel_stream_t *s, accel_capture_t *ec,
                                               uint32_t slot) {
  accel_capture_t *sc = s->capture;
  if (!ec) {
    accel_capture_invalidate(sc, "a capturing stream waited on an event recorded outside the "
                                 "capture");
    return accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                           "accel_stream_wait_event: a capturing stream cannot wait on an event "
                           "recorded outside the capture; the capture is invalidated");
  }
  if (sc && sc != ec) {
    accel_capture_invalidate(sc, "waited on an event of another capture");
    accel_capture_invalidate(ec, "its event was waited on by another capture");
    return accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                           "accel_stream_wait_event: the event belongs to a different capture; "
                           "both captures are invalidated");
  }
  if (is_invalid(ec)) return invalidated_error(ec);
  if (!sc) {
    /* fork: the stream joins the capture */
    if (s->is_default || s->internal) {
      accel_capture_invalidate(ec, "the default stream waited on an event of the capture");
      return accel_set_error(ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
                             "accel_stream_wait_event: the default stream cannot join a capture "
                             "(its blocking calls would be recorded instead of run); the capture "
                             "is invalidated");
    }
    if (s->dev != ec->dev)
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "stream of another device");
    accel_status_t st = accel_lazy_flush_locked(s);
    if (st != ACCEL_OK) return st;
    pthread_mutex_lock(&active_lock);
    if (ec->ended) {
      st = accel_set_error(ACCEL_ERROR_STATE,
                           "accel_stream_wait_event: the event's capture ended meanwhile");
    } else if (ec->nstreams == MAX_CAPTURE_STREAMS) {
      st = accel_set_error(ACCEL_ERROR_UNSUPPORTED, "more than %d streams in one capture",
                           MAX_CAPTURE_STREAMS);
    } else {
      accel_stream_retain(s);
      set_capture(s, ec);
      s->capture_slot = ec->nstreams;
      ec->streams[ec->nstreams++] = s;
    }
    pthread_mutex_unlock(&active_lock);
    if (st != ACCEL_OK) return st;
  }
  accel_cmd_t rec = {.type = ACCEL_CMD_EVENT_WAIT, .stream_slot = s->capture_slot};
  rec.u.event.event_slot = slot;
  pthread_mutex_lock(&ec->lock);
  accel_status_t st = ec->cond_depth ? cond_refuse(ec, "an event wait")
                                     : accel_cmdlist_append(&ec->cmds, &rec, NULL);
  pthread_mutex_unlock(&ec->lock);
  return st;
}

/* Returns the first joined stream slot whose last command does not flow back into the origin
 * stream before the end, or 0 when every stream rejoined. */
static uint32_t find_unjoined(const accel_capture_t *c) {
  const accel_cmdlist_t *l = &c->cmds;
  int64_t need[MAX_CAPTURE_STREAMS], last[MAX_CAPTURE_STREAMS];
  for (uint32_t i = 0; i < MAX_CAPTURE_STREAMS; ++i) need[i] = last[i] = -1;
  need[0] = INT64_MAX;
  int64_t *record_pos = calloc(c->next_event_slot + 1, sizeof *record_pos);
  if (!record_pos) return 0;
  for (size_t i = 0; i < l->count; ++i) {
    last[l->cmds[i].stream_slot] = (int64_t)i;
    if (l->cmds[i].type == ACCEL_CMD_EVENT_RECORD)
      record_pos[l->cmds[i].u.event.event_slot] = (int64_t)i;
  }
  for (size_t i = l->count; i-- > 0;) {
    const accel_cmd_t *cmd = &l->cmds[i];
    if ((int64_t)i > need[cmd->stream_slot] || cmd->type != ACCEL_CMD_EVENT_WAIT) continue;
    int64_t p = record_pos[cmd->u.event.event_slot];
    uint32_t src = l->cmds[p].stream_slot;
    if (p > need[src]) need[src] = p;
  }
  free(record_pos);
  for (uint32_t sl = 1; sl < c->nstreams; ++sl)
    if (last[sl] > need[sl]) return sl;
  return 0;
}

accel_status_t accel_capture_end(accel_capture_t *c, accel_cmdlist_t *out,
                                 accel_allocator_pins_t *pins, bool *valid) {
  pthread_mutex_lock(&active_lock);
  for (accel_capture_t **pp = &active; *pp; pp = &(*pp)->next) {
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  }
  atomic_fetch_sub(&accel_active_captures, 1);
  c->ended = true; /* no stream joins from now on */
  pthread_mutex_unlock(&active_lock);
  accel_allocator_t *mem = c->dev->mem;
  for (uint32_t i = 0; i < c->nstreams; ++i) {
    accel_stream_t *s = c->streams[i];
    if (i) pthread_mutex_lock(&s->lock); /* the origin's lock is held by the caller */
    set_capture(s, NULL);
    if (i) pthread_mutex_unlock(&s->lock);
    /* blocks freed during the capture become reusable by later captures sharing the pool */
    accel_allocator_retag(mem, c->pool->arena, s, NULL);
  }
  /* every stream has left: nothing records any more */
  pthread_mutex_lock(&active_lock);
  bool invalid = c->invalidated;
  pthread_mutex_unlock(&active_lock);
  uint32_t open_regions = c->cond_depth; /* nothing records any more: no lock needed */
  uint32_t unjoined = invalid || open_regions ? 0 : find_unjoined(c);
  void *unjoined_stream = c->streams[unjoined];
  for (uint32_t i = 1; i < c->nstreams; ++i) accel_stream_release_ref(c->streams[i]);
  for (size_t i = 0; i < c->nevents; ++i) {
    accel_event_t *e = c->events[i];
    pthread_mutex_lock(&e->lock);
    bool mine = e->capture == c;
    if (mine) e->capture = NULL;
    pthread_mutex_unlock(&e->lock);
    if (mine) accel_capture_release(c); /* the event's reference; ours keeps c alive */
    accel_event_release_ref(e);
  }
  c->nevents = 0;
  accel_status_t st = ACCEL_OK;
  *valid = false;
  if (invalid) {
    st = invalidated_error(c);
  } else if (open_regions) {
    st = accel_set_error(ACCEL_ERROR_CAPTURE_INVALIDATED,
                         "accel_graph_capture_end: %u conditional region(s) still open (an "
                         "accel_graph_capture_if or _while without its end); the capture is "
                         "invalid", open_regions);
  } else if (unjoined) {
    st = accel_set_error(ACCEL_ERROR_CAPTURE_INVALIDATED,
                         "accel_graph_capture_end: stream %p joined the capture but its work "
                         "was not joined back into the capturing stream (record an event on it "
                         "and wait on that event from the capturing stream)",
                         unjoined_stream);
  } else {
    *out = c->cmds; /* moved */
    accel_cmdlist_init(&c->cmds);
    *pins = c->pins; /* moved */
    memset(&c->pins, 0, sizeof c->pins);
    *valid = true;
  }
  /* the origin stream's reference and the graph's reference to c go last, dropped by the
   * caller once it no longer holds the origin's lock (their releases may take stream locks) */
  c->streams[0] = NULL;
  return st;
}

accel_status_t accel_capture_cond_begin_locked(accel_stream_t *s, const accel_cmd_t *begin,
                                               bool private_capture) {
  accel_capture_t *c = s->capture;
  if (is_invalid(c)) return invalidated_error(c);
  accel_cmd_t rec = *begin;
  rec.stream_slot = s->capture_slot;
  pthread_mutex_lock(&c->lock);
  accel_status_t st = ACCEL_OK;
  if (c->cond_depth && rec.stream_slot != c->cond_slot)
    st = cond_refuse(c, "a region on another stream");
  else if (c->cond_depth == ACCEL_CAPTURE_COND_DEPTH)
    st = accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                         "conditional regions nest %d deep at most; the region was not opened",
                         ACCEL_CAPTURE_COND_DEPTH);
  /* the flag's allocation is pinned first: a failed pin leaves no region half open */
  if (st == ACCEL_OK)
    st = accel_allocator_pin(s->dev->mem, begin->u.cond.flag, sizeof(int32_t), &c->pins);
  if (st == ACCEL_OK) st = accel_cmdlist_append(&c->cmds, &rec, NULL);
  if (st == ACCEL_OK) {
    c->cond_slot = rec.stream_slot;
    c->cond_kinds[c->cond_depth++] = begin->u.cond.kind;
    c->cond_private |= private_capture;
  }
  pthread_mutex_unlock(&c->lock);
  return st;
}

accel_status_t accel_capture_cond_end_locked(accel_stream_t *s, uint32_t kind, const char *fn,
                                             accel_graph_t **finish) {
  static const char *const names[] = {"an if", "a while"};
  accel_capture_t *c = s->capture;
  accel_cmd_t rec = {.type = ACCEL_CMD_COND_END, .stream_slot = s->capture_slot};
  *finish = NULL;
  pthread_mutex_lock(&c->lock);
  accel_status_t st = ACCEL_OK;
  if (!c->cond_depth || rec.stream_slot != c->cond_slot)
    st = accel_set_error(ACCEL_ERROR_STATE, "%s: no conditional region is open on this stream",
                         fn);
  else if (c->cond_kinds[c->cond_depth - 1] != kind)
    st = accel_set_error(ACCEL_ERROR_STATE, "%s: the innermost open region is %s region", fn,
                         names[c->cond_kinds[c->cond_depth - 1] == ACCEL_COND_WHILE]);
  if (st == ACCEL_OK) st = accel_cmdlist_append(&c->cmds, &rec, NULL);
  if (st == ACCEL_OK && --c->cond_depth == 0 && c->cond_private) *finish = c->graph;
  pthread_mutex_unlock(&c->lock);
  return st;
}

/* stream.h: the calls of the stream and event rooms below into this one. */
const accel_capture_ops_t accel_capture_ops = {
    .check_unsafe = accel_capture_check_unsafe,
    .record_locked = accel_capture_record_locked,
    .pin_locked = accel_capture_pin_locked,
    .invalidate = accel_capture_invalidate,
    .release = accel_capture_release,
    .event_record_locked = accel_capture_event_record_locked,
    .event_wait_locked = accel_capture_event_wait_locked,
    .event_capture_get = accel_event_capture_get,
};
