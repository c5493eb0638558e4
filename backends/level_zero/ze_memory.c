/* Raw USM allocation; the core's caching allocator sits on top. */
#include "ze_internal.h"

/* The core needs >= 256 byte alignment for every raw allocation. */
#define ACCEL_ZE_ALIGN 256u

/* Bytes of a device allocation for mem_info. The plugin ABI gives no size on free, so the
 * size is read back with zeMemGetAddressRange on both sides: a driver that reports the
 * allocation rounded up cannot make the count wrap below zero. 0 without that entry point. */
static size_t accel_ze_accounted(accel_ze_device_t *dev, void *ptr) {
  const accel_ze_api_t *api = dev->api;
  void *base = NULL;
  size_t size = 0;
  if (!api->zeMemGetAddressRange ||
      api->zeMemGetAddressRange(dev->ctx, ptr, &base, &size) != ZE_RESULT_SUCCESS)
    return 0;
  return size;
}

accel_status_t accel_ze_mem_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  accel_ze_device_t *dev = device;
  ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *p = NULL;
  ACCEL_ZE_TRY(dev->api, zeMemAllocDevice, dev->ctx, &desc, size, ACCEL_ZE_ALIGN, dev->dev, &p);
  atomic_fetch_add(&dev->be->bytes_in_use[dev->index], (uint64_t)accel_ze_accounted(dev, p));
  *ptr = p;
  return ACCEL_OK;
}

void accel_ze_mem_free(accel_be_device_t *device, void *ptr) {
  accel_ze_device_t *dev = device;
  const accel_ze_api_t *api = dev->api;
  size_t size = accel_ze_accounted(dev, ptr);
  ze_result_t r = api->zeMemFree(dev->ctx, ptr);
  if (r != ZE_RESULT_SUCCESS) {
    accel_ze_host->log(ACCEL_LOG_ERROR, "level_zero", "zeMemFree failed: %s (0x%x)",
                       accel_ze_result_name(r), (unsigned)r);
    return;
  }
  atomic_fetch_sub(&dev->be->bytes_in_use[dev->index], (uint64_t)size);
}

accel_status_t accel_ze_host_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  accel_ze_device_t *dev = device;
  ze_host_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  void *p = NULL;
  ACCEL_ZE_TRY(dev->api, zeMemAllocHost, dev->ctx, &desc, size, ACCEL_ZE_ALIGN, &p);
  *ptr = p;
  return ACCEL_OK;
}

void accel_ze_host_free(accel_be_device_t *device, void *ptr) {
  accel_ze_device_t *dev = device;
  ze_result_t r = dev->api->zeMemFree(dev->ctx, ptr);
  if (r != ZE_RESULT_SUCCESS)
    accel_ze_host->log(ACCEL_LOG_ERROR, "level_zero", "zeMemFree (host) failed: %s (0x%x)",
                       accel_ze_result_name(r), (unsigned)r);
}

/* Accepts [ptr, ptr + size) when zeMemGetAllocProperties in the device's context says it is
 * USM the kernels reach: device memory of this device, or host memory (the kernels are built
 * with device and host indirect access, ze_module.c; shared memory is refused for that reason)
 * and zeMemGetAddressRange puts the whole range inside the allocation. Unverified here (no
 * Level Zero device): written from the Level Zero specification. */
accel_status_t accel_ze_mem_register(accel_be_device_t *device, void *ptr, size_t size,
                                     void **device_ptr) {
  accel_ze_device_t *dev = device;
  const accel_ze_api_t *api = dev->api;
  if (!api->zeMemGetAllocProperties || !api->zeMemGetAddressRange)
    return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                    "level_zero: the loader lacks zeMemGetAllocProperties or "
                                    "zeMemGetAddressRange");
  ze_memory_allocation_properties_t props = {.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
  ze_device_handle_t owner = NULL;
  ze_result_t r = api->zeMemGetAllocProperties(dev->ctx, ptr, &props, &owner);
  if (r != ZE_RESULT_SUCCESS || props.type == ZE_MEMORY_TYPE_UNKNOWN)
    return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                    "level_zero: %p is not USM of the device's context "
                                    "(zeMemGetAllocProperties: %s, type %d)",
                                    ptr, accel_ze_result_name(r), (int)props.type);
  if (props.type == ZE_MEMORY_TYPE_SHARED)
    return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                    "level_zero: %p is shared USM; accel's kernels are built "
                                    "for device and host USM only", ptr);
  if (props.type == ZE_MEMORY_TYPE_DEVICE && owner != dev->dev)
    return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                    "level_zero: %p is device USM of another device", ptr);
  void *base = NULL;
  size_t range = 0;
  r = api->zeMemGetAddressRange(dev->ctx, ptr, &base, &range);
  const uintptr_t lo = (uintptr_t)base, p = (uintptr_t)ptr;
  if (r != ZE_RESULT_SUCCESS || p < lo || p - lo > range || size > range - (p - lo))
    return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                    "level_zero: [%p, +%zu) is not inside one USM allocation "
                                    "(zeMemGetAddressRange: %s, [%p, +%zu))",
                                    ptr, size, accel_ze_result_name(r), base, range);
  *device_ptr = ptr;
  return ACCEL_OK;
}
