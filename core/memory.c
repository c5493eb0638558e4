/* Public memory API over the caching allocator, plus the internal memory services. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "core_util.h"
#include "external_memory.h"
#include "fault.h"
#include "memory_view.h"
#include "trace.h"

static accel_status_t check_size(const char *fn, size_t size) {
  if (size > (SIZE_MAX >> 1))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: size %zu is too large", fn, size);
  return ACCEL_OK;
}

/* Returns cached memory to the backend: segments whose blocks were all freed before the drain
 * began (a block freed stream-ordered may still be read by queued work, and another thread may
 * free one while we drain), and retired releases whose fences the drain completed. Waits for
 * the device holding no lock. */
static void empty_cache_drained(accel_device_t *dev) {
  uint64_t epoch = accel_allocator_free_generation(dev->mem);
  accel_device_drain(dev);
  accel_device_reap(dev, true);
  accel_memory_trace_empty(dev, accel_allocator_empty_cache(dev->mem, epoch));
}

/* The out-of-memory protocol shared by accel_malloc and accel_malloc_async: the first failure
 * drains the device, empties the cache and retries once; a second failure is reported. s is
 * the stream the allocation is ordered on (NULL: the default stream, not stream-ordered). */
static accel_status_t alloc_once(accel_device_t *dev, accel_stream_t *s, size_t size,
                                 void **ptr) {
  accel_stream_t *key = s ? s : dev->default_stream;
  if (s) pthread_mutex_lock(&s->lock);
  accel_allocator_arena_t *arena = s && s->capture ? accel_capture_arena(s->capture)
                                                 : accel_allocator_default_arena(dev->mem);
  accel_status_t st = accel_allocator_alloc(dev->mem, arena, key, size, ptr);
  if (s) pthread_mutex_unlock(&s->lock);
  return st;
}

static __attribute__((noinline)) accel_status_t alloc_retry(accel_device_t *dev,
                                                            accel_stream_t *s, size_t size,
                                                            void **ptr) {
  char reason[160];
  snprintf(reason, sizeof reason, "%s", accel_last_error());
  empty_cache_drained(dev);
  accel_status_t st = alloc_once(dev, s, size, ptr);
  accel_allocator_count_retry(dev->mem, st != ACCEL_OK, size, reason);
  accel_memory_trace_retry(dev, size, reason, st == ACCEL_OK);
  return st;
}

static inline accel_status_t alloc_with_retry(accel_device_t *dev, accel_stream_t *s,
                                              size_t size, void **ptr) {
  accel_device_reap_if_any(dev); /* retired graph pools whose replays finished */
  accel_status_t st = alloc_once(dev, s, size, ptr);
  return st == ACCEL_ERROR_OUT_OF_MEMORY ? alloc_retry(dev, s, size, ptr) : st;
}

accel_status_t accel_malloc(accel_device_t *dev, size_t size, void **ptr) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(ptr, __func__, "ptr is NULL");
  if ((st = check_size(__func__, size)) != ACCEL_OK) return st;
  if ((st = accel_capture_check_unsafe(__func__, NULL)) != ACCEL_OK) return st;
  if (size == 0) {
    *ptr = NULL;
    return ACCEL_OK;
  }
  st = alloc_with_retry(dev, NULL, size, ptr);
  if (st == ACCEL_OK) accel_memory_trace_counters(dev);
  return st;
}

accel_status_t accel_free(accel_device_t *dev, void *ptr) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  if (!ptr) return ACCEL_OK;
  accel_allocator_arena_t *zombie = NULL;
  st = accel_allocator_free(dev->mem, ptr, NULL, &zombie);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  if (zombie) accel_pool_arena_retire(dev, zombie);
  accel_memory_trace_counters(dev);
  return ACCEL_OK;
}

accel_status_t accel_malloc_async(accel_stream_t *s, size_t size, void **ptr) {
  accel_device_t *dev = NULL;
  accel_status_t st = accel_stream_check(s, __func__, &dev);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(ptr, __func__, "ptr is NULL");
  if ((st = check_size(__func__, size)) != ACCEL_OK) return st;
  if (size == 0) {
    *ptr = NULL;
    return ACCEL_OK;
  }
  accel_trace_scope_t t = accel_trace_begin(s->trace_id, __func__);
  st = alloc_with_retry(dev, s, size, ptr);
  accel_trace_end_args(&t, "\"bytes\":%zu", size);
  if (st == ACCEL_OK) accel_memory_trace_counters(dev);
  return st;
}

accel_status_t accel_free_async(accel_stream_t *s, void *ptr) {
  accel_device_t *dev = NULL;
  accel_status_t st = accel_stream_check(s, __func__, &dev);
  if (st != ACCEL_OK) return st;
  if (!ptr) return ACCEL_OK;
  accel_allocator_arena_t *zombie = NULL;
  pthread_mutex_lock(&s->lock);
  if (s->capture) st = accel_capture_check_free_locked(s, ptr);
  if (st == ACCEL_OK) st = accel_allocator_free(dev->mem, ptr, s, &zombie);
  pthread_mutex_unlock(&s->lock);
  if (zombie) accel_pool_arena_retire(dev, zombie);
  if (st == ACCEL_OK) accel_memory_trace_counters(dev);
  if (st != ACCEL_OK && st != ACCEL_ERROR_ILLEGAL_IN_CAPTURE &&
      st != ACCEL_ERROR_CAPTURE_INVALIDATED)
    return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  return st;
}

accel_status_t accel_host_alloc(accel_device_t *dev, size_t size, void **ptr) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(ptr, __func__, "ptr is NULL");
  if ((st = check_size(__func__, size)) != ACCEL_OK) return st;
  if (size == 0) {
    *ptr = NULL;
    return ACCEL_OK;
  }
  void *p = NULL;
  if ((st = accel_fault_host_alloc(dev->backend->vt, dev->impl, size, &p)) != ACCEL_OK) return st;
  pthread_mutex_lock(&dev->lock);
  bool ok = accel_hashtab_insert(&dev->host_allocs, (uintptr_t)p, (void *)(uintptr_t)size);
  pthread_mutex_unlock(&dev->lock);
  if (!ok) {
    dev->backend->vt->host_free(dev->impl, p);
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", __func__);
  }
  *ptr = p;
  return ACCEL_OK;
}

accel_status_t accel_host_free(accel_device_t *dev, void *ptr) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  if (!ptr) return ACCEL_OK;
  pthread_mutex_lock(&dev->lock);
  const size_t j = accel_hashtab_find(&dev->host_allocs, (uintptr_t)ptr);
  const size_t size = j == SIZE_MAX ? 0 : (size_t)(uintptr_t)dev->host_allocs.slots[j].value;
  pthread_mutex_unlock(&dev->lock);
  if (j == SIZE_MAX)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %p is not a live accel_host_alloc block of this "
                           "device (already freed, or foreign)", __func__,
                           ptr);
  /* a registration of it (this device's or another's) would be left over freed memory */
  if ((st = accel_external_check_free(ptr, size)) != ACCEL_OK)
    return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  pthread_mutex_lock(&dev->lock);
  const bool known = accel_hashtab_erase(&dev->host_allocs, (uintptr_t)ptr);
  pthread_mutex_unlock(&dev->lock);
  if (!known) /* another thread freed it meanwhile */
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %p was freed meanwhile", __func__,
                           ptr);
  dev->backend->vt->host_free(dev->impl, ptr);
  return ACCEL_OK;
}

accel_status_t accel_memcpy(accel_device_t *dev, void *dst, const void *src, size_t size) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  if ((st = accel_capture_check_unsafe(__func__, NULL)) != ACCEL_OK) return st;
  if ((st = accel_memcpy_async(dev->default_stream, dst, src, size)) != ACCEL_OK) return st;
  return accel_stream_sync_internal(dev->default_stream);
}

accel_status_t accel_memory_stats(accel_device_t *dev, accel_memory_stats_t *out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  accel_allocator_stats(dev->mem, out);
  return ACCEL_OK;
}

accel_status_t accel_reset_peak_memory_stats(accel_device_t *dev) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  accel_allocator_reset_peaks(dev->mem);
  return ACCEL_OK;
}

accel_status_t accel_empty_cache(accel_device_t *dev) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  accel_callbacks_begin(); /* a waiting call: never a host function's (DLPack deleters run) */
  empty_cache_drained(dev);
  accel_callbacks_end();
  return ACCEL_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* internal services (kernel_support.h) */

void accel_keepalive_retain(accel_keepalive_t *k) {
  __atomic_add_fetch(&k->refcount, 1, __ATOMIC_RELAXED);
}

void accel_keepalive_release(accel_keepalive_t *k) {
  if (__atomic_sub_fetch(&k->refcount, 1, __ATOMIC_ACQ_REL) == 0) k->release(k);
}

int accel_device_range_is_valid(accel_device_t *dev, const void *ptr, size_t size) {
  return accel_allocator_range_valid(dev->mem, ptr, size);
}

int accel_device_range_is_read_only(accel_device_t *dev, const void *ptr, size_t size) {
  return accel_allocator_range_read_only(dev->mem, ptr, size);
}

uint64_t accel_device_free_generation(accel_device_t *dev) {
  return accel_allocator_free_generation(dev->mem);
}

size_t accel_device_ranges_valid(accel_device_t *dev, size_t n, accel_range_fn range,
                                 void *ctx) {
  return accel_allocator_ranges_valid(dev->mem, n, range, ctx);
}

accel_status_t accel_device_internal_alloc(accel_device_t *dev, size_t size, void **ptr) {
  return accel_fault_mem_alloc(dev->backend->vt, dev->impl, size, ptr);
}

void accel_device_internal_free(accel_device_t *dev, void *ptr) {
  dev->backend->vt->mem_free(dev->impl, ptr);
}

accel_status_t accel_device_upload(accel_device_t *dev, void *dst, const void *src, size_t size) {
  /* the stream is created outside dev->lock (creation links it into the device's list) */
  pthread_mutex_lock(&dev->lock);
  accel_stream_t *s = dev->upload_stream;
  pthread_mutex_unlock(&dev->lock);
  accel_status_t st = ACCEL_OK;
  if (!s) {
    accel_stream_t *created = NULL;
    st = accel_stream_create_internal(dev, ACCEL_STREAM_EAGER, false, true, &created);
    if (st != ACCEL_OK) return st;
    pthread_mutex_lock(&dev->lock);
    if (!dev->upload_stream) dev->upload_stream = created;
    s = dev->upload_stream;
    pthread_mutex_unlock(&dev->lock);
    if (s != created) accel_stream_release_ref(created); /* another thread won */
  }
  const accel_backend_vtable_t *vt = dev->backend->vt;
  pthread_mutex_lock(&s->lock);
  st = vt->memcpy_async(s->impl, dst, src, size, ACCEL_COPY_HOST_TO_DEVICE);
  if (st == ACCEL_OK) st = vt->stream_synchronize(s->impl);
  pthread_mutex_unlock(&s->lock);
  return st;
}
