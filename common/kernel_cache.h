/*
 * The on-disk kernel cache (kernel_cache.c), shared by the plugins that compile kernels at run
 * time: the OpenCL plugin (program binaries, domain "opencl") and the CUDA/HIP plugins (user
 * modules, domains "cuda" and "hip"). An entry is <host->cache_dir()>/<domain>-<hash>.bin; it
 * stores its whole key (a hash collision is a miss) and a checksum of its payload.
 */
#ifndef ACCEL_COMMON_KERNEL_CACHE_H
#define ACCEL_COMMON_KERNEL_CACHE_H

#include <stddef.h>

#include "accel/accel_plugin.h"

/* Loads the entry stored under key; 0 on success (*data malloc'ed), -1 when absent or corrupt
 * (logged under domain). */
int accel_kernel_cache_load(const accel_host_api_t *host, const char *domain, const char *key,
                            unsigned char **data, size_t *size);
/* Stores data under key atomically (temporary file + rename). Failures are logged, not fatal. */
void accel_kernel_cache_store(const accel_host_api_t *host, const char *domain, const char *key,
                              const unsigned char *data, size_t size);

#endif
