/* Raw USM allocation; the core's caching allocator sits on top. */
#include "ze_internal.h"

/* The core needs >= 256 byte alignment for every raw allocation. */
#define ACCEL_ZE_ALIGN 256u

accel_status_t accel_ze_mem_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  accel_ze_device_t *dev = device;
  if (accel_ze_host->fault_should_fail(ACCEL_FAULT_ALLOC))
    return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                    "zeMemAllocDevice failed: injected fault (%zu bytes)", size);
  ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *p = NULL;
  ACCEL_ZE_TRY(dev->api, zeMemAllocDevice, dev->ctx, &desc, size, ACCEL_ZE_ALIGN, dev->dev, &p);
  atomic_fetch_add(&dev->be->bytes_in_use[dev->index], (uint64_t)size);
  *ptr = p;
  return ACCEL_OK;
}

/* The plugin ABI gives no size on free: the accounting for mem_info reads it back. */
void accel_ze_mem_free(accel_be_device_t *device, void *ptr) {
  accel_ze_device_t *dev = device;
  size_t size = 0;
  const accel_ze_api_t *api = dev->api;
  if (api->zeMemGetAddressRange) {
    void *base = NULL;
    if (api->zeMemGetAddressRange(dev->ctx, ptr, &base, &size) != ZE_RESULT_SUCCESS) size = 0;
  }
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
  if (accel_ze_host->fault_should_fail(ACCEL_FAULT_ALLOC))
    return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                    "zeMemAllocHost failed: injected fault (%zu bytes)", size);
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
