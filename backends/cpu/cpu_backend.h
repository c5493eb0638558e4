/*
 * The built-in CPU backend: always available, built into libaccel (not a plugin).
 * See docs/backends/cpu.md.
 */
#ifndef ACCEL_CPU_BACKEND_H
#define ACCEL_CPU_BACKEND_H

#include "accel/accel_plugin.h"

/* The CPU backend's vtable (name "cpu"); static, never NULL. */
const accel_backend_vtable_t *accel_cpu_backend_vtable(void);

#endif
