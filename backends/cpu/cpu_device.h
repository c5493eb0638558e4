/*
 * Backend and device objects of the CPU backend, and the helpers shared by its files.
 */
#ifndef ACCEL_CPU_DEVICE_H
#define ACCEL_CPU_DEVICE_H

#include <stdatomic.h>

#include "accel/accel_plugin.h"
#include "backend_slots.h"
#include "cpu_workers.h"
#include "cpu_sync.h"

typedef struct cpu_backend {
  const accel_host_api_t *host;
  /* Pool size of the open device (0 while none is open), reported as compute units. */
  atomic_uint open_pool_size;
} cpu_backend_t;

typedef struct cpu_device {
  cpu_backend_t *backend;
  const accel_host_api_t *host;
  cpu_workers_t *pool;
  /* Broadcast whenever an event record completes; stream workers and event_synchronize
   * callers waiting for a record sleep here. */
  cpu_notifier_t record_done;
  atomic_uint next_stream_id; /* names worker threads accel-cpu-s<N> */
  uint64_t spin_ns;           /* its notifiers' spin budget (cpu_spin_budget_ns at open) */
  int run_on_caller;          /* stream_try_hold may hold (cpu_sysinfo_run_on_caller at open) */
} cpu_device_t;

/* Backend entry points (cpu_device.c: the devices and cpu_mem_info; cpu_memory.c: the rest of
 * the memory slots). */
ACCEL_BACKEND_DECLARE_DEVICES(cpu);
ACCEL_BACKEND_DECLARE_MEMORY(cpu);

/* Writes the text of errno value err into buf (thread safe) and returns buf. */
const char *cpu_strerror(int err, char *buf, size_t size);

#endif
