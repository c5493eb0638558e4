#include "cpu_exec.h"

#include <string.h>

#include "cpu_copy.h"
#include "cpu_event.h"
#include "cpu_graph.h"

typedef struct kernel_job {
  accel_cpu_kernel_fn fn;
  const void *params;
} kernel_job_t;

static void kernel_range(void *ctx, uint64_t begin, uint64_t end) {
  const kernel_job_t *job = ctx;
  job->fn(job->params, (uint32_t)begin, (uint32_t)end);
}

void cpu_exec_kernel_split(cpu_device_t *device, accel_cpu_kernel_fn fn, const void *params,
                           uint32_t num_blocks, unsigned parts) {
  kernel_job_t job = {fn, params};
  cpu_workers_run(device->pool, kernel_range, &job, num_blocks, parts, 1u);
}

static void exec_kernel(cpu_device_t *device, const cpu_op_t *op) {
  uint32_t blocks = op->u.kernel.num_blocks;
  if (blocks > 1u) {
    uint64_t work =
        accel_cpu_kernel_block_bytes(op->u.kernel.kernel_id, op->u.kernel.params) * blocks;
    unsigned parts = cpu_split_parts(cpu_workers_size(device->pool), work, CPU_KERNEL_SPLIT_BYTES,
                                     CPU_KERNEL_PART_BYTES);
    if (parts > 1u) {
      cpu_exec_kernel_split(device, op->u.kernel.fn, op->u.kernel.params, blocks, parts);
      return;
    }
  }
  op->u.kernel.fn(op->u.kernel.params, 0, blocks);
}

/* Blocks [begin, end) of a fused group: every op runs one tile of blocks before the next op
 * runs the same tile, so what one op wrote is still in cache when the next one reads it. */
static void fused_range(void *ctx, uint64_t begin, uint64_t end) {
  const cpu_op_t *op = ctx;
  const uint64_t tile = op->u.fused.tile_blocks;
  for (uint64_t t = begin; t < end; t += tile) {
    uint32_t t1 = (uint32_t)(end - t > tile ? t + tile : end);
    for (uint32_t k = 0; k < op->u.fused.count; ++k) {
      const cpu_op_t *kop = &op->u.fused.ops[k];
      kop->u.kernel.fn(kop->u.kernel.params, (uint32_t)t, t1);
    }
  }
}

static void exec_fused(cpu_device_t *device, const cpu_op_t *op) {
  if (op->u.fused.parts > 1u)
    cpu_workers_run(device->pool, fused_range, (void *)op, op->u.fused.num_blocks,
                    op->u.fused.parts, op->u.fused.tile_blocks);
  else
    fused_range((void *)op, 0, op->u.fused.num_blocks);
}

/* Copies and fills are split on 64-byte units so that parts start on cache lines, and claimed
 * at least a part's bytes at a time. */
#define COPY_UNIT 64u
#define COPY_GRAIN_UNITS (CPU_COPY_PART_BYTES / COPY_UNIT)

static void byte_range(const cpu_op_t *op, uint64_t begin, uint64_t end, size_t *off,
                       size_t *len) {
  size_t size = op->type == CPU_OP_MEMCPY ? op->u.copy.size : op->u.fill.size;
  size_t b = (size_t)begin * COPY_UNIT, e = (size_t)end * COPY_UNIT;
  *off = b;
  *len = (e < size ? e : size) - b;
}

static void copy_range(void *ctx, uint64_t begin, uint64_t end) {
  const cpu_op_t *op = ctx;
  size_t off, len;
  byte_range(op, begin, end, &off, &len);
  cpu_copy((char *)op->u.copy.dst + off, (const char *)op->u.copy.src + off, len,
           op->u.copy.size);
}

static void fill_range(void *ctx, uint64_t begin, uint64_t end) {
  const cpu_op_t *op = ctx;
  size_t off, len;
  byte_range(op, begin, end, &off, &len);
  memset((char *)op->u.fill.dst + off, op->u.fill.value, len);
}

/* Number of pool parts for size bytes (1: run inline). */
static unsigned byte_parts(cpu_device_t *device, size_t size) {
  return cpu_split_parts(cpu_workers_size(device->pool), size, CPU_COPY_SPLIT_BYTES,
                         CPU_COPY_PART_BYTES);
}

static void exec_memcpy(cpu_device_t *device, const cpu_op_t *op) {
  const char *src = op->u.copy.src;
  char *dst = op->u.copy.dst;
  size_t size = op->u.copy.size;
  uintptr_t s = (uintptr_t)src, d = (uintptr_t)dst;
  /* Overlapping ranges are copied with memmove, in one piece: a split would race. */
  if (d < s + size && s < d + size) {
    memmove(dst, src, size);
    return;
  }
  unsigned parts = byte_parts(device, size);
  if (parts <= 1u) {
    cpu_copy(dst, src, size, size);
    return;
  }
  cpu_workers_run(device->pool, copy_range, (void *)op, (size + COPY_UNIT - 1u) / COPY_UNIT, parts,
                  COPY_GRAIN_UNITS);
}

static void exec_memset(cpu_device_t *device, const cpu_op_t *op) {
  size_t size = op->u.fill.size;
  unsigned parts = byte_parts(device, size);
  if (parts <= 1u) {
    memset(op->u.fill.dst, op->u.fill.value, size);
    return;
  }
  cpu_workers_run(device->pool, fill_range, (void *)op, (size + COPY_UNIT - 1u) / COPY_UNIT, parts,
                  COPY_GRAIN_UNITS);
}

void cpu_op_execute(cpu_device_t *device, const cpu_op_t *op) {
  switch (op->type) {
    case CPU_OP_KERNEL:
      exec_kernel(device, op);
      break;
    case CPU_OP_MEMCPY:
      exec_memcpy(device, op);
      break;
    case CPU_OP_MEMSET:
      exec_memset(device, op);
      break;
    case CPU_OP_HOST_FUNC:
      op->u.host.fn(op->u.host.user);
      break;
    case CPU_OP_RECORD:
      cpu_record_complete(device, op->u.record.record, op->u.record.timed);
      break;
    case CPU_OP_WAIT:
      cpu_record_wait(device, op->u.record.record);
      break;
    case CPU_OP_BATCH:
      cpu_ops_run(device, op->u.batch.ops, op->u.batch.count);
      break;
    case CPU_OP_FUSED:
      exec_fused(device, op);
      break;
    case CPU_OP_GRAPH:
      cpu_ops_run(device, op->u.graph.graph->steps, op->u.graph.graph->count);
      break;
    case CPU_OP_COND: /* only in op lists, run by cpu_ops_run with its body */
      break;
  }
}

void cpu_ops_run(cpu_device_t *device, const cpu_op_t *ops, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const cpu_op_t *op = &ops[i];
    if (op->type != CPU_OP_COND) {
      cpu_op_execute(device, op);
      continue;
    }
    /* The ops before finished on this worker (split work joined), so their writes of the flag
     * are visible; the body's kernels may write it for the next pass. */
    const volatile int32_t *flag = op->u.cond.flag;
    for (uint32_t pass = 0; pass < op->u.cond.max_iterations && *flag != 0; ++pass)
      cpu_ops_run(device, op + 1, op->u.cond.count);
    i += op->u.cond.count;
  }
}
