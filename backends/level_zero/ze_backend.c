/* Backend init (loader, zeInit, driver and device discovery) and device open/info. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ze_internal.h"

static void accel_ze_backend_free(accel_ze_backend_t *be) {
  free(be->drivers);
  free(be->devices);
  free((void *)be->bytes_in_use);
  free(be);
}

/* Collects the GPU devices of every driver. */
static accel_status_t accel_ze_discover(accel_ze_backend_t *be) {
  const accel_ze_api_t *api = &be->api;
  uint32_t ndrv = 0;
  ACCEL_ZE_TRY(api, zeDriverGet, &ndrv, NULL);
  if (ndrv == 0) return ACCEL_OK;
  ze_driver_handle_t *drv = calloc(ndrv, sizeof(*drv));
  if (!drv) return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  ze_result_t r = api->zeDriverGet(&ndrv, drv);
  if (r != ZE_RESULT_SUCCESS) {
    free(drv);
    return accel_ze_fail("zeDriverGet", r);
  }
  accel_status_t st = ACCEL_OK;
  for (uint32_t d = 0; d < ndrv && st == ACCEL_OK; ++d) {
    uint32_t ndev = 0;
    r = api->zeDeviceGet(drv[d], &ndev, NULL);
    ze_device_handle_t *devs = ndev ? calloc(ndev, sizeof(*devs)) : NULL;
    if (r == ZE_RESULT_SUCCESS && ndev) r = devs ? api->zeDeviceGet(drv[d], &ndev, devs)
                                                 : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    if (r != ZE_RESULT_SUCCESS) {
      st = accel_ze_fail("zeDeviceGet", r);
    } else {
      size_t total = (size_t)be->device_count + ndev;
      ze_driver_handle_t *nd = realloc(be->drivers, total * sizeof(*nd));
      if (nd) be->drivers = nd;
      ze_device_handle_t *nv = nd ? realloc(be->devices, total * sizeof(*nv)) : NULL;
      if (nv) be->devices = nv;
      if (!nd || !nv) {
        st = accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
      } else {
        for (uint32_t i = 0; i < ndev; ++i) {
          be->drivers[be->device_count] = drv[d];
          be->devices[be->device_count++] = devs[i];
        }
      }
    }
    free(devs);
  }
  free(drv);
  if (st == ACCEL_OK && be->device_count > 0) {
    be->bytes_in_use = calloc((size_t)be->device_count, sizeof(*be->bytes_in_use));
    if (!be->bytes_in_use)
      st = accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  }
  return st;
}

accel_status_t accel_ze_backend_init(const accel_host_api_t *host, accel_be_backend_t **out) {
  accel_ze_host = host;
  accel_ze_backend_t *be = calloc(1, sizeof(*be));
  if (!be) return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  char why[1024];
  if (accel_ze_api_load(&be->api, why, sizeof(why)) != 0) {
    accel_ze_backend_free(be);
    return host->set_error(ACCEL_ERROR_UNAVAILABLE, "Level Zero loader unusable: %s", why);
  }
  /* ACCEL_VISIBLE_DEVICES is already mapped to ZE_AFFINITY_MASK by core (loader.c, once,
   * before any backend_init): a plugin must not setenv while other threads may getenv. */
  ze_result_t r = be->api.zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (r != ZE_RESULT_SUCCESS) {
    const char *lib = be->api.lib_name;
    accel_ze_backend_free(be);
    /* No GPU driver installed is the usual case: zeInit reports it as an error. */
    return host->set_error(ACCEL_ERROR_UNAVAILABLE,
                           "no Level Zero GPU driver: %s loaded, zeInit(ZE_INIT_FLAG_GPU_ONLY) "
                           "returned %s (0x%x)",
                           lib, accel_ze_result_name(r), (unsigned)r);
  }
  accel_status_t st = accel_ze_discover(be);
  if (st != ACCEL_OK) {
    accel_ze_backend_free(be);
    return st;
  }
  if (be->device_count == 0) {
    accel_ze_backend_free(be);
    return host->set_error(ACCEL_ERROR_UNAVAILABLE,
                           "no Level Zero GPU device: zeInit succeeded but zeDriverGet/"
                           "zeDeviceGet found no device (ZE_AFFINITY_MASK=%s)",
                           getenv("ZE_AFFINITY_MASK") ? getenv("ZE_AFFINITY_MASK") : "unset");
  }
  *out = be;
  return ACCEL_OK;
}

void accel_ze_backend_shutdown(accel_be_backend_t *backend) {
  accel_ze_backend_free(backend);
}

accel_status_t accel_ze_device_count(accel_be_backend_t *backend, int *count) {
  *count = ((accel_ze_backend_t *)backend)->device_count;
  return ACCEL_OK;
}

/* Properties used by both device_info and device_open. */
static accel_status_t accel_ze_query_props(const accel_ze_api_t *api, ze_device_handle_t dev,
                                           ze_device_properties_t *props,
                                           ze_device_compute_properties_t *compute,
                                           uint64_t *memory_total) {
  memset(props, 0, sizeof(*props));
  props->stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  ACCEL_ZE_TRY(api, zeDeviceGetProperties, dev, props);
  memset(compute, 0, sizeof(*compute));
  compute->stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  ACCEL_ZE_TRY(api, zeDeviceGetComputeProperties, dev, compute);
  uint32_t nmem = 0;
  ACCEL_ZE_TRY(api, zeDeviceGetMemoryProperties, dev, &nmem, NULL);
  ze_device_memory_properties_t mem[8];
  if (nmem > 8) nmem = 8;
  for (uint32_t i = 0; i < nmem; ++i) {
    memset(&mem[i], 0, sizeof(mem[i]));
    mem[i].stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
  }
  *memory_total = 0;
  if (nmem) {
    ACCEL_ZE_TRY(api, zeDeviceGetMemoryProperties, dev, &nmem, mem);
    for (uint32_t i = 0; i < nmem; ++i) *memory_total += mem[i].totalSize;
  }
  return ACCEL_OK;
}

accel_status_t accel_ze_device_info(accel_be_backend_t *backend, int index,
                                    accel_device_info_t *info) {
  accel_ze_backend_t *be = backend;
  const accel_ze_api_t *api = &be->api;
  ze_device_properties_t props;
  ze_device_compute_properties_t compute;
  uint64_t total = 0;
  accel_status_t st = accel_ze_query_props(api, be->devices[index], &props, &compute, &total);
  if (st != ACCEL_OK) return st;
  ze_device_module_properties_t mod;
  memset(&mod, 0, sizeof(mod));
  mod.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  ACCEL_ZE_TRY(api, zeDeviceGetModuleProperties, be->devices[index], &mod);
  ze_driver_properties_t drv;
  memset(&drv, 0, sizeof(drv));
  drv.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
  ACCEL_ZE_TRY(api, zeDriverGetProperties, be->drivers[index], &drv);

  memset(info, 0, sizeof(*info));
  snprintf(info->name, sizeof(info->name), "%s", props.name);
  if (props.vendorId == 0x8086)
    snprintf(info->vendor, sizeof(info->vendor), "Intel");
  else
    snprintf(info->vendor, sizeof(info->vendor), "PCI vendor 0x%04x", props.vendorId);
  snprintf(info->backend, sizeof(info->backend), "level_zero");
  snprintf(info->driver_version, sizeof(info->driver_version), "%u", drv.driverVersion);
  info->index = index;
  info->type = props.type == ZE_DEVICE_TYPE_GPU ? ACCEL_DEVICE_TYPE_GPU : ACCEL_DEVICE_TYPE_ACCELERATOR;
  info->memory_total = total;
  uint64_t used = atomic_load(&be->bytes_in_use[index]);
  info->memory_free = used < total ? total - used : 0;
  info->compute_units = props.numSlices * props.numSubslicesPerSlice * props.numEUsPerSubslice;
  info->supports_fp16 = (mod.flags & ZE_DEVICE_MODULE_FLAG_FP16) ? 1u : 0u;
  info->supports_bf16 = 0; /* bf16 kernels run through fp32 conversion in the kernel source */
  info->native_graphs = 1; /* closed regular command lists */
  info->lazy_default = 1;
  info->host_accessible = 0; /* device USM */
  return ACCEL_OK;
}

/* Free memory is not reported by core Level Zero (only by Sysman): the estimate is the total
 * minus what this process allocated through the plugin. */
accel_status_t accel_ze_mem_info(accel_be_device_t *device, uint64_t *free_bytes,
                                 uint64_t *total_bytes) {
  accel_ze_device_t *dev = device;
  uint64_t used = atomic_load(&dev->be->bytes_in_use[dev->index]);
  *total_bytes = dev->memory_total;
  *free_bytes = used < dev->memory_total ? dev->memory_total - used : 0;
  return ACCEL_OK;
}

static accel_status_t accel_ze_find_compute_ordinal(accel_ze_device_t *dev) {
  const accel_ze_api_t *api = dev->api;
  uint32_t n = 0;
  ACCEL_ZE_TRY(api, zeDeviceGetCommandQueueGroupProperties, dev->dev, &n, NULL);
  ze_command_queue_group_properties_t groups[16];
  if (n > 16) n = 16;
  for (uint32_t i = 0; i < n; ++i) {
    memset(&groups[i], 0, sizeof(groups[i]));
    groups[i].stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  }
  ACCEL_ZE_TRY(api, zeDeviceGetCommandQueueGroupProperties, dev->dev, &n, groups);
  for (uint32_t i = 0; i < n; ++i) {
    if (groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
      dev->compute_ordinal = i;
      return ACCEL_OK;
    }
  }
  return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                  "level_zero device %d has no compute command queue group "
                                  "(zeDeviceGetCommandQueueGroupProperties listed %u groups)",
                                  dev->index, n);
}

accel_status_t accel_ze_device_setup(accel_ze_backend_t *be, int index, ze_context_handle_t ctx,
                                     accel_be_device_t **out) {
  accel_ze_device_t *dev = calloc(1, sizeof(*dev));
  if (!dev) return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  dev->be = be;
  dev->api = &be->api;
  dev->index = index;
  dev->driver = be->drivers[index];
  dev->dev = be->devices[index];
  accel_status_t st = accel_ze_query_props(dev->api, dev->dev, &dev->props, &dev->compute,
                                           &dev->memory_total);
  if (st == ACCEL_OK) st = accel_ze_find_compute_ordinal(dev);
  if (st == ACCEL_OK && !ctx) {
    ze_context_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_result_t r = dev->api->zeContextCreate(dev->driver, &desc, &ctx);
    if (r != ZE_RESULT_SUCCESS) st = accel_ze_fail("zeContextCreate", r);
    dev->ctx_owned = st == ACCEL_OK;
  }
  if (st != ACCEL_OK) {
    free(dev);
    return st;
  }
  dev->ctx = ctx;
  pthread_mutex_init(&dev->kernel_lock, NULL);
  accel_ze_mcl_probe(dev);
  accel_ze_rr_probe(dev); /* after: used only without mutable command lists */
  *out = dev;
  return ACCEL_OK;
}

accel_status_t accel_ze_device_open(accel_be_backend_t *backend, int index,
                                    accel_be_device_t **out) {
  return accel_ze_device_setup(backend, index, NULL, out);
}

void accel_ze_device_close(accel_be_device_t *device) {
  accel_ze_device_t *dev = device;
  accel_ze_user_release(dev);
  accel_ze_module_release(dev);
  if (dev->ctx_owned) dev->api->zeContextDestroy(dev->ctx);
  pthread_mutex_destroy(&dev->kernel_lock);
  free(dev);
}
