#include "cpu_graph.h"

#include <stdlib.h>
#include <string.h>

#include "cpu_fuse.h"
#include "cpu_stream.h"

/* The graph handle the core holds: the body later launches run, replaced by an update while a
 * queued replay holds it. Launch, update and destroy are serialized by the core's graph lock. */
typedef struct cpu_graph_exec {
  cpu_graph_t *body;
  const accel_host_api_t *host;
} cpu_graph_exec_t;

/* Commands that convert to no op: event edges (list order satisfies them), region ends (the
 * region's op counts its body). */
static int no_op(const accel_cmd_t *c) {
  return c->type == ACCEL_CMD_EVENT_RECORD || c->type == ACCEL_CMD_EVENT_WAIT ||
         c->type == ACCEL_CMD_COND_END;
}

void cpu_graph_release(const cpu_graph_t *graph) {
  cpu_graph_t *g = (cpu_graph_t *)graph;
  if (atomic_fetch_sub(&g->refs, 1u) != 1u) return;
  free(g->run); /* run, steps, param_size and folds are one block */
  free(g->ops);
  free(g);
}

/* Folds and plans the fusion of g->ops into g->run and g->steps (the addresses decide it). A
 * list with conditional regions runs as recorded: a region's op counts the ops of its body.
 * again: after an update, where the plan made before stands if the same fills fold and its
 * fused groups are still free of hazards (cpu_fuse_recheck: one sort per group). */
static void body_plan(cpu_graph_t *g, int again) {
  if (g->nops) memcpy(g->run, g->ops, g->nops * sizeof *g->ops);
  int regions = 0;
  for (size_t i = 0; i < g->nops && !regions; ++i) regions = g->ops[i].type == CPU_OP_COND;
  if (regions) {
    memcpy(g->steps, g->run, g->nops * sizeof *g->ops);
    g->count = g->nops;
    return;
  }
  uint32_t *folds = g->folds + (again ? g->nops : 0u); /* the second half: scratch */
  size_t count = cpu_fuse_fold(g->run, g->nops, folds);
  size_t nfolds = g->nops - count;
  if (again && nfolds == g->nfolds && !memcmp(folds, g->folds, nfolds * sizeof *folds) &&
      cpu_fuse_recheck(g->run, count, g->threads, g->steps, g->count))
    return;
  if (again) memcpy(g->folds, folds, nfolds * sizeof *folds);
  g->nfolds = nfolds;
  g->count = cpu_fuse_plan(g->run, count, g->threads, g->steps);
}

/* The plan of `like` (the body an update replaces, same ops) as the one to check (body_plan
 * again): its folds and its steps' shape; recheck or a new plan rewrites every step. */
static void plan_like(cpu_graph_t *g, const cpu_graph_t *like) {
  memcpy(g->folds, like->folds, like->nfolds * sizeof *g->folds);
  g->nfolds = like->nfolds;
  memcpy(g->steps, like->steps, like->count * sizeof *g->steps);
  g->count = like->count;
}

/* A body for cmds; like (NULL, or the body an update replaces): its plan is checked for the new
 * arguments instead of made anew. */
static accel_status_t body_new(const accel_host_api_t *host, const char *what, unsigned threads,
                               const accel_cmd_t *cmds, size_t n, const cpu_graph_t *like,
                               cpu_graph_t **out) {
  cpu_graph_t *g = calloc(1, sizeof *g);
  if (g == NULL) return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "cpu: %s: calloc failed", what);
  accel_status_t st = cpu_ops_build(host, what, cmds, n, 1, &g->ops, &g->nops);
  if (st != ACCEL_OK) {
    free(g);
    return st;
  }
  size_t slots = g->nops ? g->nops : 1u;
  g->run = malloc(slots * (2u * sizeof(cpu_op_t) + 3u * sizeof(uint32_t)));
  if (g->run == NULL) {
    free(g->ops);
    free(g);
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "cpu: %s: malloc of %zu steps failed",
                           what, slots);
  }
  g->steps = g->run + slots;
  g->param_size = (uint32_t *)(void *)(g->steps + slots);
  g->folds = g->param_size + slots;
  for (size_t i = 0, k = 0; i < n; ++i)
    if (!no_op(&cmds[i]))
      g->param_size[k++] = cmds[i].type == ACCEL_CMD_KERNEL ? cmds[i].u.kernel.params_size : 0u;
  g->threads = threads;
  atomic_init(&g->refs, 1u);
  if (like) plan_like(g, like);
  body_plan(g, like != NULL);
  *out = g;
  return ACCEL_OK;
}

accel_status_t cpu_graph_instantiate(accel_be_device_t *device, const accel_cmd_t *cmds,
                                     size_t n, accel_be_graph_t **out) {
  cpu_device_t *dev = device;
  cpu_graph_exec_t *x = calloc(1, sizeof *x);
  if (x == NULL)
    return dev->host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "cpu: graph_instantiate: calloc failed");
  x->host = dev->host;
  accel_status_t st =
      body_new(dev->host, "graph_instantiate", cpu_workers_size(dev->pool), cmds, n, NULL,
               &x->body);
  if (st != ACCEL_OK) {
    free(x);
    return st;
  }
  *out = x;
  return ACCEL_OK;
}

/* The op a non-event command k of an update is written into: same type, kernel and parameter
 * block size as the command it was recorded from, or GRAPH_MISMATCH naming command i. */
static accel_status_t op_matches(const accel_host_api_t *host, const cpu_graph_t *g, size_t k,
                                 const accel_cmd_t *c, size_t i) {
  static const cpu_op_type_t op_of[] = {[ACCEL_CMD_KERNEL] = CPU_OP_KERNEL,
                                        [ACCEL_CMD_MEMCPY] = CPU_OP_MEMCPY,
                                        [ACCEL_CMD_MEMSET] = CPU_OP_MEMSET,
                                        [ACCEL_CMD_HOST_FUNC] = CPU_OP_HOST_FUNC,
                                        [ACCEL_CMD_COND_BEGIN] = CPU_OP_COND};
  const cpu_op_t *op = k < g->nops ? &g->ops[k] : NULL;
  int same = op != NULL && (c->type <= ACCEL_CMD_HOST_FUNC || c->type == ACCEL_CMD_COND_BEGIN) &&
             op->type == op_of[c->type];
  if (same && c->type == ACCEL_CMD_KERNEL)
    same = op->u.kernel.kernel_id == c->u.kernel.kernel_id &&
           g->param_size[k] == c->u.kernel.params_size;
  if (same) return ACCEL_OK;
  return host->set_error(ACCEL_ERROR_GRAPH_MISMATCH,
                         "cpu: graph_update: command %zu (type %u) does not match op %zu of the "
                         "graph (%s)", i, c->type, k,
                         op == NULL ? "the graph has fewer ops"
                                    : "another type, kernel or parameter block size");
}

static accel_status_t body_matches(const accel_host_api_t *host, const cpu_graph_t *g,
                                   const accel_cmd_t *cmds, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (no_op(&cmds[i])) continue;
    accel_status_t st = op_matches(host, g, k++, &cmds[i], i);
    if (st != ACCEL_OK) return st;
  }
  if (k == g->nops) return ACCEL_OK;
  return host->set_error(ACCEL_ERROR_GRAPH_MISMATCH,
                         "cpu: graph_update: %zu commands for a graph of %zu ops", k, g->nops);
}

/* Writes the arguments of cmds (checked by body_matches) into g's ops. */
static void body_rewrite(cpu_graph_t *g, const accel_cmd_t *cmds, size_t n) {
  cpu_op_t *op = g->ops;
  for (size_t i = 0; i < n; ++i) {
    const accel_cmd_t *c = &cmds[i];
    switch (c->type) {
      case ACCEL_CMD_KERNEL:
        if (c->u.kernel.params_size)
          memcpy((void *)(uintptr_t)op->u.kernel.params, c->u.kernel.params,
                 c->u.kernel.params_size);
        op->u.kernel.num_blocks = c->u.kernel.num_blocks;
        break;
      case ACCEL_CMD_MEMCPY:
        op->u.copy.dst = c->u.memcpy.dst;
        op->u.copy.src = c->u.memcpy.src;
        op->u.copy.size = c->u.memcpy.size;
        break;
      case ACCEL_CMD_MEMSET:
        op->u.fill.dst = c->u.memset.dst;
        op->u.fill.size = c->u.memset.size;
        op->u.fill.value = (uint8_t)c->u.memset.value;
        break;
      case ACCEL_CMD_HOST_FUNC:
        op->u.host.fn = c->u.host_func.fn;
        op->u.host.user = c->u.host_func.user;
        break;
      case ACCEL_CMD_COND_BEGIN: /* same regions (body_matches): the body's count stands */
        op->u.cond.flag = c->u.cond.flag;
        op->u.cond.max_iterations = c->u.cond.max_iterations;
        break;
      default: continue; /* an event edge or a region end: not an op */
    }
    ++op;
  }
}

accel_status_t cpu_graph_update(accel_be_graph_t *graph, const accel_cmd_t *cmds, size_t n) {
  cpu_graph_exec_t *x = graph;
  cpu_graph_t *g = x->body;
  accel_status_t st = body_matches(x->host, g, cmds, n);
  if (st != ACCEL_OK) return st;
  /* Only launches add references, under the core's graph lock which the caller holds: 1 means
   * no queued replay holds the body (a finished one dropped its reference after its last read). */
  if (atomic_load(&g->refs) == 1u) {
    body_rewrite(g, cmds, n);
    body_plan(g, 1);
    return ACCEL_OK;
  }
  cpu_graph_t *next = NULL;
  st = body_new(x->host, "graph_update", g->threads, cmds, n, g, &next);
  if (st != ACCEL_OK) return st;
  x->body = next;
  cpu_graph_release(g); /* the queued replays keep it */
  return ACCEL_OK;
}

accel_status_t cpu_graph_launch(accel_be_graph_t *graph, accel_be_stream_t *stream) {
  cpu_graph_t *g = ((cpu_graph_exec_t *)graph)->body;
  if (g->count == 0) return ACCEL_OK;
  atomic_fetch_add(&g->refs, 1u);
  const cpu_op_t op = {.type = CPU_OP_GRAPH, .u.graph = {.graph = g}};
  accel_status_t st = cpu_stream_enqueue(stream, "graph_launch", &op, NULL);
  if (st != ACCEL_OK) cpu_graph_release(g);
  return st;
}

void cpu_graph_destroy(accel_be_graph_t *graph) {
  cpu_graph_exec_t *x = graph;
  cpu_graph_release(x->body);
  free(x);
}
