/*
 * accel_graph_update: a ready graph takes the arguments of a new capture of the same sequence
 * (docs/GRAPHS.md, "Updating a graph"). The topology (command types, kernels, stream slots,
 * event edges, copy kinds) must match; pointers, sizes, parameters, block counts (tensor lists)
 * and host-function arguments may differ. The plugin updates its native graph in place when it
 * can (graph_update slot), else the core instantiates one from the new commands. The old
 * contents are retired like a reset's: replays issued before the update still run them, and
 * later replays are ordered after them as any replay is.
 */
#include <stdio.h>
#include <string.h>

#include "graph_parts.h"
#include "core_util.h"
#include "device.h"
#include "pool.h"
#include "trace.h"

static void contents_free(accel_device_t *dev, accel_graph_contents_t *c) {
  accel_graph_lists_release(c->lists);
  accel_allocator_unpin(dev->mem, &c->pins);
  if (c->pool) accel_pool_release_ref(c->pool);
}

/* src's contents for g: its lists shared (never changed once captured), its pins and pool
 * taken again (src's lock taken alone: no lock order with g's). */
static accel_status_t take_source(accel_graph_t *g, accel_graph_t *src,
                                  accel_graph_contents_t *out) {
  out->pins.owner_kind = "graph";
  out->pins.owner = g;
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&src->lock);
  if (src->state != ACCEL_GRAPH_READY)
    st = accel_set_error(ACCEL_ERROR_STATE, "accel_graph_update: the source graph %s",
                         src->state == ACCEL_GRAPH_CAPTURING ? "is still capturing"
                                                            : "holds no capture");
  if (st == ACCEL_OK) {
    accel_graph_lists_retain(src->lists);
    out->lists = src->lists;
  }
  if (st == ACCEL_OK) st = accel_allocator_pin_again(src->dev->mem, &src->pins, &out->pins);
  if (st == ACCEL_OK && src->pool) {
    accel_pool_retain(src->pool);
    out->pool = src->pool;
  }
  pthread_mutex_unlock(&src->lock);
  if (st == ACCEL_OK) return ACCEL_OK;
  contents_free(g->dev, out);
  return st;
}

static const char *copy_kind_name(uint32_t kind) {
  switch (kind) {
    case ACCEL_COPY_HOST_TO_HOST: return "host-to-host";
    case ACCEL_COPY_HOST_TO_DEVICE: return "host-to-device";
    case ACCEL_COPY_DEVICE_TO_HOST: return "device-to-host";
    default: return "device-to-device";
  }
}

/* "kernel accel_k_fill on stream 0", or "the end of the graph" for NULL. */
static void describe(const accel_cmd_t *c, char *buf, size_t len) {
  if (!c) {
    snprintf(buf, len, "the end of the graph");
    return;
  }
  unsigned slot = c->stream_slot;
  switch (c->type) {
    case ACCEL_CMD_KERNEL:
      snprintf(buf, len, "kernel %s on stream %u", c->u.kernel.kernel_name, slot);
      break;
    case ACCEL_CMD_MEMCPY:
      snprintf(buf, len, "%s copy on stream %u", copy_kind_name(c->u.memcpy.kind), slot);
      break;
    case ACCEL_CMD_MEMSET: snprintf(buf, len, "memset on stream %u", slot); break;
    case ACCEL_CMD_HOST_FUNC: snprintf(buf, len, "host function on stream %u", slot); break;
    case ACCEL_CMD_EVENT_RECORD:
    case ACCEL_CMD_EVENT_WAIT:
      snprintf(buf, len, "event %s (edge %u) on stream %u",
               c->type == ACCEL_CMD_EVENT_RECORD ? "record" : "wait", c->u.event.event_slot,
               slot);
      break;
    case ACCEL_CMD_COND_BEGIN:
      snprintf(buf, len, "the start of %s region on stream %u",
               c->u.cond.kind == ACCEL_COND_WHILE ? "a while" : "an if", slot);
      break;
    case ACCEL_CMD_COND_END: snprintf(buf, len, "the end of a region on stream %u", slot); break;
    default: snprintf(buf, len, "native command on stream %u", slot); break;
  }
}

/* Same node for an update: what may not change between two captures of one sequence. */
static bool same_node(const accel_cmd_t *a, const accel_cmd_t *b) {
  if (a->type != b->type || a->stream_slot != b->stream_slot) return false;
  switch (a->type) {
    case ACCEL_CMD_KERNEL: return a->u.kernel.kernel_id == b->u.kernel.kernel_id;
    case ACCEL_CMD_MEMCPY: return a->u.memcpy.kind == b->u.memcpy.kind;
    case ACCEL_CMD_EVENT_RECORD:
    case ACCEL_CMD_EVENT_WAIT: return a->u.event.event_slot == b->u.event.event_slot;
    case ACCEL_CMD_NATIVE: return a->u.native.enqueue == b->u.native.enqueue;
    case ACCEL_CMD_COND_BEGIN: return a->u.cond.kind == b->u.cond.kind;
    default: return true; /* memset, host function, region end: arguments only */
  }
}

/* ACCEL_OK, or GRAPH_MISMATCH naming the first node where the lists differ. */
static accel_status_t same_topology(const accel_cmdlist_t *have, const accel_cmdlist_t *want) {
  size_t n = have->count < want->count ? have->count : want->count, i = 0;
  while (i < n && same_node(&have->cmds[i], &want->cmds[i])) ++i;
  if (i == have->count && i == want->count) return ACCEL_OK;
  char a[160], b[160];
  describe(i < have->count ? &have->cmds[i] : NULL, a, sizeof a);
  describe(i < want->count ? &want->cmds[i] : NULL, b, sizeof b);
  return accel_set_error(ACCEL_ERROR_GRAPH_MISMATCH,
                         "accel_graph_update: the topology differs at node %zu (of %zu recorded "
                         "operations, fork/join events included): the graph has %s, the source "
                         "has %s; the graph is unchanged",
                         i, have->count, a, b);
}

/* The native graph for the new commands: the old one updated in place when the plugin can,
 * else a new one (NULL: replayed as a batch). Graph lock held. */
static accel_be_graph_t *native_for(accel_graph_t *g, const accel_cmdlist_t *cmds) {
  const accel_backend_vtable_t *vt = g->dev->backend->vt;
  if (g->native && vt->graph_update &&
      vt->graph_update(g->native, cmds->cmds, cmds->count) == ACCEL_OK)
    return g->native;
  return accel_graph_instantiate_native(g->dev, cmds);
}

static accel_status_t update_checks(accel_graph_t *g, accel_graph_t *src) {
  accel_status_t st = accel_handle_check(g, ACCEL_HANDLE_GRAPH, "accel_graph_update");
  if (st == ACCEL_OK) st = accel_handle_check(src, ACCEL_HANDLE_GRAPH, "accel_graph_update");
  if (st != ACCEL_OK) return st;
  if (g == src)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "accel_graph_update: graph and source are the same graph");
  if (g->dev != src->dev)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "accel_graph_update: graph and source belong to different devices");
  return ACCEL_OK;
}

accel_status_t accel_graph_update(accel_graph_t *g, accel_graph_t *src) {
  accel_status_t st = update_checks(g, src);
  if (st != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(g->trace_id, __func__);
  accel_graph_contents_t next;
  memset(&next, 0, sizeof next);
  if ((st = take_source(g, src, &next)) != ACCEL_OK) return st;
  accel_graph_remains_t *old = NULL;
  pthread_mutex_lock(&g->lock);
  if (g->state != ACCEL_GRAPH_READY)
    st = accel_set_error(ACCEL_ERROR_STATE, "%s: the graph %s", __func__,
                         g->state == ACCEL_GRAPH_CAPTURING ? "is still capturing"
                                                          : "holds no capture");
  else
    st = same_topology(&g->lists->cmds, &next.lists->cmds);
  if (st == ACCEL_OK) {
    next.native = native_for(g, &next.lists->cmds);
    old = accel_graph_swap_contents(g, &next);
  }
  size_t n = g->lists ? g->lists->flat.count : 0u;
  int native = g->native != NULL;
  pthread_mutex_unlock(&g->lock);
  if (st != ACCEL_OK) contents_free(g->dev, &next);
  accel_graph_release_remains(g->dev, old);
  accel_trace_end_args(&t, "\"nodes\":%zu,\"ok\":%d,\"native\":%d", n, st == ACCEL_OK, native);
  return st;
}
