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

void accel_reg_unlink(accel_allocator_t *m, segment_t *s) {
  size_t i = accel_alloc_seg_index(m, s->base);
  memmove(&m->segs[i], &m->segs[i + 1], (m->nsegs - i - 1) * sizeof *m->segs);
  m->nsegs--;
  m->nexternal--;
  if (s->ext->read_only) __atomic_sub_fetch(&m->nread_only, 1, __ATOMIC_RELAXED);
}

void accel_reg_free(accel_allocator_t *m, segment_t *s) {
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
                                        void *device_ptr, bool read_only, const void *owner) {
  segment_t *s = calloc(1, sizeof *s);
  external_t *x = calloc(1, sizeof *x);
  if (!s || !x) {
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
  } else if (m->nsegs == m->capsegs) {
    size_t cap = m->capsegs ? m->capsegs * 2 : 16;
    segment_t **ns = realloc(m->segs, cap * sizeof *ns);
    if (ns) {
      m->segs = ns;
      m->capsegs = cap;
    }
  }
  if (st == ACCEL_OK && (m->nsegs == m->capsegs || !(b = accel_alloc_block_new(m))))
    st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory for allocator state");
  if (st == ACCEL_OK) {
    x->device_ptr = device_ptr;
    x->read_only = read_only;
    x->owner = owner;
    s->base = lo;
    s->size = size;
    s->arena = &m->external_arena;
    s->first = b;
    s->ext = x;
    b->addr = lo;
    b->size = size;
    b->requested = size;
    b->seg = s;
    b->allocated = true;
    const size_t at = i + 1; /* SIZE_MAX + 1 == 0 */
    memmove(&m->segs[at + 1], &m->segs[at], (m->nsegs - at) * sizeof *m->segs);
    m->segs[at] = s;
    m->nsegs++;
    m->nexternal++;
    if (read_only) __atomic_add_fetch(&m->nread_only, 1, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&m->lock);
  if (st != ACCEL_OK) {
    free(s);
    free(x);
  }
  return st;
}

/* The registration starting at ptr, or NULL with an error naming why (lock held). */
static segment_t *registration_at(accel_allocator_t *m, void *ptr, const void *owner) {
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
  if (s->first->deferred) {
    accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%p is being unregistered already", ptr);
    return NULL;
  }
  if (s->ext->owner != owner) {
    accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                    "%p was registered by DLPack import %p; accel_dlpack_release ends it", ptr,
                    s->ext->owner);
    return NULL;
  }
  return s;
}

accel_status_t accel_allocator_unregister_begin(accel_allocator_t *m, void *ptr,
                                                const void *owner) {
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&m->lock);
  segment_t *s = registration_at(m, ptr, owner);
  if (!s) {
    st = ACCEL_ERROR_INVALID_ARGUMENT;
  } else if (s->first->pins && s->first->pins == s->ext->retiring) {
    st = ACCEL_ERROR_NOT_READY; /* only releases under way hold it */
  } else if (s->first->pins) {
    const external_t *x = s->ext;
    if (x->holder)
      st = accel_set_error(ACCEL_ERROR_STATE,
                           "[%p, +%zu) is in use by %s %p%s (release it first: a captured graph "
                           "by accel_graph_reset or accel_graph_destroy)",
                           ptr, s->size, x->holder_kind, x->holder,
                           s->first->pins > 1 ? " and others" : "");
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
  accel_reg_unlink(m, s);
  pthread_mutex_unlock(&m->lock);
  *device_ptr = s->ext->device_ptr;
  accel_reg_free(m, s);
}

bool accel_allocator_release_owned(accel_allocator_t *m, void *ptr, const void *owner,
                                   void (*done)(void *ctx, void *device_ptr), void *ctx,
                                   void **device_ptr) {
  pthread_mutex_lock(&m->lock);
  segment_t *s = registration_at(m, ptr, owner);
  if (!s) { /* not the owner's: a bug in the caller, reported, nothing ended */
    pthread_mutex_unlock(&m->lock);
    return false;
  }
  bool now = !s->first->pins;
  s->first->deferred = true;
  __atomic_add_fetch(&m->free_generation, 1, __ATOMIC_RELEASE);
  if (now) {
    accel_reg_unlink(m, s);
  } else {
    s->ext->done = done;
    s->ext->done_ctx = ctx;
  }
  pthread_mutex_unlock(&m->lock);
  if (now) {
    *device_ptr = s->ext->device_ptr;
    accel_reg_free(m, s);
  }
  return now;
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
  if (found) accel_reg_unlink(m, found);
  pthread_mutex_unlock(&m->lock);
  if (!found) return NULL;
  void *base = (void *)found->base;
  *device_ptr = found->ext->device_ptr;
  accel_reg_free(m, found);
  return base;
}
