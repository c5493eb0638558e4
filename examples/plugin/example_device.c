/*
 * Backend and devices. A real plugin dlopen's its vendor runtime in backend_init (with a table
 * of required and optional symbols) and returns ACCEL_ERROR_UNAVAILABLE, with every path it
 * tried, when the runtime or a device is absent; this one needs nothing and always has one
 * device.
 */
#define _DEFAULT_SOURCE /* sysconf(_SC_PHYS_PAGES) */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "example_internal.h"

accel_status_t example_backend_init(const accel_host_api_t *host, accel_be_backend_t **out) {
  (void)host; /* the same table accel_plugin_query already kept */
  example_backend_t *b = calloc(1, sizeof *b);
  if (!b)
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": calloc(%zu) for the backend failed",
                                   sizeof *b);
  b->device_count = 1;
  example_host->log(ACCEL_LOG_DEBUG, EXAMPLE_NAME, "initialised: %d device", b->device_count);
  *out = b;
  return ACCEL_OK;
}

void example_backend_shutdown(accel_be_backend_t *backend) { free(backend); }

accel_status_t example_device_count(accel_be_backend_t *backend, int *count) {
  *count = ((example_backend_t *)backend)->device_count;
  return ACCEL_OK;
}

/* Physical memory (total) or available memory (free) of the machine, in bytes. */
static accel_status_t host_memory(int name, uint64_t *bytes) {
  long pages = sysconf(name), page = sysconf(_SC_PAGESIZE);
  if (pages < 0 || page < 0)
    return example_host->set_error(ACCEL_ERROR_BACKEND, EXAMPLE_NAME ": sysconf(%s) failed",
                                   name == _SC_PHYS_PAGES ? "_SC_PHYS_PAGES" : "_SC_AVPHYS_PAGES");
  *bytes = (uint64_t)pages * (uint64_t)page;
  return ACCEL_OK;
}

accel_status_t example_device_info(accel_be_backend_t *backend, int index,
                                   accel_device_info_t *info) {
  (void)backend;
  memset(info, 0, sizeof *info);
  strcpy(info->name, "example host-memory device");
  strcpy(info->vendor, "accel examples");
  strcpy(info->backend, EXAMPLE_NAME);
  strcpy(info->driver_version, "1.0");
  info->index = index;
  info->type = ACCEL_DEVICE_TYPE_OTHER;
  info->compute_units = 1;
  info->supports_fp16 = 0;  /* F16 kernels run (in software): no native support */
  info->supports_bf16 = 0;
  info->native_graphs = 0;  /* graphs replay from the core's recorder */
  info->lazy_default = 0;
  info->host_accessible = 1; /* device memory is host memory */
  accel_status_t st = host_memory(_SC_PHYS_PAGES, &info->memory_total);
  if (st == ACCEL_OK) st = host_memory(_SC_AVPHYS_PAGES, &info->memory_free);
  return st;
}

accel_status_t example_device_open(accel_be_backend_t *backend, int index,
                                   accel_be_device_t **out) {
  (void)backend;
  example_device_t *d = calloc(1, sizeof *d);
  if (!d)
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": calloc(%zu) for device %d failed", sizeof *d,
                                   index);
  d->index = index;
  *out = d;
  return ACCEL_OK;
}

void example_device_close(accel_be_device_t *device) { free(device); }

accel_status_t example_mem_info(accel_be_device_t *device, uint64_t *free_bytes,
                                uint64_t *total_bytes) {
  (void)device;
  accel_status_t st = host_memory(_SC_PHYS_PAGES, total_bytes);
  if (st == ACCEL_OK) st = host_memory(_SC_AVPHYS_PAGES, free_bytes);
  return st;
}
