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

/* One memory access of a launch outside its chunk table: a device scalar (or a small struct of
 * them) read or written by the blocks `block` (ACCEL_CPU_ALL_BLOCKS: any block), or, with
 * `stride` != 0, a per-block output: block b writes [addr + b * stride, + size). */
#define ACCEL_CPU_ALL_BLOCKS UINT32_MAX
#define ACCEL_CPU_SLOT_READ 1u
#define ACCEL_CPU_SLOT_WRITE 2u
typedef struct accel_cpu_kernel_scalar {
  uint64_t addr;
  uint32_t size;
  uint32_t stride;
  uint32_t block;
  uint32_t write;
} accel_cpu_kernel_scalar_t;

/* Chunk slots (ACC_MAX_LISTS) and scalars (a row's 6 and its scratch) of a launch. */
#define ACCEL_CPU_MAX_SLOTS 8u
#define ACCEL_CPU_MAX_SCALARS 7u

/* Everything one launch reads and writes, so that the CPU backend can prove two launches of a
 * graph independent block by block (graph fusion, backends/cpu/cpu_fuse.c). */
typedef struct accel_cpu_kernel_access {
  /* acc_chunk_t[num_chunks]: block b touches chunks[b].ptr[k][0, count) for every slot k with
   * elem_bytes[k] != 0 and a nonzero address (0: a list the call left out), as slot_mode[k]
   * says; a per_row[k] slot holds elem_bytes[k] bytes per row of ACC_BLOCK elements of the
   * chunk instead (ceil(count / ACC_BLOCK) of them). NULL: the launch is not chunk-wise (it
   * is never fused). */
  const void *chunks;
  uint32_t num_chunks;
  uint8_t elem_bytes[ACCEL_CPU_MAX_SLOTS];
  uint8_t per_row[ACCEL_CPU_MAX_SLOTS];
  uint8_t slot_mode[ACCEL_CPU_MAX_SLOTS]; /* ACCEL_CPU_SLOT_READ | ACCEL_CPU_SLOT_WRITE */
  accel_cpu_kernel_scalar_t scalars[ACCEL_CPU_MAX_SCALARS];
  unsigned num_scalars;
} accel_cpu_kernel_access_t;

/* Fills *out for a launch of kernel_id with params (scalars[] only up to num_scalars); an
 * unknown id gives chunks == NULL. */
void accel_cpu_kernel_access(uint32_t kernel_id, const void *params,
                             accel_cpu_kernel_access_t *out);

/* Rough cost of one logical block in bytes touched (read + written, a full chunk), so the CPU
 * backend can decide whether a launch is worth splitting over the thread pool. */
uint64_t accel_cpu_kernel_block_bytes(uint32_t kernel_id, const void *params);

#endif
