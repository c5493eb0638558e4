/* Opening a device: context, kernel module, launch limits. */
#include <stdlib.h>

#include "gpu_backend.h"

/* Blocks per compute unit when a launch asks for more: enough resident 256-lane blocks to
 * fill every unit; the kernels are grid-stride so the result does not depend on it. */
#define GPU_BLOCKS_PER_UNIT 8u

/* Makes d current on the calling thread; *call names the vendor entry point. */
static gpuError_t set_current(gpu_device_t *d, const char **call) {
#if GPU_HAS_PRIMARY_CONTEXT
  *call = gpu_api_names.CtxSetCurrent;
  return d->backend->api.CtxSetCurrent(d->context);
#else
  *call = gpu_api_names.SetDevice;
  return d->backend->api.SetDevice(d->ordinal);
#endif
}

accel_status_t gpu_make_current(gpu_device_t *d) {
  const char *call;
  gpuError_t err = set_current(d, &call);
  return gpu_check(d->backend, err, call);
}

int gpu_make_current_or_warn(gpu_device_t *d) {
  const char *call;
  gpuError_t err = set_current(d, &call);
  gpu_warn(d->backend, err, call);
  return err == GPU_SUCCESS;
}

accel_status_t gpu_device_finish(gpu_device_t *d, accel_be_device_t **out) {
  gpu_backend_t *be = d->backend;
  int units = 0;
  accel_status_t st = gpu_make_current(d);
  if (st == ACCEL_OK)
    st = GPU_TRY(be, DeviceGetAttribute, &units, GPU_ATTR_MULTIPROCESSOR_COUNT, d->handle);
  if (st == ACCEL_OK) st = gpu_module_load(d);
  if (st != ACCEL_OK) {
#if GPU_HAS_PRIMARY_CONTEXT
    if (d->primary) GPU_WARN(be, PrimaryCtxRelease, d->handle);
#endif
    free(d);
    return st;
  }
  d->max_grid = (units > 0 ? (uint32_t)units : 1u) * GPU_BLOCKS_PER_UNIT;
  *out = d;
  return ACCEL_OK;
}

accel_status_t gpu_device_open(accel_be_backend_t *backend, int index, accel_be_device_t **out) {
  gpu_backend_t *be = backend;
  gpu_device_t *d = calloc(1, sizeof *d);
  if (!d) return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: device state", GPU_BACKEND_NAME);
  d->backend = be;
  d->ordinal = index;
  accel_status_t st = GPU_TRY(be, DeviceGet, &d->handle, index);
#if GPU_HAS_PRIMARY_CONTEXT
  if (st == ACCEL_OK) st = GPU_TRY(be, PrimaryCtxRetain, &d->context, d->handle);
  d->primary = st == ACCEL_OK;
#endif
  if (st != ACCEL_OK) {
    free(d);
    return st;
  }
  return gpu_device_finish(d, out);
}

void gpu_device_close(accel_be_device_t *device) {
  gpu_device_t *d = device;
  if (gpu_make_current_or_warn(d)) gpu_module_unload(d);
#if GPU_HAS_PRIMARY_CONTEXT
  /* a runtime's own context is the runtime's to destroy */
  if (d->primary) GPU_WARN(d->backend, PrimaryCtxRelease, d->handle);
#endif
  free(d);
}

accel_status_t gpu_device_synchronize(accel_be_device_t *device) {
  gpu_device_t *d = device;
  accel_status_t st = gpu_make_current(d);
  return st != ACCEL_OK ? st : GPU_TRY(d->backend, DeviceSynchronize);
}

accel_status_t gpu_mem_info(accel_be_device_t *device, uint64_t *free_bytes,
                            uint64_t *total_bytes) {
  gpu_device_t *d = device;
  size_t free_now = 0, total = 0;
  accel_status_t st = gpu_make_current(d);
  if (st == ACCEL_OK) st = GPU_TRY(d->backend, MemGetInfo, &free_now, &total);
  if (st != ACCEL_OK) return st;
  *free_bytes = free_now;
  *total_bytes = total;
  return ACCEL_OK;
}
