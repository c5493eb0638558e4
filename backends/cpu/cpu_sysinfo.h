/*
 * What the CPU backend reports about the machine: processor name, memory, thread count.
 */
#ifndef ACCEL_CPU_SYSINFO_H
#define ACCEL_CPU_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_plugin.h"

/* CPUs this thread may run on (its affinity mask, as nproc counts them: an MPI rank bound to
 * one core gets 1), else the number of online CPUs; at least 1. */
unsigned cpu_sysinfo_usable_cpus(void);

/* Pool size: ACCEL_CPU_THREADS when it is an integer in [1, CPU_POOL_MAX_THREADS] (anything
 * else is logged and ignored), else cpu_sysinfo_usable_cpus(). */
unsigned cpu_sysinfo_thread_count(const accel_host_api_t *host);

/* Whether an idle stream lets the caller run a host engine's collective itself
 * (stream_try_hold): ACCEL_CPU_RUN_ON_CALLER=1/on/yes/true always, 0/off/no/false never;
 * unset, "auto" or anything else (logged) when cpu_sysinfo_usable_cpus() is 1, where the
 * stream's thread would need the caller's core. */
int cpu_sysinfo_run_on_caller(const accel_host_api_t *host);

/* "model name" and "vendor_id" of the first processor in /proc/cpuinfo; a generic name from
 * uname(2) and "unknown" where the fields are absent (e.g. on some ARM kernels). */
void cpu_sysinfo_processor(char *name, size_t name_size, char *vendor, size_t vendor_size);

/* Operating system and kernel release, e.g. "Linux 6.1.0-18-amd64". */
void cpu_sysinfo_os_version(char *buf, size_t size);

/* Total and available memory in bytes: /proc/meminfo MemTotal / MemAvailable, else
 * sysinfo(2). Returns 0, or an errno value when neither source works. */
int cpu_sysinfo_memory(uint64_t *total, uint64_t *available);

#endif
