/* Vendor error reporting and fault injection. */
#include <stdio.h>

#include "gpu_backend.h"

const accel_host_api_t *gpu_host;

const char *gpu_error_name(const gpu_backend_t *backend, gpuError_t err) {
  const char *name;
  GPU_ERROR_NAME(&backend->api, err, &name);
  return name ? name : "unknown error";
}

accel_status_t gpu_status_of(gpuError_t err) {
  if (err == GPU_SUCCESS) return ACCEL_OK;
  if (err == GPU_ERROR_OUT_OF_MEMORY) return ACCEL_ERROR_OUT_OF_MEMORY;
  if (err == GPU_ERROR_NOT_READY) return ACCEL_ERROR_NOT_READY;
  /* the vendor's capture rules (a call not allowed while a stream captures, e.g. on a wrapped
   * stream that a runtime captures): the capture is invalidated either way */
  if (err == GPU_ERROR_CAPTURE_INVALIDATED) return ACCEL_ERROR_CAPTURE_INVALIDATED;
  if (err >= GPU_ERROR_CAPTURE_FIRST && err <= GPU_ERROR_CAPTURE_LAST)
    return ACCEL_ERROR_ILLEGAL_IN_CAPTURE;
  return ACCEL_ERROR_BACKEND;
}

accel_status_t gpu_check(const gpu_backend_t *backend, gpuError_t err, const char *call) {
  if (err == GPU_SUCCESS) return ACCEL_OK;
  accel_status_t status = gpu_status_of(err);
  return gpu_host->set_error(status, "%s failed: %s (%u)", call, gpu_error_name(backend, err),
                             (unsigned)err);
}

void gpu_warn(const gpu_backend_t *backend, gpuError_t err, const char *call) {
  if (err != GPU_SUCCESS)
    gpu_host->log(ACCEL_LOG_WARN, GPU_BACKEND_NAME, "%s failed: %s (%u)", call,
                  gpu_error_name(backend, err), (unsigned)err);
}

int gpu_fault(accel_fault_site_t site) {
  return gpu_host->fault_should_fail && gpu_host->fault_should_fail(site);
}
