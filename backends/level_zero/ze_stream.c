/*
 * Streams. A stream has two submission paths:
 *  - the immediate path: an immediate command list for eager commands (ACCEL_LAZY=0);
 *  - the queue path: regular command lists executed on the stream's command queue, for lazy
 *    batches and graphs (reused through a small ring of list + fence slots).
 * The two are separate hardware queues with no ordering between them, so switching path waits
 * on the host for the previous path's work (rare: a stream is normally lazy or eager).
 * Commands in a list start in order but may finish out of order: every command after the
 * first is preceded by a barrier. The 1.4 headers here lack ZE_COMMAND_QUEUE_FLAG_IN_ORDER.
 */
#include <stdlib.h>
#include <string.h>

#include "ze_internal.h"

accel_status_t accel_ze_stream_setup(accel_ze_device_t *dev, ze_command_list_handle_t imm,
                                     accel_ze_stream_t **out) {
  const accel_ze_api_t *api = dev->api;
  accel_ze_stream_t *s = calloc(1, sizeof(*s));
  if (!s) return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: out of host memory");
  s->dev = dev;
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                .ordinal = dev->compute_ordinal,
                                .index = 0,
                                .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_result_t r = api->zeCommandQueueCreate(dev->ctx, dev->dev, &qd, &s->queue);
  accel_status_t st = r == ZE_RESULT_SUCCESS ? ACCEL_OK : accel_ze_fail("zeCommandQueueCreate", r);
  if (st == ACCEL_OK && imm) {
    s->imm = imm;
    s->imm_borrowed = 1;
  } else if (st == ACCEL_OK) {
    r = api->zeCommandListCreateImmediate(dev->ctx, dev->dev, &qd, &s->imm);
    if (r != ZE_RESULT_SUCCESS) st = accel_ze_fail("zeCommandListCreateImmediate", r);
  }
  if (st == ACCEL_OK) st = accel_ze_single_event(dev, 0, &s->marker_pool, &s->marker);
  if (st != ACCEL_OK) {
    accel_ze_stream_destroy(s);
    return st;
  }
  *out = s;
  return ACCEL_OK;
}

accel_status_t accel_ze_stream_create(accel_be_device_t *device, accel_be_stream_t **out) {
  accel_ze_stream_t *s = NULL;
  accel_status_t st = accel_ze_stream_setup(device, NULL, &s);
  if (st == ACCEL_OK) *out = s;
  return st;
}

void accel_ze_stream_destroy(accel_be_stream_t *stream) {
  accel_ze_stream_t *s = stream;
  const accel_ze_api_t *api = s->dev->api;
  for (int i = 0; i < ACCEL_ZE_STREAM_SLOTS; ++i) {
    if (s->slots[i].fence) api->zeFenceDestroy(s->slots[i].fence);
    if (s->slots[i].list) api->zeCommandListDestroy(s->slots[i].list);
  }
  if (s->marker) api->zeEventDestroy(s->marker);
  if (s->marker_pool) api->zeEventPoolDestroy(s->marker_pool);
  if (s->imm && !s->imm_borrowed) api->zeCommandListDestroy(s->imm);
  if (s->queue) api->zeCommandQueueDestroy(s->queue);
  free(s);
}

/* Waits for (block) or queries the marker barrier in flight. */
static accel_status_t accel_ze_marker_wait(accel_ze_stream_t *s, int block) {
  const accel_ze_api_t *api = s->dev->api;
  accel_status_t st =
      block ? accel_ze_poll_result("zeEventHostSynchronize",
                                   api->zeEventHostSynchronize(s->marker, UINT64_MAX))
            : accel_ze_poll_result("zeEventQueryStatus", api->zeEventQueryStatus(s->marker));
  if (st == ACCEL_OK) s->marker_pending = 0;
  return st;
}

/* Appends a barrier signaling the marker once every immediate command so far finished.
 * A marker still in flight is waited for (block) or reported NOT_READY (query). */
static accel_status_t accel_ze_imm_mark(accel_ze_stream_t *s, int block) {
  const accel_ze_api_t *api = s->dev->api;
  /* Native appends to a shared list are not seen: a blocking wait (synchronize, path switch)
   * always marks; a query covers accel's commands (and all appended before them). */
  if (!s->imm_dirty && !(s->shared && block)) return ACCEL_OK;
  if (s->marker_pending) {
    accel_status_t st = accel_ze_marker_wait(s, block);
    if (st != ACCEL_OK) return st;
  }
  ACCEL_ZE_TRY(api, zeEventHostReset, s->marker);
  ACCEL_ZE_TRY(api, zeCommandListAppendBarrier, s->imm, s->marker, 0, NULL);
  s->marker_pending = 1;
  s->imm_dirty = 0;
  return ACCEL_OK;
}

static accel_status_t accel_ze_imm_wait(accel_ze_stream_t *s, int block) {
  accel_status_t st = accel_ze_imm_mark(s, block);
  if (st != ACCEL_OK || !s->marker_pending) return st;
  return accel_ze_marker_wait(s, block);
}

static accel_status_t accel_ze_queue_wait(accel_ze_stream_t *s, int block) {
  return accel_ze_poll_result("zeCommandQueueSynchronize",
                              s->dev->api->zeCommandQueueSynchronize(s->queue,
                                                                     block ? UINT64_MAX : 0));
}

static accel_status_t accel_ze_stream_wait(accel_ze_stream_t *s, int block) {
  switch (s->path) {
    case ACCEL_ZE_PATH_IMMEDIATE:
      return accel_ze_imm_wait(s, block);
    case ACCEL_ZE_PATH_QUEUE:
      return accel_ze_queue_wait(s, block);
    case ACCEL_ZE_PATH_NONE:
      break;
  }
  return ACCEL_OK;
}

accel_status_t accel_ze_stream_synchronize(accel_be_stream_t *stream) {
  return accel_ze_stream_wait(stream, 1);
}

accel_status_t accel_ze_stream_query(accel_be_stream_t *stream) {
  return accel_ze_stream_wait(stream, 0);
}

accel_status_t accel_ze_stream_use_path(accel_ze_stream_t *s, accel_ze_path_t path) {
  if (s->path != path && s->path != ACCEL_ZE_PATH_NONE) {
    accel_status_t st = accel_ze_stream_wait(s, 1);
    if (st != ACCEL_OK) return st;
  }
  s->path = path;
  return ACCEL_OK;
}

static accel_status_t accel_ze_slot_recycle(const accel_ze_api_t *api, accel_ze_slot_t *slot,
                                            int block) {
  if (slot->busy) {
    accel_status_t st =
        block ? accel_ze_poll_result("zeFenceHostSynchronize",
                                     api->zeFenceHostSynchronize(slot->fence, UINT64_MAX))
              : accel_ze_poll_result("zeFenceQueryStatus", api->zeFenceQueryStatus(slot->fence));
    if (st != ACCEL_OK) return st;
    ACCEL_ZE_TRY(api, zeFenceReset, slot->fence);
    slot->busy = 0;
  }
  /* Also drops a partial list left by a failed append. */
  ACCEL_ZE_TRY(api, zeCommandListReset, slot->list);
  return ACCEL_OK;
}

static accel_status_t accel_ze_slot_create(accel_ze_stream_t *s, accel_ze_slot_t *slot) {
  const accel_ze_api_t *api = s->dev->api;
  ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
                               .commandQueueGroupOrdinal = s->dev->compute_ordinal};
  ACCEL_ZE_TRY(api, zeCommandListCreate, s->dev->ctx, s->dev->dev, &ld, &slot->list);
  ze_fence_desc_t fd = {.stype = ZE_STRUCTURE_TYPE_FENCE_DESC};
  ze_result_t r = api->zeFenceCreate(s->queue, &fd, &slot->fence);
  if (r != ZE_RESULT_SUCCESS) {
    api->zeCommandListDestroy(slot->list);
    slot->list = NULL;
    return accel_ze_fail("zeFenceCreate", r);
  }
  return ACCEL_OK;
}

accel_status_t accel_ze_stream_acquire_slot(accel_ze_stream_t *s, accel_ze_slot_t **out) {
  const accel_ze_api_t *api = s->dev->api;
  for (unsigned k = 0; k < ACCEL_ZE_STREAM_SLOTS; ++k) {
    unsigned i = (s->next_slot + k) % ACCEL_ZE_STREAM_SLOTS;
    accel_ze_slot_t *slot = &s->slots[i];
    accel_status_t st = slot->list ? accel_ze_slot_recycle(api, slot, 0)
                                   : accel_ze_slot_create(s, slot);
    if (st == ACCEL_ERROR_NOT_READY) continue;
    if (st != ACCEL_OK) return st;
    s->next_slot = (i + 1) % ACCEL_ZE_STREAM_SLOTS;
    *out = slot;
    return ACCEL_OK;
  }
  /* Every slot is in flight: wait for the oldest. */
  accel_ze_slot_t *slot = &s->slots[s->next_slot];
  accel_status_t st = accel_ze_slot_recycle(api, slot, 1);
  if (st != ACCEL_OK) return st;
  s->next_slot = (s->next_slot + 1) % ACCEL_ZE_STREAM_SLOTS;
  *out = slot;
  return ACCEL_OK;
}

accel_status_t accel_ze_stream_execute_slot(accel_ze_stream_t *s, accel_ze_slot_t *slot) {
  const accel_ze_api_t *api = s->dev->api;
  ACCEL_ZE_TRY(api, zeCommandListClose, slot->list);
  ACCEL_ZE_TRY(api, zeCommandQueueExecuteCommandLists, s->queue, 1, &slot->list, slot->fence);
  slot->busy = 1;
  return ACCEL_OK;
}

accel_status_t accel_ze_stream_control_begin(accel_ze_stream_t *s, ze_command_list_handle_t *list,
                                             accel_ze_slot_t **slot) {
  *slot = NULL;
  if (s->path == ACCEL_ZE_PATH_IMMEDIATE) {
    *list = s->imm;
    return ACCEL_OK;
  }
  accel_status_t st = accel_ze_stream_use_path(s, ACCEL_ZE_PATH_QUEUE);
  if (st == ACCEL_OK) st = accel_ze_stream_acquire_slot(s, slot);
  if (st == ACCEL_OK) *list = (*slot)->list;
  return st;
}

/* Something was appended to the immediate list (the marker must cover it). */
static void accel_ze_imm_appended(accel_ze_stream_t *s) {
  s->imm_used = 1;
  s->imm_dirty = 1;
}

accel_status_t accel_ze_stream_control_end(accel_ze_stream_t *s, accel_ze_slot_t *slot) {
  if (slot) return accel_ze_stream_execute_slot(s, slot);
  accel_ze_imm_appended(s);
  return ACCEL_OK;
}

accel_status_t accel_ze_stream_append_eager(accel_ze_stream_t *s, const accel_cmd_t *cmd) {
  accel_status_t st = accel_ze_stream_use_path(s, ACCEL_ZE_PATH_IMMEDIATE);
  if (st != ACCEL_OK) return st;
  st = accel_ze_append_cmd(s->dev, s->imm, cmd, s->imm_used, NULL);
  /* A barrier may have been appended even when the command failed: count it as work. */
  accel_ze_imm_appended(s);
  return st;
}
