/*
 * Level Zero backend: the objects behind the opaque accel_be_* handles, and the helpers the
 * plugin's files share. See docs/backends/level_zero.md for the design.
 */
#ifndef ACCEL_ZE_INTERNAL_H
#define ACCEL_ZE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/accel_plugin.h"
#include "accel_kernel_ids.h"
#include "backend_slots.h"
#include "ze_loader.h"
#include "ze_mutable.h"
#include "ze_replay.h"
#include "ze_spirv.h"

/* The host services table given to accel_plugin_query (one host per process). */
extern const accel_host_api_t *accel_ze_host;

/* Maps a failed vendor call to a status with "zeCall failed: ZE_RESULT_... (0x...)":
 * out-of-memory results become ACCEL_ERROR_OUT_OF_MEMORY, the rest ACCEL_ERROR_BACKEND. */
accel_status_t accel_ze_fail(const char *call, ze_result_t r);

/* Result of waiting on or querying a fence, event or queue: ACCEL_OK when signaled,
 * ACCEL_ERROR_NOT_READY when not yet, else accel_ze_fail(call, r). */
accel_status_t accel_ze_poll_result(const char *call, ze_result_t r);

/* Evaluates a ze call; on failure returns its mapped status from the enclosing function. */
#define ACCEL_ZE_TRY(api, call, ...)                         \
  do {                                                       \
    ze_result_t accel_ze_r_ = (api)->call(__VA_ARGS__);      \
    if (accel_ze_r_ != ZE_RESULT_SUCCESS)                    \
      return accel_ze_fail(#call, accel_ze_r_);              \
  } while (0)

typedef struct accel_ze_backend {
  accel_ze_api_t api;
  int device_count;
  ze_driver_handle_t *drivers; /* per device index: the driver that exposes it */
  ze_device_handle_t *devices;
  _Atomic uint64_t *bytes_in_use; /* per device index: raw device bytes allocated by us */
} accel_ze_backend_t;

typedef struct accel_ze_device {
  accel_ze_backend_t *be;
  const accel_ze_api_t *api;
  int index;
  ze_driver_handle_t driver;
  ze_device_handle_t dev;
  ze_context_handle_t ctx;
  int ctx_owned;            /* created here; a runtime's context (wrapped) is never destroyed */
  uint32_t compute_ordinal; /* command queue group with the COMPUTE flag */
  ze_device_properties_t props;
  ze_device_compute_properties_t compute;
  uint64_t memory_total;
  /* The SPIR-V module is built on first kernel use. The lock also covers the kernel objects:
   * their argument and group size are kernel state read at append time. */
  pthread_mutex_t kernel_lock;
  ze_module_handle_t module;
  ze_kernel_handle_t kernels[ACCEL_KERNEL_COUNT];
  struct accel_user_kernels *user; /* user kernels' modules and kernels (ze_user.c) */
  accel_ze_mcl_t mcl;              /* mutable command lists, when usable (ze_mutable.c) */
  accel_ze_rr_t rr;                /* record-and-replay graphs, when used (ze_replay.c) */
} accel_ze_device_t;

/* Which submission path of a stream ran last (see ze_stream.c). */
typedef enum accel_ze_path {
  ACCEL_ZE_PATH_NONE = 0,
  ACCEL_ZE_PATH_IMMEDIATE = 1, /* eager commands: immediate command list */
  ACCEL_ZE_PATH_QUEUE = 2      /* lazy batches, graphs: regular lists on the command queue */
} accel_ze_path_t;

/* A reusable regular command list with the fence of its last execution. */
typedef struct accel_ze_slot {
  ze_command_list_handle_t list;
  ze_fence_handle_t fence;
  int busy; /* executed, fence not yet seen signaled */
} accel_ze_slot_t;

#define ACCEL_ZE_STREAM_SLOTS 8

typedef struct accel_ze_stream {
  accel_ze_device_t *dev;
  ze_command_queue_handle_t queue;
  ze_command_list_handle_t imm;
  int imm_borrowed;           /* imm is a runtime's list (stream_wrap_native): not destroyed */
  /* Native code may append to imm too (wrapped, or handed out by stream_native): every wait
   * marks it and every accel command is preceded by a barrier. */
  int shared;
  ze_event_pool_handle_t marker_pool;
  ze_event_handle_t marker;   /* signaled by a barrier on imm to query/synchronize it */
  int imm_used;               /* something was appended to imm since creation */
  int imm_dirty;              /* commands appended since the last marker */
  int marker_pending;         /* a marker barrier was appended and not yet seen signaled */
  accel_ze_path_t path;
  accel_ze_slot_t slots[ACCEL_ZE_STREAM_SLOTS];
  unsigned next_slot;
} accel_ze_stream_t;

typedef struct accel_ze_event {
  accel_ze_device_t *dev;
  ze_event_pool_handle_t pool;
  ze_event_handle_t ev;
  int timing;
  int recorded;
} accel_ze_event_t;

/* --- ze_extension.c: driver extensions newer than Debian's headers --------------------------- */
/* 1 when the device's driver lists the extension name (zeDriverGetExtensionProperties). */
int accel_ze_driver_lists(const accel_ze_device_t *dev, const char *name);
/* 1 when every names[i] resolves (zeDriverGetExtensionFunctionAddress) into fns[i]. */
int accel_ze_resolve(const accel_ze_device_t *dev, const char *const *names, void **fns,
                     size_t n);

/* --- ze_backend.c / ze_device.c ------------------------------------------------------------ */
ACCEL_BACKEND_DECLARE_DEVICES(accel_ze);
/* Sets up a device of index over ctx (created when ctx is NULL). */
accel_status_t accel_ze_device_setup(accel_ze_backend_t *be, int index, ze_context_handle_t ctx,
                                     accel_be_device_t **out);

/* --- ze_memory.c (accel_ze_mem_info: ze_backend.c) ----------------------------------------- */
ACCEL_BACKEND_DECLARE_MEMORY(accel_ze);
/* accel_memory_register: USM of the device's context (ze_memory.c). */
accel_status_t accel_ze_mem_register(accel_be_device_t *device, void *ptr, size_t size,
                                     void **device_ptr);

/* --- ze_module.c --------------------------------------------------------------------------- */
/* Appends a kernel launch to list (building the module on first use); with mutable_id, the
 * launch is a mutable command (dev->mcl) whose id is stored there. */
accel_status_t accel_ze_append_kernel(accel_ze_device_t *dev, ze_command_list_handle_t list,
                                      const accel_kernel_launch_t *launch, uint64_t *mutable_id);
/* The group count of a launch of num_blocks blocks: kernels are grid-stride, so fewer groups
 * than num_blocks compute the same bits (capped at the device's maximum). */
static inline ze_group_count_t accel_ze_group_count(const accel_ze_device_t *dev,
                                                    uint32_t num_blocks) {
  const uint32_t max = dev->compute.maxGroupCountX;
  return (ze_group_count_t){max && num_blocks > max ? max : num_blocks, 1, 1};
}
/* Releases the shared kernels and their module (the user kernels: accel_ze_user_release). */
void accel_ze_module_release(accel_ze_device_t *dev);
/* A kernel of module named name, with the group size and indirect access every kernel has. */
accel_status_t accel_ze_kernel_create(accel_ze_device_t *dev, ze_module_handle_t module,
                                      const char *name, ze_kernel_handle_t *out);
/* zeModuleCreate(ZE_MODULE_FORMAT_IL_SPIRV) of spv with the build flags of every module (exact
 * division and square root); a failure's build log goes into the error. */
accel_status_t accel_ze_spirv_module(accel_ze_device_t *dev, const void *spv, size_t size,
                                    ze_module_handle_t *out);

/* --- ze_user.c: user kernels (accel_module.h); their SPIR-V: ze_spirv.h ------------------- */
accel_status_t accel_ze_module_build(accel_be_device_t *device, const accel_module_build_t *build,
                                     accel_be_module_t **out);
void accel_ze_module_destroy(accel_be_module_t *module);
/* The kernel bound to a user launch id (kernel_lock held). */
accel_status_t accel_ze_user_kernel_locked(accel_ze_device_t *dev, uint32_t id,
                                           ze_kernel_handle_t *out);
/* Destroys the device's user kernels and modules (kernel_lock not needed: device close). */
void accel_ze_user_release(accel_ze_device_t *dev);

/* --- ze_commands.c ------------------------------------------------------------------------- */
/* Appends one KERNEL/MEMCPY/MEMSET command, preceded by a barrier when barrier_before is set
 * (commands in a list start in order but may finish out of order); mutable_id: see
 * accel_ze_append_kernel (NULL: not mutable). */
accel_status_t accel_ze_append_cmd(accel_ze_device_t *dev, ze_command_list_handle_t list,
                                   const accel_cmd_t *cmd, int barrier_before,
                                   uint64_t *mutable_id);

/* --- ze_stream.c (accel_ze_stream_wait_event: ze_event.c) ---------------------------------- */
ACCEL_BACKEND_DECLARE_STREAMS(accel_ze);
/* A stream whose immediate list is imm (a runtime's, borrowed), or a new one when imm is NULL. */
accel_status_t accel_ze_stream_setup(accel_ze_device_t *dev, ze_command_list_handle_t imm,
                                     accel_ze_stream_t **out);
/* Makes path the stream's current path, waiting on the host for the other path's work first
 * (the immediate list and the command queue are not ordered with each other). */
accel_status_t accel_ze_stream_use_path(accel_ze_stream_t *s, accel_ze_path_t path);
/* A free regular command list of the stream (reset, open). */
accel_status_t accel_ze_stream_acquire_slot(accel_ze_stream_t *s, accel_ze_slot_t **out);
/* Closes the slot's list and executes it on the stream's queue with the slot's fence. */
accel_status_t accel_ze_stream_execute_slot(accel_ze_stream_t *s, accel_ze_slot_t *slot);
/* Stream-ordered control commands (event record/wait): begin gives the list to append to,
 * the immediate list on the immediate path (*slot NULL), else a fresh slot's list; end
 * submits the slot or accounts for the immediate commands. */
accel_status_t accel_ze_stream_control_begin(accel_ze_stream_t *s, ze_command_list_handle_t *list,
                                             accel_ze_slot_t **slot);
accel_status_t accel_ze_stream_control_end(accel_ze_stream_t *s, accel_ze_slot_t *slot);
/* Appends one KERNEL/MEMCPY/MEMSET command to the immediate list (eager slots). */
accel_status_t accel_ze_stream_append_eager(accel_ze_stream_t *s, const accel_cmd_t *cmd);

/* --- ze_eager.c (accel_ze_submit_batch: ze_batch.c) ---------------------------------------- */
ACCEL_BACKEND_DECLARE_COMMANDS(accel_ze);

/* --- ze_event.c ---------------------------------------------------------------------------- */
ACCEL_BACKEND_DECLARE_EVENTS(accel_ze);
/* A host-visible event pool with one event (timestamps when timing is set). */
accel_status_t accel_ze_single_event(accel_ze_device_t *dev, int timing,
                                     ze_event_pool_handle_t *pool, ze_event_handle_t *ev);

/* --- ze_native.c --------------------------------------------------------------------------- */
ACCEL_BACKEND_DECLARE_NATIVE(accel_ze);

/* --- ze_graph.c ---------------------------------------------------------------------------- */
ACCEL_BACKEND_DECLARE_GRAPHS(accel_ze);
/* A graph's event edges are dropped (in lists and recorded graphs alike): list order is already
 * a valid order of the capture. */
static inline int accel_ze_is_edge(const accel_cmd_t *c) {
  return c->type == ACCEL_CMD_EVENT_RECORD || c->type == ACCEL_CMD_EVENT_WAIT;
}
/* In place through mutable command lists (ze_mutable.h), else UNSUPPORTED. */
accel_status_t accel_ze_graph_update(accel_be_graph_t *graph, const accel_cmd_t *cmds, size_t n);
/* ACCEL_ATTR_GRAPH_UPDATE: emulated when the device has no mutable command lists. */
int accel_ze_device_attribute(accel_be_device_t *device, uint32_t attr, int64_t *value);

#endif
