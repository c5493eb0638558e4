/*
 * Streams of the CPU backend: an asynchronous in-order queue (cpu_queue.h) drained by one
 * worker thread per stream.
 *
 * Holding (stream_try_hold): while the stream is idle, the core may run a host engine's
 * collective on the calling thread as the stream's next command; entries submitted meanwhile
 * wait in the queue until stream_release_hold, so stream order holds without making other
 * submitters wait.
 *
 * The worker executes entries in order. When the queue is empty it spins briefly, then sleeps
 * (cpu_sync.h); a producer only pays for a wake-up when the worker actually sleeps. Waiting for
 * the stream (synchronize) spins and sleeps the same way on the `completed` counter.
 */
#ifndef ACCEL_CPU_STREAM_H
#define ACCEL_CPU_STREAM_H

#include <pthread.h>
#include <stdatomic.h>

#include "accel/accel_plugin.h"
#include "backend_slots.h"
#include "cpu_device.h"
#include "cpu_queue.h"
#include "cpu_sync.h"

/* A stream's hold (stream_try_hold): ENDING while stream_release_hold still uses the stream
 * after the holder is done with it (synchronize and destroy wait for NONE). */
typedef enum cpu_hold_state { CPU_HOLD_NONE, CPU_HOLD_HELD, CPU_HOLD_ENDING } cpu_hold_state_t;

typedef struct cpu_stream {
  cpu_device_t *device;
  cpu_queue_t queue;
  cpu_notifier_t work_available; /* the worker sleeps here when the queue is empty */
  cpu_notifier_t work_done;      /* synchronize callers sleep here */
  cpu_notifier_t hold_released;  /* the worker sleeps here when a command waits for a hold */
  atomic_int shutdown;
  atomic_int held; /* a caller runs the next command: cpu_hold_state_t (stream_try_hold) */
  pthread_t worker;
} cpu_stream_t;

/* Producer side, used by every enqueueing entry point: reserve an entry (ACCEL_ERROR_OUT_OF_
 * MEMORY with a message naming `what` on failure), fill entry->op and entry->heap, submit. */
accel_status_t cpu_stream_reserve(cpu_stream_t *stream, const char *what, cpu_entry_t **entry);
void cpu_stream_submit(cpu_stream_t *stream);
/* Reserve, fill and submit in one call, for ops that keep nothing inside the entry: queues a
 * copy of op, whose entry then owns heap (may be NULL). On failure nothing is queued and the
 * caller keeps heap. */
accel_status_t cpu_stream_enqueue(cpu_stream_t *stream, const char *what, const cpu_op_t *op,
                                  void *heap);

/* vtable entry points: stream objects (cpu_stream.c) */
ACCEL_BACKEND_DECLARE_STREAMS(cpu);
int cpu_stream_try_hold(accel_be_stream_t *stream);
void cpu_stream_release_hold(accel_be_stream_t *stream);

/* vtable entry points: commands (cpu_submit.c) */
ACCEL_BACKEND_DECLARE_COMMANDS(cpu);

/* Converts cmds[0, n) into one heap block (free() it) that starts with the op list and holds
 * every kernel's parameter copy; *count ops. skip_events: EVENT_RECORD/EVENT_WAIT edges of a
 * graph are dropped (the list runs in order on one stream), otherwise they are an error. */
accel_status_t cpu_ops_build(const accel_host_api_t *host, const char *what,
                             const accel_cmd_t *cmds, size_t n, int skip_events,
                             cpu_op_t **ops, size_t *count);

#endif
