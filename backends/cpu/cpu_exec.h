/*
 * The operations a CPU stream executes, and how they run.
 *
 * Large kernel launches and large copies/fills are split over the device's thread pool in
 * contiguous ranges; everything else runs on the calling stream worker. Kernels guarantee that
 * any split of [0, num_blocks) gives the same bits, so the split is a pure speed decision.
 */
#ifndef ACCEL_CPU_EXEC_H
#define ACCEL_CPU_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_plugin.h"
#include "accel_cpu_kernels.h"
#include "cpu_device.h"

/* A launch whose blocks touch fewer bytes than this in all runs inline on the stream worker:
 * waking pool threads costs tens of microseconds. */
#define CPU_KERNEL_SPLIT_BYTES (512u * 1024u)
/* Each pool part of a split launch covers at least this many bytes. */
#define CPU_KERNEL_PART_BYTES (128u * 1024u)
/* Copies and fills from this size on are split; each part moves at least CPU_COPY_PART_BYTES. */
#define CPU_COPY_SPLIT_BYTES (4u * 1024u * 1024u)
#define CPU_COPY_PART_BYTES (1u * 1024u * 1024u)

typedef enum cpu_op_type {
  CPU_OP_KERNEL = 0,
  CPU_OP_MEMCPY,
  CPU_OP_MEMSET,
  CPU_OP_HOST_FUNC,
  CPU_OP_RECORD, /* completes an event record */
  CPU_OP_WAIT,   /* waits for an event record (of any stream) to complete */
  CPU_OP_BATCH,  /* a list of KERNEL/MEMCPY/MEMSET/HOST_FUNC ops run in order */
  CPU_OP_FUSED,  /* KERNEL ops run tile by tile over their blocks (cpu_fuse.h) */
  CPU_OP_GRAPH,  /* an instantiated graph's steps (cpu_graph.h); the entry holds a reference */
  CPU_OP_COND    /* a conditional region: the next `count` ops run iff / while *flag != 0 */
} cpu_op_type_t;

typedef struct cpu_record cpu_record_t;
typedef struct cpu_op cpu_op_t;
typedef struct cpu_graph cpu_graph_t;

struct cpu_op {
  cpu_op_type_t type;
  union {
    struct {
      accel_cpu_kernel_fn fn;
      const void *params; /* copy owned by the queue entry or the batch */
      uint32_t kernel_id;
      uint32_t num_blocks;
    } kernel;
    struct { void *dst; const void *src; size_t size; } copy;
    struct { void *dst; size_t size; uint8_t value; } fill;
    struct { accel_host_fn_t fn; void *user; } host;
    struct { cpu_record_t *record; int timed; } record; /* RECORD and WAIT */
    struct { const cpu_op_t *ops; size_t count; } batch;
    struct {
      const cpu_op_t *ops; /* KERNEL ops with num_blocks blocks each */
      uint32_t count;
      uint32_t num_blocks;
      uint32_t tile_blocks; /* blocks each op runs before the next op takes the same blocks */
      uint32_t parts;       /* pool parts (1: inline on the stream worker) */
    } fused;
    struct { const cpu_graph_t *graph; } graph;
    struct {
      const int32_t *flag;
      uint32_t max_iterations; /* passes at most (an IF: 1) */
      size_t count;            /* the ops of the body, nested regions' included */
    } cond;
  } u;
};

/* Conditional regions of one op list nest at most this deep (the core allows 8). */
#define CPU_COND_DEPTH 16u

/* Pool parts for work touching `bytes`: 1 (run inline) with one thread or below split_at,
 * otherwise one part per part_bytes, at most `threads`. */
static inline unsigned cpu_split_parts(unsigned threads, uint64_t bytes, uint64_t split_at,
                                       uint64_t part_bytes) {
  if (threads <= 1u || bytes < split_at) return 1u;
  const uint64_t parts = bytes / part_bytes;
  return parts < threads ? (unsigned)parts : threads;
}

/* Runs op on the calling stream worker (helped by the device's pool for large work). */
void cpu_op_execute(cpu_device_t *device, const cpu_op_t *op);

/* Runs ops[0, n) in order; a CPU_OP_COND reads its flag when it is reached (after every op
 * before it finished) and runs or skips its body. */
void cpu_ops_run(cpu_device_t *device, const cpu_op_t *ops, size_t n);

/* Runs a kernel's blocks [0, num_blocks) split into `parts` contiguous ranges over the pool
 * (exposed for tests: any `parts` must give the same result). */
void cpu_exec_kernel_split(cpu_device_t *device, accel_cpu_kernel_fn fn, const void *params,
                           uint32_t num_blocks, unsigned parts);

#endif
