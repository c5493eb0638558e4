/*
 * The Level Zero plugin's record-and-replay graphs (backends/level_zero/ze_replay.c) against a
 * fake driver table, no device needed: the extension is used only when the driver lists
 * ZE_extension_record_replay_graph, the device records immutable graphs, every function
 * resolves and mutable command lists are not usable; a segment is captured on an immediate
 * list of its own between begin and end, event edges left out and each command after the one
 * before, then instantiated; a failure anywhere leaves no graph, executable graph or list
 * behind; an executable graph is destroyed before its graph. What a real driver does with them
 * is unverified (docs/backends/level_zero.md).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "ze_fake_chain.h"

const accel_host_api_t *accel_ze_host;

accel_status_t accel_ze_fail(const char *call, ze_result_t r) {
  return accel_ze_host->set_error(ACCEL_ERROR_BACKEND, "%s failed: 0x%x", call, (unsigned)r);
}

#define LIST ((ze_command_list_handle_t)(uintptr_t)0x100)
#define GRAPH ((accel_ze_rr_graph_t)(uintptr_t)0x200)
#define EXEC ((accel_ze_rr_exec_t)(uintptr_t)0x300)

static struct {
  int resolve_all;
  uint32_t graph_flags;
  int fail_append_at, fail_instantiate; /* 1-based append to fail; 0: none */
  int appends, capturing, lists_live, graphs_live, execs_live;
  char log[256];
} fake;

static void note(const char *what) {
  strncat(fake.log, what, sizeof fake.log - strlen(fake.log) - 1);
}

/* The plugin's append, as the capture calls it (ze_commands.c is not linked). */
accel_status_t accel_ze_append_cmd(accel_ze_device_t *dev, ze_command_list_handle_t list,
                                   const accel_cmd_t *cmd, int barrier_before,
                                   uint64_t *mutable_id) {
  (void)dev;
  CHECK(list == LIST && fake.capturing && !mutable_id, "append outside the capture");
  char item[16];
  snprintf(item, sizeof item, "a%u%s,", cmd->type, barrier_before ? "b" : "");
  note(item);
  if (++fake.appends == fake.fail_append_at)
    return accel_ze_host->set_error(ACCEL_ERROR_BACKEND, "append failed");
  return ACCEL_OK;
}

static void fill_properties(void *p) {
  ((accel_ze_rr_properties_t *)p)->graphFlags = fake.graph_flags;
}

static ze_result_t ZE_APICALL fake_immediate(ze_context_handle_t c, ze_device_handle_t d,
                                             const ze_command_queue_desc_t *qd,
                                             ze_command_list_handle_t *out) {
  (void)c;
  (void)d;
  CHECK(qd->mode == ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS && qd->ordinal == 2,
        "capture list: mode %d ordinal %u", (int)qd->mode, qd->ordinal);
  fake.lists_live++;
  *out = LIST;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_list_destroy(ze_command_list_handle_t l) {
  CHECK(l == LIST && !fake.capturing, "a list destroyed while capturing");
  fake.lists_live--;
  note("d,");
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_create(ze_context_handle_t c, const void *next, accel_ze_rr_graph_t *out) {
  (void)c;
  CHECK(!next, "graph create: pNext");
  fake.graphs_live++;
  *out = GRAPH;
  note("c,");
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_begin(ze_command_list_handle_t l, accel_ze_rr_graph_t g,
                              const void *next) {
  CHECK(l == LIST && g == GRAPH && !next && !fake.capturing, "begin");
  fake.capturing = 1;
  note("b,");
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_end(ze_command_list_handle_t l, const void *next,
                            accel_ze_rr_graph_t *out) {
  CHECK(l == LIST && !next && fake.capturing, "end");
  fake.capturing = 0;
  *out = GRAPH;
  note("e,");
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_instantiate(accel_ze_rr_graph_t g, const void *next,
                                    accel_ze_rr_exec_t *out) {
  CHECK(g == GRAPH && !next, "instantiate");
  note("i,");
  if (fake.fail_instantiate) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  fake.execs_live++;
  *out = EXEC;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_destroy_exec(accel_ze_rr_exec_t e) {
  CHECK(e == EXEC && fake.execs_live == 1, "executable graph destroyed twice or unknown");
  fake.execs_live--;
  note("x,");
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_destroy(accel_ze_rr_graph_t g) {
  CHECK(g == GRAPH && fake.execs_live == 0, "graph destroyed before its executable graph");
  fake.graphs_live--;
  note("g,");
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_append_graph(ze_command_list_handle_t l, accel_ze_rr_exec_t e,
                                     const void *next, ze_event_handle_t s, uint32_t n,
                                     ze_event_handle_t *w) {
  (void)l, (void)e, (void)next, (void)s, (void)n, (void)w;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_resolve(ze_driver_handle_t d, const char *name, void **fn) {
  (void)d;
  static const struct {
    const char *name;
    void *fn;
  } table[] = {
      {"zeGraphCreateExt", (void *)(uintptr_t)fake_create},
      {"zeCommandListBeginCaptureIntoGraphExt", (void *)(uintptr_t)fake_begin},
      {"zeCommandListEndGraphCaptureExt", (void *)(uintptr_t)fake_end},
      {"zeGraphInstantiateExt", (void *)(uintptr_t)fake_instantiate},
      {"zeCommandListAppendGraphExt", (void *)(uintptr_t)fake_append_graph},
      {"zeExecutableGraphDestroyExt", (void *)(uintptr_t)fake_destroy_exec},
      {"zeGraphDestroyExt", (void *)(uintptr_t)fake_destroy},
  };
  *fn = NULL;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
    if (!strcmp(name, table[i].name) && (fake.resolve_all || i != 6)) *fn = table[i].fn;
  return *fn ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

static int probed(accel_ze_device_t *dev, int listed, uint32_t flags, int resolve_all) {
  ze_fake.listed = listed;
  fake.graph_flags = flags;
  fake.resolve_all = resolve_all;
  accel_ze_rr_probe(dev);
  const int all = dev->rr.create && dev->rr.begin && dev->rr.end && dev->rr.instantiate &&
                  dev->rr.append && dev->rr.destroy_exec && dev->rr.destroy;
  CHECK(all || !(dev->rr.create || dev->rr.append || dev->rr.destroy),
        "some functions set without the others");
  return all;
}

/* Records a segment of a kernel, an event edge and a fill; *log gets the call sequence. */
static accel_status_t record(accel_ze_device_t *dev, accel_ze_rr_graph_t *g,
                             accel_ze_rr_exec_t *e) {
  const accel_cmd_t cmds[] = {{.type = ACCEL_CMD_KERNEL},
                              {.type = ACCEL_CMD_EVENT_RECORD},
                              {.type = ACCEL_CMD_MEMSET}};
  fake.log[0] = '\0';
  fake.appends = 0;
  return accel_ze_rr_record(dev, cmds, 3, g, e);
}

int main(void) {
  accel_ze_api_t api;
  ze_fake_table(&api);
  ze_fake = (ze_fake_t){.name = ACCEL_ZE_RR_EXT_NAME, .stype = ACCEL_ZE_STYPE_RR_PROPERTIES,
                        .fill = fill_properties};
  api.zeDriverGetExtensionFunctionAddress = fake_resolve;
  api.zeCommandListCreateImmediate = fake_immediate;
  api.zeCommandListDestroy = fake_list_destroy;
  accel_ze_device_t dev = {.api = &api, .compute_ordinal = 2};
  CHECK(!probed(&dev, 0, 3u, 1), "used without the driver listing the extension");
  CHECK(!probed(&dev, 1, 2u, 1), "used without immutable graphs (only mutable ones)");
  CHECK(!probed(&dev, 1, 1u, 0), "used without zeGraphDestroyExt");
  dev.mcl.update = (void *)(uintptr_t)1; /* stands for usable mutable command lists */
  CHECK(!probed(&dev, 1, 1u, 1), "used where mutable command lists update graphs in place");
  dev.mcl.update = NULL;
  CHECK(probed(&dev, 1, 1u, 1), "not used with everything there");

  accel_ze_rr_graph_t g = NULL;
  accel_ze_rr_exec_t e = NULL;
  CHECK(record(&dev, &g, &e) == ACCEL_OK && g == GRAPH && e == EXEC, "record");
  CHECK(!strcmp(fake.log, "c,b,a0,a2b,e,d,i,"), "record: calls %s", fake.log);
  fake.log[0] = '\0';
  accel_ze_rr_release(&dev, g, e);
  CHECK(!strcmp(fake.log, "x,g,"), "release: calls %s", fake.log);

  fake.fail_append_at = 2;
  CHECK(record(&dev, &g, &e) == ACCEL_ERROR_BACKEND && !g && !e, "a failed append: an error");
  CHECK(!strcmp(fake.log, "c,b,a0,a2b,e,d,g,"), "a failed append: calls %s", fake.log);
  fake.fail_append_at = 0;
  fake.fail_instantiate = 1;
  CHECK(record(&dev, &g, &e) == ACCEL_ERROR_BACKEND && !g && !e, "a failed instantiation");
  CHECK(!strcmp(fake.log, "c,b,a0,a2b,e,d,i,g,"), "a failed instantiation: calls %s", fake.log);
  CHECK(fake.lists_live == 0 && fake.graphs_live == 0 && fake.execs_live == 0 && !fake.capturing,
        "left behind: %d lists, %d graphs, %d executable graphs", fake.lists_live,
        fake.graphs_live, fake.execs_live);
  return CHECK_EXIT("test_ze_replay: record-and-replay graphs against a fake driver table");
}
