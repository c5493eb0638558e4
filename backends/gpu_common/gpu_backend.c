/* Backend lifetime: loading the runtime, counting and describing devices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_backend.h"

static accel_status_t unavailable(gpu_backend_t *be, gpuError_t err, const char *call) {
  return gpu_host->set_error(ACCEL_ERROR_UNAVAILABLE, "%s loaded, but %s failed: %s (%u)",
                             be->library_path, call, gpu_error_name(be, err), (unsigned)err);
}

/* Probing does only what counting devices needs (cuInit + cuDeviceGetCount on CUDA,
 * hipGetDeviceCount on HIP): no context, no allocation. */
static accel_status_t count_devices(gpu_backend_t *be) {
  gpuError_t err;
#if GPU_VENDOR_CUDA
  err = be->api.Init(0);
  if (err != GPU_SUCCESS) return unavailable(be, err, gpu_api_names.Init);
#endif
  err = be->api.DeviceGetCount(&be->device_count);
  if (err != GPU_SUCCESS) return unavailable(be, err, gpu_api_names.DeviceGetCount);
  if (be->device_count <= 0)
    return gpu_host->set_error(ACCEL_ERROR_UNAVAILABLE, "%s loaded, but it reports no device",
                               be->library_path);
  if (be->api.DriverGetVersion(&be->driver_version) != GPU_SUCCESS) be->driver_version = 0;
  return ACCEL_OK;
}

accel_status_t gpu_backend_init(const accel_host_api_t *host, accel_be_backend_t **out) {
  gpu_host = host;
  gpu_backend_t *be = calloc(1, sizeof *be);
  if (!be) return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: backend state", GPU_BACKEND_NAME);
  /* ACCEL_VISIBLE_DEVICES is already mapped to GPU_VISIBLE_DEVICES_ENV by core (loader.c,
   * once, before any backend_init): a plugin must not setenv while other threads may getenv. */
  accel_status_t st = gpu_loader_open(be);
  if (st == ACCEL_OK) st = count_devices(be);
  if (st != ACCEL_OK) {
    free(be);
    return st;
  }
  host->log(ACCEL_LOG_INFO, GPU_BACKEND_NAME, "%s: %d device(s)", be->library_path,
            be->device_count);
  *out = be;
  return ACCEL_OK;
}

void gpu_backend_shutdown(accel_be_backend_t *backend) {
  gpu_hostfn_shutdown();
  free(backend);
}

accel_status_t gpu_device_count(accel_be_backend_t *backend, int *count) {
  *count = ((gpu_backend_t *)backend)->device_count;
  return ACCEL_OK;
}

accel_status_t gpu_device_info(accel_be_backend_t *backend, int index, accel_device_info_t *info) {
  gpu_backend_t *be = backend;
  gpuDevice_t dev;
  size_t total = 0;
  int units = 0, major = 0, minor = 0;
  accel_status_t st = GPU_TRY(be, DeviceGet, &dev, index);
  if (st == ACCEL_OK) st = GPU_TRY(be, DeviceGetName, info->name, (int)sizeof info->name, dev);
  if (st == ACCEL_OK) st = GPU_TRY(be, DeviceTotalMem, &total, dev);
  if (st == ACCEL_OK)
    st = GPU_TRY(be, DeviceGetAttribute, &units, GPU_ATTR_MULTIPROCESSOR_COUNT, dev);
  if (st == ACCEL_OK) st = GPU_TRY(be, DeviceGetAttribute, &major, GPU_ATTR_CC_MAJOR, dev);
  if (st == ACCEL_OK) st = GPU_TRY(be, DeviceGetAttribute, &minor, GPU_ATTR_CC_MINOR, dev);
  if (st != ACCEL_OK) return st;
  snprintf(info->vendor, sizeof info->vendor, "%s", GPU_VENDOR_STRING);
  snprintf(info->backend, sizeof info->backend, "%s", GPU_BACKEND_NAME);
  GPU_FORMAT_DRIVER_VERSION(info->driver_version, sizeof info->driver_version,
                            be->driver_version);
  info->index = index;
  info->type = ACCEL_DEVICE_TYPE_GPU;
  info->memory_total = total;
  /* Free memory needs a context; device_info creates none. mem_info has the live value. */
  info->memory_free = total;
  info->compute_units = (uint32_t)units;
#if GPU_VENDOR_CUDA
  info->supports_fp16 = major * 10 + minor >= 53; /* native half arithmetic from sm_53 */
  info->supports_bf16 = major >= 8;               /* native bf16 from sm_80 */
#else
  info->supports_fp16 = 1; /* every GCN/CDNA/RDNA target we build has packed fp16 */
  info->supports_bf16 = 0; /* bf16 is emulated in fp32 by the kernels */
  (void)major;
  (void)minor;
#endif
  info->native_graphs = 1;
  info->lazy_default = 0;
  info->host_accessible = 0;
  return ACCEL_OK;
}
