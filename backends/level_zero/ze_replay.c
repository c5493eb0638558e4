/* Record-and-replay graphs (ze_replay.h). */
#include <string.h>

#include "ze_internal.h"

/* Whether the device records graphs that do not change (what accel replays). */
static int device_records_graphs(const accel_ze_device_t *dev) {
  accel_ze_rr_properties_t rr = {.stype = ACCEL_ZE_STYPE_RR_PROPERTIES};
  ze_device_properties_t props = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, .pNext = &rr};
  return dev->api->zeDeviceGetProperties(dev->dev, &props) == ZE_RESULT_SUCCESS &&
         (rr.graphFlags & ACCEL_ZE_RR_FLAG_IMMUTABLE_GRAPH) != 0u;
}

void accel_ze_rr_probe(accel_ze_device_t *dev) {
  memset(&dev->rr, 0, sizeof dev->rr);
  static const char *const names[] = {
      "zeGraphCreateExt",      "zeCommandListBeginCaptureIntoGraphExt",
      "zeCommandListEndGraphCaptureExt", "zeGraphInstantiateExt",
      "zeCommandListAppendGraphExt",     "zeExecutableGraphDestroyExt",
      "zeGraphDestroyExt"};
  enum { N = sizeof names / sizeof names[0] };
  void *fns[N];
  if (dev->mcl.update || !accel_ze_driver_lists(dev, ACCEL_ZE_RR_EXT_NAME) ||
      !device_records_graphs(dev) || !accel_ze_resolve(dev, names, fns, N))
    return;
  /* POSIX: a function pointer round-trips through void * (dlsym's contract) */
  memcpy(&dev->rr.create, &fns[0], sizeof fns[0]);
  memcpy(&dev->rr.begin, &fns[1], sizeof fns[1]);
  memcpy(&dev->rr.end, &fns[2], sizeof fns[2]);
  memcpy(&dev->rr.instantiate, &fns[3], sizeof fns[3]);
  memcpy(&dev->rr.append, &fns[4], sizeof fns[4]);
  memcpy(&dev->rr.destroy_exec, &fns[5], sizeof fns[5]);
  memcpy(&dev->rr.destroy, &fns[6], sizeof fns[6]);
}

/* Appends the work of cmds[0..n) to the capturing list, each command after the one before. */
static accel_status_t append_all(accel_ze_device_t *dev, ze_command_list_handle_t list,
                                 const accel_cmd_t *cmds, size_t n) {
  accel_status_t st = ACCEL_OK;
  size_t appended = 0;
  for (size_t i = 0; i < n && st == ACCEL_OK; ++i) {
    if (accel_ze_is_edge(&cmds[i])) continue;
    st = accel_ze_append_cmd(dev, list, &cmds[i], appended++ > 0, NULL);
  }
  return st;
}

/* Captures cmds into *graph on list (an immediate list of its own), ending the capture even
 * when an append failed so that the list is left as it was. */
static accel_status_t capture(accel_ze_device_t *dev, ze_command_list_handle_t list,
                              const accel_cmd_t *cmds, size_t n, accel_ze_rr_graph_t *graph) {
  ze_result_t r = dev->rr.create(dev->ctx, NULL, graph);
  if (r != ZE_RESULT_SUCCESS) {
    *graph = NULL;
    return accel_ze_fail("zeGraphCreateExt", r);
  }
  r = dev->rr.begin(list, *graph, NULL);
  if (r != ZE_RESULT_SUCCESS) return accel_ze_fail("zeCommandListBeginCaptureIntoGraphExt", r);
  accel_status_t st = append_all(dev, list, cmds, n);
  accel_ze_rr_graph_t ended = NULL;
  r = dev->rr.end(list, NULL, &ended);
  if (st == ACCEL_OK && r != ZE_RESULT_SUCCESS)
    st = accel_ze_fail("zeCommandListEndGraphCaptureExt", r);
  if (st == ACCEL_OK && ended != *graph)
    st = accel_ze_host->set_error(ACCEL_ERROR_BACKEND, "level_zero: the capture ended into "
                                  "another graph than it began (zeCommandListEndGraphCaptureExt)");
  return st;
}

accel_status_t accel_ze_rr_record(accel_ze_device_t *dev, const accel_cmd_t *cmds, size_t n,
                                  accel_ze_rr_graph_t *graph, accel_ze_rr_exec_t *exec) {
  *graph = NULL;
  *exec = NULL;
  /* capture needs an asynchronous immediate list */
  const ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                      .ordinal = dev->compute_ordinal,
                                      .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                      .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_list_handle_t list = NULL;
  ze_result_t r = dev->api->zeCommandListCreateImmediate(dev->ctx, dev->dev, &qd, &list);
  if (r != ZE_RESULT_SUCCESS) return accel_ze_fail("zeCommandListCreateImmediate", r);
  accel_status_t st = capture(dev, list, cmds, n, graph);
  dev->api->zeCommandListDestroy(list);
  if (st == ACCEL_OK && (r = dev->rr.instantiate(*graph, NULL, exec)) != ZE_RESULT_SUCCESS) {
    *exec = NULL;
    st = accel_ze_fail("zeGraphInstantiateExt", r);
  }
  if (st != ACCEL_OK) {
    accel_ze_rr_release(dev, *graph, *exec);
    *graph = NULL;
    *exec = NULL;
  }
  return st;
}

void accel_ze_rr_release(const accel_ze_device_t *dev, accel_ze_rr_graph_t graph,
                         accel_ze_rr_exec_t exec) {
  if (exec) dev->rr.destroy_exec(exec); /* before its graph, as the spec wants */
  if (graph) dev->rr.destroy(graph);
}
