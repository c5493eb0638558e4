/*
 * accel — one C API for every accelerator.
 *
 * Devices, memory (with a caching allocator), streams, events, graph capture and replay with
 * shared memory pools, and a lazy mode. Tensor kernels live in accel_kernels.h; the plugin ABI
 * for out-of-tree backends lives in accel_plugin.h.
 *
 * Conventions
 *  - Every function returns an accel_status_t. On failure, accel_last_error() returns a message
 *    for the calling thread that names what was wrong (and, for vendor failures, the vendor call
 *    and its error code). Outputs are left untouched on failure.
 *  - Device memory is a plain `void *` on every backend. Pointer arithmetic inside an allocation
 *    is allowed; kernels and copies accept interior pointers.
 *  - Handles are reference counted by the library. Using a handle after it was destroyed returns
 *    ACCEL_ERROR_INVALID_HANDLE instead of crashing (as long as its memory has not been reused
 *    for a new handle of the same type).
 *  - All functions are thread-safe. A stream may be used from several threads; operations from
 *    different threads on one stream are ordered in the order the calls return.
 */
#ifndef ACCEL_ACCEL_H
#define ACCEL_ACCEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ACCEL_API
#else
#define ACCEL_API __attribute__((visibility("default")))
#endif

/* ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH: the version of these headers,
 * generated from the build's project version. */
#include "accel/accel_version.h"

/* ---------------------------------------------------------------------------------------------
 * Status and errors
 * ------------------------------------------------------------------------------------------- */

typedef enum accel_status {
  ACCEL_OK = 0,
  ACCEL_ERROR_INVALID_ARGUMENT = 1,  /* NULL pointer, bad size, bad dtype, overlap, overflow... */
  ACCEL_ERROR_INVALID_HANDLE = 2,    /* NULL, destroyed or foreign handle / pointer */
  ACCEL_ERROR_OUT_OF_MEMORY = 3,     /* after emptying the cache and retrying once */
  ACCEL_ERROR_UNAVAILABLE = 4,       /* backend, vendor runtime or device absent */
  ACCEL_ERROR_UNSUPPORTED = 5,       /* valid request this backend/device cannot do */
  ACCEL_ERROR_NOT_READY = 6,         /* query: work still pending (not a failure) */
  ACCEL_ERROR_ILLEGAL_IN_CAPTURE = 7,/* call not allowed while a capture is active; the
                                        capture is invalidated */
  ACCEL_ERROR_CAPTURE_INVALIDATED = 8,/* capture_end of a capture that was invalidated */
  ACCEL_ERROR_PLUGIN = 9,            /* plugin load or ABI failure */
  ACCEL_ERROR_BACKEND = 10,          /* a vendor call failed */
  ACCEL_ERROR_STATE = 11,            /* call not valid in the object's current state */
  ACCEL_ERROR_GRAPH_MISMATCH = 12    /* accel_graph_update: the source's topology differs */
} accel_status_t;

/* Stable name of a status, e.g. "ACCEL_ERROR_INVALID_ARGUMENT". Never NULL. */
ACCEL_API const char *accel_status_name(accel_status_t status);

/* Message describing the most recent failure on the calling thread ("" if none). The pointer
 * stays valid until the next accel call on this thread. */
ACCEL_API const char *accel_last_error(void);

/* Clears the calling thread's last error message. */
ACCEL_API void accel_clear_error(void);

/* "MAJOR.MINOR.PATCH" of the loaded library. */
ACCEL_API const char *accel_version_string(void);

/* ---------------------------------------------------------------------------------------------
 * Handles
 * ------------------------------------------------------------------------------------------- */

typedef struct accel_backend accel_backend_t; /* owned by the library, never freed by users */
typedef struct accel_device accel_device_t;
typedef struct accel_stream accel_stream_t;
typedef struct accel_event accel_event_t;
typedef struct accel_graph accel_graph_t;
typedef struct accel_pool accel_pool_t;

/* ---------------------------------------------------------------------------------------------
 * Backends and plugins
 * ------------------------------------------------------------------------------------------- */

/* Number of backends known to this process: the built-in CPU backend plus every plugin that
 * loaded (including plugins whose vendor runtime or device is absent). Loads plugins on first
 * use. */
ACCEL_API int accel_backend_count(void);
ACCEL_API accel_status_t accel_backend_get(int index, accel_backend_t **out);
/* Looks a backend up by name ("cpu", "opencl", "cuda", "hip", "level_zero"). An unknown name
 * is ACCEL_ERROR_INVALID_ARGUMENT (the message lists the known backends); a known plugin that is
 * not installed is ACCEL_ERROR_UNAVAILABLE; a plugin that was found but refused at load (the
 * name its vtable gave, or its file libaccel-NAME.so when it was refused before naming itself)
 * is ACCEL_ERROR_PLUGIN with the loader's reason in the message. */
ACCEL_API accel_status_t accel_backend_find(const char *name, accel_backend_t **out);
ACCEL_API const char *accel_backend_name(const accel_backend_t *backend);
/* ACCEL_OK when the backend's runtime initialised; otherwise why not (message in *reason,
 * owned by the library). */
ACCEL_API accel_status_t accel_backend_status(const accel_backend_t *backend, const char **reason);
/* Devices the backend exposes (0 with ACCEL_ERROR_UNAVAILABLE when its runtime is absent). */
ACCEL_API accel_status_t accel_device_count(const accel_backend_t *backend, int *count);

/* What the plugin loader considered: one entry per file looked at, in search order. */
typedef enum accel_plugin_outcome {
  ACCEL_PLUGIN_LOADED = 0,    /* loaded and registered */
  ACCEL_PLUGIN_NOT_FOUND = 1, /* a known plugin name not present in any search directory */
  ACCEL_PLUGIN_FAILED = 2,    /* present but refused: see message */
  ACCEL_PLUGIN_DUPLICATE = 3  /* same backend name already registered earlier in the search */
} accel_plugin_outcome_t;

typedef struct accel_plugin_report {
  char path[1024];    /* file considered ("" for NOT_FOUND) */
  char backend[32];   /* backend name, when known */
  accel_plugin_outcome_t outcome;
  char message[512];  /* why it failed / where it was looked for */
} accel_plugin_report_t;

ACCEL_API int accel_plugin_report_count(void);
ACCEL_API accel_status_t accel_plugin_report_get(int index, accel_plugin_report_t *out);

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

typedef enum accel_device_type {
  ACCEL_DEVICE_TYPE_CPU = 0,
  ACCEL_DEVICE_TYPE_GPU = 1,
  ACCEL_DEVICE_TYPE_ACCELERATOR = 2,
  ACCEL_DEVICE_TYPE_OTHER = 3
} accel_device_type_t;

typedef struct accel_device_info {
  char name[256];
  char vendor[128];
  char backend[32];
  char driver_version[64];
  int index;                 /* index within its backend */
  accel_device_type_t type;
  uint64_t memory_total;     /* bytes */
  uint64_t memory_free;      /* bytes, at the time of the call */
  uint32_t compute_units;
  uint32_t supports_fp16;    /* 1 if F16 kernels run natively (they run everywhere) */
  uint32_t supports_bf16;
  uint32_t native_graphs;    /* 1 if the backend instantiates graphs itself (vendor graph object,
                                or the CPU backend's converted, fused op list) */
  uint32_t lazy_default;     /* 1 if streams are lazy unless ACCEL_LAZY=0 */
  uint32_t host_accessible;  /* 1 if the host can dereference device pointers */
} accel_device_info_t;

/* Lifetime verbs: every handle is made by a *_create call and let go by a *_release call (one
 * user reference each; a release too many is ACCEL_ERROR_INVALID_HANDLE). The older names
 * accel_device_open/close and accel_{stream,event,graph}_destroy (accel_comm_destroy in
 * accel_comm.h) stay as aliases: the same calls under their own names, exported for binaries
 * linked against them (docs/API.md, "Lifetime verbs"). */

/* Opens a device. selector: "cpu", "opencl", "cuda:1", "level_zero:0" ... (index defaults to
 * 0). NULL reads ACCEL_BACKEND, else opens the best device of accel_device_ranking that opens,
 * logging (ACCEL_LOG=info) why each better-ranked one was passed over. Opening the same device
 * twice returns the same handle with its reference count raised. A backend name is looked up
 * as by accel_backend_find: a plugin found but refused at load is ACCEL_ERROR_PLUGIN with the
 * loader's reason. */
ACCEL_API accel_status_t accel_device_create(const char *selector, accel_device_t **out);
/* The old name of accel_device_create. */
ACCEL_API accel_status_t accel_device_open(const char *selector, accel_device_t **out);

/* One device as accel_device_open(NULL) ranks it. */
typedef struct accel_device_rank {
  char backend[32];
  int index;                 /* -1: the backend is unavailable (reason says why) */
  accel_device_type_t type;
  int32_t score;             /* the plugin's device score (0 when it gives none) */
  char name[256];
  char reason[256];          /* why it has its place, or why it was passed over */
} accel_device_rank_t;

/* The automatic selection order: every device of every loaded backend, best first. GPU and
 * accelerator devices of plugins (higher plugin score first, then load order), then the
 * built-in CPU backend, then CPU- and other-type devices of plugins; unavailable backends last,
 * with index -1. Fills out[0 .. min(capacity, *count)) and sets *count to the number of
 * entries; out may be NULL when capacity is 0. Initialises every backend. */
ACCEL_API accel_status_t accel_device_ranking(accel_device_rank_t *out, int capacity,
                                              int *count);
/* Drops one reference; the device is torn down when the last reference, stream, event, graph
 * and pool on it are gone. */
ACCEL_API accel_status_t accel_device_release(accel_device_t *device);
/* The old name of accel_device_release. */
ACCEL_API accel_status_t accel_device_close(accel_device_t *device);
ACCEL_API accel_status_t accel_device_get_info(accel_device_t *device, accel_device_info_t *info);
/* Waits for all work on all streams of the device. Illegal during a GLOBAL capture. */
ACCEL_API accel_status_t accel_device_synchronize(accel_device_t *device);

/* ---------------------------------------------------------------------------------------------
 * Memory
 * ------------------------------------------------------------------------------------------- */

/* Device memory from the caching allocator, for use on the default stream (like cudaMalloc it
 * is not stream-ordered and is illegal during capture). Alignment is at least 256 bytes. A size
 * of 0 returns NULL with ACCEL_OK. */
ACCEL_API accel_status_t accel_malloc(accel_device_t *device, size_t size, void **ptr);
/* Frees memory from accel_malloc or accel_malloc_async. NULL is a no-op. A pointer that is not
 * the start of a live allocation of this device returns ACCEL_ERROR_INVALID_ARGUMENT. */
ACCEL_API accel_status_t accel_free(accel_device_t *device, void *ptr);
/* Stream-ordered allocation: the block may be reused by later work on the same stream right
 * away. During capture the block comes from the graph's pool. */
ACCEL_API accel_status_t accel_malloc_async(accel_stream_t *stream, size_t size, void **ptr);
ACCEL_API accel_status_t accel_free_async(accel_stream_t *stream, void *ptr);
/* Host memory, page-locked where the backend has it (ordinary host memory on the CPU). */
ACCEL_API accel_status_t accel_host_alloc(accel_device_t *device, size_t size, void **ptr);
/* NULL is a no-op; a pointer that is not a live accel_host_alloc block of this device returns
 * ACCEL_ERROR_INVALID_ARGUMENT; a block a registration (accel_memory_register, a DLPack import,
 * of any device) covers returns ACCEL_ERROR_STATE naming it, and stays allocated. */
ACCEL_API accel_status_t accel_host_free(accel_device_t *device, void *ptr);

/* Copies size bytes; the direction is inferred from the pointers (device allocations of this
 * device vs host memory). Host memory must stay valid until the stream reaches the copy. */
ACCEL_API accel_status_t accel_memcpy_async(accel_stream_t *stream, void *dst, const void *src,
                                            size_t size);
/* Blocking copy: runs on the device's default stream and waits for it. Illegal in capture. */
ACCEL_API accel_status_t accel_memcpy(accel_device_t *device, void *dst, const void *src,
                                      size_t size);
/* Sets size bytes of device memory to (unsigned char)value. */
ACCEL_API accel_status_t accel_memset_async(accel_stream_t *stream, void *dst, int value,
                                            size_t size);

typedef struct accel_memory_stats {
  uint64_t allocated_bytes;      /* bytes in live blocks (rounded block sizes) */
  uint64_t reserved_bytes;       /* bytes held from the backend (segments) */
  uint64_t peak_allocated_bytes;
  uint64_t peak_reserved_bytes;
  uint64_t alloc_count;          /* successful allocations since start */
  uint64_t free_count;
  uint64_t active_blocks;        /* live blocks now */
  uint64_t segment_count;        /* backend allocations held now */
  uint64_t graph_pool_reserved_bytes; /* part of reserved_bytes held by graph pools */
  uint64_t alloc_retries;        /* allocations that emptied the cache and retried */
  uint64_t ooms;                 /* allocations that failed with OUT_OF_MEMORY */
} accel_memory_stats_t;

ACCEL_API accel_status_t accel_memory_stats(accel_device_t *device, accel_memory_stats_t *out);
ACCEL_API accel_status_t accel_reset_peak_memory_stats(accel_device_t *device);
/* Returns cached, unused segments to the backend (graph pools keep theirs). */
ACCEL_API accel_status_t accel_empty_cache(accel_device_t *device);

/* Memory you can see (docs/MEMORY.md). The structs below grow at their end: the caller sets
 * struct_size to the sizeof it was compiled with; the library writes no byte past it, sets
 * struct_size to the bytes it filled (less when the library is older than the caller), and
 * refuses a size below the first version's with ACCEL_ERROR_INVALID_ARGUMENT. */

/* accel_memory_stats plus fragmentation figures. */
typedef struct accel_memory_stats_ex {
  size_t struct_size;
  accel_memory_stats_t stats;     /* as accel_memory_stats */
  uint64_t largest_free_block;    /* largest cached free block of the default pool: the biggest
                                   * allocation served without a new segment */
  uint64_t inactive_split_bytes;  /* free bytes in segments that also hold a live block: cached
                                   * memory that cannot go back to the backend (fragmentation) */
  uint64_t inactive_split_blocks; /* the free blocks holding them */
  uint64_t cache_empties;         /* cache emptied: accel_empty_cache and out-of-memory retries */
  uint64_t cache_empty_released_bytes; /* bytes those returned to the backend */
  uint64_t retries_recovered;     /* out-of-memory retries whose second attempt succeeded */
  uint64_t last_retry_bytes;      /* size asked by the allocation that last retried (0: none) */
  char last_retry_reason[160];    /* why its first attempt failed (the allocator's message) */
  uint64_t graph_pools;           /* live graph pools (arenas) on the device */
} accel_memory_stats_ex_t;

ACCEL_API accel_status_t accel_memory_stats_ex(accel_device_t *device,
                                               accel_memory_stats_ex_t *out);

/* What one graph holds. A pool shared by several graphs is reported whole by each of them, with
 * pool_graphs saying how many share it: count it once. */
typedef struct accel_graph_memory_info {
  size_t struct_size;
  uint64_t pool_reserved_bytes;   /* segments of the graph's pool (0: no capture) */
  uint64_t pool_allocated_bytes;  /* live blocks in them */
  uint32_t pool_graphs;           /* graphs holding that pool now, this one included */
  uint32_t pool_segments;
  uint64_t pinned_bytes;          /* user memory (default pool, registrations) its recorded work
                                   * pins: freeing it is deferred while the graph lives */
  uint64_t pinned_blocks;
  uint64_t chunk_table_bytes;     /* device memory of the chunk tables its commands keep */
  uint64_t capture_peak_allocated_bytes; /* the pool's peak allocated bytes during the capture */
  uint64_t capture_peak_reserved_bytes;  /* and its peak reserved bytes */
} accel_graph_memory_info_t;

ACCEL_API accel_status_t accel_graph_memory_info(accel_graph_t *graph,
                                                 accel_graph_memory_info_t *out);

/* Every segment and block of the device's allocator as JSON (schema: docs/memory_snapshot.schema
 * .json): address, size, stream, pool, state, requested size and tag of each block. *json gets
 * a NUL-terminated string (length in *length, may be NULL) to release with
 * accel_memory_snapshot_free. */
ACCEL_API accel_status_t accel_memory_snapshot(accel_device_t *device, char **json,
                                               size_t *length);
ACCEL_API void accel_memory_snapshot_free(char *json);

/* Tags the allocations the calling thread makes from now on (shown by accel_memory_snapshot)
 * until the matching pop. Tags nest (up to 64 deep; the innermost names the block) and are per
 * thread; a tag is at most 127 bytes. Costs nothing when unused. */
ACCEL_API accel_status_t accel_memory_tag_push(const char *tag);
/* STATE when the calling thread has no tag pushed. */
ACCEL_API accel_status_t accel_memory_tag_pop(void);

/* ---------------------------------------------------------------------------------------------
 * Streams
 * ------------------------------------------------------------------------------------------- */

/* Stream creation flags. By default a stream is lazy when ACCEL_LAZY=1 or the backend is lazy
 * by default (and ACCEL_LAZY is not 0). */
enum {
  ACCEL_STREAM_DEFAULT = 0,
  ACCEL_STREAM_LAZY = 1u << 0,  /* force lazy mode for this stream */
  ACCEL_STREAM_EAGER = 1u << 1  /* force eager mode for this stream */
};

ACCEL_API accel_status_t accel_stream_create(accel_device_t *device, accel_stream_t **out);
/* Unknown flags, or LAZY together with EAGER: ACCEL_ERROR_INVALID_ARGUMENT. */
ACCEL_API accel_status_t accel_stream_create_ex(accel_device_t *device, unsigned flags,
                                                accel_stream_t **out);
/* Waits for the stream's work, then drops the user's reference (the stream goes when nothing
 * recorded holds it). The default stream cannot be released. */
ACCEL_API accel_status_t accel_stream_release(accel_stream_t *stream);
/* The old name of accel_stream_release. */
ACCEL_API accel_status_t accel_stream_destroy(accel_stream_t *stream);
/* The device's default stream (owned by the device; it cannot capture). */
ACCEL_API accel_status_t accel_stream_default(accel_device_t *device, accel_stream_t **out);
ACCEL_API accel_status_t accel_stream_synchronize(accel_stream_t *stream);
/* ACCEL_OK when all submitted work finished, ACCEL_ERROR_NOT_READY otherwise. */
ACCEL_API accel_status_t accel_stream_query(accel_stream_t *stream);
/* Later work on stream waits until the event's last record completed. */
ACCEL_API accel_status_t accel_stream_wait_event(accel_stream_t *stream, accel_event_t *event);
/* Lazy mode: submits everything queued so far (mark_step). A no-op on eager streams. */
ACCEL_API accel_status_t accel_stream_flush(accel_stream_t *stream);
ACCEL_API accel_status_t accel_stream_is_capturing(accel_stream_t *stream, int *capturing);
ACCEL_API accel_status_t accel_stream_is_lazy(accel_stream_t *stream, int *lazy);

typedef struct accel_lazy_stats {
  uint64_t ops_queued;   /* operations appended to the lazy queue */
  uint64_t flushes;      /* non-empty submissions */
  uint64_t cache_hits;   /* flushes replayed from a cached graph */
  uint64_t cache_misses; /* flushes submitted op by op */
} accel_lazy_stats_t;
ACCEL_API accel_status_t accel_stream_lazy_stats(accel_stream_t *stream, accel_lazy_stats_t *out);

/* Runs fn(user) on a host thread once all earlier work on the stream finished; later work waits
 * for it to return. fn must not call accel functions that wait on this stream. */
typedef void (*accel_host_fn_t)(void *user);
ACCEL_API accel_status_t accel_launch_host_func(accel_stream_t *stream, accel_host_fn_t fn,
                                                void *user);

/* ---------------------------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------------------------- */

enum { ACCEL_EVENT_DEFAULT = 0, ACCEL_EVENT_DISABLE_TIMING = 1u << 0 };

ACCEL_API accel_status_t accel_event_create(accel_device_t *device, unsigned flags,
                                            accel_event_t **out);
ACCEL_API accel_status_t accel_event_record(accel_event_t *event, accel_stream_t *stream);
ACCEL_API accel_status_t accel_event_synchronize(accel_event_t *event);
/* ACCEL_OK when the last record completed (or the event was never recorded), NOT_READY else. */
ACCEL_API accel_status_t accel_event_query(accel_event_t *event);
/* Milliseconds between two completed records; both events need timing. */
ACCEL_API accel_status_t accel_event_elapsed_ms(accel_event_t *start, accel_event_t *end,
                                                float *ms);
/* Drops the user's reference (a capture that recorded the event keeps it until it ends). */
ACCEL_API accel_status_t accel_event_release(accel_event_t *event);
/* The old name of accel_event_release. */
ACCEL_API accel_status_t accel_event_destroy(accel_event_t *event);

/* ---------------------------------------------------------------------------------------------
 * Graphs (see docs/GRAPHS.md for the full semantics)
 * ------------------------------------------------------------------------------------------- */

typedef enum accel_capture_mode {
  /* Potentially unsafe calls (synchronize, query, blocking copy, accel_malloc) are illegal
   * from every thread while the capture is active. */
  ACCEL_CAPTURE_MODE_GLOBAL = 0,
  /* ... illegal only from the thread that began the capture. */
  ACCEL_CAPTURE_MODE_THREAD_LOCAL = 1,
  /* ... never rejected because of this capture (calls on the capturing stream still are). */
  ACCEL_CAPTURE_MODE_RELAXED = 2
} accel_capture_mode_t;

ACCEL_API accel_status_t accel_graph_create(accel_device_t *device, accel_graph_t **out);
/* Starts recording the work submitted to stream (and to streams that join by waiting on an
 * event recorded on it). pool: the memory pool for allocations made during the capture (NULL:
 * a private pool). The default stream cannot capture (ACCEL_ERROR_INVALID_ARGUMENT); a stream
 * that is already capturing returns ACCEL_ERROR_ILLEGAL_IN_CAPTURE and invalidates that capture;
 * a graph that already holds a capture returns ACCEL_ERROR_STATE. */
ACCEL_API accel_status_t accel_graph_capture_begin(accel_graph_t *graph, accel_stream_t *stream,
                                                   accel_pool_t *pool, accel_capture_mode_t mode);
/* Ends the capture. ACCEL_ERROR_CAPTURE_INVALIDATED if an illegal call invalidated it, or a
 * joined stream has work that did not rejoin the capturing stream; the graph is then empty. */
ACCEL_API accel_status_t accel_graph_capture_end(accel_graph_t *graph);
/* Runs the captured work on stream (any stream of the device, any number of times). */
ACCEL_API accel_status_t accel_graph_replay(accel_graph_t *graph, accel_stream_t *stream);
/* The graph's memory pool, with a new reference (release it with accel_pool_release). Pass it
 * to another capture to share memory between graphs replayed in capture order. */
ACCEL_API accel_status_t accel_graph_pool(accel_graph_t *graph, accel_pool_t **out);
ACCEL_API accel_status_t accel_graph_pool_create(accel_device_t *device, accel_pool_t **out);
ACCEL_API accel_status_t accel_pool_release(accel_pool_t *pool);
/* Drops the captured work and the graph's hold on its pool; the graph can capture again. */
ACCEL_API accel_status_t accel_graph_reset(accel_graph_t *graph);
/* Drops the user's reference and the captured work (a capturing graph: ACCEL_ERROR_STATE). */
ACCEL_API accel_status_t accel_graph_release(accel_graph_t *graph);
/* The old name of accel_graph_release. */
ACCEL_API accel_status_t accel_graph_destroy(accel_graph_t *graph);
/* Number of recorded operations (0 for an empty or reset graph). */
ACCEL_API accel_status_t accel_graph_node_count(accel_graph_t *graph, size_t *count);
/* graph (ready to replay) takes the arguments of source (a new capture of the same sequence
 * with other pointers, scalars, sizes or tensor lists; it stays as it is) in place: later
 * replays of graph run source's work. Replays issued before the call are not affected (the
 * update is ordered like a replay). A topology change (another operation, kernel, stream or
 * event edge, or operation count) is ACCEL_ERROR_GRAPH_MISMATCH naming the first differing
 * node; graph is then unchanged and still replays. The same graph twice, graphs of two devices:
 * INVALID_ARGUMENT; either graph not ready: STATE. See docs/GRAPHS.md, "Updating a graph". */
ACCEL_API accel_status_t accel_graph_update(accel_graph_t *graph, accel_graph_t *source);

/* ---------------------------------------------------------------------------------------------
 * Device attributes: what a device really does, queried, never assumed (docs/API.md)
 * ------------------------------------------------------------------------------------------- */

/* Attributes only ever get appended; an unknown one is ACCEL_ERROR_INVALID_ARGUMENT. */
typedef enum accel_device_attr {
  ACCEL_ATTR_GRAPH_KIND = 1,         /* ACCEL_GRAPH_KIND_*: how a replay runs */
  ACCEL_ATTR_GRAPH_UPDATE = 2,       /* ACCEL_GRAPH_UPDATE_*: how accel_graph_update works */
  ACCEL_ATTR_CONDITIONALS = 3,       /* ACCEL_CONDITIONALS_*: device-flag control flow */
  ACCEL_ATTR_LAZY_DEFAULT = 4,       /* 1: a stream made without flags is lazy (backend or ACCEL_LAZY) */
  ACCEL_ATTR_HOST_ACCESSIBLE = 5,    /* 1: the host can dereference device pointers */
  ACCEL_ATTR_UNIFIED_MEMORY = 6,     /* 1: device memory is the host's memory (one pool) */
  ACCEL_ATTR_DLPACK_DEVICE_TYPE = 7, /* ACCEL_DL_* of device memory (0: none) */
  ACCEL_ATTR_KERNEL_FORMS = 8,       /* the plugin's ACCEL_KERNEL_FORM_* bits (0: no kernels) */
  ACCEL_ATTR_DEVICE_TYPE = 9,        /* accel_device_type_t */
  ACCEL_ATTR_INDEX = 10,             /* index within its backend */
  ACCEL_ATTR_MEMORY_TOTAL = 11,      /* bytes */
  ACCEL_ATTR_MEMORY_FREE = 12,       /* bytes, at the time of the call */
  ACCEL_ATTR_COMPUTE_UNITS = 13,
  ACCEL_ATTR_SUPPORTS_FP16 = 14,
  ACCEL_ATTR_SUPPORTS_BF16 = 15
} accel_device_attr_t;

/* Values of ACCEL_ATTR_GRAPH_KIND. */
enum {
  ACCEL_GRAPH_KIND_RECORDED = 0, /* a replay submits the recorded commands as one batch */
  ACCEL_GRAPH_KIND_NATIVE = 1    /* the backend instantiates graphs (vendor or op-list graph) */
};
/* Values of ACCEL_ATTR_GRAPH_UPDATE. */
enum {
  ACCEL_GRAPH_UPDATE_EMULATED = 1, /* the core takes source's commands and re-instantiates */
  ACCEL_GRAPH_UPDATE_NATIVE = 2    /* the backend updates its instantiated graph in place */
};
/* Values of ACCEL_ATTR_CONDITIONALS. */
enum {
  ACCEL_CONDITIONALS_NONE = 0,       /* accel_graph_capture_if / _while are UNSUPPORTED */
  ACCEL_CONDITIONALS_PREDICATED = 1, /* every command of a body is launched and checks the
                                        flag's slot on the device; a WHILE is unrolled to
                                        max_iterations passes of launches */
  ACCEL_CONDITIONALS_NATIVE = 2      /* the backend skips or repeats the body itself */
};

/* *value = the attribute of device. Unknown attr or NULL value: ACCEL_ERROR_INVALID_ARGUMENT. */
ACCEL_API accel_status_t accel_device_get_attribute(accel_device_t *device,
                                                    accel_device_attr_t attr, int64_t *value);

/* Device-flag control flow (docs/GRAPHS.md, "Branches on a device flag"). The work submitted to
 * stream between accel_graph_capture_if and accel_graph_capture_end_if runs iff the int32 at
 * flag_dev (device memory, 4-byte aligned) is nonzero when the stream reaches that point; between
 * accel_graph_capture_while and accel_graph_capture_end_while it runs again and again while the
 * flag is nonzero, at most max_iterations (>= 1) times (the body updates the flag). The flag is
 * read on the device in stream order, never by the host. Inside a capture the region is
 * recorded into the graph (regions nest); outside one the region is captured privately and
 * replayed on the stream at its end (eager and lazy streams alike). The capture rules hold in
 * a region, and a region's work stays on its stream: event records and waits, and work of
 * other streams of the capture, invalidate the capture. ACCEL_ATTR_CONDITIONALS says whether the
 * device supports it (ACCEL_ERROR_UNSUPPORTED otherwise) and how. Close every region opened,
 * also after a failure inside it: until then the stream is capturing. */
ACCEL_API accel_status_t accel_graph_capture_if(accel_stream_t *stream, const int32_t *flag_dev);
ACCEL_API accel_status_t accel_graph_capture_end_if(accel_stream_t *stream);
ACCEL_API accel_status_t accel_graph_capture_while(accel_stream_t *stream, const int32_t *flag_dev,
                                                   uint32_t max_iterations);
ACCEL_API accel_status_t accel_graph_capture_end_while(accel_stream_t *stream);

#ifdef __cplusplus
}
#endif

/* Random numbers (generators, uniform / normal / dropout): after everything it uses. */
#include "accel/accel_random.h"

#endif /* ACCEL_ACCEL_H */
