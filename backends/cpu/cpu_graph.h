/*
 * Native graphs of the CPU backend: the captured command list converted once into ops, with
 * consecutive independent multi-tensor launches fused (cpu_fuse.h). A launch queues one
 * CPU_OP_GRAPH entry holding a reference, so a graph destroyed while a replay is still queued
 * lives until that replay has run.
 */
#ifndef ACCEL_CPU_GRAPH_H
#define ACCEL_CPU_GRAPH_H

#include <stdatomic.h>

#include "cpu_exec.h"

struct cpu_graph {
  atomic_uint refs;
  cpu_op_t *ops;   /* the converted commands and their parameter blocks (one heap block) */
  cpu_op_t *steps; /* what a replay runs: ops, single or fused */
  size_t count;    /* steps */
};

/* Drops one reference; the last frees the graph. */
void cpu_graph_release(const cpu_graph_t *graph);

/* vtable entry points */
accel_status_t cpu_graph_instantiate(accel_be_device_t *device, const accel_cmd_t *cmds,
                                     size_t n, accel_be_graph_t **out);
accel_status_t cpu_graph_launch(accel_be_graph_t *graph, accel_be_stream_t *stream);
void cpu_graph_destroy(accel_be_graph_t *graph);

#endif
