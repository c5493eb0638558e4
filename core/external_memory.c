/*
 * External memory (accel_memory_register / accel_memory_unregister): ranges accel did not
 * allocate become operands of kernels, copies and graphs. The allocator keeps them as segments
 * of their own (allocator.h, "Registrations"), so every check an allocation gets (bounds,
 * overlap, pins by captures, use after the end) applies to them unchanged; the backend only
 * says whether it can use the memory in place (vtable mem_register).
 */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "capture.h"
#include "core_util.h"
#include "external_memory.h"
#include "log.h"
#include "trace.h"

/* The backend's check, or the core's default: host memory as is on a host-accessible device. */
static accel_status_t backend_register(accel_device_t *dev, void *ptr, size_t size,
                                       void **device_ptr) {
  const accel_backend_vtable_t *vt = dev->backend->vt;
  if (vt->mem_register) return vt->mem_register(dev->impl, ptr, size, device_ptr);
  if (!dev->info.host_accessible)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "the %s backend cannot use memory it did not allocate (it has no "
                           "mem_register and its device memory is not host memory)",
                           dev->backend->name);
  *device_ptr = ptr;
  return ACCEL_OK;
}

static void backend_unregister(accel_device_t *dev, void *ptr, void *device_ptr) {
  const accel_backend_vtable_t *vt = dev->backend->vt;
  if (vt->mem_unregister) vt->mem_unregister(dev->impl, ptr, device_ptr);
}

/* ---------------------------------------------------------------------------------------- */
/* Every live registration of every device, so that a free of memory one of them covers (an
 * accel_host_alloc block, or another device's allocation) is refused instead of leaving the
 * registration over freed memory. Few entries (a registration per tensor at most): a list. */

typedef struct tracked {
  const accel_device_t *dev; /* identity only */
  uintptr_t base;
  size_t size;
  bool shared; /* made by DLPack imports */
  char device[48];
} tracked_t;

static pthread_mutex_t tracked_lock = PTHREAD_MUTEX_INITIALIZER;
static tracked_t *tracked;
static size_t ntracked, captracked;
static atomic_size_t tracked_live; /* ntracked, read without the lock: 0 is the common case */

static accel_status_t track(const accel_device_t *dev, void *ptr, size_t size, bool shared) {
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&tracked_lock);
  if (ntracked == captracked) {
    size_t cap = captracked ? captracked * 2 : 16;
    tracked_t *t = realloc(tracked, cap * sizeof *t);
    if (t) tracked = t, captracked = cap;
  }
  if (ntracked < captracked) {
    tracked_t *t = &tracked[ntracked++];
    *t = (tracked_t){.dev = dev, .base = (uintptr_t)ptr, .size = size, .shared = shared};
    snprintf(t->device, sizeof t->device, "%s:%d", dev->backend->name, dev->index);
    atomic_store(&tracked_live, ntracked);
  } else {
    st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  pthread_mutex_unlock(&tracked_lock);
  return st;
}

static void untrack(const accel_device_t *dev, void *ptr) {
  pthread_mutex_lock(&tracked_lock);
  for (size_t i = 0; i < ntracked; ++i) {
    if (tracked[i].dev != dev || tracked[i].base != (uintptr_t)ptr) continue;
    tracked[i] = tracked[--ntracked];
    break;
  }
  atomic_store(&tracked_live, ntracked);
  pthread_mutex_unlock(&tracked_lock);
}

accel_status_t accel_external_check_free(const void *ptr, size_t size) {
  if (atomic_load_explicit(&tracked_live, memory_order_acquire) == 0 || size == 0)
    return ACCEL_OK;
  const uintptr_t lo = (uintptr_t)ptr, hi = lo + size;
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&tracked_lock);
  for (size_t i = 0; i < ntracked && st == ACCEL_OK; ++i) {
    const tracked_t *t = &tracked[i];
    if (t->base >= hi || t->base + t->size <= lo) continue;
    st = accel_set_error(ACCEL_ERROR_STATE,
                         "[%p, +%zu) is covered by the registration [%p, +%zu) of device %s "
                         "(%s); end it first",
                         ptr, size, (void *)t->base, t->size, t->device,
                         t->shared ? "made by DLPack imports: accel_dlpack_release them"
                                   : "accel_memory_register: accel_memory_unregister it");
  }
  pthread_mutex_unlock(&tracked_lock);
  return st;
}

/* ---------------------------------------------------------------------------------------- */

accel_status_t accel_external_register(accel_device_t *dev, const char *fn, void *ptr,
                                       size_t size, bool read_only,
                                       accel_allocator_ended_fn ended, void *ctx,
                                       accel_allocator_pins_t *pins, void **device_ptr) {
  if ((uintptr_t)ptr > UINTPTR_MAX - size)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: [%p, +%zu) wraps the address space",
                           fn, ptr, size);
  void *dptr = NULL;
  accel_status_t st = backend_register(dev, ptr, size, &dptr);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", fn, accel_last_error());
  /* listed first: from the moment the allocator has it, freeing its memory is refused */
  if ((st = track(dev, ptr, size, ended != NULL)) == ACCEL_OK) {
    st = accel_allocator_register(dev->mem, ptr, size, dptr, read_only, ended, ctx, pins);
    if (st != ACCEL_OK) untrack(dev, ptr); /* overlaps (the allocator names what) */
  }
  if (st != ACCEL_OK) {
    backend_unregister(dev, ptr, dptr);
    return accel_set_error(st, "%s: %s", fn, accel_last_error());
  }
  *device_ptr = dptr;
  return ACCEL_OK;
}

void accel_external_finish(accel_device_t *dev, void *ptr, void *device_ptr) {
  backend_unregister(dev, ptr, device_ptr);
  untrack(dev, ptr);
}

void accel_external_teardown(accel_device_t *dev) {
  void *device_ptr = NULL;
  for (void *p; (p = accel_allocator_take_registration(dev->mem, &device_ptr));)
    accel_external_finish(dev, p, device_ptr);
}

accel_status_t accel_memory_register(accel_device_t *dev, void *ptr, size_t size, unsigned flags,
                                     void **device_ptr) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(ptr, __func__, "ptr is NULL");
  ACCEL_REQUIRE_ARG(device_ptr, __func__, "device_ptr is NULL");
  ACCEL_REQUIRE_ARG(size, __func__, "size is 0");
  ACCEL_REQUIRE_FLAGS(flags, ACCEL_REGISTER_READ_ONLY, __func__);
  if ((st = accel_capture_check_unsafe(__func__, NULL)) != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(dev->trace_id, __func__);
  st = accel_external_register(dev, __func__, ptr, size, flags & ACCEL_REGISTER_READ_ONLY, NULL,
                               NULL, NULL, device_ptr);
  accel_trace_end_args(&t, "\"bytes\":%zu", size);
  return st;
}

accel_status_t accel_memory_unregister(accel_device_t *dev, void *ptr) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(ptr, __func__, "ptr is NULL");
  if ((st = accel_capture_check_unsafe(__func__, NULL)) != ACCEL_OK) return st;
  /* graphs destroyed or reset after replays, and released imports, let go of their pins in
   * retired releases: while only those hold the range, wait for them (holding no lock; another
   * thread may be running them, hence the retry) */
  accel_callbacks_begin(); /* a waiting call: never a host function's (DLPack deleters run) */
  while ((st = accel_allocator_unregister_begin(dev->mem, ptr)) == ACCEL_ERROR_NOT_READY) {
    accel_device_drain(dev);
    accel_device_reap(dev, true);
    sched_yield();
  }
  accel_callbacks_end();
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  accel_trace_scope_t t = accel_trace_begin(dev->trace_id, __func__);
  /* new work can no longer name the range; wait for what was queued before (no lock held) */
  st = accel_device_drain(dev);
  void *device_ptr = NULL;
  accel_allocator_unregister_end(dev->mem, ptr, &device_ptr);
  accel_external_finish(dev, ptr, device_ptr);
  accel_trace_end(&t);
  if (st != ACCEL_OK) /* a failed stream ran nothing more: the range is free all the same */
    accel_log(ACCEL_LOG_WARN, "accel", "%s: draining the device failed (%s); the range is "
                                       "unregistered", __func__, accel_last_error());
  return ACCEL_OK;
}

accel_status_t accel_device_dlpack_device(accel_device_t *dev, accel_dl_device_t *out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  const int32_t type = dev->backend->vt->dlpack_device_type;
  if (type == 0)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "%s: the %s backend has no DLPack device type", __func__,
                           dev->backend->name);
  out->device_type = type;
  out->device_id = dev->index;
  return ACCEL_OK;
}

/* Fills the device's hooks (device.h) when libaccel is loaded, before any device opens. */
__attribute__((constructor)) static void external_register(void) {
  accel_device_external.check_free = accel_external_check_free;
  accel_device_external.teardown = accel_external_teardown;
}
