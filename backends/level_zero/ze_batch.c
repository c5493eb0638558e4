/*
 * Lazy mode: the core hands over a flushed sequence of commands. They go into one regular
 * command list executed on the stream's queue with a fence; a host function splits the
 * submission (execute what is before it, wait, run it, continue with a new list).
 */
#include "ze_internal.h"

accel_status_t accel_ze_submit_batch(accel_be_stream_t *stream, const accel_cmd_t *cmds,
                                     size_t n) {
  accel_ze_stream_t *s = stream;
  accel_status_t st = accel_ze_stream_use_path(s, ACCEL_ZE_PATH_QUEUE);
  accel_ze_slot_t *slot = NULL;
  size_t in_slot = 0;
  for (size_t i = 0; i < n && st == ACCEL_OK; ++i) {
    if (cmds[i].type == ACCEL_CMD_HOST_FUNC) {
      if (slot && in_slot) st = accel_ze_stream_execute_slot(s, slot);
      slot = NULL;
      in_slot = 0;
      if (st == ACCEL_OK) st = accel_ze_stream_synchronize(s);
      if (st == ACCEL_OK) cmds[i].u.host_func.fn(cmds[i].u.host_func.user);
      continue;
    }
    if (!slot) st = accel_ze_stream_acquire_slot(s, &slot);
    if (st == ACCEL_OK) st = accel_ze_append_cmd(s->dev, slot->list, &cmds[i], in_slot > 0, NULL);
    in_slot++;
  }
  /* On failure the partial list is not executed; the slot is reset when next acquired. */
  if (st == ACCEL_OK && slot && in_slot) st = accel_ze_stream_execute_slot(s, slot);
  return st;
}
