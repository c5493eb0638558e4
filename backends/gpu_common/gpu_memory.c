/* Raw device allocations (the core's caching allocator sits on top) and pinned host memory. */
#include "gpu_backend.h"

accel_status_t gpu_mem_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  gpu_device_t *d = device;
  gpuDevicePtr_t p = 0;
  GPU_ENTER(st, d);
  if (st == ACCEL_OK) st = GPU_TRY(d->backend, MemAlloc, &p, size);
  if (st == ACCEL_OK) *ptr = GPU_VPTR(p); /* vendor allocations are >= 256-byte aligned */
  return st;
}

void gpu_mem_free(accel_be_device_t *device, void *ptr) {
  gpu_device_t *d = device;
  GPU_ENTER_OR_WARN(current, d);
  if (current) GPU_WARN(d->backend, MemFree, GPU_DPTR(ptr));
}

accel_status_t gpu_host_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  gpu_device_t *d = device;
  GPU_ENTER(st, d);
  /* Portable: pinned for every device, not only the current one. */
  return st != ACCEL_OK ? st : GPU_TRY(d->backend, HostAlloc, ptr, size, GPU_HOST_ALLOC_PORTABLE);
}

void gpu_host_free(accel_be_device_t *device, void *ptr) {
  gpu_device_t *d = device;
  GPU_ENTER_OR_WARN(current, d);
  if (current) GPU_WARN(d->backend, HostFree, ptr);
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

#if GPU_HAS_PRIMARY_CONTEXT
/* Virtual memory (cuMemMap, PyTorch's expandable segments): RANGE_START/RANGE_SIZE describe the
 * reserved range, not what is mapped ("to retrieve the size of the mapped region, see
 * cuMemGetAddressRange", cuda.h), so [ptr, ptr + size) is walked mapped region by mapped
 * region. Without cuMemGetAddressRange the range check stands alone. */
static accel_status_t check_mapped(gpu_device_t *d, void *ptr, size_t size) {
  gpu_backend_t *be = d->backend;
  if (!be->api.MemGetAddressRange) return ACCEL_OK;
  uintptr_t p = (uintptr_t)ptr;
  const uintptr_t end = p + size;
  for (int n = 0; p < end && n < 4096; n++) {
    gpuDevicePtr_t base = 0;
    size_t length = 0;
    gpuError_t err = be->api.MemGetAddressRange(&base, &length, GPU_DPTR(p));
    if (err != GPU_SUCCESS || (uintptr_t)GPU_VPTR(base) > p ||
        (uintptr_t)GPU_VPTR(base) + length <= p)
      return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                 "%s: [%p, +%zu) is not mapped from %p on (%s: %s): reserved "
                                 "but not backed by memory", GPU_BACKEND_NAME, ptr, size,
                                 (void *)p, gpu_api_names.MemGetAddressRange,
                                 gpu_error_name(be, err));
    p = (uintptr_t)GPU_VPTR(base) + length;
  }
  return ACCEL_OK;
}
#endif

/* ptr belongs to this device (its DEVICE_ORDINAL attribute). */
static accel_status_t check_ordinal(gpu_device_t *d, void *ptr) {
  int ordinal = -1;
  accel_status_t st =
      pointer_attribute(d, &ordinal, GPU_POINTER_ATTR_DEVICE_ORDINAL, "DEVICE_ORDINAL", ptr);
  if (st != ACCEL_OK) return st;
  if (ordinal != d->ordinal)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: %p belongs to device %d, not %d",
                               GPU_BACKEND_NAME, ptr, ordinal, d->ordinal);
  return ACCEL_OK;
}

/* Accepts [ptr, ptr + size) when the runtime says it lies in one allocation that kernels of
 * this device reach at the same address: device memory of the device's context (CUDA: the
 * CONTEXT attribute is the retained primary context; memory that belongs to no context, as
 * stream-ordered cudaMallocAsync pools and cuMemMap mappings do, when its DEVICE_ORDINAL is the
 * device's and every byte is mapped; HIP, which has no CONTEXT attribute: the DEVICE_ORDINAL is
 * the device's), which includes managed memory and mapped pinned host memory of that context.
 * Checked over the fake driver (tests/fake_driver); on a GPU only from the driver API
 * documentation of cuPointerGetAttribute / hipPointerGetAttribute. */
accel_status_t gpu_mem_register(accel_be_device_t *device, void *ptr, size_t size,
                                void **device_ptr) {
  gpu_device_t *d = device;
  if (!d->backend->api.PointerGetAttribute)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: the runtime lacks %s",
                               GPU_BACKEND_NAME, gpu_api_names.PointerGetAttribute);
  GPU_ENTER(st, d);
  if (st != ACCEL_OK) return st;
  gpuDevicePtr_t dptr = 0, start = 0;
  size_t range = 0;
  if ((st = pointer_attribute(d, &dptr, GPU_POINTER_ATTR_DEVICE_POINTER, "DEVICE_POINTER", ptr)) ||
      (st = pointer_attribute(d, &start, GPU_POINTER_ATTR_RANGE_START, "RANGE_START_ADDR", ptr)) ||
      (st = pointer_attribute(d, &range, GPU_POINTER_ATTR_RANGE_SIZE, "RANGE_SIZE", ptr)))
    return st;
#if GPU_HAS_PRIMARY_CONTEXT
  /* cuda.h: CONTEXT is INVALID_VALUE for memory that no context allocated, mapped or
   * registered; stream-ordered and cuMemMap memory answer that or NULL */
  gpuContext_t owner = NULL;
  if (d->backend->api.PointerGetAttribute(&owner, GPU_POINTER_ATTR_CONTEXT, GPU_DPTR(ptr)) !=
      GPU_SUCCESS)
    owner = NULL;
  if (owner && owner != d->context)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "%s: %p belongs to context %p, not to the device's primary "
                               "context %p", GPU_BACKEND_NAME, ptr, (void *)owner,
                               (void *)d->context);
  if (!owner) { /* a stream-ordered pool's or a cuMemMap mapping: the device decides */
    if ((st = check_ordinal(d, ptr)) || (st = check_mapped(d, ptr, size))) return st;
  }
#else
  if ((st = check_ordinal(d, ptr))) return st;
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
