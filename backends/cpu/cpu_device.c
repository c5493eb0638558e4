#include "cpu_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_sysinfo.h"

accel_status_t cpu_backend_init(const accel_host_api_t *host, accel_be_backend_t **out) {
  cpu_backend_t *b = calloc(1, sizeof(*b));
  if (b == NULL)
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "cpu: backend_init: calloc(%zu) failed",
                           sizeof(*b));
  b->host = host;
  atomic_init(&b->open_pool_size, 0u);
  *out = b;
  return ACCEL_OK;
}

void cpu_backend_shutdown(accel_be_backend_t *backend) { free(backend); }

accel_status_t cpu_device_count(accel_be_backend_t *backend, int *count) {
  (void)backend;
  *count = 1;
  return ACCEL_OK;
}

/* cpu_sysinfo_memory, or ACCEL_ERROR_BACKEND with a message naming the entry point `what`. */
static accel_status_t read_memory(const accel_host_api_t *host, const char *what,
                                  uint64_t *total, uint64_t *available) {
  int rc = cpu_sysinfo_memory(total, available);
  if (rc == 0) return ACCEL_OK;
  char err[128];
  return host->set_error(ACCEL_ERROR_BACKEND,
                         "cpu: %s: /proc/meminfo unreadable and sysinfo failed: %s", what,
                         cpu_strerror(rc, err, sizeof(err)));
}

accel_status_t cpu_device_info(accel_be_backend_t *backend, int index,
                               accel_device_info_t *info) {
  cpu_backend_t *b = backend;
  uint64_t total = 0, avail = 0;
  accel_status_t st = read_memory(b->host, "device_info", &total, &avail);
  if (st != ACCEL_OK) return st;
  memset(info, 0, sizeof(*info));
  cpu_sysinfo_processor(info->name, sizeof(info->name), info->vendor, sizeof(info->vendor));
  snprintf(info->backend, sizeof(info->backend), "cpu");
  cpu_sysinfo_os_version(info->driver_version, sizeof(info->driver_version));
  info->index = index;
  info->type = ACCEL_DEVICE_TYPE_CPU;
  info->memory_total = total;
  info->memory_free = avail;
  unsigned open_size = atomic_load(&b->open_pool_size);
  info->compute_units = open_size != 0 ? open_size : cpu_sysinfo_thread_count(b->host);
  /* F16/BF16 run everywhere through conversion to F32. */
  info->supports_fp16 = 1;
  info->supports_bf16 = 1;
  info->native_graphs = 1; /* converted once, multi-tensor launches fused (cpu_graph.h) */
  info->lazy_default = 0;
  info->host_accessible = 1;
  return ACCEL_OK;
}

accel_status_t cpu_device_open(accel_be_backend_t *backend, int index,
                               accel_be_device_t **out) {
  cpu_backend_t *b = backend;
  const accel_host_api_t *host = b->host;
  char err[128];
  if (index != 0)
    return host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "cpu: device_open: index %d out of range (1 CPU device)", index);
  cpu_device_t *dev = calloc(1, sizeof(*dev));
  if (dev == NULL)
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "cpu: device_open: calloc(%zu) failed",
                           sizeof(*dev));
  dev->backend = b;
  dev->host = host;
  atomic_init(&dev->next_stream_id, 0u);
  dev->spin_ns = cpu_spin_budget_ns();
  dev->run_on_caller = cpu_sysinfo_run_on_caller(host);
  int rc = cpu_notifier_init(&dev->record_done, dev->spin_ns);
  if (rc != 0) {
    free(dev);
    return host->set_error(ACCEL_ERROR_BACKEND,
                           "cpu: device_open: pthread_mutex_init/pthread_cond_init failed: %s",
                           cpu_strerror(rc, err, sizeof(err)));
  }
  unsigned threads = cpu_sysinfo_thread_count(host);
  const char *call = "";
  rc = cpu_workers_create(threads, dev->spin_ns, &dev->pool, &call);
  if (rc != 0) {
    cpu_notifier_destroy(&dev->record_done);
    free(dev);
    return host->set_error(ACCEL_ERROR_BACKEND,
                           "cpu: device_open: %s for a pool of %u threads failed: %s", call,
                           threads, cpu_strerror(rc, err, sizeof(err)));
  }
  atomic_store(&b->open_pool_size, cpu_workers_size(dev->pool));
  host->log(ACCEL_LOG_INFO, "cpu", "device opened with a pool of %u threads%s",
            cpu_workers_size(dev->pool),
            dev->run_on_caller ? "; collectives on idle streams run on the caller" : "");
  *out = dev;
  return ACCEL_OK;
}

void cpu_device_close(accel_be_device_t *device) {
  cpu_device_t *dev = device;
  atomic_store(&dev->backend->open_pool_size, 0u);
  cpu_workers_destroy(dev->pool);
  cpu_notifier_destroy(&dev->record_done);
  free(dev);
}

accel_status_t cpu_mem_info(accel_be_device_t *device, uint64_t *free_bytes,
                            uint64_t *total_bytes) {
  cpu_device_t *dev = device;
  return read_memory(dev->host, "mem_info", total_bytes, free_bytes);
}
