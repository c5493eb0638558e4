/*
 * The CPU form of the shared kernels (built from the bodies in kernels/ with the C prelude).
 * The CPU backend calls fn(params, b0, b1) to run logical blocks [b0, b1) of a launch; any split
 * of [0, num_blocks) over threads gives bitwise identical results.
 */
#ifndef ACCEL_CPU_KERNELS_H
#define ACCEL_CPU_KERNELS_H

#include <stdint.h>

typedef void (*accel_cpu_kernel_fn)(const void *params, uint32_t block_begin,
                                    uint32_t block_end);

/* NULL for an unknown id. */
accel_cpu_kernel_fn accel_cpu_kernel_lookup(uint32_t kernel_id);

/* Rough cost of one logical block in bytes touched, so the CPU backend can decide whether a
 * launch is worth splitting over the thread pool. */
uint64_t accel_cpu_kernel_block_bytes(uint32_t kernel_id, const void *params);

#endif
