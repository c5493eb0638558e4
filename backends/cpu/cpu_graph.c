#include "cpu_graph.h"

#include <stdlib.h>

#include "cpu_fuse.h"
#include "cpu_stream.h"

void cpu_graph_release(const cpu_graph_t *graph) {
  cpu_graph_t *g = (cpu_graph_t *)graph;
  if (atomic_fetch_sub(&g->refs, 1u) != 1u) return;
  free(g->steps);
  free(g->ops);
  free(g);
}

accel_status_t cpu_graph_instantiate(accel_be_device_t *device, const accel_cmd_t *cmds,
                                     size_t n, accel_be_graph_t **out) {
  cpu_device_t *dev = device;
  const accel_host_api_t *host = dev->host;
  cpu_graph_t *g = calloc(1, sizeof *g);
  if (g == NULL)
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "cpu: graph_instantiate: calloc failed");
  size_t count = 0;
  accel_status_t st = cpu_ops_build(host, "graph_instantiate", cmds, n, 1, &g->ops, &count);
  if (st != ACCEL_OK) {
    free(g);
    return st;
  }
  count = cpu_fuse_fold(g->ops, count);
  g->steps = malloc((count ? count : 1u) * sizeof *g->steps);
  if (g->steps == NULL) {
    free(g->ops);
    free(g);
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                           "cpu: graph_instantiate: malloc of %zu steps failed", count);
  }
  g->count = cpu_fuse_plan(g->ops, count, cpu_workers_size(dev->pool), g->steps);
  atomic_init(&g->refs, 1u);
  *out = g;
  return ACCEL_OK;
}

accel_status_t cpu_graph_launch(accel_be_graph_t *graph, accel_be_stream_t *stream) {
  cpu_graph_t *g = graph;
  if (g->count == 0) return ACCEL_OK;
  atomic_fetch_add(&g->refs, 1u);
  const cpu_op_t op = {.type = CPU_OP_GRAPH, .u.graph = {.graph = g}};
  accel_status_t st = cpu_stream_enqueue(stream, "graph_launch", &op, NULL);
  if (st != ACCEL_OK) cpu_graph_release(g);
  return st;
}

void cpu_graph_destroy(accel_be_graph_t *graph) { cpu_graph_release(graph); }
