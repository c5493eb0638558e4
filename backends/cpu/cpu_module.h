/*
 * User kernels on the CPU (accel_module.h; the vtable's module_build): the module's source is
 * compiled with the system C compiler (ACCEL_CC, default cc) after the embedded C prelude
 * (kernels/cpu/module_prelude.h) into a shared object in the kernel cache, which is loaded;
 * each kernel's launch id is then resolved to its function like a built-in kernel's.
 */
#ifndef ACCEL_CPU_MODULE_H
#define ACCEL_CPU_MODULE_H

#include "accel/accel_plugin.h"
#include "accel_cpu_kernels.h"

accel_status_t cpu_module_build(accel_be_device_t *device, const accel_module_build_t *build,
                                accel_be_module_t **out);
void cpu_module_destroy(accel_be_module_t *module);

/* The CPU function of launch id: a built-in kernel's, or a user kernel's bound by a module
 * build (kept for the life of the process: a graph may outlive its module). NULL: unknown. */
accel_cpu_kernel_fn cpu_kernel_resolve(uint32_t id);

#endif
