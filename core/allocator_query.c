/*
 * Range queries (see allocator.h): whether addresses lie inside live allocations (kernel,
 * copy and collective operands), inside or across segments, and which arena a block is from.
 * The allocator's structures are allocator_internal.h's.
 */
#include <stdint.h>

#include <pthread.h>

#include "allocator_internal.h"

/* 1 when [p, p + size) lies inside the bytes asked for when allocated block b was made: the
 * rounding slack and an unsplit remainder belong to no tensor the user can have. */
static bool block_has(const block_t *b, uintptr_t p, size_t size) {
  return p >= b->addr && p - b->addr <= b->requested && size <= b->requested - (p - b->addr);
}

const block_t *accel_alloc_block_holding(const accel_allocator_t *m, uintptr_t p, size_t size) {
  size_t j = accel_hashtab_find(&m->live, p);
  if (j != SIZE_MAX) return block_has(live_block(m, j), p, size) ? live_block(m, j) : NULL;
  segment_t *s = accel_alloc_seg_containing(m, p);
  if (!s && p > 0) s = accel_alloc_seg_containing(m, p - 1); /* one past the end, size 0 */
  for (block_t *b = s ? s->first : NULL; b; b = b->next) {
    if (p >= b->addr && p <= b->addr + b->size) {
      if (b->allocated && !b->deferred && block_has(b, p, size)) return b;
      if (p < b->addr + b->size) break;
    }
  }
  return NULL;
}

uint64_t accel_allocator_free_generation(accel_allocator_t *m) {
  return __atomic_load_n(&m->free_generation, __ATOMIC_ACQUIRE);
}

bool accel_allocator_range_valid(accel_allocator_t *m, const void *ptr, size_t size) {
  pthread_mutex_lock(&m->lock);
  bool ok = accel_alloc_block_holding(m, (uintptr_t)ptr, size) != NULL;
  pthread_mutex_unlock(&m->lock);
  return ok;
}

size_t accel_allocator_ranges_valid(accel_allocator_t *m, size_t n, accel_allocator_range_fn range,
                                    void *ctx) {
  size_t bad = SIZE_MAX;
  const block_t *last = NULL; /* lists are usually carved from one allocation */
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < n && bad == SIZE_MAX; ++i) {
    const void *ptr;
    size_t size;
    const int access = range(ctx, i, &ptr, &size);
    if (!access) continue;
    const uintptr_t p = (uintptr_t)ptr;
    if (!last || !block_has(last, p, size)) last = accel_alloc_block_holding(m, p, size);
    if (!last || (access == 2 && last->seg->ext && last->seg->ext->read_only)) bad = i;
  }
  pthread_mutex_unlock(&m->lock);
  return bad;
}

bool accel_allocator_contains(accel_allocator_t *m, const void *ptr) {
  pthread_mutex_lock(&m->lock);
  bool in = accel_alloc_seg_containing(m, (uintptr_t)ptr) != NULL;
  pthread_mutex_unlock(&m->lock);
  return in;
}

bool accel_allocator_intersects(accel_allocator_t *m, const void *ptr, size_t size) {
  if (size == 0) return false;
  uintptr_t lo = (uintptr_t)ptr;
  uintptr_t last = lo + (size - 1 < UINTPTR_MAX - lo ? size - 1 : UINTPTR_MAX - lo);
  pthread_mutex_lock(&m->lock);
  /* Segments are sorted and disjoint: only the last one starting at or before the range's
   * last byte can reach into it. */
  size_t i = accel_alloc_seg_index(m, last);
  bool hit = i != SIZE_MAX && m->segs[i]->base + m->segs[i]->size > lo;
  pthread_mutex_unlock(&m->lock);
  return hit;
}

accel_allocator_arena_t *accel_allocator_block_arena(accel_allocator_t *m, const void *ptr) {
  pthread_mutex_lock(&m->lock);
  size_t j = accel_hashtab_find(&m->live, (uintptr_t)ptr);
  accel_allocator_arena_t *a = j == SIZE_MAX ? NULL : live_block(m, j)->seg->arena;
  pthread_mutex_unlock(&m->lock);
  return a;
}
