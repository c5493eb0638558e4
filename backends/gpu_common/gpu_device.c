/* Opening a device: context, kernel module, launch limits. */
#include <stdlib.h>

#include "gpu_backend.h"

/* Blocks per compute unit when a launch asks for more: enough resident 256-lane blocks to
 * fill every unit; the kernels are grid-stride so the result does not depend on it. */
#define GPU_BLOCKS_PER_UNIT 8u

/* Makes d current on the calling thread and remembers in *sc what was current before, unless
 * it was d already (then there is nothing to put back); *call names the entry point. */
static gpuError_t set_current(gpu_device_t *d, gpu_scope_t *sc, const char **call) {
  gpu_backend_t *be = d->backend;
  sc->device = NULL;
  gpu_current_t before = 0; /* read only when the call succeeds */
  if (be->api.GPU_GET_CURRENT && be->api.GPU_GET_CURRENT(&before) == GPU_SUCCESS) {
    if (before == GPU_CURRENT_OF(d)) return GPU_SUCCESS;
    sc->saved = before;
    sc->device = d;
  }
  *call = gpu_api_names.GPU_SET_CURRENT;
  gpuError_t err = be->api.GPU_SET_CURRENT(GPU_CURRENT_OF(d));
  if (err != GPU_SUCCESS) sc->device = NULL;
  return err;
}

accel_status_t gpu_enter(gpu_device_t *d, gpu_scope_t *sc) {
  const char *call = "";
  gpuError_t err = set_current(d, sc, &call);
  return gpu_check(d->backend, err, call);
}

int gpu_enter_or_warn(gpu_device_t *d, gpu_scope_t *sc) {
  const char *call = "";
  gpuError_t err = set_current(d, sc, &call);
  gpu_warn(d->backend, err, call);
  return err == GPU_SUCCESS;
}

void gpu_leave(gpu_scope_t *sc) {
  gpu_device_t *d = sc->device;
  if (!d) return;
  sc->device = NULL;
  GPU_WARN(d->backend, GPU_SET_CURRENT, sc->saved); /* CUDA: NULL when no context was */
}

accel_status_t gpu_device_finish(gpu_device_t *d, accel_be_device_t **out) {
  gpu_backend_t *be = d->backend;
  int units = 0;
  GPU_ENTER(st, d);
  if (st == ACCEL_OK)
    st = GPU_TRY(be, DeviceGetAttribute, &units, GPU_ATTR_MULTIPROCESSOR_COUNT, d->handle);
  if (st == ACCEL_OK) st = gpu_module_load(d);
  if (st != ACCEL_OK) {
#if GPU_HAS_PRIMARY_CONTEXT
    if (d->primary) GPU_WARN(be, PrimaryCtxRelease, d->handle);
#endif
    gpu_leave(&gpu_scope_); /* before d goes */
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
  gpu_scope_t scope;
  if (gpu_enter_or_warn(d, &scope)) gpu_module_unload(d);
  gpu_leave(&scope); /* before d goes */
#if GPU_HAS_PRIMARY_CONTEXT
  /* a runtime's own context is the runtime's to destroy */
  if (d->primary) GPU_WARN(d->backend, PrimaryCtxRelease, d->handle);
#endif
  free(d);
}

int gpu_device_attribute(accel_be_device_t *device, uint32_t attr, int64_t *value) {
  const gpu_device_t *d = device;
  switch (attr) {
    case ACCEL_ATTR_GRAPH_UPDATE:
      *value = d->backend->api.GraphExecUpdate ? ACCEL_GRAPH_UPDATE_NATIVE
                                               : ACCEL_GRAPH_UPDATE_EMULATED;
      return 1;
    case ACCEL_ATTR_CONDITIONALS: /* gpu_predicate.c */
      *value = ACCEL_CONDITIONALS_PREDICATED;
      return 1;
    default: return 0;
  }
}

accel_status_t gpu_device_synchronize(accel_be_device_t *device) {
  gpu_device_t *d = device;
  GPU_ENTER(st, d);
  return st != ACCEL_OK ? st : GPU_TRY(d->backend, DeviceSynchronize);
}

accel_status_t gpu_mem_info(accel_be_device_t *device, uint64_t *free_bytes,
                            uint64_t *total_bytes) {
  gpu_device_t *d = device;
  size_t free_now = 0, total = 0;
  GPU_ENTER(st, d);
  if (st == ACCEL_OK) st = GPU_TRY(d->backend, MemGetInfo, &free_now, &total);
  if (st != ACCEL_OK) return st;
  *free_bytes = free_now;
  *total_bytes = total;
  return ACCEL_OK;
}
