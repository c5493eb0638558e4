/*
 * Internal structures of libaccel's core. Every public handle starts with accel_handle_t
 * (backend vtable + reference count), IREE HAL style; public functions validate, trace, then
 * dispatch through the vtable or the core's generic fallback.
 */
#ifndef ACCEL_CORE_INTERNAL_H
#define ACCEL_CORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "accel/accel_plugin.h"
#include "cmdlist.h"
#include "kernel_support.h"
#include "log.h"
#include "core_util.h"
#include "allocator.h"
#include "hashtab.h"

#define ACCEL_INTERNAL __attribute__((visibility("hidden")))

/* ------------------------------------------------------------------------------------------ */
/* Handles                                                                                     */

typedef enum accel_handle_kind {
  ACCEL_HANDLE_DEVICE = 1,
  ACCEL_HANDLE_STREAM,
  ACCEL_HANDLE_EVENT,
  ACCEL_HANDLE_GRAPH,
  ACCEL_HANDLE_POOL,
  ACCEL_HANDLE_DLPACK_IMPORT,
  ACCEL_HANDLE_COMM
} accel_handle_kind_t;

/* Ownership (docs/RELIABILITY.md): refcount counts every reference to the object, the user's
 * included; the object is torn down when it drops to zero. user_refs counts the references the
 * user holds (one per create/open/accel_graph_pool); the handle is in the live-handle registry
 * exactly while user_refs > 0, so a release too many is INVALID_HANDLE while everything the
 * object's internal holders (graphs, captures, streams) need stays alive. */
typedef struct accel_handle {
  const accel_backend_vtable_t *vt;
  atomic_int refcount;
  accel_handle_kind_t kind;
  int user_refs; /* guarded by the registry's lock */
} accel_handle_t;

/* Live-handle registry: lets every entry point reject destroyed or foreign handles. register
 * sets refcount and user_refs to 1. */
void accel_handle_register(accel_handle_t *h, accel_handle_kind_t kind,
                           const accel_backend_vtable_t *vt);
void accel_handle_unregister(accel_handle_t *h);
/* One more user reference (re-registers a handle whose user references were all dropped). */
void accel_handle_add_user(accel_handle_t *h);
/* Drops one user reference of a live handle of that kind: ACCEL_OK, or INVALID_HANDLE with a
 * message naming fn when h is not one (of two concurrent drops of the last reference, exactly
 * one succeeds). The caller then drops the object reference that went with it. */
accel_status_t accel_handle_drop_user(const void *h, accel_handle_kind_t kind, const char *fn);
bool accel_handle_is_live(const void *h, accel_handle_kind_t kind);
/* Changes whenever a handle enters or leaves the registry; odd while a change is under way.
 * Handles a thread found live after reading an even version are still live (and the same
 * objects) while the version reads the same: a hot path may remember them instead of looking
 * them up again. */
unsigned accel_handle_registry_version(void);
/* ACCEL_OK for a live handle of that kind; else INVALID_HANDLE with a message naming fn. */
accel_status_t accel_handle_check(const void *h, accel_handle_kind_t kind, const char *fn);

/* ------------------------------------------------------------------------------------------ */
/* Backends                                                                                    */

struct accel_backend {
  char name[32];
  char path[1024];                /* plugin file, "" for built-in */
  const accel_backend_vtable_t *vt;
  void *dl;                       /* dlopen handle (never closed while the process runs) */
  pthread_mutex_t lock;
  bool init_done;
  accel_status_t init_status;
  char init_message[512];
  accel_be_backend_t *state;
  int device_count;
  accel_device_t **devices;       /* opened devices by index (NULL if not open) */
};

/* Loads plugins once; returns the backend list. */
void accel_registry_ensure_loaded(void);
/* Runs backend_init once; returns its status (message copied into backend->init_message). */
accel_status_t accel_backend_ensure_init(accel_backend_t *backend);
/* The collective engine for the backend's devices: its vtable's comm_engine, else the build's
 * plugin table (core/plugin_table.h), else the host engine. */
const char *accel_backend_comm_engine(const accel_backend_t *backend);
/* The collective engine that runs on the host and bootstraps the others (the build's table). */
const char *accel_host_comm_engine(void);
extern const accel_host_api_t accel_host_api;
/* accel_device_open(NULL) without ACCEL_BACKEND: the best-ranked device that opens
 * (core/device_rank.c). */
accel_status_t accel_device_open_ranked(accel_device_t **out);

/* ------------------------------------------------------------------------------------------ */
/* Devices                                                                                     */

struct accel_device {
  accel_handle_t hdr;
  accel_backend_t *backend;
  int index;
  accel_be_device_t *impl;
  accel_device_info_t info;
  pthread_mutex_t lock;           /* stream list */
  accel_stream_t *streams;        /* all live streams (linked through next_in_device) */
  accel_stream_t *default_stream;
  accel_stream_t *upload_stream;  /* internal, created on first accel_device_upload */
  accel_allocator_t *mem;         /* caching allocator (default pool + graph pools) */
  void *kernel_state;
  accel_hashtab_t host_allocs;    /* live accel_host_alloc blocks, as keys (guarded by lock) */
  bool lazy_default;
  /* over a runtime's own context (accel_device_wrap_native): distinct from the device
   * accel_device_open gives for index, and not in backend->devices */
  bool wrapped;
  uint64_t trace_id;
  pthread_mutex_t retire_lock;    /* retired lists (never held while waiting or calling out) */
  struct accel_retired *retired;  /* retire.c: releases waiting for their fence */
  atomic_int nretired;
  struct accel_retired *callbacks; /* retire.c: releases that run user code (deleters) */
  atomic_int ncallbacks;
};

/* A new device over a runtime's context (core/native.c validated the arguments). */
accel_status_t accel_device_create_wrapped(accel_backend_t *b, const accel_native_t *native,
                                           accel_device_t **out);
void accel_device_retain(accel_device_t *dev);
void accel_device_release(accel_device_t *dev);
accel_status_t accel_device_check(accel_device_t *dev, const char *fn);

/* The device's live streams, each retained (dev->lock is held only while listing them);
 * release with accel_device_streams_release. */
accel_status_t accel_device_streams(accel_device_t *dev, accel_stream_t ***out, size_t *n);
void accel_device_streams_release(accel_stream_t **streams, size_t n);

/* retire.c, accel_device_retire (kernel_support.h): fn(ctx) runs once every stream of the
 * device has finished the work submitted before the call (a fence of one backend event per
 * stream), without any lock held: at a later accel_device_reap that finds the fence complete,
 * or at once after a drain if the fence cannot be made. */
/* accel_device_retire for something only the work on s uses (a lazy stream's cached graph):
 * the fence is one event on s. The caller holds s->lock. */
void accel_stream_retire_locked(accel_stream_t *s, void (*fn)(void *ctx), void *ctx);
/* Inside a retired release: the allocator free generation its completed fence covers (every
 * block freed at or before it is idle); 0 elsewhere. */
uint64_t accel_retire_covered_epoch(void);
/* Runs the retired releases whose fence completed (wait: waits for every fence first, holding
 * no lock). Cheap when nothing is retired. */
void accel_device_reap(accel_device_t *dev, bool wait);
/* Releases that run user code (DLPack deleters, which may call accel, waiting included) run
 * only where that cannot deadlock, never inside a host function of the device: retired behind
 * a fence (accel_device_retire_callback) or handed over ready (accel_device_defer_callback),
 * they run at once when every stream of the device is idle (the caller is then no host
 * function of it), else in the calls that wait for every stream, which a host function may not
 * make and which open a callback scope (accel_callbacks_begin/end: accel_device_synchronize,
 * accel_empty_cache, accel_memory_unregister, the device's teardown), else when
 * accel_dlpack_release or accel_device_close finds the device idle. Inside a scope,
 * accel_device_reap runs them too. */
void accel_device_retire_callback(accel_device_t *dev, void (*fn)(void *ctx), void *ctx);
void accel_device_defer_callback(accel_device_t *dev, void (*fn)(void *ctx), void *ctx);
void accel_callbacks_begin(void);
void accel_callbacks_end(void);
/* Runs the callbacks whose fence completed, when every stream of the device is idle. */
void accel_device_callbacks_if_idle(accel_device_t *dev);
/* accel_device_reap(dev, false) when anything is retired: the check inline (allocation path). */
static inline void accel_device_reap_if_any(accel_device_t *dev) {
  if (atomic_load_explicit(&dev->nretired, memory_order_relaxed))
    accel_device_reap(dev, false);
}

/* ------------------------------------------------------------------------------------------ */
/* Streams, capture, lazy queue                                                                */

typedef struct accel_capture accel_capture_t;

typedef struct accel_lazy_cache_entry {
  uint64_t hash;
  accel_cmdlist_t cmds;
  accel_be_graph_t *native;       /* instantiated on the second hit, if the backend can */
  uint64_t hits;
  uint64_t last_use;
} accel_lazy_cache_entry_t;

#define ACCEL_LAZY_CACHE_SIZE 4

struct accel_stream {
  accel_handle_t hdr;
  accel_device_t *dev;
  accel_be_stream_t *impl;
  pthread_mutex_t lock;           /* serialises submission and capture/lazy state */
  bool is_default;
  bool internal;
  bool lazy;
  bool wrapped;                   /* over a runtime's queue: always eager, never destroyed */
  /* capture: set while this stream records into a capture (origin or joined); capturing
   * mirrors capture != NULL for readers without the lock (accel_stream_run_on_caller) */
  accel_capture_t *capture;
  atomic_bool capturing;
  uint32_t capture_slot;
  /* lazy mode */
  accel_cmdlist_t lazy_queue;
  accel_lazy_stats_t lazy_stats;
  accel_lazy_cache_entry_t lazy_cache[ACCEL_LAZY_CACHE_SIZE];
  uint64_t lazy_clock;
  accel_stream_t *next_in_device;
  uint64_t trace_id;
  void *kop_memo[ACCEL_KOP_MEMO_SLOTS]; /* chunk_table.c: atomic, one reference each */
};

/* A stream holds a reference to its device; captures, fences and graphs' replay ordering hold
 * references to streams. The last release tears the stream down (synchronizes it first). */
accel_status_t accel_stream_create_internal(accel_device_t *dev, unsigned flags, bool is_default,
                                            bool internal, accel_stream_t **out);
/* A user stream over a runtime's queue (accel_stream_wrap_native): eager, holds the device. */
accel_status_t accel_stream_create_wrapped(accel_device_t *dev, const accel_native_t *native,
                                           accel_stream_t **out);
void accel_stream_retain(accel_stream_t *s);
void accel_stream_release(accel_stream_t *s);
/* Submits a queued lazy sequence (caller holds s->lock). */
accel_status_t accel_lazy_flush_locked(accel_stream_t *s);
/* Submits one command on a non-capturing stream: eager dispatch or lazy append (caller holds
 * s->lock). */
accel_status_t accel_stream_submit_locked(accel_stream_t *s, const accel_cmd_t *cmd,
                                          accel_keepalive_t *keep);
/* Synchronize without capture checks (internal, caller does not hold s->lock). */
accel_status_t accel_stream_sync_internal(accel_stream_t *s);
/* Issues a command list on a stream as one batch (submit_batch or one by one). */
accel_status_t accel_stream_run_batch(accel_stream_t *s, const accel_cmd_t *cmds, size_t n);

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                      */

struct accel_event {
  accel_handle_t hdr;
  accel_device_t *dev;
  accel_be_event_t *impl;
  unsigned flags;
  pthread_mutex_t lock;
  bool recorded;
  /* the last record was captured into a graph (it stays so after the capture ended): such a
   * record has no backend event, and the earlier real record's one is stale */
  bool record_captured;
  /* set when the last record happened inside a capture (the event holds a reference to it) */
  accel_capture_t *capture;
  uint32_t capture_event_slot;
  size_t capture_position;
  uint32_t capture_stream_slot;
};

/* An event holds a reference to its device; captures hold references to their events. */
void accel_event_retain(accel_event_t *e);
void accel_event_release(accel_event_t *e);

/* A point in a stream for core's own watchers (the ACCEL_COMM_TIMEOUT watchdog): the backend's
 * event recorded after everything submitted to the stream so far. Neither a user handle nor
 * subject to the capture rules, so another thread may query it while a user captures (in
 * GLOBAL mode too), and nothing is enqueued that a runtime's capture of a wrapped stream would
 * keep (a backend event record is captured as a mere dependency and then queries as done). */
typedef struct accel_stream_marker {
  accel_device_t *dev; /* referenced until the release */
  accel_be_event_t *impl;
} accel_stream_marker_t;
/* STATE while the stream captures (an accel capture: its work runs at replays, not now). */
accel_status_t accel_stream_marker_record(accel_stream_t *s, accel_stream_marker_t *out);
/* OK when the stream got past the marker, NOT_READY before, another status on a device error. */
accel_status_t accel_stream_marker_query(const accel_stream_marker_t *m);
void accel_stream_marker_release(accel_stream_marker_t *m);

/* The checks of accel_multi_tensor_norm and accel_clip_by_global_norm with nothing launched
 * (kernel_ops.c), for a distributed kernel that must refuse its arguments before it issues a
 * collective (comm.c). */
accel_status_t accel_multi_tensor_norm_check(accel_stream_t *stream,
                                             const accel_tensor_t *tensors, size_t n,
                                             float norm_type, float *out_dev);
accel_status_t accel_clip_by_global_norm_check(accel_stream_t *stream,
                                               const accel_tensor_t *tensors, size_t n,
                                               const float *total_norm_dev, float *coef_out_dev);

/* ------------------------------------------------------------------------------------------ */
/* Graphs and capture                                                                          */

typedef enum accel_graph_state {
  ACCEL_GRAPH_EMPTY = 0,
  ACCEL_GRAPH_CAPTURING,
  ACCEL_GRAPH_READY
} accel_graph_state_t;

struct accel_pool {
  accel_handle_t hdr;
  accel_device_t *dev;
  accel_allocator_arena_t *arena; /* the pool's segments inside dev->mem */
};

struct accel_graph {
  accel_handle_t hdr;
  accel_device_t *dev;
  pthread_mutex_t lock;
  accel_graph_state_t state;
  accel_capture_t *capture;
  accel_stream_t *capture_stream; /* origin stream while capturing */
  accel_cmdlist_t cmds;           /* as recorded, with fork/join events */
  accel_cmdlist_t flat;           /* without event commands: the batch a replay submits */
  accel_pool_t *pool;             /* reference held while captured */
  accel_be_graph_t *native;
  uint64_t replays;
  uint64_t trace_id;
  /* replays of one graph run one at a time (as CUDA's launches of one executable graph): a
   * replay on another stream than the last one waits for it through this event */
  accel_stream_t *last_replay_stream; /* reference held */
  accel_be_event_t *replay_done;
  accel_allocator_pins_t pins;    /* allocations the recorded work uses (freeing them defers) */
};

/* Pool references (graph_pool.c): captures and graphs hold them. A pool made for a capture
 * (user: false) has no user reference. */
accel_status_t accel_pool_create_internal(accel_device_t *dev, bool user, accel_pool_t **out);
void accel_pool_retain(accel_pool_t *p);
void accel_pool_release_ref(accel_pool_t *p);
/* A keepalive holding a pool reference (NULL when out of host memory). */
accel_keepalive_t *accel_pool_keepalive(accel_pool_t *p);
/* Retires the collection of zombie (an unreferenced, empty graph-pool arena; NULL: nothing). */
void accel_pool_arena_retire(accel_device_t *dev, accel_allocator_arena_t *zombie);

/* Called by every potentially unsafe call (synchronize, query, blocking copy, accel_malloc):
 * if a capture covers the calling thread (per its mode) the capture is invalidated and
 * ILLEGAL_IN_CAPTURE is returned with a message naming fn. stream may be NULL. */
accel_status_t accel_capture_check_unsafe(const char *fn, accel_stream_t *stream);
/* The same for a call illegal while any stream captures, in any mode and from any thread
 * (communicator creation communicates now): every active capture is invalidated. */
accel_status_t accel_capture_check_none(const char *fn);
/* Records a command on a capturing stream (caller holds s->lock). */
accel_status_t accel_capture_record_locked(accel_stream_t *s, const accel_cmd_t *cmd,
                                           accel_keepalive_t *keep);
accel_status_t accel_capture_event_record_locked(accel_stream_t *s, accel_event_t *e);
accel_status_t accel_capture_event_wait_locked(accel_stream_t *s, accel_capture_t *ec,
                                               uint32_t slot);
/* Invalidate the capture s belongs to (caller holds s->lock) with a reason. */
void accel_capture_invalidate(accel_capture_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Active captures in the process (fast path for the unsafe-call check). */
extern atomic_int accel_active_captures;

/* ------------------------------------------------------------------------------------------ */
/* Misc                                                                                        */

const char *accel_env(const char *name);  /* getenv, "" treated as unset */
bool accel_env_flag(const char *name, bool dflt);
uint64_t accel_now_ns(void);
accel_copy_kind_t accel_copy_kind(accel_device_t *dev, void *dst, const void *src);

#endif
