/*
 * The SPIR-V of a user kernel module, compiled at run time by clang + llvm-spirv (ze_spirv.c).
 * Separate from ze_internal.h so that the text-compiler test (tests/unit/test_ze_spirv.c)
 * builds it without the Level Zero loader.
 */
#ifndef ACCEL_ZE_SPIRV_H
#define ACCEL_ZE_SPIRV_H

#include <stddef.h>

#include "accel/accel_plugin.h"

/* The host services (ze_plugin.c). */
extern const accel_host_api_t *accel_ze_host;

/* The module's SPIR-V (malloc'ed in *spv): from the kernel cache, else compiled and stored.
 * UNSUPPORTED when clang or llvm-spirv cannot be run; BACKEND with the compiler's log when the
 * source does not compile. */
accel_status_t accel_ze_module_spirv(const accel_module_build_t *b, unsigned char **spv,
                                     size_t *size);

#endif
