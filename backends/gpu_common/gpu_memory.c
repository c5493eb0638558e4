/* Raw device allocations (the core's caching allocator sits on top) and pinned host memory. */
#include "gpu_backend.h"

accel_status_t gpu_mem_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  gpu_device_t *d = device;
  gpuDevicePtr_t p = 0;
  accel_status_t st = gpu_make_current(d);
  if (st == ACCEL_OK) st = GPU_TRY(d->backend, MemAlloc, &p, size);
  if (st == ACCEL_OK) *ptr = GPU_VPTR(p); /* vendor allocations are >= 256-byte aligned */
  return st;
}

void gpu_mem_free(accel_be_device_t *device, void *ptr) {
  gpu_device_t *d = device;
  if (gpu_make_current_or_warn(d)) GPU_WARN(d->backend, MemFree, GPU_DPTR(ptr));
}

accel_status_t gpu_host_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  gpu_device_t *d = device;
  accel_status_t st = gpu_make_current(d);
  /* Portable: pinned for every device, not only the current one. */
  return st != ACCEL_OK ? st : GPU_TRY(d->backend, HostAlloc, ptr, size, GPU_HOST_ALLOC_PORTABLE);
}

void gpu_host_free(accel_be_device_t *device, void *ptr) {
  gpu_device_t *d = device;
  if (gpu_make_current_or_warn(d)) GPU_WARN(d->backend, HostFree, ptr);
}

/* One pointer attribute of ptr (the current context is d's); false with an error naming the
 * attribute when the runtime does not know the pointer. */
static accel_status_t pointer_attribute(gpu_device_t *d, void *out, unsigned attribute,
                                        const char *what, void *ptr) {
  gpuError_t err = d->backend->api.PointerGetAttribute(out, attribute, GPU_DPTR(ptr));
  if (err == GPU_SUCCESS) return ACCEL_OK;
  return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                             "%s: %p is not memory the %s runtime knows (%s of %s: %s); "
                             "register device memory of the device's context",
                             GPU_BACKEND_NAME, ptr, GPU_BACKEND_NAME, what,
                             gpu_api_names.PointerGetAttribute, gpu_error_name(d->backend, err));
}

/* Accepts [ptr, ptr + size) when the runtime says it lies in one allocation that kernels of
 * this device reach at the same address: device memory of the device's context (CUDA: the
 * CONTEXT attribute is the retained primary context; HIP, which has no CONTEXT attribute: the
 * DEVICE_ORDINAL is the device's), which includes managed memory and mapped pinned host memory
 * of that context. Unverified here (no GPU): written from the driver API documentation of
 * cuPointerGetAttribute / hipPointerGetAttribute. */
accel_status_t gpu_mem_register(accel_be_device_t *device, void *ptr, size_t size,
                                void **device_ptr) {
  gpu_device_t *d = device;
  if (!d->backend->api.PointerGetAttribute)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: the runtime lacks %s",
                               GPU_BACKEND_NAME, gpu_api_names.PointerGetAttribute);
  accel_status_t st = gpu_make_current(d);
  if (st != ACCEL_OK) return st;
  gpuDevicePtr_t dptr = 0, start = 0;
  size_t range = 0;
  if ((st = pointer_attribute(d, &dptr, GPU_POINTER_ATTR_DEVICE_POINTER, "DEVICE_POINTER", ptr)) ||
      (st = pointer_attribute(d, &start, GPU_POINTER_ATTR_RANGE_START, "RANGE_START_ADDR", ptr)) ||
      (st = pointer_attribute(d, &range, GPU_POINTER_ATTR_RANGE_SIZE, "RANGE_SIZE", ptr)))
    return st;
#if GPU_HAS_PRIMARY_CONTEXT
  gpuContext_t owner = NULL;
  if ((st = pointer_attribute(d, &owner, GPU_POINTER_ATTR_CONTEXT, "CONTEXT", ptr))) return st;
  if (owner != d->context)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "%s: %p belongs to context %p, not to the device's primary "
                               "context %p", GPU_BACKEND_NAME, ptr, (void *)owner,
                               (void *)d->context);
#else
  int ordinal = -1;
  if ((st = pointer_attribute(d, &ordinal, GPU_POINTER_ATTR_DEVICE_ORDINAL, "DEVICE_ORDINAL",
                              ptr)))
    return st;
  if (ordinal != d->ordinal)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: %p belongs to device %d, not %d",
                               GPU_BACKEND_NAME, ptr, ordinal, d->ordinal);
#endif
  if (GPU_VPTR(dptr) != ptr)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "%s: kernels reach %p at another address (%p): not registrable",
                               GPU_BACKEND_NAME, ptr, GPU_VPTR(dptr));
  const uintptr_t lo = (uintptr_t)GPU_VPTR(start), p = (uintptr_t)ptr;
  if (p < lo || p - lo > range || size > range - (p - lo))
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "%s: [%p, +%zu) runs past its allocation [%p, +%zu)",
                               GPU_BACKEND_NAME, ptr, size, GPU_VPTR(start), range);
  *device_ptr = ptr;
  return ACCEL_OK;
}
