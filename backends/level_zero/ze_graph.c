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
 */
#include <stdlib.h>

#include "ze_internal.h"

typedef struct accel_ze_segment {
  ze_command_list_handle_t list; /* NULL for a host function segment */
  accel_host_fn_t fn;
  void *user;
} accel_ze_segment_t;

typedef struct accel_ze_graph {
  accel_ze_device_t *dev;
  accel_ze_segment_t *segs;
  size_t nsegs;
  ze_event_pool_handle_t done_pool;
  ze_event_handle_t done;     /* signaled by the end of the last list */
  ze_command_queue_handle_t last_queue;
} accel_ze_graph_t;

void accel_ze_graph_destroy(accel_be_graph_t *graph) {
  accel_ze_graph_t *g = graph;
  const accel_ze_api_t *api = g->dev->api;
  for (size_t i = 0; i < g->nsegs; ++i)
    if (g->segs[i].list) api->zeCommandListDestroy(g->segs[i].list);
  if (g->done) api->zeEventDestroy(g->done);
  if (g->done_pool) api->zeEventPoolDestroy(g->done_pool);
  free(g->segs);
  free(g);
}

static accel_status_t accel_ze_graph_new_list(accel_ze_graph_t *g, ze_command_list_handle_t *out) {
  ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
                               .commandQueueGroupOrdinal = g->dev->compute_ordinal};
  ACCEL_ZE_TRY(g->dev->api, zeCommandListCreate, g->dev->ctx, g->dev->dev, &ld, out);
  return ACCEL_OK;
}

/* Appends cmds[0..n) (no host functions) to a new segment list. */
static accel_status_t accel_ze_graph_add_list(accel_ze_graph_t *g, const accel_cmd_t *cmds,
                                              size_t n) {
  accel_ze_segment_t *seg = &g->segs[g->nsegs];
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
    if (cmds[i].type == ACCEL_CMD_EVENT_RECORD || cmds[i].type == ACCEL_CMD_EVENT_WAIT) continue;
    st = accel_ze_append_cmd(g->dev, seg->list, &cmds[i], appended > 0);
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
  if (!g->segs) {
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
  accel_status_t st = accel_ze_stream_use_path(s, ACCEL_ZE_PATH_QUEUE);
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
    } else {
      st = accel_ze_stream_synchronize(s);
      if (st != ACCEL_OK) return st;
      seg->fn(seg->user);
    }
  }
  return ACCEL_OK;
}
