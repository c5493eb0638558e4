/*
 * Record-and-replay graphs (ZE_extension_record_replay_graph, Level Zero spec 1.17): each
 * segment of a native graph is recorded from an immediate command list in capture mode into a
 * driver graph, instantiated once, and a replay appends the executable graphs to the stream's
 * immediate list. Used where the driver lists the extension, the device records immutable
 * graphs and all the functions resolve, and mutable command lists (ze_mutable.h) are not
 * usable: those update a graph's kernels in place, and changing a recorded graph would take the
 * extension's mutable form, not used here (an update then instantiates anew). Debian's headers
 * are spec 1.4, so the property structure, its stype, the handles and the functions' types are
 * declared here as the spec gives them (level-zero include/ze_api.h, 1.17). Unverified: no
 * Level Zero device has run this (docs/backends/level_zero.md).
 */
#ifndef ACCEL_ZE_REPLAY_H
#define ACCEL_ZE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <level_zero/ze_api.h>

#include "accel/accel_plugin.h"

#define ACCEL_ZE_RR_EXT_NAME "ZE_extension_record_replay_graph"
#define ACCEL_ZE_STYPE_RR_PROPERTIES ((ze_structure_type_t)0x00020047)
#define ACCEL_ZE_RR_FLAG_IMMUTABLE_GRAPH 1u /* ZE_RECORD_REPLAY_GRAPH_EXT_FLAG_IMMUTABLE_GRAPH */

typedef struct accel_ze_rr_properties { /* ze_record_replay_graph_ext_properties_t */
  ze_structure_type_t stype;
  void *pNext;
  uint32_t graphFlags;
} accel_ze_rr_properties_t;

typedef struct accel_ze_rr_graph *accel_ze_rr_graph_t; /* ze_graph_handle_t */
typedef struct accel_ze_rr_exec *accel_ze_rr_exec_t;   /* ze_executable_graph_handle_t */

/* The extension's functions, all NULL when graphs are not recorded this way. */
typedef struct accel_ze_rr {
  ze_result_t (*create)(ze_context_handle_t ctx, const void *next,
                        accel_ze_rr_graph_t *out); /* zeGraphCreateExt */
  ze_result_t (*begin)(ze_command_list_handle_t list, accel_ze_rr_graph_t graph,
                       const void *next); /* zeCommandListBeginCaptureIntoGraphExt */
  ze_result_t (*end)(ze_command_list_handle_t list, const void *next,
                     accel_ze_rr_graph_t *out); /* zeCommandListEndGraphCaptureExt */
  ze_result_t (*instantiate)(accel_ze_rr_graph_t graph, const void *next,
                             accel_ze_rr_exec_t *out); /* zeGraphInstantiateExt */
  ze_result_t (*append)(ze_command_list_handle_t list, accel_ze_rr_exec_t exec, const void *next,
                        ze_event_handle_t signal, uint32_t num_waits,
                        ze_event_handle_t *waits); /* zeCommandListAppendGraphExt */
  ze_result_t (*destroy_exec)(accel_ze_rr_exec_t exec); /* zeExecutableGraphDestroyExt */
  ze_result_t (*destroy)(accel_ze_rr_graph_t graph);    /* zeGraphDestroyExt */
} accel_ze_rr_t;

struct accel_ze_device;

/* Fills dev->rr when graphs are to be recorded this way (after accel_ze_mcl_probe); else
 * leaves it zero. */
void accel_ze_rr_probe(struct accel_ze_device *dev);

/* Records cmds[0..n) (kernels, copies and fills; event edges are skipped: list order is a
 * valid order) into *graph and instantiates it into *exec. On failure nothing is left. */
accel_status_t accel_ze_rr_record(struct accel_ze_device *dev, const accel_cmd_t *cmds,
                                  size_t n, accel_ze_rr_graph_t *graph, accel_ze_rr_exec_t *exec);

/* Destroys an executable graph and the graph it came from (either may be NULL); no replay of
 * them may still run (the core retires graphs after every stream passed them). */
void accel_ze_rr_release(const struct accel_ze_device *dev, accel_ze_rr_graph_t graph,
                         accel_ze_rr_exec_t exec);

#endif
