/*
 * Layer 3, device (docs/ARCHITECTURE.md, "Rooms and layers"): an open device, its stream list,
 * its caching allocator and the releases retired behind its streams' work (retire.c).
 */
#ifndef ACCEL_CORE_DEVICE_H
#define ACCEL_CORE_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel_plugin.h"
#include "allocator.h"
#include "backend.h"
#include "handle.h"
#include "hashtab.h"

/* accel_device_open(NULL) without ACCEL_BACKEND: the best-ranked device that opens
 * (core/device_rank.c). */
accel_status_t accel_device_open_ranked(accel_device_t **out);

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

/* External memory (external_memory.c, layer 7, docs/ARCHITECTURE.md) fills these when libaccel
 * is loaded: a device's allocator refuses frees of registered memory through check_free (its
 * guard), and the device's teardown drops the registrations the user never ended. device.c
 * calls up through them instead of including external_memory.h. */
typedef struct accel_device_external_hooks {
  accel_allocator_guard_fn check_free;
  void (*teardown)(accel_device_t *dev);
} accel_device_external_hooks_t;
extern accel_device_external_hooks_t accel_device_external;

/* A new device over a runtime's context (core/native.c validated the arguments). */
accel_status_t accel_device_create_wrapped(accel_backend_t *b, const accel_native_t *native,
                                           accel_device_t **out);
void accel_device_retain(accel_device_t *dev);
void accel_device_release_ref(accel_device_t *dev);
accel_status_t accel_device_check(accel_device_t *dev, const char *fn);

/* The device's calls into the rooms above it. A device owns streams, and its drain,
 * synchronize, teardown and fences (retire.c) act on them and check the capture rules, but the
 * stream (layer 4) and capture (layer 5) rooms sit above it: stream.c defines this table and
 * the device calls up through it instead of including stream.h or capture.h
 * (docs/ARCHITECTURE.md, "Rooms and layers"). The table is const: a call is one indirect call
 * through a pointer that never changes, and referencing the table links the stream room in
 * (no constructor to run first). */
typedef struct accel_device_stream_ops {
  /* accel_stream_create_internal and accel_stream_release_ref (stream.h) */
  accel_status_t (*create)(accel_device_t *dev, unsigned flags, bool is_default, bool internal,
                           accel_stream_t **out);
  void (*release)(accel_stream_t *s);
  /* The device's live streams, each retained (dev->lock is held only while listing them);
   * list_release drops them and frees the list. */
  accel_status_t (*list)(accel_device_t *dev, accel_stream_t ***out, size_t *n);
  void (*list_release)(accel_stream_t **streams, size_t n);
  /* Submits s's lazy queue unless s captures (takes s->lock). */
  accel_status_t (*flush)(accel_stream_t *s);
  /* accel_stream_sync_internal (stream.h): flush, then wait, without capture checks. */
  accel_status_t (*sync)(accel_stream_t *s);
  /* Under s->lock: flushes s unless it captures; when the backend still runs work of s, sets
   * *busy and, with record, *ev to a new backend event recorded after that work. False when a
   * step failed (nothing is left to destroy). */
  bool (*fence)(accel_stream_t *s, bool record, bool *busy, accel_be_event_t **ev);
  /* accel_capture_check_unsafe (capture.h): the capture rules of a waiting call. */
  accel_status_t (*check_unsafe)(const char *fn, accel_stream_t *s);
} accel_device_stream_ops_t;
extern const accel_device_stream_ops_t accel_device_stream_ops;

static inline accel_status_t accel_device_streams(accel_device_t *dev, accel_stream_t ***out,
                                                  size_t *n) {
  return accel_device_stream_ops.list(dev, out, n);
}
static inline void accel_device_streams_release(accel_stream_t **streams, size_t n) {
  accel_device_stream_ops.list_release(streams, n);
}

/* retire.c: fn(ctx) runs once the work submitted on the backend stream impl of dev before the
 * call has finished (a fence of one event on it; accel_stream_retire_locked, stream.h). */
void accel_device_retire_after(accel_device_t *dev, accel_be_stream_t *impl,
                               void (*fn)(void *ctx), void *ctx);
/* retire.c, accel_device_retire (kernel_support.h): fn(ctx) runs once every stream of the
 * device has finished the work submitted before the call (a fence of one backend event per
 * stream), without any lock held: at a later accel_device_reap that finds the fence complete,
 * or at once after a drain if the fence cannot be made. */
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

#endif
