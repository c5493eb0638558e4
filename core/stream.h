/*
 * Layer 4, stream (docs/ARCHITECTURE.md, "Rooms and layers"): a stream with its submission
 * lock, the capture it records into (opaque here: capture.h) and its lazy queue and graph cache
 * (driven by lazy.c, through the slot below).
 */
#ifndef ACCEL_CORE_STREAM_H
#define ACCEL_CORE_STREAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel_plugin.h"
#include "cmdlist.h"
#include "device.h"
#include "handle.h"
#include "kernel_support.h"

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
void accel_stream_release_ref(accel_stream_t *s);
/* Submits one command on a non-capturing stream: eager dispatch or lazy append (caller holds
 * s->lock). */
accel_status_t accel_stream_submit_locked(accel_stream_t *s, const accel_cmd_t *cmd,
                                          accel_keepalive_t *keep);
/* Synchronize without capture checks (internal, caller does not hold s->lock). */
accel_status_t accel_stream_sync_internal(accel_stream_t *s);
/* Issues a command list on a stream as one batch (submit_batch or one by one). */
accel_status_t accel_stream_run_batch(accel_stream_t *s, const accel_cmd_t *cmds, size_t n);
/* Submits a queued lazy sequence (caller holds s->lock). Lazy mode is a room above the stream
 * (lazy.c, layer 5, docs/ARCHITECTURE.md): it fills this slot when libaccel is loaded, and the
 * stream, device, event and retire code call up through it instead of including lazy.c's
 * header. */
extern accel_status_t (*accel_lazy_flush_slot)(accel_stream_t *s);
static inline accel_status_t accel_lazy_flush_locked(accel_stream_t *s) {
  return accel_lazy_flush_slot(s);
}
/* accel_device_retire for something only the work on s uses (a lazy stream's cached graph):
 * the fence is one event on s. The caller holds s->lock. */
static inline void accel_stream_retire_locked(accel_stream_t *s, void (*fn)(void *ctx),
                                              void *ctx) {
  accel_device_retire_after(s->dev, s->impl, fn, ctx);
}
/* The stream's and the events' calls into the capture room. The one submission path records
 * into a capture and pins the memory it uses, waits and queries apply the capture rules, and an
 * event recorded or waited inside a capture joins it; capture (layer 5) sits above the stream
 * and the event (layer 4), so capture.c defines this table and stream.c and event.c call up
 * through it instead of including capture.h (docs/ARCHITECTURE.md, "Rooms and layers"). The
 * table is const: a call is one indirect call through a pointer that never changes, and
 * referencing the table links the capture room in (no constructor to run first). Each slot is
 * the capture.h function of its name. */
typedef struct accel_capture_ops {
  accel_status_t (*check_unsafe)(const char *fn, accel_stream_t *s);
  accel_status_t (*record_locked)(accel_stream_t *s, const accel_cmd_t *cmd,
                                  accel_keepalive_t *keep);
  accel_status_t (*pin_locked)(accel_stream_t *s, accel_range_fn ranges, void *ctx, size_t n,
                               const accel_allocator_pins_t *more);
  void (*invalidate)(accel_capture_t *c, const char *fmt, ...)
      __attribute__((format(printf, 2, 3)));
  void (*release)(accel_capture_t *c);
  accel_status_t (*event_record_locked)(accel_stream_t *s, accel_event_t *e);
  accel_status_t (*event_wait_locked)(accel_stream_t *s, accel_capture_t *ec, uint32_t slot);
  accel_capture_t *(*event_capture_get)(accel_event_t *e, uint32_t *slot);
} accel_capture_ops_t;
extern const accel_capture_ops_t accel_capture_ops;
/* Which way a copy between dst and src goes, as dev sees the two pointers. */
accel_copy_kind_t accel_copy_kind(accel_device_t *dev, void *dst, const void *src);

#endif
