/*
 * Native graphs by stream capture.
 *
 * The core records the user's capture itself (it enforces the GLOBAL / THREAD_LOCAL / RELAXED
 * rules for every backend) and hands the command list over at capture_end. Here the list is
 * replayed into a vendor capture on private streams, one per stream slot, with one vendor
 * event per event slot for the fork/join edges, and the resulting graph is instantiated. The
 * vendor capture lives only inside this call on this thread, so it uses THREAD_LOCAL mode:
 * it must not invalidate, nor be invalidated by, unrelated vendor calls of other threads.
 *
 * Every slot is forked from the origin stream right after the capture begins and joined back
 * before it ends, so commands on any slot are always part of the capture and the graph is
 * complete even if a slot's own fork/join edges were elided.
 */
#include <stdlib.h>
#include <string.h>

#include "cond_walk.h"
#include "gpu_backend.h"

typedef struct capture {
  gpu_device_t *device;
  gpu_graph_t *graph;   /* its host-function jobs, taken in list order */
  size_t next_hostfn;
  uint32_t stream_count, event_count;
  gpuStream_t *streams;
  gpuEvent_t *events;
  unsigned char *recorded;
  gpuEvent_t edge; /* fork/join of the slots; each wait uses the most recent record */
} capture_t;

static void capture_free(capture_t *c) {
  gpu_backend_t *be = c->device->backend;
  for (uint32_t i = 0; c->streams && i < c->stream_count; i++)
    if (c->streams[i]) GPU_WARN(be, StreamDestroy, c->streams[i]);
  for (uint32_t i = 0; c->events && i < c->event_count; i++)
    if (c->events[i]) GPU_WARN(be, EventDestroy, c->events[i]);
  if (c->edge) GPU_WARN(be, EventDestroy, c->edge);
  free(c->streams);
  free(c->events);
  free(c->recorded);
}

static accel_status_t capture_alloc(capture_t *c, const accel_cmd_t *cmds, size_t n) {
  gpu_backend_t *be = c->device->backend;
  c->stream_count = 1;
  for (size_t i = 0; i < n; i++) {
    if (cmds[i].stream_slot >= c->stream_count) c->stream_count = cmds[i].stream_slot + 1;
    if ((cmds[i].type == ACCEL_CMD_EVENT_RECORD || cmds[i].type == ACCEL_CMD_EVENT_WAIT) &&
        cmds[i].u.event.event_slot >= c->event_count)
      c->event_count = cmds[i].u.event.event_slot + 1;
  }
  c->streams = calloc(c->stream_count, sizeof *c->streams);
  c->events = calloc(c->event_count ? c->event_count : 1, sizeof *c->events);
  c->recorded = calloc(c->event_count ? c->event_count : 1, 1);
  if (!c->streams || !c->events || !c->recorded)
    return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: graph capture state",
                               GPU_BACKEND_NAME);
  accel_status_t st = GPU_TRY(be, EventCreate, &c->edge, GPU_EVENT_DISABLE_TIMING);
  for (uint32_t i = 0; i < c->stream_count && st == ACCEL_OK; i++)
    st = GPU_TRY(be, StreamCreate, &c->streams[i], GPU_STREAM_NON_BLOCKING);
  for (uint32_t i = 0; i < c->event_count && st == ACCEL_OK; i++)
    st = GPU_TRY(be, EventCreate, &c->events[i], GPU_EVENT_DISABLE_TIMING);
  return st;
}

/* One command into the capture; a host function inside a conditional region runs on pred
 * (gpu_predicate.c). */
static accel_status_t capture_cmd(void *ctx, const accel_cmd_t *cmd, const int32_t *pred) {
  capture_t *c = ctx;
  gpu_backend_t *be = c->device->backend;
  gpuStream_t s = c->streams[cmd->stream_slot];
  uint32_t slot = cmd->u.event.event_slot;
  switch (cmd->type) {
    case ACCEL_CMD_EVENT_RECORD:
      c->recorded[slot] = 1;
      return GPU_TRY(be, EventRecord, c->events[slot], s);
    case ACCEL_CMD_EVENT_WAIT:
      if (!c->recorded[slot])
        return gpu_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                                   "%s: graph waits on event slot %u before it is recorded",
                                   GPU_BACKEND_NAME, slot);
      return GPU_TRY(be, StreamWaitEvent, s, c->events[slot], 0u);
    case ACCEL_CMD_HOST_FUNC: {
      gpu_graph_t *g = c->graph;
      size_t k = c->next_hostfn++;
      gpu_hostfn_job_t *job = k < g->nhostfns ? g->hostfns[k] : NULL;
      return gpu_hostfn_issue_pred(c->device, s, cmd->u.host_func.fn, cmd->u.host_func.user,
                                   NULL, job, pred);
    }
    default:
      return gpu_issue(c->device, s, cmd, NULL, NULL);
  }
}

/* Forks (join = 0) or joins (join = 1) every slot with the origin stream. */
static accel_status_t capture_edges(capture_t *c, int join) {
  gpu_backend_t *be = c->device->backend;
  accel_status_t st = ACCEL_OK;
  for (uint32_t i = 1; i < c->stream_count && st == ACCEL_OK; i++) {
    gpuStream_t from = join ? c->streams[i] : c->streams[0];
    gpuStream_t to = join ? c->streams[0] : c->streams[i];
    st = GPU_TRY(be, EventRecord, c->edge, from);
    if (st == ACCEL_OK) st = GPU_TRY(be, StreamWaitEvent, to, c->edge, 0u);
  }
  return st;
}

/* A job and a pinned flag per host-function command of cmds, kept for every replay. */
static accel_status_t hostfn_alloc(gpu_graph_t *g, const accel_cmd_t *cmds, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++) count += cmds[i].type == ACCEL_CMD_HOST_FUNC;
  if (!count || !gpu_hostfn_has_flags(g->device->backend)) return ACCEL_OK;
  g->hostfns = calloc(count, sizeof *g->hostfns);
  g->hostfn_flags = calloc(count, sizeof *g->hostfn_flags);
  if (!g->hostfns || !g->hostfn_flags)
    return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: graph host functions",
                               GPU_BACKEND_NAME);
  accel_status_t st = ACCEL_OK;
  for (; g->nhostfns < count && st == ACCEL_OK; g->nhostfns++) {
    st = gpu_hostfn_flag_alloc(g->device, &g->hostfn_flags[g->nhostfns]);
    if (st == ACCEL_OK)
      st = gpu_hostfn_job_new(g->hostfn_flags[g->nhostfns], 1, &g->hostfns[g->nhostfns]);
  }
  return st;
}

/* Frees the graph's host side (after its executable graph: no replay can run a job). */
static void graph_free(gpu_graph_t *g) {
  gpu_pred_slots_free(g->device, g->pred_slots);
  for (size_t i = 0; i < g->nhostfns; i++) {
    gpu_hostfn_job_free(g->hostfns[i]);
    gpu_hostfn_flag_free(g->device, g->hostfn_flags[i]);
  }
  free(g->hostfns);
  free(g->hostfn_flags);
  free(g->cmds);
  free(g->params);
  free(g);
}

/* The work commands of cmds (kernel parameters copied into *params) for launches into a
 * capture the runtime runs (gpu_graph_launch). */
static accel_status_t keep_commands(const accel_cmd_t *cmds, size_t n, accel_cmd_t **kept,
                                    size_t *nkept, unsigned char **params) {
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++)
    if (cmds[i].type == ACCEL_CMD_KERNEL) bytes += (cmds[i].u.kernel.params_size + 15u) & ~15u;
  *nkept = 0;
  *kept = calloc(n ? n : 1, sizeof **kept);
  *params = malloc(bytes ? bytes : 1);
  if (!*kept || !*params) {
    free(*kept);
    free(*params);
    *kept = NULL;
    *params = NULL;
    return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: graph command copy",
                               GPU_BACKEND_NAME);
  }
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    if (cmds[i].type == ACCEL_CMD_EVENT_RECORD || cmds[i].type == ACCEL_CMD_EVENT_WAIT)
      continue; /* list order is a valid order for one stream */
    accel_cmd_t *c = &(*kept)[(*nkept)++];
    *c = cmds[i];
    c->stream_slot = 0; /* issued on the one stream launched on */
    if (c->type == ACCEL_CMD_KERNEL) {
      memcpy(*params + at, c->u.kernel.params, c->u.kernel.params_size);
      c->u.kernel.params = *params + at;
      at += (c->u.kernel.params_size + 15u) & ~15u;
    }
  }
  return ACCEL_OK;
}

/* cmds replayed into a vendor capture: *out, the graph to instantiate (or to update from). */
static accel_status_t capture_graph(gpu_graph_t *g, const accel_cmd_t *cmds, size_t n,
                                    gpuGraph_t *out) {
  gpu_backend_t *be = g->device->backend;
  capture_t c = {.device = g->device, .graph = g};
  accel_status_t st = capture_alloc(&c, cmds, n);
  if (st == ACCEL_OK && accel_cond_any(cmds, n))
    st = gpu_pred_slots_ensure(g->device, &g->pred_slots); /* not inside the capture */
  if (st == ACCEL_OK)
    st = GPU_TRY(be, StreamBeginCapture, c.streams[0], GPU_CAPTURE_MODE_THREAD_LOCAL);
  if (st == ACCEL_OK) {
    st = capture_edges(&c, 0);
    gpu_pred_walk_t walk = {g->device, c.streams, &g->pred_slots, capture_cmd, &c};
    if (st == ACCEL_OK) st = gpu_pred_run(&walk, cmds, n);
    /* Join even after a failure so that the capture can be ended cleanly; the first error
     * is the one reported. */
    accel_status_t join = capture_edges(&c, 1);
    if (st == ACCEL_OK) st = join;
    gpuError_t err = be->api.StreamEndCapture(c.streams[0], out);
    if (st == ACCEL_OK) st = gpu_check(be, err, gpu_api_names.StreamEndCapture);
  }
  capture_free(&c);
  if (st != ACCEL_OK && *out) {
    GPU_WARN(be, GraphDestroy, *out);
    *out = NULL;
  }
  return st;
}

accel_status_t gpu_graph_instantiate(accel_be_device_t *device, const accel_cmd_t *cmds,
                                     size_t n, accel_be_graph_t **out) {
  gpu_device_t *d = device;
  gpu_backend_t *be = d->backend;
  gpu_graph_t *g = calloc(1, sizeof *g);
  if (!g) return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: graph", GPU_BACKEND_NAME);
  g->device = d;
  GPU_ENTER(st, d);
  if (st == ACCEL_OK) st = hostfn_alloc(g, cmds, n);
  if (st == ACCEL_OK) st = capture_graph(g, cmds, n, &g->graph);
  if (st == ACCEL_OK) st = GPU_TRY(be, GraphInstantiate, &g->exec, g->graph, 0ull);
  if (st == ACCEL_OK) st = keep_commands(cmds, n, &g->cmds, &g->ncmds, &g->params);
  if (st != ACCEL_OK) {
    if (g->exec) GPU_WARN(be, GraphExecDestroy, g->exec);
    if (g->graph) GPU_WARN(be, GraphDestroy, g->graph);
    graph_free(g);
    return st;
  }
  *out = g;
  return ACCEL_OK;
}

/* In place (cuGraphExecUpdate / hipGraphExecUpdate): cmds captured into a new vendor graph,
 * which the executable graph takes its node parameters from. The driver updates only future
 * launches (cuda.h: "Already enqueued or running launches ... are not affected", said of the
 * node setters). Any failure leaves the graph as it was and the core instantiates anew:
 * a driver without the call, a graph with host functions (their jobs belong to the replays
 * of this graph), or a change the driver refuses. */
accel_status_t gpu_graph_update(accel_be_graph_t *graph, const accel_cmd_t *cmds, size_t n) {
  gpu_graph_t *g = graph;
  gpu_backend_t *be = g->device->backend;
  if (!be->api.GraphExecUpdate)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: the driver has no %s",
                               GPU_BACKEND_NAME, gpu_api_names.GraphExecUpdate);
  int hostfns = g->nhostfns > 0;
  for (size_t i = 0; i < n; i++) hostfns |= cmds[i].type == ACCEL_CMD_HOST_FUNC;
  if (hostfns)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "%s: a graph with host functions is instantiated anew",
                               GPU_BACKEND_NAME);
  accel_cmd_t *kept = NULL;
  unsigned char *params = NULL;
  size_t nkept = 0;
  gpuGraph_t fresh = NULL;
  GPU_ENTER(st, g->device);
  if (st == ACCEL_OK) st = keep_commands(cmds, n, &kept, &nkept, &params);
  if (st == ACCEL_OK) st = capture_graph(g, cmds, n, &fresh);
  if (st == ACCEL_OK)
    st = gpu_check(be, GPU_GRAPH_EXEC_UPDATE(&be->api, g->exec, fresh),
                   gpu_api_names.GraphExecUpdate);
  if (st != ACCEL_OK) {
    if (fresh) GPU_WARN(be, GraphDestroy, fresh);
    free(kept);
    free(params);
    return st;
  }
  GPU_WARN(be, GraphDestroy, g->graph);
  g->graph = fresh;
  free(g->cmds);
  free(g->params);
  g->cmds = kept;
  g->ncmds = nkept;
  g->params = params;
  return ACCEL_OK;
}

/* 1 when a runtime is capturing s (a wrapped or handed-out stream; *st set on failure). */
static int runtime_capturing(gpu_stream_t *s, accel_status_t *st) {
  gpu_backend_t *be = s->device->backend;
  unsigned status = 0;
  if (!s->shared || !be->api.StreamIsCapturing) return 0;
  *st = GPU_TRY(be, StreamIsCapturing, s->handle, &status);
  return *st == ACCEL_OK && status == GPU_CAPTURE_STATUS_ACTIVE;
}

/* On a stream the runtime is capturing, the commands are issued one by one and so recorded
 * into the runtime's graph in stream order; an executable graph launched into a capture is
 * not something every driver records. */
accel_status_t gpu_graph_launch(accel_be_graph_t *graph, accel_be_stream_t *stream) {
  gpu_graph_t *g = graph;
  gpu_stream_t *s = stream;
  GPU_ENTER(st, g->device);
  if (st != ACCEL_OK) return st;
  if (runtime_capturing(s, &st)) {
    /* the graph's own jobs and slots, in the same order (keep_commands keeps list order) */
    capture_t c = {.device = g->device, .graph = g, .streams = &s->handle};
    gpu_pred_walk_t walk = {g->device, &s->handle, &g->pred_slots, capture_cmd, &c};
    return gpu_pred_run(&walk, g->cmds, g->ncmds);
  }
  return st != ACCEL_OK ? st : GPU_TRY(g->device->backend, GraphLaunch, g->exec, s->handle);
}

void gpu_graph_destroy(accel_be_graph_t *graph) {
  gpu_graph_t *g = graph;
  gpu_backend_t *be = g->device->backend;
  GPU_ENTER_OR_WARN(current, g->device);
  if (current) {
    GPU_WARN(be, GraphExecDestroy, g->exec);
    GPU_WARN(be, GraphDestroy, g->graph);
  }
  graph_free(g);
}
