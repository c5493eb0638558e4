/*
 * The text a backend compiles for a module (accel_plugin.h module_build): shared by the CPU
 * backend (backends/cpu/cpu_module.c) and the OpenCL plugin (backends/opencl/acl_module.c).
 */
#ifndef ACCEL_COMMON_MODULE_TEXT_H
#define ACCEL_COMMON_MODULE_TEXT_H

#include <stdio.h>

#include "accel/accel_plugin.h"

/* Changes with the layout of the text below: a part of the backends' cache keys. */
#define ACCEL_MODULE_TEXT_VERSION "2"

/* prelude, the rows' parameter structs (b->params), `#define ACCEL_KERNEL(...)` (the rows are
 * the core's), the user's source under `#line 1 "<module>"` (the compiler's messages give the
 * user's lines), then what trailer(f, b) appends (NULL: nothing). Malloc'ed; NULL without
 * memory. */
char *accel_module_text(const char *prelude, const accel_module_build_t *b,
                        void (*trailer)(FILE *f, const accel_module_build_t *b));

#endif
