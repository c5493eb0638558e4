/*
 * Caching allocator (see allocator.h). Layout:
 *  - segment: one backend allocation; its blocks form an address-ordered doubly linked list.
 *  - free blocks sit in size bins (TLSF-like: exact classes below 8 KiB, then 4 classes per
 *    power of two) per stream key, with a bitmap of non-empty bins for O(1) search.
 *  - live blocks are found by address through the core hash table (hashtab.h).
 * Requests up to 1 MiB are carved from 2 MiB segments; larger ones get a segment of their size
 * rounded up to 2 MiB. Neighbouring free blocks with the same stream key coalesce.
 * Registrations of external memory are segments too; their half is registration.c. Pins are
 * allocator_pins.c's, the range queries allocator_query.c's, the figures allocator_view.c's.
 */
#include "allocator_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "fault.h"

#define SMALL_REQUEST (1u << 20)
#define SEGMENT_GRANULE (2u << 20)

/* ---------------------------------------------------------------------------------------- */
/* bins */

static unsigned bin_of(size_t size) {
  size_t u = size / ACCEL_ALLOCATOR_ALIGN;
  if (u < 16) return (unsigned)u;
  unsigned e = 63u - (unsigned)__builtin_clzll((unsigned long long)u);
  unsigned sub = (unsigned)(u >> (e - 2)) & 3u;
  unsigned b = 16u + (e - 4u) * 4u + sub;
  return b < NBINS ? b : NBINS - 1;
}

static bins_t *bins_for(accel_allocator_arena_t *a, const void *key, bool create) {
  for (size_t i = 0; i < a->nbins; ++i)
    if (a->bins[i].key == key) return &a->bins[i];
  if (!create) return NULL;
  if (a->nbins == a->capbins) {
    size_t cap = a->capbins ? a->capbins * 2 : 4;
    bins_t *nb = realloc(a->bins, cap * sizeof *nb);
    if (!nb) return NULL;
    a->bins = nb;
    a->capbins = cap;
  }
  bins_t *b = &a->bins[a->nbins++];
  memset(b, 0, sizeof *b);
  b->key = key;
  return b;
}

static void bin_insert(bins_t *b, block_t *blk) {
  unsigned i = bin_of(blk->size);
  blk->bin = (uint8_t)i;
  blk->fprev = NULL;
  blk->fnext = b->head[i];
  if (blk->fnext) blk->fnext->fprev = blk;
  b->head[i] = blk;
  b->nonempty[i / 64] |= 1ull << (i % 64);
}

static void bin_remove(bins_t *b, block_t *blk) {
  unsigned i = blk->bin;
  if (blk->fprev) blk->fprev->fnext = blk->fnext;
  else b->head[i] = blk->fnext;
  if (blk->fnext) blk->fnext->fprev = blk->fprev;
  if (!b->head[i]) b->nonempty[i / 64] &= ~(1ull << (i % 64));
  blk->fprev = blk->fnext = NULL;
}

/* First block of at least size: scan the request's own bin, then take any block of the next
 * non-empty bin (all of them are large enough). */
static block_t *bin_find(bins_t *b, size_t size) {
  unsigned i = bin_of(size);
  for (block_t *blk = b->head[i]; blk; blk = blk->fnext)
    if (blk->size >= size) return blk;
  for (unsigned w = (i + 1) / 64; w < NBINS / 64; ++w) {
    uint64_t mask = b->nonempty[w];
    if (w == (i + 1) / 64) mask &= ~0ull << ((i + 1) % 64);
    if (mask) return b->head[w * 64 + (unsigned)__builtin_ctzll(mask)];
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* blocks and segments */

block_t *accel_alloc_block_new(accel_allocator_t *m) {
  block_t *b = m->spare_blocks;
  if (b) m->spare_blocks = b->next;
  else b = malloc(sizeof *b);
  if (b) memset(b, 0, sizeof *b);
  return b;
}

void accel_alloc_block_recycle(accel_allocator_t *m, block_t *b) {
  b->next = m->spare_blocks;
  m->spare_blocks = b;
}

size_t accel_alloc_seg_index(const accel_allocator_t *m, uintptr_t addr) {
  /* index of the last segment with base <= addr, or SIZE_MAX */
  size_t lo = 0, hi = m->nsegs;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m->segs[mid]->base <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo ? lo - 1 : SIZE_MAX;
}

bool accel_alloc_seg_reserve(accel_allocator_t *m) {
  if (m->nsegs < m->capsegs) return true;
  size_t cap = m->capsegs ? m->capsegs * 2 : 16;
  segment_t **ns = realloc(m->segs, cap * sizeof *ns);
  if (!ns) return false;
  m->segs = ns;
  m->capsegs = cap;
  return true;
}

void accel_alloc_seg_enter(accel_allocator_t *m, segment_t *s, block_t *b, uintptr_t base,
                           size_t size, accel_allocator_arena_t *arena) {
  s->base = b->addr = base;
  s->size = b->size = size;
  s->arena = arena;
  s->first = b;
  b->seg = s;
  size_t i = accel_alloc_seg_index(m, base) + 1; /* SIZE_MAX + 1 == 0 */
  memmove(&m->segs[i + 1], &m->segs[i], (m->nsegs - i) * sizeof *m->segs);
  m->segs[i] = s;
  m->nsegs++;
}

segment_t *accel_alloc_seg_containing(const accel_allocator_t *m, uintptr_t addr) {
  size_t i = accel_alloc_seg_index(m, addr);
  if (i == SIZE_MAX) return NULL;
  segment_t *s = m->segs[i];
  return addr < s->base + s->size ? s : NULL;
}

static void stats_reserved(accel_allocator_t *m, accel_allocator_arena_t *a, int64_t delta) {
  m->stats.reserved_bytes = (uint64_t)((int64_t)m->stats.reserved_bytes + delta);
  if (a->graph_pool)
    m->stats.graph_pool_reserved_bytes =
        (uint64_t)((int64_t)m->stats.graph_pool_reserved_bytes + delta);
  if (m->stats.reserved_bytes > m->stats.peak_reserved_bytes)
    m->stats.peak_reserved_bytes = m->stats.reserved_bytes;
  m->stats.segment_count = m->nsegs;
  a->reserved = (uint64_t)((int64_t)a->reserved + delta);
  if (a->reserved > a->peak_reserved) a->peak_reserved = a->reserved;
}

static void seg_release(accel_allocator_t *m, segment_t *s) {
  size_t i = accel_alloc_seg_index(m, s->base);
  memmove(&m->segs[i], &m->segs[i + 1], (m->nsegs - i - 1) * sizeof *m->segs);
  m->nsegs--;
  s->arena->segments--;
  stats_reserved(m, s->arena, -(int64_t)s->size);
  m->vt->mem_free(m->impl, (void *)s->base);
  for (block_t *b = s->first, *n; b; b = n) {
    n = b->next;
    accel_alloc_block_recycle(m, b);
  }
  free(s);
}

/* A segment is fully free when none of its blocks is allocated (free blocks binned under
 * different stream keys do not coalesce, so there may be several). */
static bool seg_is_free(const segment_t *s) {
  for (const block_t *b = s->first; b; b = b->next)
    if (b->allocated) return false;
  return true;
}

/* Whether every block of s was freed at or before generation epoch (a drain or fence begun
 * after that covers all work that used them). */
static bool seg_idle_since(const segment_t *s, uint64_t epoch) {
  for (const block_t *b = s->first; b; b = b->next)
    if (b->freed_at > epoch) return false;
  return true;
}

static void release_free_segments(accel_allocator_t *m, accel_allocator_arena_t *a,
                                  uint64_t epoch) {
  for (size_t i = m->nsegs; i-- > 0;) {
    segment_t *s = m->segs[i];
    if (s->arena != a || !seg_is_free(s) || !seg_idle_since(s, epoch)) continue;
    for (block_t *blk = s->first; blk; blk = blk->next) {
      bins_t *b = bins_for(a, blk->key, false);
      if (b) bin_remove(b, blk);
    }
    seg_release(m, s);
  }
}

static accel_status_t seg_new(accel_allocator_t *m, accel_allocator_arena_t *a, const void *key,
                              size_t size, block_t **out) {
  size_t seg_size = size <= SMALL_REQUEST
                        ? SEGMENT_GRANULE
                        : (size + SEGMENT_GRANULE - 1) / SEGMENT_GRANULE * SEGMENT_GRANULE;
  if (seg_size < size) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "size overflow");
  void *p = NULL;
  /* No retry here: releasing cached segments is only safe once queued work is drained, which
   * the caller does without holding stream locks (see accel_allocator_count_retry). */
  accel_status_t st = accel_fault_mem_alloc(m->vt, m->impl, seg_size, &p);
  if (st != ACCEL_OK) {
    if (st == ACCEL_ERROR_OUT_OF_MEMORY)
      return accel_set_error(st, "out of device memory allocating %zu bytes (segment %zu, "
                                 "%llu bytes reserved): %s",
                             size, seg_size, (unsigned long long)m->stats.reserved_bytes,
                             accel_last_error());
    return st;
  }
  segment_t *s = calloc(1, sizeof *s);
  block_t *b = accel_alloc_block_new(m);
  if (!s || !b || !accel_alloc_seg_reserve(m)) {
    free(s);
    if (b) accel_alloc_block_recycle(m, b);
    m->vt->mem_free(m->impl, p);
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory for allocator state");
  }
  accel_alloc_seg_enter(m, s, b, (uintptr_t)p, seg_size, a);
  b->key = key;
  a->segments++;
  stats_reserved(m, a, (int64_t)seg_size);
  *out = b;
  return ACCEL_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* public */

static void arena_init(accel_allocator_arena_t *a, accel_allocator_t *m, bool graph_pool) {
  memset(a, 0, sizeof *a);
  a->m = m;
  a->graph_pool = graph_pool;
  a->refs = 1;
}

accel_status_t accel_allocator_create(const accel_backend_vtable_t *vt, accel_be_device_t *impl,
                                      accel_allocator_t **out) {
  accel_allocator_t *m = calloc(1, sizeof *m);
  if (!m) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  pthread_mutex_init(&m->lock, NULL);
  m->vt = vt;
  m->impl = impl;
  m->live.min_cap = 1024;
  arena_init(&m->default_arena, m, false);
  arena_init(&m->external_arena, m, false);
  *out = m;
  return ACCEL_OK;
}

static void arena_free_state(accel_allocator_arena_t *a) { free(a->bins); }

void accel_allocator_destroy(accel_allocator_t *m) {
  if (!m) return;
  void *dp;
  while (accel_allocator_take_registration(m, &dp)) {} /* the caller ended them already */
  while (m->nsegs) seg_release(m, m->segs[m->nsegs - 1]);
  for (accel_allocator_arena_t *a = m->pools, *n; a; a = n) {
    n = a->next;
    arena_free_state(a);
    free(a);
  }
  arena_free_state(&m->default_arena);
  for (block_t *b = m->spare_blocks, *n; b; b = n) {
    n = b->next;
    free(b);
  }
  free(m->segs);
  accel_hashtab_free(&m->live);
  pthread_mutex_destroy(&m->lock);
  free(m);
}

accel_allocator_arena_t *accel_allocator_default_arena(accel_allocator_t *m) {
  return &m->default_arena;
}

accel_status_t accel_allocator_arena_create(accel_allocator_t *m, accel_allocator_arena_t **out) {
  accel_allocator_arena_t *a = malloc(sizeof *a);
  if (!a) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  arena_init(a, m, true);
  pthread_mutex_lock(&m->lock);
  a->next = m->pools;
  m->pools = a;
  pthread_mutex_unlock(&m->lock);
  *out = a;
  return ACCEL_OK;
}

void accel_allocator_arena_retain(accel_allocator_arena_t *a) {
  pthread_mutex_lock(&a->m->lock);
  a->refs++;
  pthread_mutex_unlock(&a->m->lock);
}

/* A graph pool nothing refers to and with no live block: nobody can allocate from it or free
 * into it again, so it is marked once and its collection retired by the caller. */
static accel_allocator_arena_t *mark_zombie(accel_allocator_arena_t *a) {
  if (!a->graph_pool || a->refs != 0 || a->live_blocks != 0 || a->zombie) return NULL;
  a->zombie = true;
  return a;
}

accel_allocator_arena_t *accel_allocator_arena_release(accel_allocator_arena_t *a) {
  accel_allocator_t *m = a->m;
  pthread_mutex_lock(&m->lock);
  a->refs--;
  accel_allocator_arena_t *z = mark_zombie(a);
  pthread_mutex_unlock(&m->lock);
  return z;
}

uint64_t accel_allocator_arena_last_free(accel_allocator_arena_t *a) {
  pthread_mutex_lock(&a->m->lock);
  uint64_t v = a->last_free;
  pthread_mutex_unlock(&a->m->lock);
  return v;
}

void accel_allocator_arena_collect(accel_allocator_arena_t *a) {
  accel_allocator_t *m = a->m;
  pthread_mutex_lock(&m->lock);
  release_free_segments(m, a, UINT64_MAX);
  for (accel_allocator_arena_t **pp = &m->pools; *pp; pp = &(*pp)->next) {
    if (*pp == a) {
      *pp = a->next;
      break;
    }
  }
  pthread_mutex_unlock(&m->lock);
  arena_free_state(a);
  free(a);
}

static block_t *take_block(accel_allocator_t *m, bins_t *b, block_t *blk,
                           size_t size) {
  bin_remove(b, blk);
  size_t rest = blk->size - size;
  if (rest >= ACCEL_ALLOCATOR_ALIGN) {
    block_t *tail = accel_alloc_block_new(m);
    if (tail) { /* without a spare struct the block is simply not split */
      tail->addr = blk->addr + size;
      tail->size = rest;
      tail->seg = blk->seg;
      tail->key = blk->key;
      tail->prev = blk;
      tail->next = blk->next;
      if (blk->next) blk->next->prev = tail;
      blk->next = tail;
      blk->size = size;
      bin_insert(b, tail);
    }
  }
  return blk;
}

accel_status_t accel_allocator_alloc(accel_allocator_t *m, accel_allocator_arena_t *a,
                                     const void *stream_key, size_t size, void **ptr) {
  if (size > SIZE_MAX - ACCEL_ALLOCATOR_ALIGN)
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "allocation of %zu bytes is too large",
                           size);
  size_t rounded =
      (size + ACCEL_ALLOCATOR_ALIGN - 1) / ACCEL_ALLOCATOR_ALIGN * ACCEL_ALLOCATOR_ALIGN;
  pthread_mutex_lock(&m->lock);
  accel_status_t st = ACCEL_OK;
  bins_t *b = bins_for(a, stream_key, true);
  block_t *blk = b ? bin_find(b, rounded) : NULL;
  if (!blk && stream_key) {
    /* idle blocks: freed by earlier captures sharing a graph pool (replayed before this one),
     * or left by a destroyed stream (its work finished) */
    bins_t *shared = bins_for(a, NULL, false);
    block_t *cand = shared ? bin_find(shared, rounded) : NULL;
    if (cand) {
      bin_remove(shared, cand);
      cand->key = stream_key;
      bin_insert(b, cand);
      blk = cand;
    }
  }
  if (!b) {
    st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory for allocator state");
  } else if (!blk) {
    st = seg_new(m, a, stream_key, rounded, &blk);
    if (st == ACCEL_OK) {
      b = bins_for(a, stream_key, true); /* seg_new may have emptied the cache, bins stay */
      bin_insert(b, blk);
    }
  }
  if (st == ACCEL_OK) {
    blk = take_block(m, b, blk, rounded);
    blk->allocated = true;
    blk->requested = size;
    if (!accel_hashtab_insert(&m->live, blk->addr, blk)) {
      bin_insert(b, blk);
      blk->allocated = false;
      st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory for allocator state");
    }
  }
  if (st == ACCEL_OK) {
    a->live_blocks++;
    a->allocated += blk->size;
    if (a->allocated > a->peak_allocated) a->peak_allocated = a->allocated;
    blk->tag = accel_memory_tag_top;
    m->stats.allocated_bytes += blk->size;
    if (m->stats.allocated_bytes > m->stats.peak_allocated_bytes)
      m->stats.peak_allocated_bytes = m->stats.allocated_bytes;
    m->stats.alloc_count++;
    m->stats.active_blocks++;
    *ptr = (void *)blk->addr;
  }
  pthread_mutex_unlock(&m->lock);
  return st;
}

/* left absorbs its next block right (lock held): binned (a free one of the two) leaves its bin;
 * the later free generation, the bytes, the links; right is recycled. */
static inline __attribute__((always_inline)) void absorb(accel_allocator_t *m, bins_t *b,
                                                         block_t *left, block_t *right,
                                                         block_t *binned) {
  bin_remove(b, binned);
  if (right->freed_at > left->freed_at) left->freed_at = right->freed_at;
  left->size += right->size;
  left->next = right->next;
  if (right->next) right->next->prev = left;
  accel_alloc_block_recycle(m, right);
}

/* Merges blk with a free neighbour of the same key (lock held). */
static inline __attribute__((always_inline)) block_t *coalesce(accel_allocator_t *m, bins_t *b,
                                                                block_t *blk) {
  block_t *n = blk->next;
  if (n && !n->allocated && n->key == blk->key) absorb(m, b, blk, n, n);
  block_t *p = blk->prev;
  if (p && !p->allocated && p->key == blk->key) {
    absorb(m, b, p, blk, p);
    blk = p;
  }
  return blk;
}

/* Returns an allocated block to its bins (lock held); *zombie as in accel_allocator_free. Inline:
 * it is most of accel_allocator_free, on the allocation fast path. */
static inline __attribute__((always_inline)) void free_block(accel_allocator_t *m, block_t *blk,
                                                             const void *stream_key,
                                                             accel_allocator_arena_t **zombie) {
  accel_allocator_arena_t *a = blk->seg->arena;
  m->stats.allocated_bytes -= blk->size;
  a->allocated -= blk->size;
  m->stats.free_count++;
  m->stats.active_blocks--;
  a->live_blocks--;
  blk->allocated = false;
  blk->deferred = false;
  blk->freed_at = __atomic_add_fetch(&m->free_generation, 1, __ATOMIC_RELEASE);
  a->last_free = blk->freed_at;
  if (stream_key) blk->key = stream_key;
  bins_t *b = bins_for(a, blk->key, true);
  if (b) {
    blk = coalesce(m, b, blk);
    bin_insert(b, blk);
  } /* else: out of host memory for a bin; the block stays unreachable until teardown */
  accel_allocator_arena_t *z = mark_zombie(a);
  if (zombie) *zombie = z;
}

void accel_alloc_free_block(accel_allocator_t *m, block_t *blk, const void *stream_key) {
  free_block(m, blk, stream_key, NULL);
}

void accel_allocator_set_guard(accel_allocator_t *m, accel_allocator_guard_fn guard) {
  pthread_mutex_lock(&m->lock);
  m->guard = guard;
  pthread_mutex_unlock(&m->lock);
}

accel_status_t accel_allocator_free(accel_allocator_t *m, void *ptr, const void *stream_key,
                                    accel_allocator_arena_t **zombie) {
  if (zombie) *zombie = NULL;
  pthread_mutex_lock(&m->lock);
  size_t j = accel_hashtab_find(&m->live, (uintptr_t)ptr);
  if (j == SIZE_MAX) {
    const segment_t *s = accel_alloc_seg_containing(m, (uintptr_t)ptr);
    pthread_mutex_unlock(&m->lock);
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           s && s->ext ? "%p lies in registered memory (not accel's to free; "
                                         "end the registration with accel_memory_unregister)"
                           : s ? "%p is not the start of a live allocation (already freed, "
                                 "or an interior pointer)"
                               : "%p was not allocated by this device's allocator",
                           ptr);
  }
  block_t *blk = live_block(m, j);
  if (!blk->pins && m->guard) {
    accel_status_t st = m->guard(ptr, blk->requested);
    if (st != ACCEL_OK) {
      pthread_mutex_unlock(&m->lock);
      return st;
    }
  }
  accel_hashtab_erase_at(&m->live, j);
  if (blk->pins) {
    /* no longer the user's: ranges in it are invalid from now on (cached validations too) */
    __atomic_add_fetch(&m->free_generation, 1, __ATOMIC_RELEASE);
    blk->deferred = true;
    blk->deferred_key = stream_key;
  } else {
    free_block(m, blk, stream_key, zombie);
  }
  pthread_mutex_unlock(&m->lock);
  return ACCEL_OK;
}

static void retag_arena(accel_allocator_t *m, accel_allocator_arena_t *a, const void *from,
                        const void *to) {
  /* 1. unbin every free block of `from` and drop its bin set */
  block_t *moved = NULL;
  for (size_t i = 0; i < a->nbins; ++i) {
    if (a->bins[i].key != from) continue;
    for (unsigned k = 0; k < NBINS; ++k) {
      while (a->bins[i].head[k]) {
        block_t *b = a->bins[i].head[k];
        bin_remove(&a->bins[i], b);
        b->fnext = moved;
        moved = b;
      }
    }
    a->bins[i] = a->bins[--a->nbins];
    break;
  }
  /* 2. re-own live and free blocks */
  for (size_t i = 0; i < m->nsegs; ++i) {
    if (m->segs[i]->arena != a) continue;
    for (block_t *b = m->segs[i]->first; b; b = b->next)
      if (b->key == from) b->key = to;
  }
  bins_t *dst = bins_for(a, to, true);
  if (!dst) return; /* out of host memory: the blocks stay unbinned until teardown */
  /* 3. bin them under `to`, then merge neighbours that now share the key */
  for (block_t *b = moved, *n; b; b = n) {
    n = b->fnext;
    bin_insert(dst, b);
  }
  for (size_t i = 0; i < m->nsegs; ++i) {
    if (m->segs[i]->arena != a) continue;
    for (block_t *b = m->segs[i]->first; b && b->next;) {
      block_t *n = b->next;
      if (!b->allocated && !n->allocated && b->key == to && n->key == to) {
        bin_remove(dst, b);
        absorb(m, dst, b, n, n);
        bin_insert(dst, b);
      } else {
        b = n;
      }
    }
  }
}

void accel_allocator_retag(accel_allocator_t *m, accel_allocator_arena_t *arena,
                           const void *from_key, const void *to_key) {
  if (from_key == to_key) return;
  pthread_mutex_lock(&m->lock);
  if (arena) {
    retag_arena(m, arena, from_key, to_key);
  } else {
    retag_arena(m, &m->default_arena, from_key, to_key);
    for (accel_allocator_arena_t *a = m->pools; a; a = a->next) retag_arena(m, a, from_key, to_key);
  }
  pthread_mutex_unlock(&m->lock);
}

void accel_allocator_stats(accel_allocator_t *m, accel_memory_stats_t *out) {
  pthread_mutex_lock(&m->lock);
  *out = m->stats;
  out->segment_count = m->nsegs - m->nexternal;
  pthread_mutex_unlock(&m->lock);
}

void accel_allocator_reset_peaks(accel_allocator_t *m) {
  pthread_mutex_lock(&m->lock);
  m->stats.peak_allocated_bytes = m->stats.allocated_bytes;
  m->stats.peak_reserved_bytes = m->stats.reserved_bytes;
  pthread_mutex_unlock(&m->lock);
}

uint64_t accel_allocator_empty_cache(accel_allocator_t *m, uint64_t epoch) {
  pthread_mutex_lock(&m->lock);
  const uint64_t before = m->stats.reserved_bytes;
  release_free_segments(m, &m->default_arena, epoch);
  const uint64_t released = before - m->stats.reserved_bytes;
  accel_alloc_count_empty(m, released);
  pthread_mutex_unlock(&m->lock);
  return released;
}
