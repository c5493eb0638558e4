/*
 * Internal declarations of the CUDA/HIP backend. The sources in this directory are compiled
 * twice, once with backends/cuda/vendor_cuda.h and once with backends/hip/vendor_hip.h
 * force-included; the shim maps the gpu* vocabulary (types, constants, the GPU_API_TABLE of
 * entry points) onto one vendor.
 */
#ifndef ACCEL_GPU_BACKEND_H
#define ACCEL_GPU_BACKEND_H

#ifndef GPU_BACKEND_NAME
#error "compile with -include vendor_cuda.h or -include vendor_hip.h"
#endif

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_plugin.h"
#include "accel_kernel_ids.h"
#include "backend_slots.h"

/* Vendor entry points, resolved from the dlopen'ed runtime (gpu_loader.c). */
typedef struct gpu_api {
#define GPU_API_FIELD(field, lookup, display, ret, params) ret(*field) params;
  GPU_API_TABLE(GPU_API_FIELD, GPU_API_FIELD)
#undef GPU_API_FIELD
} gpu_api_t;

/* Name of each entry point as it appears in error messages (e.g. "cuMemAlloc_v2"). */
typedef struct gpu_api_names {
#define GPU_API_NAME(field, lookup, display, ret, params) const char *field;
  GPU_API_TABLE(GPU_API_NAME, GPU_API_NAME)
#undef GPU_API_NAME
} gpu_api_names_t;
extern const gpu_api_names_t gpu_api_names;

/* The host services given to accel_plugin_query / backend_init. */
extern const accel_host_api_t *gpu_host;

typedef struct gpu_backend {
  void *library; /* the vendor runtime; never closed (see gpu_loader.c) */
  char library_path[64];
  gpu_api_t api;
  int device_count;
  int driver_version;
} gpu_backend_t;

/* The predication kernels of conditional regions (gpu_predicate.c). */
enum { GPU_PRED_ENTER, GPU_PRED_COPY, GPU_PRED_FILL, GPU_PRED_KERNELS };

typedef struct gpu_device {
  gpu_backend_t *backend;
  int ordinal;
  gpuDevice_t handle;
#if GPU_HAS_PRIMARY_CONTEXT
  gpuContext_t context; /* the primary context (retained) or a runtime's context */
  int primary;          /* context is the retained primary context, released at close */
#endif
  gpuModule_t module;   /* the embedded kernels; NULL when built without them */
  gpuFunction_t functions[ACCEL_KERNEL_COUNT];
  /* accel_k_pred_enter, _copy, _fill (kernels/predicate.h); NULL: regions refused */
  gpuFunction_t pred_functions[GPU_PRED_KERNELS];
  struct accel_user_kernels *user; /* user kernels' modules and functions (gpu_user.c) */
  uint32_t max_grid;    /* cap on launched blocks (kernels are grid-stride) */
} gpu_device_t;

typedef struct gpu_stream {
  gpu_device_t *device;
  gpuStream_t handle;
  int borrowed; /* a runtime's stream (stream_wrap_native): never destroyed here */
  int shared;   /* wrapped or handed out: native code may be capturing it */
  uint32_t *hostfn_flag; /* pinned, allocated at the first host function (gpu_hostfn.c) */
  int32_t *pred_slots;   /* pinned, allocated at the first conditional region */
} gpu_stream_t;

/* A host function's hand-over to the plugin's thread (gpu_hostfn.c). */
typedef struct gpu_hostfn_job gpu_hostfn_job_t;

typedef struct gpu_event {
  gpu_device_t *device;
  gpuEvent_t handle;
} gpu_event_t;

typedef struct gpu_graph {
  gpu_device_t *device;
  gpuGraph_t graph;
  gpuGraphExec_t exec;
  /* The work commands in list order (kernel params in params): a launch on a stream the
   * runtime is capturing issues them one by one, so that they join the runtime's capture. */
  accel_cmd_t *cmds;
  size_t ncmds;
  unsigned char *params;
  /* one job and flag per host-function command, in list order (kept for every replay) */
  gpu_hostfn_job_t **hostfns;
  uint32_t **hostfn_flags;
  size_t nhostfns;
  int32_t *pred_slots; /* pinned, the slots of its conditional regions (replays serialise) */
} gpu_graph_t;

/* The accel status of a vendor error: OUT_OF_MEMORY, NOT_READY, the capture errors
 * (CAPTURE_INVALIDATED for 901, ILLEGAL_IN_CAPTURE for the rest of 900-908), else BACKEND. */
accel_status_t gpu_status_of(gpuError_t err);
/* Turns a vendor result into a status: ACCEL_OK for success, else sets the thread's error
 * "<call> failed: <ERROR_NAME> (<code>)" and returns gpu_status_of(err). */
accel_status_t gpu_check(const gpu_backend_t *backend, gpuError_t err, const char *call);
#define GPU_TRY(backend, field, ...) \
  gpu_check((backend), (backend)->api.field(__VA_ARGS__), gpu_api_names.field)
/* The vendor's name of an error ("CUDA_ERROR_NO_DEVICE"), or "unknown error". */
const char *gpu_error_name(const gpu_backend_t *backend, gpuError_t err);
/* Logs a failure of a call whose caller cannot report it (destroy paths). */
void gpu_warn(const gpu_backend_t *backend, gpuError_t err, const char *call);
#define GPU_WARN(backend, field, ...) \
  gpu_warn((backend), (backend)->api.field(__VA_ARGS__), gpu_api_names.field)

/* Nonzero when fault injection asks the call at site to fail. */
int gpu_fault(accel_fault_site_t site);

/* Opens the vendor runtime and resolves GPU_API_TABLE; UNAVAILABLE with every path tried. */
accel_status_t gpu_loader_open(gpu_backend_t *backend);

/* What is current on a thread: a context (CUDA) or a device ordinal (HIP); the api fields
 * that read and set it, and a device's own. */
#if GPU_HAS_PRIMARY_CONTEXT
typedef gpuContext_t gpu_current_t;
#define GPU_GET_CURRENT CtxGetCurrent
#define GPU_SET_CURRENT CtxSetCurrent
#define GPU_CURRENT_OF(d) ((d)->context)
#else
typedef int gpu_current_t;
#define GPU_GET_CURRENT GetDevice
#define GPU_SET_CURRENT SetDevice
#define GPU_CURRENT_OF(d) ((d)->ordinal)
#endif
/* The caller's current context (HIP: device), put back when an entry point returns: a
 * runtime that shares the thread (PyTorch) must not find its current device changed. */
typedef struct gpu_scope {
  gpu_device_t *device; /* NULL: nothing to put back */
  gpu_current_t saved;
} gpu_scope_t;
/* Makes the device current on the calling thread (every entry point does, first) and
 * remembers the caller's in *scope; gpu_leave puts it back. */
accel_status_t gpu_enter(gpu_device_t *device, gpu_scope_t *scope);
/* The same for destroy paths, whose caller cannot report a failure: logs it (gpu_warn) and
 * returns nonzero on success. */
int gpu_enter_or_warn(gpu_device_t *device, gpu_scope_t *scope);
void gpu_leave(gpu_scope_t *scope);
/* GPU_ENTER(st, d): accel_status_t st = gpu_enter(d, ...), and the caller's context comes
 * back when the enclosing block ends, whichever return ends it (after the returned value is
 * computed). GPU_ENTER_OR_WARN(ok, d): the same with gpu_enter_or_warn (int ok). */
#define GPU_ENTER(st, d)                                                       \
  gpu_scope_t gpu_scope_ __attribute__((cleanup(gpu_leave))) = {.device = NULL}; \
  accel_status_t st = gpu_enter((d), &gpu_scope_)
#define GPU_ENTER_OR_WARN(ok, d)                                               \
  gpu_scope_t gpu_scope_ __attribute__((cleanup(gpu_leave))) = {.device = NULL}; \
  int ok = gpu_enter_or_warn((d), &gpu_scope_)

/* Loads the embedded kernel image and looks up every kernel (gpu_module.c). */
accel_status_t gpu_module_load(gpu_device_t *device);
/* Unloads the embedded kernels and the user kernels' modules (device close). */
void gpu_module_unload(gpu_device_t *device);
/* The function a launch runs: a shared kernel's or a user kernel's (by launch id). */
accel_status_t gpu_module_function(gpu_device_t *device, const accel_kernel_launch_t *launch,
                                   gpuFunction_t *fn);

/* User kernels (gpu_user.c; accel_module.h): the vtable's module_build / module_destroy, the
 * function bound to a user launch id, and the unloading of the device's modules. */
accel_status_t gpu_module_build(accel_be_device_t *device, const accel_module_build_t *build,
                                accel_be_module_t **out);
void gpu_module_destroy(accel_be_module_t *module);
accel_status_t gpu_user_function(gpu_device_t *device, uint32_t id, gpuFunction_t *fn);
void gpu_user_unload(gpu_device_t *device);

/* Issues one KERNEL/MEMCPY/MEMSET/HOST_FUNC command on a vendor stream (gpu_stream.c). A host
 * function uses job (a graph's) or, when job is NULL, a new job on flag (a stream's). */
accel_status_t gpu_issue(gpu_device_t *device, gpuStream_t stream, const accel_cmd_t *cmd,
                         uint32_t *flag, gpu_hostfn_job_t *job);
/* A kernel launch, predicated on pred (NULL: none; kernels/predicate.h). */
accel_status_t gpu_launch(gpu_device_t *device, gpuStream_t stream,
                          const accel_kernel_launch_t *launch, const int32_t *pred);

/* Conditional regions by predication (gpu_predicate.c; common/cond_walk.h). A list is walked
 * with its commands issued by `issue` at depth 0 and, inside regions, predicated on the slots
 * at *slots (pinned, allocated by the first region), on the stream of each command's slot. */
typedef struct gpu_pred_walk {
  gpu_device_t *device;
  const gpuStream_t *streams; /* by stream slot */
  int32_t **slots;
  /* a command outside regions (pred NULL), or a host function inside one (pred its slot):
   * gpu_issue / gpu_hostfn_issue_pred with the caller's host-function flag or job */
  accel_status_t (*issue)(void *ctx, const accel_cmd_t *cmd, const int32_t *pred);
  void *ctx;
} gpu_pred_walk_t;
accel_status_t gpu_pred_run(gpu_pred_walk_t *w, const accel_cmd_t *cmds, size_t n);
/* The pinned slots, allocated unless *slots has them: before any capture begins (an
 * allocation would invalidate it); and their release (NULL is a no-op). */
accel_status_t gpu_pred_slots_ensure(gpu_device_t *device, int32_t **slots);
void gpu_pred_slots_free(gpu_device_t *device, int32_t *slots);
/* Looks the predication kernels up in the device's loaded image (gpu_module_load): looked up
 * once, not inside a capture; a missing one is logged and makes regions refused. */
void gpu_pred_functions_load(gpu_device_t *device);

/* Host functions (gpu_hostfn.c): 1 when the runtime has the stream memory operations. */
int gpu_hostfn_has_flags(const gpu_backend_t *backend);
/* A pinned flag word (reads 1: released) and its release (NULL is a no-op). */
accel_status_t gpu_hostfn_flag_alloc(gpu_device_t *device, uint32_t **flag);
void gpu_hostfn_flag_free(gpu_device_t *device, uint32_t *flag);
/* A job on flag; persistent: the worker does not free it (a graph's, gpu_hostfn_job_free). */
accel_status_t gpu_hostfn_job_new(uint32_t *flag, int persistent, gpu_hostfn_job_t **out);
void gpu_hostfn_job_free(gpu_hostfn_job_t *job);
/* Enqueues fn(user) on stream as reset flag -> vendor host function -> wait for the flag; the
 * vendor callback hands fn to the plugin's worker threads. Without the stream memory
 * operations (or without a flag), fn runs on the driver's thread (warned once). */
accel_status_t gpu_hostfn_issue(gpu_device_t *device, gpuStream_t stream, accel_host_fn_t fn,
                                void *user, uint32_t *flag, gpu_hostfn_job_t *job);
/* The same inside a conditional region: fn runs iff *pred (pinned, written in stream order
 * before) is nonzero when the stream reaches it. Needs the stream memory operations. */
accel_status_t gpu_hostfn_issue_pred(gpu_device_t *device, gpuStream_t stream,
                                     accel_host_fn_t fn, void *user, uint32_t *flag,
                                     gpu_hostfn_job_t *job, const int32_t *pred);
/* Lets idle worker threads exit (backend shutdown). */
void gpu_hostfn_shutdown(void);

/* vtable entries, grouped by file. */
ACCEL_BACKEND_DECLARE_DEVICES(gpu);
/* Finishes opening d once its ordinal, handle and context are set (gpu_device.c); on failure
 * d's context reference (if primary) is released and d freed. */
accel_status_t gpu_device_finish(gpu_device_t *d, accel_be_device_t **out);
accel_status_t gpu_device_synchronize(accel_be_device_t *device);
/* ACCEL_ATTR_GRAPH_UPDATE: in place only where the driver has the update call;
 * ACCEL_ATTR_CONDITIONALS: predicated. */
int gpu_device_attribute(accel_be_device_t *device, uint32_t attr, int64_t *value);

ACCEL_BACKEND_DECLARE_MEMORY(gpu);
/* accel_memory_register: memory the device's context reaches at the same address. */
accel_status_t gpu_mem_register(accel_be_device_t *device, void *ptr, size_t size,
                                void **device_ptr);

ACCEL_BACKEND_DECLARE_STREAMS(gpu);
ACCEL_BACKEND_DECLARE_COMMANDS(gpu);
ACCEL_BACKEND_DECLARE_EVENTS(gpu);
ACCEL_BACKEND_DECLARE_GRAPHS(gpu);
/* The graph_update slot: cuGraphExecUpdate / hipGraphExecUpdate (gpu_graph.c). */
accel_status_t gpu_graph_update(accel_be_graph_t *graph, const accel_cmd_t *cmds, size_t n);
ACCEL_BACKEND_DECLARE_NATIVE(gpu);

#endif /* ACCEL_GPU_BACKEND_H */
