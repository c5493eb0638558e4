/*
 * Native graphs of the CPU backend: the captured command list converted once into ops, with
 * consecutive independent multi-tensor launches fused (cpu_fuse.h). What a replay runs is a
 * body (cpu_graph_t); a launch queues one CPU_OP_GRAPH entry holding a reference to the current
 * body, so a graph destroyed or updated while a replay is still queued keeps that body until
 * the replay has run.
 *
 * accel_graph_update (graph_update slot) rewrites the arguments of the body's ops in place:
 * kernel parameter blocks and block counts, copy and fill pointers and sizes, host-function
 * arguments; then folds again and checks that the fusion plan still holds over the new
 * addresses (fusion is proved from them; cpu_fuse_recheck), planning anew only where it does
 * not. No command is converted anew. When a queued replay still
 * holds the body, the update builds a new body from the commands instead (copy on write), so
 * that replay runs the old arguments; the old body's plan is checked for the new one the same
 * way.
 */
#ifndef ACCEL_CPU_GRAPH_H
#define ACCEL_CPU_GRAPH_H

#include <stdatomic.h>

#include "cpu_exec.h"

struct cpu_graph {
  atomic_uint refs;
  cpu_op_t *ops;         /* one op per non-event command and their parameter blocks (one heap
                          * block, cpu_ops_build): the recorded op list an update rewrites */
  size_t nops;
  uint32_t *param_size;  /* nops: each kernel op's parameter block size (0 for other ops) */
  uint32_t *folds;       /* 2 * nops: the positions of the fills folded into run (nfolds of
                          * them), then an update's scratch */
  size_t nfolds;
  cpu_op_t *run;         /* ops after cpu_fuse_fold; fused steps point into it */
  cpu_op_t *steps;       /* what a replay runs: run's ops, single or fused */
  size_t count;          /* steps */
  unsigned threads;      /* the pool size the fusion was planned for */
};

/* Drops one reference; the last frees the body. */
void cpu_graph_release(const cpu_graph_t *graph);

/* vtable entry points (accel_be_graph_t is a cpu_graph_exec_t: the current body) */
accel_status_t cpu_graph_instantiate(accel_be_device_t *device, const accel_cmd_t *cmds,
                                     size_t n, accel_be_graph_t **out);
accel_status_t cpu_graph_launch(accel_be_graph_t *graph, accel_be_stream_t *stream);
void cpu_graph_destroy(accel_be_graph_t *graph);
accel_status_t cpu_graph_update(accel_be_graph_t *graph, const accel_cmd_t *cmds, size_t n);

#endif
