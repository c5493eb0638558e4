/*
 * accel_memory_snapshot's JSON (schema: docs/memory_snapshot.schema.json): every segment of
 * the allocator and every block in it, written under the allocator's lock so that the blocks
 * add up exactly to the statistics written beside them.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "allocator_internal.h"
#include "core_util.h"

typedef struct text {
  char *s;
  size_t len, cap;
  bool failed; /* out of host memory: the rest is dropped */
} text_t;

__attribute__((format(printf, 2, 3))) static void put(text_t *t, const char *fmt, ...) {
  for (int pass = 0; pass < 2 && !t->failed; ++pass) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->failed = true;
    } else if (t->s && (size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    } else {
      size_t cap = t->cap ? t->cap : 4096;
      while (cap - t->len <= (size_t)n) cap *= 2;
      char *ns = realloc(t->s, cap);
      if (!ns) t->failed = true;
      t->s = ns ? ns : t->s;
      t->cap = ns ? cap : t->cap;
    }
  }
}

/* A JSON string, or null. */
static void put_string(text_t *t, const char *v) {
  if (!v) {
    put(t, "null");
    return;
  }
  put(t, "\"");
  for (const unsigned char *c = (const unsigned char *)v; *c; ++c) {
    if (*c == '"' || *c == '\\') put(t, "\\%c", *c);
    else if (*c < 0x20) put(t, "\\u%04x", *c);
    else put(t, "%c", *c);
  }
  put(t, "\"");
}

static const char *pool_kind(const accel_allocator_t *m, const segment_t *s) {
  if (s->ext) return "registration";
  return s->arena == &m->default_arena ? "default" : "graph";
}

static void put_block(text_t *t, const block_t *b) {
  const char *state = !b->allocated ? "free" : b->deferred ? "freed_pinned" : "allocated";
  put(t, "{\"address\":\"0x%" PRIxPTR "\",\"size\":%zu,\"state\":\"%s\",\"requested\":%zu,",
      b->addr, b->size, state, b->allocated ? b->requested : (size_t)0);
  if (b->key) put(t, "\"stream\":\"%p\",", b->key);
  else put(t, "\"stream\":null,");
  put(t, "\"pins\":%" PRIu32 ",\"tag\":", b->pins);
  put_string(t, b->allocated ? b->tag : NULL);
  put(t, "}");
}

static void put_segments(text_t *t, const accel_allocator_t *m) {
  put(t, "\"segments\":[");
  for (size_t i = 0; i < m->nsegs; ++i) {
    const segment_t *s = m->segs[i];
    put(t, "%s\n{\"address\":\"0x%" PRIxPTR "\",\"size\":%zu,\"pool\":\"%s\",", i ? "," : "",
        s->base, s->size, pool_kind(m, s));
    if (s->ext) put(t, "\"pool_id\":null,\"blocks\":[");
    else put(t, "\"pool_id\":\"%p\",\"blocks\":[", (const void *)s->arena);
    for (const block_t *b = s->first; b; b = b->next) {
      if (b != s->first) put(t, ",");
      put_block(t, b);
    }
    put(t, "]}");
  }
  put(t, "]");
}

accel_status_t accel_allocator_snapshot(accel_allocator_t *m, const char *device, char **json,
                                        size_t *length) {
  text_t t = {0};
  put(&t, "{\"schema\":\"accel-memory-snapshot\",\"version\":1,\"device\":");
  put_string(&t, device);
  pthread_mutex_lock(&m->lock);
  const accel_memory_stats_t *st = &m->stats;
  put(&t,
      ",\"stats\":{\"allocated_bytes\":%" PRIu64 ",\"reserved_bytes\":%" PRIu64
      ",\"graph_pool_reserved_bytes\":%" PRIu64 ",\"active_blocks\":%" PRIu64
      ",\"segment_count\":%zu},\n",
      st->allocated_bytes, st->reserved_bytes, st->graph_pool_reserved_bytes, st->active_blocks,
      m->nsegs - m->nexternal);
  put_segments(&t, m);
  pthread_mutex_unlock(&m->lock);
  put(&t, "}\n");
  if (t.failed) {
    free(t.s);
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory for the snapshot");
  }
  *json = t.s;
  *length = t.len;
  return ACCEL_OK;
}
