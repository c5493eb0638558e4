/*
 * Kernel fusion for instantiated graphs on the CPU backend.
 *
 * A captured optimizer step runs several multi-tensor kernels over the same tensors one after
 * the other (fill, update_hp, unscale and the norm partials; then clip and Adam). Run one by
 * one, every launch streams all the tensors through memory again. When consecutive launches
 * have the same number of blocks and no block of one launch touches memory that a *different*
 * block of another launch of the group writes (proved from their declared accesses,
 * accel_cpu_kernel_access), the graph runs them as one CPU_OP_FUSED op: each pool part takes a
 * range of blocks and runs every launch of the group on a small tile of blocks before the next
 * tile, so what one launch wrote is still in the core's cache when the next one reads it.
 *
 * Results are bitwise those of the unfused order: block b of every launch still runs after
 * block b of the launches before it, and blocks of one launch never depended on each other.
 * Scalars (device arguments such as found_inf or the total norm) count as touched by every
 * block, so a launch that reads a scalar an earlier launch of the group writes (Adam reading the
 * found_inf that unscale sets) starts a new group. Launches that are not chunk-wise (the final
 * norm reduction), copies, fills and host functions are never fused.
 */
#ifndef ACCEL_CPU_FUSE_H
#define ACCEL_CPU_FUSE_H

#include <stddef.h>

#include "cpu_exec.h"

/* At most this many launches in one fused op. */
#define CPU_FUSE_MAX_OPS 16u
/* Bytes a tile of a fused op touches over all its launches: about half a core's L2. */
#define CPU_FUSE_TILE_BYTES (1024u * 1024u)

/* Folds every fill of f32 tensors that the next launch, an update_hp_grads, accumulates into
 * (chunk for chunk) into that update: it then computes hp = value + float(lp), the same
 * addition, so the same bits, in one pass over hp instead of two (the fill's pass wrote hp only
 * for the update to read it back; a captured step zeroes its fp32 gradients first). Rewrites
 * ops[0, n) and the update's parameter block in place; returns the new count. folds (NULL, or
 * room for n / 2) gets the position in ops of each fill folded, n - the count of them. */
size_t cpu_fuse_fold(cpu_op_t *ops, size_t n, uint32_t *folds);

/* Writes the steps that run ops[0, n) into steps[0, return value): copies of the ops that stay
 * alone and CPU_OP_FUSED ops pointing into `ops` (which must outlive the steps). threads is the
 * pool size. Never fails: without memory for the analysis the ops are simply not fused. */
size_t cpu_fuse_plan(const cpu_op_t *ops, size_t n, unsigned threads, cpu_op_t *steps);

/* After new arguments in ops[0, n) (an update of the graph): 1 when the plan of `count` steps
 * made earlier for the same launches in the same order still holds, each fused group still
 * chunk-wise alike and free of hazards over the new addresses; the steps are then rewritten
 * from ops (new tiles from the new sizes). 0: make a new plan (steps are left partly rewritten).
 * One sort per group instead of the plan's merge per candidate; a kept plan fuses no more than
 * before, where a new one might fuse more (results are the same bits either way). */
int cpu_fuse_recheck(const cpu_op_t *ops, size_t n, unsigned threads, cpu_op_t *steps,
                     size_t count);

#endif
