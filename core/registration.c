/*
 * Registrations (external memory, accel_memory_register and DLPack imports) inside the caching
 * allocator: segments of their own with one allocated block, so that every range check,
 * overlap test, copy kind and pin treats them as allocations (allocator.h, "Registrations").
 */
#include <stdlib.h>
#include <string.h>

#include "allocator_internal.h"
#include "core_util.h"

accel_status_t accel_reg_pin(segment_t *s, uintptr_t lo, uintptr_t hi,
                             accel_allocator_pins_t *pins) {
  block_t *b = s->first;
  if (b->deferred || b->addr + b->size <= lo || b->addr >= hi) return ACCEL_OK;
  if (pins->n && pins->blocks[pins->n - 1] == b) return ACCEL_OK;
  accel_status_t st = accel_alloc_pins_reserve(pins, 1);
  if (st != ACCEL_OK) return st;
  b->pins++;
  pins->blocks[pins->n++] = b;
  s->ext->holder_kind = pins->owner_kind;
  s->ext->holder = pins->owner;
  return ACCEL_OK;
}

void accel_allocator_pins_retiring(accel_allocator_t *m, accel_allocator_pins_t *pins) {
  if (pins->retiring) return;
  pthread_mutex_lock(&m->lock);
  pins->retiring = true;
  for (size_t i = 0; i < pins->n; ++i) {
    external_t *x = ((block_t *)pins->blocks[i])->seg->ext;
    if (!x) continue;
    x->retiring++;
    if (x->holder == pins->owner) x->holder = NULL, x->holder_kind = NULL; /* not a live one */
  }
  pthread_mutex_unlock(&m->lock);
}

/* Takes registration s out of the segment list (lock held); its range is free from now on. */
static void reg_unlink(accel_allocator_t *m, segment_t *s) {
  size_t i = accel_alloc_seg_index(m, s->base);
  memmove(&m->segs[i], &m->segs[i + 1], (m->nsegs - i - 1) * sizeof *m->segs);
  m->nsegs--;
  m->nexternal--;
  if (s->ext->read_only) __atomic_sub_fetch(&m->nread_only, 1, __ATOMIC_RELAXED);
}

/* Frees the unlinked registration s (takes the lock for its block). */
static void reg_free(accel_allocator_t *m, segment_t *s) {
  pthread_mutex_lock(&m->lock);
  accel_alloc_block_recycle(m, s->first);
  pthread_mutex_unlock(&m->lock);
  free(s->ext);
  free(s);
}

static const char *describe_segment(const segment_t *s) {
  return s->ext ? "registration" : "allocation segment";
}

accel_status_t accel_allocator_register(accel_allocator_t *m, void *ptr, size_t size,
                                        void *device_ptr, bool read_only,
                                        accel_allocator_ended_fn ended, void *ctx,
                                        accel_allocator_pins_t *pins) {
  segment_t *s = calloc(1, sizeof *s);
  external_t *x = calloc(1, sizeof *x);
  /* the shared kind's first user pins it at once: nothing can end it before */
  if (!s || !x || (ended && accel_alloc_pins_reserve(pins, 1) != ACCEL_OK)) {
    free(s);
    free(x);
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  const uintptr_t lo = (uintptr_t)ptr, last = lo + (size - 1);
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&m->lock);
  size_t i = accel_alloc_seg_index(m, last); /* the only segment that can reach into the range */
  block_t *b = NULL;
  if (i != SIZE_MAX && m->segs[i]->base + m->segs[i]->size > lo) {
    const segment_t *o = m->segs[i];
    st = accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                         "[%p, +%zu) overlaps the device's %s [%p, +%zu)", ptr, size,
                         describe_segment(o), (void *)o->base, o->size);
  }
  if (st == ACCEL_OK && (!accel_alloc_seg_reserve(m) || !(b = accel_alloc_block_new(m))))
    st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory for allocator state");
  if (st == ACCEL_OK) {
    x->device_ptr = device_ptr;
    x->read_only = read_only;
    x->ended = ended;
    x->ctx = ctx;
    accel_alloc_seg_enter(m, s, b, lo, size, &m->external_arena);
    s->ext = x;
    b->requested = size;
    b->allocated = true;
    m->nexternal++;
    if (read_only) __atomic_add_fetch(&m->nread_only, 1, __ATOMIC_RELAXED);
    if (ended) {
      x->users = 1;
      accel_reg_pin(s, lo, lo + size, pins);
    }
  }
  pthread_mutex_unlock(&m->lock);
  if (st != ACCEL_OK) {
    free(s);
    free(x);
  }
  return st;
}

/* The user registration starting at ptr, or NULL with an error naming why (lock held). */
static segment_t *registration_at(accel_allocator_t *m, void *ptr) {
  segment_t *s = accel_alloc_seg_containing(m, (uintptr_t)ptr);
  if (!s || !s->ext) {
    accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                    s ? "%p is memory accel allocated, not a registration"
                      : "%p is not registered with the device (never, or unregistered already)",
                    ptr);
    return NULL;
  }
  if (s->base != (uintptr_t)ptr) {
    accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                    "%p is inside the registration [%p, +%zu), not its start", ptr,
                    (void *)s->base, s->size);
    return NULL;
  }
  if (s->ext->ended) {
    accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                    "%p was registered by a DLPack import: it ends when every import of the "
                    "range was released (accel_dlpack_release) and no graph uses it", ptr);
    return NULL;
  }
  if (s->first->deferred) {
    accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%p is being unregistered already", ptr);
    return NULL;
  }
  return s;
}

/* How the holder of a pin lets go of it, for the STATE message of an unregister. */
static const char *letting_go(const char *holder_kind) {
  if (!holder_kind) return "release them first";
  if (strcmp(holder_kind, "DLPack import") == 0) return "accel_dlpack_release it first";
  if (strcmp(holder_kind, "DLPack export") == 0)
    return "its consumer calls the export's deleter first";
  return "accel_graph_reset or accel_graph_destroy it first (an open capture: end it)";
}

accel_status_t accel_allocator_unregister_begin(accel_allocator_t *m, void *ptr) {
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&m->lock);
  segment_t *s = registration_at(m, ptr);
  if (!s) {
    st = ACCEL_ERROR_INVALID_ARGUMENT;
  } else if (s->first->pins && s->first->pins == s->ext->retiring) {
    st = ACCEL_ERROR_NOT_READY; /* only releases under way hold it */
  } else if (s->first->pins) {
    const external_t *x = s->ext;
    if (x->holder)
      st = accel_set_error(ACCEL_ERROR_STATE, "[%p, +%zu) is in use by %s %p%s (%s)", ptr,
                           s->size, x->holder_kind, x->holder,
                           s->first->pins > 1 ? " and others" : "", letting_go(x->holder_kind));
    else
      st = accel_set_error(ACCEL_ERROR_STATE,
                           "[%p, +%zu) is in use by %u captured graph(s), open capture(s) or "
                           "DLPack import(s)/export(s); release them first",
                           ptr, s->size, (unsigned)(s->first->pins - x->retiring));
  } else {
    s->first->deferred = true;
    __atomic_add_fetch(&m->free_generation, 1, __ATOMIC_RELEASE); /* cached validations */
  }
  pthread_mutex_unlock(&m->lock);
  return st;
}

void accel_allocator_unregister_end(accel_allocator_t *m, void *ptr, void **device_ptr) {
  pthread_mutex_lock(&m->lock);
  segment_t *s = accel_alloc_seg_containing(m, (uintptr_t)ptr);
  reg_unlink(m, s);
  pthread_mutex_unlock(&m->lock);
  *device_ptr = s->ext->device_ptr;
  reg_free(m, s);
}

accel_status_t accel_allocator_pin_joining(accel_allocator_t *m, const void *ptr, size_t size,
                                           accel_allocator_pins_t *pins, void **shared) {
  *shared = NULL;
  pthread_mutex_lock(&m->lock);
  accel_status_t st = accel_alloc_pin_locked(m, ptr, size, pins);
  external_t *x = st == ACCEL_OK && pins->n == 1 ? ((block_t *)pins->blocks[0])->seg->ext : NULL;
  if (x && x->ended) {
    x->users++;
    *shared = x->ctx;
  }
  pthread_mutex_unlock(&m->lock);
  return st;
}

void accel_allocator_leave(accel_allocator_t *m, const accel_allocator_pins_t *pins) {
  pthread_mutex_lock(&m->lock);
  block_t *b = pins->n == 1 ? pins->blocks[0] : NULL;
  external_t *x = b ? b->seg->ext : NULL;
  if (x && x->ended && --x->users == 0) { /* no import left: invalid for new work */
    b->deferred = true;
    __atomic_add_fetch(&m->free_generation, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&m->lock);
}

void accel_reg_end(accel_allocator_t *m, block_t *b, segment_t **ended) {
  segment_t *s = b->seg;
  reg_unlink(m, s);
  s->first->next = (block_t *)*ended; /* the segment's only block links the list */
  *ended = s;
}

void accel_reg_finish_ended(accel_allocator_t *m, segment_t *ended) {
  while (ended) {
    segment_t *s = ended;
    ended = (segment_t *)s->first->next;
    s->first->next = NULL;
    external_t x = *s->ext;
    reg_free(m, s);
    x.ended(x.ctx, x.device_ptr);
  }
}

bool accel_allocator_range_read_only(accel_allocator_t *m, const void *ptr, size_t size) {
  if (!__atomic_load_n(&m->nread_only, __ATOMIC_RELAXED)) return false;
  pthread_mutex_lock(&m->lock);
  const block_t *b = accel_alloc_block_holding(m, (uintptr_t)ptr, size);
  bool ro = b && b->seg->ext && b->seg->ext->read_only;
  pthread_mutex_unlock(&m->lock);
  return ro;
}

void *accel_allocator_take_registration(accel_allocator_t *m, void **device_ptr) {
  segment_t *found = NULL;
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < m->nsegs && !found; ++i)
    if (m->segs[i]->ext) found = m->segs[i];
  if (found) reg_unlink(m, found);
  pthread_mutex_unlock(&m->lock);
  if (!found) return NULL;
  void *base = (void *)found->base;
  *device_ptr = found->ext->device_ptr;
  reg_free(m, found);
  return base;
}
