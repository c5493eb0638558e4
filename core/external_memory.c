/*
 * External memory (accel_memory_register / accel_memory_unregister): ranges accel did not
 * allocate become operands of kernels, copies and graphs. The allocator keeps them as segments
 * of their own (allocator.h, "Registrations"), so every check an allocation gets (bounds,
 * overlap, pins by captures, use after the end) applies to them unchanged; the backend only
 * says whether it can use the memory in place (vtable mem_register).
 */
#include <inttypes.h>
#include <sched.h>

#include "capture.h"
#include "external_memory.h"
#include "internal.h"
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

accel_status_t accel_external_register(accel_device_t *dev, const char *fn, void *ptr,
                                       size_t size, bool read_only, const void *owner,
                                       void **device_ptr) {
  if ((uintptr_t)ptr > UINTPTR_MAX - size)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: [%p, +%zu) wraps the address space",
                           fn, ptr, size);
  void *dptr = NULL;
  accel_status_t st = backend_register(dev, ptr, size, &dptr);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", fn, accel_last_error());
  st = accel_allocator_register(dev->mem, ptr, size, dptr, read_only, owner);
  if (st != ACCEL_OK) { /* overlaps an allocation or registration (the allocator names it) */
    backend_unregister(dev, ptr, dptr);
    return accel_set_error(st, "%s: %s", fn, accel_last_error());
  }
  *device_ptr = dptr;
  return ACCEL_OK;
}

void accel_external_finish(accel_device_t *dev, void *ptr, void *device_ptr) {
  backend_unregister(dev, ptr, device_ptr);
}

void accel_external_teardown(accel_device_t *dev) {
  void *device_ptr = NULL;
  for (void *p; (p = accel_allocator_take_registration(dev->mem, &device_ptr));)
    backend_unregister(dev, p, device_ptr);
}

accel_status_t accel_memory_register(accel_device_t *dev, void *ptr, size_t size, unsigned flags,
                                     void **device_ptr) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(ptr, __func__, "ptr is NULL");
  ACCEL_REQUIRE_ARG(device_ptr, __func__, "device_ptr is NULL");
  ACCEL_REQUIRE_ARG(size, __func__, "size is 0");
  if (flags & ~(unsigned)ACCEL_REGISTER_READ_ONLY)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", __func__,
                           flags & ~(unsigned)ACCEL_REGISTER_READ_ONLY);
  if ((st = accel_capture_check_unsafe(__func__, NULL)) != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(dev->trace_id, __func__);
  st = accel_external_register(dev, __func__, ptr, size, flags & ACCEL_REGISTER_READ_ONLY, NULL,
                               device_ptr);
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
  while ((st = accel_allocator_unregister_begin(dev->mem, ptr, NULL)) == ACCEL_ERROR_NOT_READY) {
    accel_device_drain(dev);
    accel_device_reap(dev, true);
    sched_yield();
  }
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
