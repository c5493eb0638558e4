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
