/*
 * Pins (see allocator.h, accel_allocator_pin): the blocks a capture or a recording uses are
 * held, so a free of one is deferred until the last pin goes; a registration is pinned through
 * registration.c. The allocator's structures are allocator_internal.h's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "allocator_internal.h"
#include "core_util.h"

accel_status_t accel_alloc_pins_reserve(accel_allocator_pins_t *pins, size_t extra) {
  if (pins->n + extra <= pins->cap) return ACCEL_OK;
  size_t cap = pins->cap ? pins->cap * 2 : 16;
  if (cap < pins->n + extra) cap = pins->n + extra;
  void **nb = realloc(pins->blocks, cap * sizeof *nb);
  if (!nb) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  pins->blocks = nb;
  pins->cap = cap;
  return ACCEL_OK;
}

accel_status_t accel_alloc_pin_locked(accel_allocator_t *m, const void *ptr, size_t size,
                                      accel_allocator_pins_t *pins) {
  if (size == 0) return ACCEL_OK;
  const uintptr_t lo = (uintptr_t)ptr;
  const uintptr_t hi = size > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + size;
  accel_status_t st = ACCEL_OK;
  size_t i = accel_alloc_seg_index(m, lo);
  if (i == SIZE_MAX) i = 0;
  for (; i < m->nsegs && m->segs[i]->base < hi && st == ACCEL_OK; ++i) {
    /* graph-pool blocks live with their pool, which the graph holds already */
    if (m->segs[i]->arena == &m->external_arena) {
      st = accel_reg_pin(m->segs[i], lo, hi, pins);
      continue;
    }
    if (m->segs[i]->arena != &m->default_arena) continue;
    for (block_t *b = m->segs[i]->first; b && b->addr < hi; b = b->next) {
      if (!b->allocated || b->deferred || b->addr + b->size <= lo) continue;
      if (pins->n && pins->blocks[pins->n - 1] == b) continue; /* consecutive ranges */
      if ((st = accel_alloc_pins_reserve(pins, 1)) != ACCEL_OK) break;
      b->pins++;
      pins->blocks[pins->n++] = b;
    }
  }
  return st;
}

accel_status_t accel_allocator_pin(accel_allocator_t *m, const void *ptr, size_t size,
                                   accel_allocator_pins_t *pins) {
  pthread_mutex_lock(&m->lock);
  accel_status_t st = accel_alloc_pin_locked(m, ptr, size, pins);
  pthread_mutex_unlock(&m->lock);
  return st;
}

accel_status_t accel_allocator_pin_again(accel_allocator_t *m, const accel_allocator_pins_t *from,
                                         accel_allocator_pins_t *to) {
  accel_status_t st = accel_alloc_pins_reserve(to, from->n);
  if (st != ACCEL_OK) return st;
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < from->n; ++i) {
    block_t *b = from->blocks[i];
    b->pins++;
    to->blocks[to->n++] = b;
    if (b->seg->ext) {
      b->seg->ext->holder_kind = to->owner_kind;
      b->seg->ext->holder = to->owner;
    }
  }
  pthread_mutex_unlock(&m->lock);
  return ACCEL_OK;
}

void accel_allocator_unpin(accel_allocator_t *m, accel_allocator_pins_t *pins) {
  segment_t *ended = NULL; /* shared registrations whose last pin this was */
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < pins->n; ++i) {
    block_t *b = pins->blocks[i];
    external_t *x = b->seg->ext;
    if (x && x->holder == pins->owner) x->holder = NULL, x->holder_kind = NULL;
    if (x && pins->retiring) x->retiring--;
    if (--b->pins || !b->deferred) continue;
    if (x) accel_reg_end(m, b, &ended); /* only a shared one is pinned and deferred */
    else accel_alloc_free_block(m, b, b->deferred_key); /* a deferred free completes */
  }
  pthread_mutex_unlock(&m->lock);
  accel_reg_finish_ended(m, ended);
  const char *kind = pins->owner_kind;
  const void *owner = pins->owner;
  free(pins->blocks);
  pins->retiring = false;
  memset(pins, 0, sizeof *pins);
  pins->owner_kind = kind;
  pins->owner = owner;
}
