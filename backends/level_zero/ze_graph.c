/*
 * Native graphs: the recorded commands become closed regular command lists, executed on the
 * replaying stream's queue. Host functions split the graph into segments (a list, then the
 * host function run at that boundary, then the next list). EVENT_RECORD/EVENT_WAIT edges are
 * dropped: running everything in list order is a valid topological order of the capture.
 *
 * The first list starts by resetting a graph-owned event on the device and the last list ends
 * by signaling it, so it is reset between executions in queue order. A launch on a different
 * queue than the previous one waits on the host for that event first: one command list must
 * not execute on two queues at once. (Limitation: with several launches still pending on the
 * old queue, the host may see the signal of an earlier one; see docs/backends/level_zero.md.)
 *
 * With mutable command lists (ze_mutable.h) every kernel is a mutable command, and an update
 * gives the kernels their new parameter blocks and group counts in place. Without them, where
 * the driver records graphs (ze_replay.h), each segment is a recorded executable graph instead
 * of a list, appended to the replaying stream's immediate list: in order with the stream's
 * other work there, so no done event is needed. Both unverified: no device here.
 */
#include <stdlib.h>
#include <string.h>

#include "ze_internal.h"

typedef struct accel_ze_segment {
  ze_command_list_handle_t list; /* NULL for a host function or recorded segment */
  accel_ze_rr_graph_t rr_graph;  /* a recorded segment (ze_replay.h): its graph, */
  accel_ze_rr_exec_t rr_exec;    /* instantiated */
  accel_host_fn_t fn;
  void *user;
} accel_ze_segment_t;

/* What an update may change of one command (event edges have no node): a kernel's mutable
 * command, a copy's or fill's arguments (an update keeps those), a host function's segment. */
typedef struct accel_ze_node {
  accel_cmd_t cmd;               /* the command as it runs now; a kernel's params: a copy the
                                    graph owns (put back when an update fails half-way) */
  ze_command_list_handle_t list; /* a kernel's list */
  uint64_t id;                   /* a kernel's mutable command id */
  size_t seg;                    /* a host function's segment */
} accel_ze_node_t;

typedef struct accel_ze_graph {
  accel_ze_device_t *dev;
  accel_ze_segment_t *segs;
  size_t nsegs;
  accel_ze_node_t *nodes; /* with mutable command lists only */
  size_t nnodes;
  ze_event_pool_handle_t done_pool;
  ze_event_handle_t done;     /* signaled by the end of the last list */
  ze_command_queue_handle_t last_queue;
} accel_ze_graph_t;

void accel_ze_graph_destroy(accel_be_graph_t *graph) {
  accel_ze_graph_t *g = graph;
  const accel_ze_api_t *api = g->dev->api;
  for (size_t i = 0; i < g->nsegs; ++i) {
    if (g->segs[i].list) api->zeCommandListDestroy(g->segs[i].list);
    accel_ze_rr_release(g->dev, g->segs[i].rr_graph, g->segs[i].rr_exec);
  }
  if (g->done) api->zeEventDestroy(g->done);
  if (g->done_pool) api->zeEventPoolDestroy(g->done_pool);
  free(g->segs);
  for (size_t i = 0; i < g->nnodes; ++i)
    if (g->nodes[i].cmd.type == ACCEL_CMD_KERNEL) free((void *)g->nodes[i].cmd.u.kernel.params);
  free(g->nodes);
  free(g);
}

static accel_status_t accel_ze_graph_new_list(accel_ze_graph_t *g, ze_command_list_handle_t *out) {
  ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
                               .pNext = accel_ze_mcl_list_next(g->dev),
                               .commandQueueGroupOrdinal = g->dev->compute_ordinal};
  ACCEL_ZE_TRY(g->dev->api, zeCommandListCreate, g->dev->ctx, g->dev->dev, &ld, out);
  return ACCEL_OK;
}

/* The node's kernel parameters copied into memory of its own (the caller's are the core's). */
static accel_status_t keep_params(accel_ze_node_t *node) {
  accel_kernel_launch_t *k = &node->cmd.u.kernel;
  void *copy = k->params_size ? malloc(k->params_size) : NULL;
  if (k->params_size && !copy) {
    k->params = NULL;
    return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  }
  if (copy) memcpy(copy, k->params, k->params_size);
  k->params = copy;
  return ACCEL_OK;
}

/* Appends cmds[0..n) (no host functions) to a new segment list, or records them into a new
 * segment graph where the device records graphs. */
static accel_status_t accel_ze_graph_add_list(accel_ze_graph_t *g, const accel_cmd_t *cmds,
                                              size_t n) {
  accel_ze_segment_t *seg = &g->segs[g->nsegs];
  if (g->dev->rr.append) {
    accel_status_t st = accel_ze_rr_record(g->dev, cmds, n, &seg->rr_graph, &seg->rr_exec);
    if (st == ACCEL_OK) g->nsegs++;
    return st;
  }
  accel_status_t st = accel_ze_graph_new_list(g, &seg->list);
  if (st != ACCEL_OK) return st;
  g->nsegs++;
  size_t appended = 0;
  if (!g->done) {
    /* First list: reset the done event on the device, in queue order, before the work. */
    st = accel_ze_single_event(g->dev, 0, &g->done_pool, &g->done);
    if (st != ACCEL_OK) return st;
    ACCEL_ZE_TRY(g->dev->api, zeCommandListAppendEventReset, seg->list, g->done);
    appended = 1; /* the first command waits for the reset */
  }
  for (size_t i = 0; i < n && st == ACCEL_OK; ++i) {
    if (accel_ze_is_edge(&cmds[i])) continue;
    accel_ze_node_t *node = g->nodes ? &g->nodes[g->nnodes++] : NULL;
    const int kernel = cmds[i].type == ACCEL_CMD_KERNEL;
    if (node) *node = (accel_ze_node_t){.cmd = cmds[i], .list = seg->list};
    if (node && kernel) st = keep_params(node);
    if (st == ACCEL_OK)
      st = accel_ze_append_cmd(g->dev, seg->list, &cmds[i], appended > 0,
                               node && kernel ? &node->id : NULL);
    appended++;
  }
  return st;
}

/* Ends the last list by signaling the done event, and closes every list. */
static accel_status_t accel_ze_graph_finish(accel_ze_graph_t *g) {
  const accel_ze_api_t *api = g->dev->api;
  accel_ze_segment_t *last = NULL;
  for (size_t i = 0; i < g->nsegs; ++i)
    if (g->segs[i].list) last = &g->segs[i];
  if (last) ACCEL_ZE_TRY(api, zeCommandListAppendBarrier, last->list, g->done, 0, NULL);
  for (size_t i = 0; i < g->nsegs; ++i)
    if (g->segs[i].list) ACCEL_ZE_TRY(api, zeCommandListClose, g->segs[i].list);
  return ACCEL_OK;
}

accel_status_t accel_ze_graph_instantiate(accel_be_device_t *device, const accel_cmd_t *cmds,
                                          size_t n, accel_be_graph_t **out) {
  accel_ze_graph_t *g = calloc(1, sizeof(*g));
  if (!g) return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  g->dev = device;
  /* at most one list before each host function, one segment each, one list at the end */
  g->segs = calloc(2 * n + 1, sizeof(*g->segs));
  if (g->segs && g->dev->mcl.update) g->nodes = calloc(n ? n : 1, sizeof(*g->nodes));
  if (!g->segs || (g->dev->mcl.update && !g->nodes)) {
    free(g->segs);
    free(g);
    return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  }
  accel_status_t st = ACCEL_OK;
  size_t begin = 0;
  for (size_t i = 0; i <= n && st == ACCEL_OK; ++i) {
    if (i < n && cmds[i].type != ACCEL_CMD_HOST_FUNC) continue;
    if (i > begin) st = accel_ze_graph_add_list(g, cmds + begin, i - begin);
    if (st == ACCEL_OK && i < n) {
      g->segs[g->nsegs].fn = cmds[i].u.host_func.fn;
      g->segs[g->nsegs].user = cmds[i].u.host_func.user;
      if (g->nodes) g->nodes[g->nnodes++] = (accel_ze_node_t){.cmd = cmds[i], .seg = g->nsegs};
      g->nsegs++;
    }
    begin = i + 1;
  }
  if (st == ACCEL_OK) st = accel_ze_graph_finish(g);
  if (st != ACCEL_OK) {
    accel_ze_graph_destroy(g);
    return st;
  }
  *out = g;
  return ACCEL_OK;
}

accel_status_t accel_ze_graph_launch(accel_be_graph_t *graph, accel_be_stream_t *stream) {
  accel_ze_graph_t *g = graph;
  accel_ze_stream_t *s = stream;
  const accel_ze_api_t *api = g->dev->api;
  const accel_ze_path_t path = g->dev->rr.append ? ACCEL_ZE_PATH_IMMEDIATE : ACCEL_ZE_PATH_QUEUE;
  accel_status_t st = accel_ze_stream_use_path(s, path);
  if (st != ACCEL_OK) return st;
  /* Same queue: executions are ordered (each resets the done event on the device). Another
   * queue: the previous launch must be over before the lists run again. */
  if (g->done && g->last_queue && g->last_queue != s->queue)
    ACCEL_ZE_TRY(api, zeEventHostSynchronize, g->done, UINT64_MAX);
  for (size_t i = 0; i < g->nsegs; ++i) {
    accel_ze_segment_t *seg = &g->segs[i];
    if (seg->list) {
      ACCEL_ZE_TRY(api, zeCommandQueueExecuteCommandLists, s->queue, 1, &seg->list, NULL);
      g->last_queue = s->queue;
    } else if (seg->rr_exec) {
      ze_result_t r = g->dev->rr.append(s->imm, seg->rr_exec, NULL, NULL, 0, NULL);
      if (r != ZE_RESULT_SUCCESS) return accel_ze_fail("zeCommandListAppendGraphExt", r);
      st = accel_ze_stream_control_end(s, NULL); /* appended to the immediate list */
      if (st != ACCEL_OK) return st;
    } else {
      st = accel_ze_stream_synchronize(s);
      if (st != ACCEL_OK) return st;
      seg->fn(seg->user);
    }
  }
  return ACCEL_OK;
}

/* Why the commands by_node[0..k) (cmds without their edges) cannot update g in place (a
 * message), or NULL: the same commands in the same order (the core checked the topology),
 * copies and fills with the same arguments. */
static const char *update_refusal(const accel_ze_graph_t *g, const accel_cmd_t *const *by_node,
                                  size_t k) {
  if (k != g->nnodes) return "the commands differ";
  for (size_t i = 0; i < k; ++i) {
    const accel_cmd_t *c = by_node[i], *was = &g->nodes[i].cmd;
    if (was->type != c->type) return "the commands differ";
    if (c->type == ACCEL_CMD_KERNEL && (was->u.kernel.kernel_id != c->u.kernel.kernel_id ||
                                        was->u.kernel.params_size != c->u.kernel.params_size))
      return "a kernel or its parameter block's size differs";
    if (c->type == ACCEL_CMD_MEMCPY &&
        (was->u.memcpy.dst != c->u.memcpy.dst || was->u.memcpy.src != c->u.memcpy.src ||
         was->u.memcpy.size != c->u.memcpy.size))
      return "a copy's arguments changed (a mutable command list mutates kernels only)";
    if (c->type == ACCEL_CMD_MEMSET &&
        (was->u.memset.dst != c->u.memset.dst || was->u.memset.size != c->u.memset.size ||
         was->u.memset.value != c->u.memset.value))
      return "a fill's arguments changed (a mutable command list mutates kernels only)";
  }
  return NULL;
}

/* Gives every kernel node its new arguments; a failure puts back those already changed (the
 * plugin contract: an unchanged graph on error). */
static accel_status_t update_kernels(accel_ze_graph_t *g, const accel_cmd_t *const *by_node) {
  accel_status_t st = ACCEL_OK;
  size_t k = 0;
  for (; k < g->nnodes && st == ACCEL_OK; ++k)
    if (by_node[k]->type == ACCEL_CMD_KERNEL)
      st = accel_ze_mcl_update_kernel(g->dev, g->nodes[k].list, g->nodes[k].id,
                                      &by_node[k]->u.kernel);
  if (st != ACCEL_OK)
    for (size_t j = 0; j + 1 < k; ++j) /* the failed one (k - 1) did not change */
      if (g->nodes[j].cmd.type == ACCEL_CMD_KERNEL)
        (void)accel_ze_mcl_update_kernel(g->dev, g->nodes[j].list, g->nodes[j].id,
                                         &g->nodes[j].cmd.u.kernel);
  return st;
}

/* After an update: the nodes and host segments take the new commands' arguments. */
static void take_new(accel_ze_graph_t *g, const accel_cmd_t *const *by_node) {
  for (size_t k = 0; k < g->nnodes; ++k) {
    accel_ze_node_t *node = &g->nodes[k];
    const accel_cmd_t *c = by_node[k];
    if (c->type == ACCEL_CMD_KERNEL) {
      accel_kernel_launch_t *mine = &node->cmd.u.kernel;
      if (mine->params_size) /* the same size (update_refusal) */
        memcpy((void *)mine->params, c->u.kernel.params, mine->params_size);
      mine->num_blocks = c->u.kernel.num_blocks;
    } else if (c->type == ACCEL_CMD_HOST_FUNC) {
      g->segs[node->seg].fn = c->u.host_func.fn;
      g->segs[node->seg].user = c->u.host_func.user;
    }
  }
}

/* Closes every list again (an updated list is executable only once closed). */
static accel_status_t close_lists(accel_ze_graph_t *g) {
  accel_status_t st = ACCEL_OK;
  for (size_t i = 0; i < g->nsegs; ++i)
    if (g->segs[i].list) {
      ze_result_t r = g->dev->api->zeCommandListClose(g->segs[i].list);
      if (r != ZE_RESULT_SUCCESS && st == ACCEL_OK) st = accel_ze_fail("zeCommandListClose", r);
    }
  return st;
}

accel_status_t accel_ze_graph_update(accel_be_graph_t *graph, const accel_cmd_t *cmds,
                                     size_t n) {
  accel_ze_graph_t *g = graph;
  if (!g->nodes)
    return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                    "level_zero: graph_update: the device has no mutable command "
                                    "lists (" ACCEL_ZE_MCL_EXT_NAME "): instantiated anew");
  const accel_cmd_t **by_node = calloc(n ? n : 1, sizeof *by_node);
  if (!by_node)
    return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (!accel_ze_is_edge(&cmds[i])) by_node[k++] = &cmds[i];
  const char *why = update_refusal(g, by_node, k);
  accel_status_t st = why ? accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                                     "level_zero: graph_update: %s: "
                                                     "instantiated anew", why)
                          : ACCEL_OK;
  /* The spec: a mutable list's executions are over before it is updated. The update does not
   * wait for them: a replay still queued (behind an event a host function of the caller's will
   * signal, say) must run the old arguments, and waiting could wait on the caller itself. A
   * queue not idle gets UNSUPPORTED, so the core instantiates anew and retires these lists
   * after the queued replays, as a CPU graph's copy on write does. */
  if (st == ACCEL_OK && g->last_queue) {
    ze_result_t r = g->dev->api->zeCommandQueueSynchronize(g->last_queue, 0);
    if (r == ZE_RESULT_NOT_READY)
      st = accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                    "level_zero: graph_update: a replay may still run on the "
                                    "graph's last queue: instantiated anew");
    else if (r != ZE_RESULT_SUCCESS)
      st = accel_ze_fail("zeCommandQueueSynchronize", r);
  }
  if (st == ACCEL_OK) {
    st = update_kernels(g, by_node);
    if (st == ACCEL_OK) take_new(g, by_node); /* then what lives on the host */
    accel_status_t closed = close_lists(g);
    if (st == ACCEL_OK) st = closed;
  }
  free(by_node);
  return st;
}

int accel_ze_device_attribute(accel_be_device_t *device, uint32_t attr, int64_t *value) {
  const accel_ze_device_t *dev = device;
  if (attr != ACCEL_ATTR_GRAPH_UPDATE || dev->mcl.update) return 0;
  *value = ACCEL_GRAPH_UPDATE_EMULATED;
  return 1;
}
