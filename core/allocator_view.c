/*
 * The allocator's figures beyond accel_memory_stats (see allocator.h, "Memory you can see"):
 * fragmentation, out-of-memory retries, one graph pool's bytes and peaks, the bytes a pin list
 * holds. The walks run under the allocator's lock and cost one pass over the segments; nothing
 * here is on the allocation path except the thread's tag, which allocator.c reads.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "allocator_internal.h"

_Thread_local const char *accel_memory_tag_top;

void accel_allocator_count_retry(accel_allocator_t *m, bool failed, size_t size,
                                 const char *reason) {
  pthread_mutex_lock(&m->lock);
  m->stats.alloc_retries++;
  if (failed) m->stats.ooms++;
  else m->retries_recovered++;
  m->last_retry_bytes = size;
  snprintf(m->last_retry_reason, sizeof m->last_retry_reason, "%s", reason ? reason : "");
  pthread_mutex_unlock(&m->lock);
}

void accel_alloc_count_empty(accel_allocator_t *m, uint64_t released) {
  m->cache_empties++;
  m->cache_empty_released_bytes += released;
}

/* Free blocks of segments that also hold a live block: they cannot go back to the backend. */
static void split_figures(const segment_t *s, uint64_t *bytes, uint64_t *blocks) {
  uint64_t free_bytes = 0, free_blocks = 0;
  bool live = false;
  for (const block_t *b = s->first; b; b = b->next) {
    if (b->allocated) {
      live = true;
    } else {
      free_bytes += b->size;
      free_blocks++;
    }
  }
  if (!live) return;
  *bytes += free_bytes;
  *blocks += free_blocks;
}

void accel_allocator_stats_ex(accel_allocator_t *m, accel_memory_stats_ex_t *out) {
  pthread_mutex_lock(&m->lock);
  out->stats = m->stats;
  out->stats.segment_count = m->nsegs - m->nexternal;
  out->largest_free_block = 0;
  out->inactive_split_bytes = out->inactive_split_blocks = 0;
  for (size_t i = 0; i < m->nsegs; ++i) {
    const segment_t *s = m->segs[i];
    if (s->ext) continue;
    split_figures(s, &out->inactive_split_bytes, &out->inactive_split_blocks);
    if (s->arena != &m->default_arena) continue;
    for (const block_t *b = s->first; b; b = b->next)
      if (!b->allocated && b->size > out->largest_free_block) out->largest_free_block = b->size;
  }
  out->cache_empties = m->cache_empties;
  out->cache_empty_released_bytes = m->cache_empty_released_bytes;
  out->retries_recovered = m->retries_recovered;
  out->last_retry_bytes = m->last_retry_bytes;
  memcpy(out->last_retry_reason, m->last_retry_reason, sizeof out->last_retry_reason);
  out->graph_pools = 0;
  for (const accel_allocator_arena_t *a = m->pools; a; a = a->next) out->graph_pools += !a->zombie;
  pthread_mutex_unlock(&m->lock);
}

void accel_allocator_arena_info(accel_allocator_arena_t *a, accel_allocator_arena_info_t *out) {
  pthread_mutex_lock(&a->m->lock);
  *out = (accel_allocator_arena_info_t){a->reserved, a->allocated, a->peak_reserved,
                                        a->peak_allocated, a->segments};
  pthread_mutex_unlock(&a->m->lock);
}

void accel_allocator_arena_reset_peaks(accel_allocator_arena_t *a) {
  pthread_mutex_lock(&a->m->lock);
  a->peak_reserved = a->reserved;
  a->peak_allocated = a->allocated;
  pthread_mutex_unlock(&a->m->lock);
}

static int cmp_ptr(const void *x, const void *y) {
  uintptr_t a = (uintptr_t) * (void *const *)x, b = (uintptr_t) * (void *const *)y;
  return a < b ? -1 : a > b;
}

void accel_allocator_pins_bytes(accel_allocator_t *m, const accel_allocator_pins_t *pins,
                                uint64_t *bytes, uint64_t *blocks) {
  *bytes = *blocks = 0;
  if (!pins->n) return;
  /* a list may pin a block more than once (ranges in it recorded apart): count it once */
  void **sorted = malloc(pins->n * sizeof *sorted);
  if (sorted) {
    memcpy(sorted, pins->blocks, pins->n * sizeof *sorted);
    qsort(sorted, pins->n, sizeof *sorted, cmp_ptr);
  }
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < pins->n; ++i) {
    const block_t *b = sorted ? sorted[i] : pins->blocks[i];
    if (sorted && i && sorted[i - 1] == b) continue;
    *bytes += b->size;
    *blocks += 1;
  }
  pthread_mutex_unlock(&m->lock);
  free(sorted);
}
