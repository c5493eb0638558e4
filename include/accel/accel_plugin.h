/*
 * accel plugin ABI: what a backend implements so that libaccel can load it with dlopen.
 *
 * A plugin is a shared object exporting one symbol:
 *
 *   ACCEL_PLUGIN_EXPORT accel_status_t accel_plugin_query(uint32_t host_abi,
 *                                                          const accel_host_api_t *host,
 *                                                          const accel_backend_vtable_t **out);
 *
 * The host passes its ABI version and its service table; the plugin returns a pointer to a
 * static vtable. Both structs start with {abi_version, struct_size} and only ever grow at their
 * end (SQLite VFS style): a reader must check struct_size before touching a field added later.
 * A plugin whose abi_version differs from the host's major ABI is refused, and so is one that
 * runs accel's kernels built against another kernel ABI version (kernel_abi_version below).
 *
 * Division of labour. The core (libaccel) owns everything that is the same on every backend:
 * argument validation, handles and reference counts, the caching allocator and graph pools
 * (the plugin only provides raw allocation), the graph recorder and the lazy queue, capture
 * rules, statistics and tracing. A plugin translates a small set of commands into vendor calls.
 * The core never calls a plugin with invalid arguments, so plugins do not re-validate; they
 * report vendor failures through host->set_error with the vendor call and error name.
 *
 * Threading: the core serialises calls per stream object; different streams may be driven from
 * different threads at once (docs/PLUGINS.md, "Rules every plugin follows").
 *
 * Optional slots may be NULL; the core then uses a generic fallback (documented per slot).
 * See docs/PLUGINS.md and examples/plugin for a complete out-of-tree plugin (both installed
 * under $(pkg-config --variable=docdir accel), <prefix>/share/doc/accel).
 */
#ifndef ACCEL_ACCEL_PLUGIN_H
#define ACCEL_ACCEL_PLUGIN_H

#include "accel.h"
#include "accel_interop.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL_PLUGIN_ABI_VERSION 1u
#define ACCEL_PLUGIN_QUERY_SYMBOL "accel_plugin_query"
#define ACCEL_PLUGIN_EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------------------------------------
 * Services the host offers to plugins
 * ------------------------------------------------------------------------------------------- */

typedef enum accel_log_level {
  ACCEL_LOG_ERROR = 0,
  ACCEL_LOG_WARN = 1,
  ACCEL_LOG_INFO = 2,
  ACCEL_LOG_DEBUG = 3
} accel_log_level_t;

/* Fault-injection sites (tests only; off unless ACCEL_FAULT_INJECT is set). The core injects
 * ALLOC and LAUNCH faults itself around the vtable; a plugin asks fault_should_fail only for
 * KERNEL_BUILD, the step the core cannot see. */
typedef enum accel_fault_site {
  ACCEL_FAULT_ALLOC = 0,        /* raw device allocation */
  ACCEL_FAULT_KERNEL_BUILD = 1, /* building / loading kernel code */
  ACCEL_FAULT_LAUNCH = 2        /* kernel launch */
} accel_fault_site_t;

struct accel_kernel_launch; /* below */

/* The host table is static in libaccel: the pointer a plugin receives in accel_plugin_query
 * (and again in backend_init) stays valid for the life of the process. */
typedef struct accel_host_api {
  uint32_t abi_version;
  uint32_t struct_size;
  /* Logs through ACCEL_LOG filtering; domain is the backend name. */
  void (*log)(accel_log_level_t level, const char *domain, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));
  /* Sets the calling thread's accel_last_error() message and returns status, so that a plugin
   * can write `return host->set_error(ACCEL_ERROR_BACKEND, "cuMemAlloc: %s", name);`. */
  accel_status_t (*set_error)(accel_status_t status, const char *fmt, ...)
      __attribute__((format(printf, 2, 3)));
  /* Nonzero when the call at this site must fail (fault injection for tests). */
  int (*fault_should_fail)(accel_fault_site_t site);
  /* Directory for on-disk caches (ACCEL_CACHE_DIR, else $XDG_CACHE_HOME/accel or
   * ~/.cache/accel); NULL when none is usable. */
  const char *(*cache_dir)(void);

  /* --- added later: check host->struct_size before use ------------------------------------ */
  /* Runs a kernel launch to completion on the calling thread with accel's portable C kernels
   * (the built-in CPU backend's code): for a device whose memory the host can dereference (a
   * host-memory device, a simulator). Every address in launch->params and in the chunk tables
   * it points to must be host-accessible. Same bits as every other backend. Declare
   * ACCEL_KERNEL_FORM_HOST_C in the vtable's kernel_forms when launch_kernel uses it.
   * Threads: reentrant (no lock, no shared state): any number of threads may run launches at
   * once, each on its own thread, as long as their outputs do not overlap.
   * Params: copied first, so launch->params needs no alignment.
   * Errors: INVALID_ARGUMENT with a message for a launch libaccel did not make (an unknown
   * kernel_id, a params_size that is not the kernel's, 0 blocks): a launch the core handed to
   * launch_kernel, passed on unchanged, never fails. The message is set on the calling thread:
   * a worker thread reads it with last_error (below) to report it later. */
  accel_status_t (*run_kernel_c)(const struct accel_kernel_launch *launch);
  /* The kernel ABI libaccel was built with: its ACCEL_KERNEL_ABI_VERSION and
   * ACCEL_KERNEL_ID_COUNT (a plugin built against newer headers may know more kernels; the core
   * never launches an id at or above kernel_count). */
  uint32_t kernel_abi_version;
  uint32_t kernel_count;
  /* The calling thread's accel_last_error() (what set_error or run_kernel_c set on it), valid
   * until the thread's next call into accel. */
  const char *(*last_error)(void);
} accel_host_api_t;

/* ---------------------------------------------------------------------------------------------
 * Commands: what the core asks a stream to do
 * ------------------------------------------------------------------------------------------- */

/* Every kernel runs with blocks of ACCEL_KERNEL_BLOCK lanes; the reduction order depends on
 * it, so it is the same on every backend. */
#define ACCEL_KERNEL_BLOCK 256u

/* A kernel launch. Every kernel takes exactly one argument: a by-value parameter struct whose
 * layout is defined in <accel/accel_kernel_abi.h> (generated from the kernel table; only 8- and
 * 4-byte fields, no padding, so the layout is identical in C, CUDA, HIP and OpenCL C). Device
 * addresses inside it are uint64 values. Kernels are written grid-stride: any grid of
 * 1..num_blocks blocks computes the same bits, so a backend may launch fewer blocks than
 * num_blocks. */
typedef struct accel_kernel_launch {
  uint32_t kernel_id;       /* ACCEL_KERNEL_ID_* of <accel/accel_kernel_abi.h>; below the
                               plugin's declared kernel_count */
  uint32_t num_blocks;      /* logical blocks (work units); >= 1 */
  /* e.g. "accel_k_norm_partial": the symbol in compiled code. A string constant of libaccel,
   * valid for the life of the process: a deferred launch may keep the pointer. */
  const char *kernel_name;
  /* params_size bytes, aligned to ACCEL_KERNEL_PARAMS_ALIGN; they belong to the core for the
   * duration of the call: copy them (into storage aligned the same) if the launch is deferred. */
  const void *params;
  uint32_t params_size;
  uint32_t reserved;
} accel_kernel_launch_t;

typedef enum accel_copy_kind {
  ACCEL_COPY_HOST_TO_HOST = 0,
  ACCEL_COPY_HOST_TO_DEVICE = 1,
  ACCEL_COPY_DEVICE_TO_HOST = 2,
  ACCEL_COPY_DEVICE_TO_DEVICE = 3
} accel_copy_kind_t;

typedef enum accel_cmd_type {
  ACCEL_CMD_KERNEL = 0,
  ACCEL_CMD_MEMCPY = 1,
  ACCEL_CMD_MEMSET = 2,
  ACCEL_CMD_HOST_FUNC = 3,
  /* Only in graph_instantiate lists: fork/join edges between the capture's streams. */
  ACCEL_CMD_EVENT_RECORD = 4,
  ACCEL_CMD_EVENT_WAIT = 5,
  /* Native work (a stream engine's collective): enqueue(ctx, stream) issues it on the vendor
   * stream given in stream->queue, in stream order, and returns without waiting. Handed to a
   * plugin (submit_batch, graph_instantiate) only when its vtable sets native_commands; the
   * core runs it itself elsewhere (eager) or refuses it (capture). The core keeps ctx alive
   * for as long as the command list exists. */
  ACCEL_CMD_NATIVE = 6,
  /* A conditional region (accel_graph_capture_if / _while): the commands up to the matching
   * COND_END (regions nest) run iff (IF) / while (WHILE, at most max_iterations passes) the
   * int32 at flag is nonzero, read on the device when the stream reaches the command (never by
   * the host at submission). Handed to a plugin (submit_batch, graph_instantiate) only when its
   * vtable sets conditionals; the core refuses the calls otherwise. */
  ACCEL_CMD_COND_BEGIN = 7,
  ACCEL_CMD_COND_END = 8
} accel_cmd_type_t;

/* accel_cmd_t.u.cond.kind */
#define ACCEL_COND_IF 0u
#define ACCEL_COND_WHILE 1u
/* The core never hands a plugin conditional regions nested deeper than this. */
#define ACCEL_COND_MAX_DEPTH 8u

typedef struct accel_cmd {
  uint32_t type;         /* accel_cmd_type_t */
  uint32_t stream_slot;  /* graph_instantiate: which stream of the capture (0 = origin) */
  union {
    accel_kernel_launch_t kernel;
    struct { void *dst; const void *src; size_t size; uint32_t kind; } memcpy;
    struct { void *dst; size_t size; uint32_t value; } memset; /* byte value */
    struct { accel_host_fn_t fn; void *user; } host_func;
    struct { uint32_t event_slot; } event; /* record/wait pairs share a slot number */
    struct {
      accel_status_t (*enqueue)(void *ctx, const accel_native_t *stream);
      void *ctx;
    } native; /* ACCEL_CMD_NATIVE; no larger than the kernel member: the union keeps its size */
    struct {
      const int32_t *flag;
      uint32_t kind;           /* ACCEL_COND_IF or ACCEL_COND_WHILE */
      uint32_t max_iterations; /* WHILE: the bound on passes (IF: 1) */
    } cond;                    /* ACCEL_CMD_COND_BEGIN (COND_END has no arguments) */
  } u;
} accel_cmd_t;

/* ---------------------------------------------------------------------------------------------
 * The backend vtable
 * ------------------------------------------------------------------------------------------- */

/* Opaque backend objects: each plugin defines what they point to. */
typedef void accel_be_backend_t; /* per-backend state (vendor library handles) */
typedef void accel_be_device_t;
typedef void accel_be_stream_t;
typedef void accel_be_event_t;
typedef void accel_be_graph_t;   /* an instantiated native graph */
typedef void accel_be_module_t;  /* compiled user kernels (module_build) */
struct accel_module_build;       /* below */

typedef struct accel_backend_vtable {
  uint32_t abi_version;  /* ACCEL_PLUGIN_ABI_VERSION */
  uint32_t struct_size;  /* sizeof(accel_backend_vtable_t) as the plugin was built */
  const char *name;      /* "opencl", "cuda", ... lowercase, unique */
  const char *description;

  /* --- backend --------------------------------------------------------------------------- */
  /* Loads the vendor runtime (dlopen) and counts devices. Must not fail when the runtime or
   * device is absent: return ACCEL_ERROR_UNAVAILABLE with the reason (every path tried) via
   * set_error; the core records it and keeps the plugin listed as unavailable. */
  accel_status_t (*backend_init)(const accel_host_api_t *host, accel_be_backend_t **out);
  /* Called once at process exit, before the exit handlers the vendor runtime registered during
   * backend_init, and only when every device of the backend was closed (not while one is
   * open). Only for a backend whose backend_init returned ACCEL_OK. */
  void (*backend_shutdown)(accel_be_backend_t *backend);
  accel_status_t (*device_count)(accel_be_backend_t *backend, int *count);
  accel_status_t (*device_info)(accel_be_backend_t *backend, int index,
                                accel_device_info_t *info);
  accel_status_t (*device_open)(accel_be_backend_t *backend, int index,
                                accel_be_device_t **out);
  void (*device_close)(accel_be_device_t *device);

  /* --- memory ---------------------------------------------------------------------------- */
  /* Raw device allocation, aligned to at least 256 bytes. The core caches these. */
  accel_status_t (*mem_alloc)(accel_be_device_t *device, size_t size, void **ptr);
  /* Called only when no stream uses the memory any more. */
  void (*mem_free)(accel_be_device_t *device, void *ptr);
  accel_status_t (*host_alloc)(accel_be_device_t *device, size_t size, void **ptr);
  void (*host_free)(accel_be_device_t *device, void *ptr);

  /* --- streams --------------------------------------------------------------------------- */
  /* Threading: the core serializes every call that takes one stream (commands, batches, graph
   * launches, event_record, stream_wait_event, stream_query) per stream, except
   * stream_synchronize, which may run while another thread submits to the same stream. */
  accel_status_t (*stream_create)(accel_be_device_t *device, accel_be_stream_t **out);
  /* The core synchronizes the stream before destroying it. */
  void (*stream_destroy)(accel_be_stream_t *stream);
  accel_status_t (*stream_synchronize)(accel_be_stream_t *stream);
  accel_status_t (*stream_query)(accel_be_stream_t *stream); /* OK or NOT_READY */
  accel_status_t (*stream_wait_event)(accel_be_stream_t *stream, accel_be_event_t *event);

  /* --- events ---------------------------------------------------------------------------- */
  accel_status_t (*event_create)(accel_be_device_t *device, unsigned flags,
                                 accel_be_event_t **out);
  void (*event_destroy)(accel_be_event_t *event);
  accel_status_t (*event_record)(accel_be_event_t *event, accel_be_stream_t *stream);
  accel_status_t (*event_synchronize)(accel_be_event_t *event);
  accel_status_t (*event_query)(accel_be_event_t *event);
  accel_status_t (*event_elapsed_ms)(accel_be_event_t *start, accel_be_event_t *end, float *ms);

  /* --- commands (asynchronous, in stream order) ------------------------------------------ */
  accel_status_t (*memcpy_async)(accel_be_stream_t *stream, void *dst, const void *src,
                                 size_t size, accel_copy_kind_t kind);
  accel_status_t (*memset_async)(accel_be_stream_t *stream, void *dst, uint8_t value,
                                 size_t size);
  accel_status_t (*launch_host_func)(accel_be_stream_t *stream, accel_host_fn_t fn, void *user);
  accel_status_t (*launch_kernel)(accel_be_stream_t *stream, const accel_kernel_launch_t *launch);

  /* --- optional (NULL: generic fallback in core) ----------------------------------------- */
  /* Runs cmds[0..n) in order on the stream as one submission (no EVENT_* commands).
   * NULL: the core issues the commands one by one. */
  accel_status_t (*submit_batch)(accel_be_stream_t *stream, const accel_cmd_t *cmds, size_t n);
  /* Native graphs. cmds may contain EVENT_RECORD/EVENT_WAIT pairs between stream slots; a
   * backend may also simply run everything in list order, which is a valid topological order.
   * NULL: graphs replay through submit_batch. */
  accel_status_t (*graph_instantiate)(accel_be_device_t *device, const accel_cmd_t *cmds,
                                      size_t n, accel_be_graph_t **out);
  accel_status_t (*graph_launch)(accel_be_graph_t *graph, accel_be_stream_t *stream);
  void (*graph_destroy)(accel_be_graph_t *graph);
  /* NULL: the core synchronizes every stream of the device. */
  accel_status_t (*device_synchronize)(accel_be_device_t *device);
  /* Free/total device memory now. NULL: the values from device_info. */
  accel_status_t (*mem_info)(accel_be_device_t *device, uint64_t *free_bytes,
                             uint64_t *total_bytes);

  /* --- added later: read only when struct_size covers them -------------------------------- */
  /* The environment variable the vendor runtime reads to select its devices (e.g.
   * "CUDA_VISIBLE_DEVICES"), or NULL. The core sets it from ACCEL_VISIBLE_DEVICES once, after
   * loading the plugins and before any backend_init, unless the user set it; a plugin never
   * touches the environment itself (setenv is not thread-safe). */
  const char *visible_devices_env;

  /* --- interop (include/accel/accel_interop.h, docs/INTEROP.md) ---------------------------
   * Read only when struct_size covers them. A NULL slot makes the matching public call
   * ACCEL_ERROR_UNSUPPORTED, except mem_register (see there). */
  /* The DLPack device type of this backend's device memory (ACCEL_DL_*), 0 when it has none. */
  int32_t dlpack_device_type;
  uint32_t interop_reserved;
  /* Checks that [ptr, ptr + size) is memory the device can use in place and returns the
   * address kernels use in *device_ptr; UNSUPPORTED with the reason otherwise. The core has
   * already checked arguments and overlap, and keeps the registry. NULL: the core accepts host
   * memory as is on a device whose info says host_accessible, and refuses it elsewhere. */
  accel_status_t (*mem_register)(accel_be_device_t *device, void *ptr, size_t size,
                                 void **device_ptr);
  /* Called once per successful mem_register, after no queued command can use the range. */
  void (*mem_unregister)(accel_be_device_t *device, void *ptr, void *device_ptr);
  accel_status_t (*device_native)(accel_be_device_t *device, accel_native_t *out);
  /* An accel device over a runtime's context; device_close must destroy only what the plugin
   * created or retained. *index receives the enumerated device (device_info's index) the
   * context runs on: the core reads the device's info through it. A device the plugin did not
   * enumerate (e.g. an OpenCL sub-device) is refused with UNSUPPORTED. */
  accel_status_t (*device_wrap_native)(accel_be_backend_t *backend, const accel_native_t *native,
                                       int *index, accel_be_device_t **out);
  accel_status_t (*stream_native)(accel_be_stream_t *stream, accel_native_t *out);
  /* A stream over a runtime's queue; stream_destroy must not destroy that queue. */
  accel_status_t (*stream_wrap_native)(accel_be_device_t *device, const accel_native_t *native,
                                       accel_be_stream_t **out);
  accel_status_t (*event_native)(accel_be_event_t *event, accel_native_t *out);
  accel_status_t (*stream_wait_native_event)(accel_be_stream_t *stream, void *native_event);

  /* --- plugin SDK (docs/PLUGINS.md) ------------------------------------------------------ */
  /* Which shipped forms of accel's kernels launch_kernel runs: ACCEL_KERNEL_FORM_* bits (0: it
   * runs none and refuses launches with UNSUPPORTED). Informational: accel-info shows it and
   * the CTS expects kernel cases to pass when it is nonzero. A pointer-sized integer, like
   * every slot. */
  uintptr_t kernel_forms;
  /* Optional. Rank of device index among devices of the same type for accel_device_open(NULL):
   * higher is preferred (0 when NULL). Called after backend_init, like device_info; must not
   * initialise more driver state than device_info does. */
  accel_status_t (*device_score)(accel_be_backend_t *backend, int index, int32_t *score);

  /* --- native commands (read only when struct_size covers it) ----------------------------- */
  /* Nonzero: submit_batch and graph_instantiate accept ACCEL_CMD_NATIVE (graph_instantiate
   * calls enqueue on the stream it captures into, so the native work becomes part of the
   * native graph; submit_batch on the stream's own vendor stream). Zero (older plugins): the
   * core never hands ACCEL_CMD_NATIVE to the plugin; a capture of native work is refused with
   * UNSUPPORTED, and a lazy queue is flushed before it runs eagerly. */
  uintptr_t native_commands;

  /* --- holding an idle stream (read only when struct_size covers them) ---------------------
   * Lets the core run host work that is the stream's next command (a host engine's
   * collective) on the calling thread instead of handing it to the stream: on a process bound
   * to one CPU the hand-over costs two context switches on the very core the work needs. Both
   * NULL (every other backend): the core enqueues the work as a host function. */
  /* Called without the core's lock of the stream, possibly while other threads submit to it
   * or try to hold it. Nonzero: the stream was idle (everything submitted has completed), no
   * one else holds it, and the plugin's policy lets the caller run the next command itself;
   * until stream_release_hold, work submitted later is queued but does not start, query
   * reports NOT_READY, and synchronize and destroy wait for the release (the core keeps no
   * reference to the stream during a hold: it relies on this). Zero: nothing changed. */
  int (*stream_try_hold)(accel_be_stream_t *stream);
  /* Ends a hold (from the thread that holds): held-back work starts. The stream may be
   * destroyed as soon as this returns. */
  void (*stream_release_hold)(accel_be_stream_t *stream);

  /* --- the kernel ABI handshake (read only when struct_size covers them) -------------------
   * The <accel/accel_kernel_abi.h> the plugin was built with: set them to
   * ACCEL_KERNEL_ABI_VERSION and ACCEL_KERNEL_ID_COUNT. A plugin that declares kernel_forms
   * and another kernel_abi_version is refused at load, naming both versions. Within one
   * version ids and parameter layouts are identical and rows are only appended, so the core
   * launches on the plugin only ids below its kernel_count and answers a newer kernel itself
   * with ACCEL_ERROR_UNSUPPORTED. Not declared (an older plugin: struct_size short of them, or
   * kernel_abi_version 0): version 1, the only one before the handshake; kernel_count then
   * means every kernel of libaccel and the plugin checks ids itself. */
  uint32_t kernel_abi_version;
  uint32_t kernel_count;

  /* --- what the core would otherwise have to know by name (read only when struct_size covers
   * them; NULL, or an older plugin: the defaults below) ---------------------------------------
   * The collective engine (libaccelcomm-<name>.so, include/accel/accel_comm_engine.h) that
   * accel_comm_create_mpi uses on this backend's devices when the caller and ACCEL_COMM_ENGINE
   * name none, e.g. "nccl" for CUDA streams. NULL: the host engine (MPI), which needs memory the
   * host can access. */
  const char *comm_engine;
  /* Why the backend has no native objects (accel_device_native, accel_stream_native and
   * accel_event_native answer UNSUPPORTED with this reason where their slot is NULL), e.g.
   * "it runs on host threads". NULL: "its plugin does not offer them". */
  const char *no_native_reason;

  /* --- graphs that evolve (read only when struct_size covers them; NULL: the core's answer) -- */
  /* A device attribute (accel_device_attr_t) the plugin knows better than the core (e.g.
   * ACCEL_ATTR_UNIFIED_MEMORY). Nonzero: *value is the answer. Zero: the core answers from
   * device_info and the other slots (docs/PLUGINS.md, "Device attributes"). Called only for
   * attributes the core knows, with a valid device. */
  int (*device_attribute)(accel_be_device_t *device, uint32_t attr, int64_t *value);
  /* Updates an instantiated graph in place to run cmds[0..n) instead of the list it was made
   * from (accel_graph_update): the core has checked that the topology is the same (command
   * types, kernel ids, stream slots, event edges, copy kinds; sizes, pointers, parameters and
   * block counts may differ). Launches issued before the call must run the old arguments;
   * params belong to the core for the duration of the call. ACCEL_OK: updated. Any error: the
   * graph must be unchanged; the core then instantiates a new graph from cmds. NULL: the core
   * always instantiates anew (ACCEL_GRAPH_UPDATE_EMULATED). */
  accel_status_t (*graph_update)(accel_be_graph_t *graph, const accel_cmd_t *cmds, size_t n);
  /* Nonzero: submit_batch and graph_instantiate (and graph_update) accept ACCEL_CMD_COND_BEGIN
   * / COND_END, nested, and evaluate the flag on the device in stream order
   * (ACCEL_ATTR_CONDITIONALS = ACCEL_CONDITIONALS_NATIVE; a plugin that predicates the body's
   * commands on the device instead answers ACCEL_CONDITIONALS_PREDICATED from
   * device_attribute). Zero: accel_graph_capture_if and _while answer
   * ACCEL_ERROR_UNSUPPORTED on the backend's devices. */
  uintptr_t conditionals;

  /* --- user kernels (accel_module.h; read only when struct_size covers them; NULL: modules are
   * ACCEL_ERROR_UNSUPPORTED on the backend's devices) -----------------------------------------
   * Compiles build->source (the dialect, after build->params) for device, or loads the result
   * cached under build->key, and binds kernel build->symbols[k] to the launch id
   * build->first_id + k: launch_kernel, submit_batch and graph_instantiate then accept those ids
   * (with params_size build->params_size[k]) for as long as the process lives, also after
   * module_destroy (a graph may still replay them). Errors: the compiler's log in set_error. */
  accel_status_t (*module_build)(accel_be_device_t *device, const struct accel_module_build *build,
                                 accel_be_module_t **out);
  void (*module_destroy)(accel_be_module_t *module);
} accel_backend_vtable_t;

/* Launch ids of user kernels start here (the core hands them out; they are never reused). */
#define ACCEL_KERNEL_ID_USER_BASE 0x40000000u

/* What module_build compiles: the kernel rows' parameter structs (params, in the dialect, the
 * generated part) and then the user's source, which holds the rows (the backend defines
 * ACCEL_KERNEL(...) to nothing before it) and the ACC_KERNEL bodies named by symbols. */
typedef struct accel_module_build {
  uint32_t struct_size; /* sizeof(accel_module_build_t) as libaccel was built */
  uint32_t nkernels;
  const char *params;
  const char *source;
  const char *options; /* "" for none */
  const char *const *symbols;   /* nkernels ACC_KERNEL names */
  const uint32_t *params_size;  /* nkernels parameter block sizes */
  uint32_t first_id;            /* >= ACCEL_KERNEL_ID_USER_BASE */
  uint32_t reserved;
  /* Hash of params, source, options, the device's name and the accel version: the cache key
   * (the backend adds what it compiles with: its prelude, its compiler). */
  uint64_t key;
  /* A prebuilt bundle's forms (accel_module_load_bundle; read only when struct_size covers
   * them). nforms > 0: build from one of them (an OpenCL C form: compile source as above) or
   * answer ACCEL_ERROR_UNSUPPORTED naming the forms the bundle has; never run a compiler the
   * bundle's forms do not call for. nforms == 0: accel_module_load_source. */
  const struct accel_module_form *forms;
  uint32_t nforms;
  uint32_t reserved2;
} accel_module_build_t;

/* Kinds of a bundle's forms (docs/KERNELS.md, "Bundles: accel-kc"); a kind's value never
 * changes (it is stored in bundle files). */
#define ACCEL_MODULE_FORM_CPU_SO 1u   /* a shared object for target (e.g. "x86_64-linux") */
#define ACCEL_MODULE_FORM_OPENCL_C 2u /* no payload: the bundle's source, built by the device */
#define ACCEL_MODULE_FORM_SPIRV 3u    /* SPIR-V for clCreateProgramWithIL / Level Zero */
#define ACCEL_MODULE_FORM_PTX 4u      /* PTX for target (e.g. "sm_80") */
#define ACCEL_MODULE_FORM_HIP_CO 5u   /* a HIP code object for target (e.g. "gfx90a") */

/* One form of a bundle: its bytes stay valid for the module_build call. */
typedef struct accel_module_form {
  uint32_t kind;      /* ACCEL_MODULE_FORM_* */
  uint32_t reserved;
  const char *target; /* NUL-terminated */
  const void *data;
  size_t size;
} accel_module_form_t;

/* Values of kernel_forms. */
#define ACCEL_KERNEL_FORM_NATIVE 0x1u   /* compiled by accel's own build (in-tree backends) */
#define ACCEL_KERNEL_FORM_OPENCL_C 0x2u /* <kerneldir>/accel_kernels_flat.cl, built at run time */
#define ACCEL_KERNEL_FORM_SPIRV 0x4u    /* <kerneldir>/accel_kernels.spv */
#define ACCEL_KERNEL_FORM_HOST_C 0x8u   /* host->run_kernel_c on host-accessible memory */

typedef accel_status_t (*accel_plugin_query_fn)(uint32_t host_abi, const accel_host_api_t *host,
                                                const accel_backend_vtable_t **out);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_PLUGIN_H */
