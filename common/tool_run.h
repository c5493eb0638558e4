/*
 * Running a compiler as a child process at run time (user kernels, accel_module.h): the CPU
 * backend's C compiler (ACCEL_CC) and the Level Zero plugin's clang and llvm-spirv.
 */
#ifndef ACCEL_COMMON_TOOL_RUN_H
#define ACCEL_COMMON_TOOL_RUN_H

#include "accel/accel_plugin.h"

/* Runs argv (argv[0] found in PATH; NULL-terminated) with its output and errors written to
 * logpath, and waits for it. ACCEL_OK when it exits with 0. ACCEL_ERROR_UNSUPPORTED when it
 * cannot be started: "<domain>: <missing>: '<argv[0]>' cannot be run: <why>". Any other end:
 * ACCEL_ERROR_BACKEND "<domain>: the module does not compile (<argv[0]>):\n<the first 800
 * bytes of its log>". */
accel_status_t accel_tool_run(const accel_host_api_t *host, const char *domain,
                              const char *missing, char *const argv[], const char *logpath);

#endif
