/*
 * Core services used by the tensor operations (core/kernel_ops.c, kernel_validate.c,
 * chunk_table.c). Everything here is internal to libaccel.
 */
#ifndef ACCEL_CORE_KERNEL_SUPPORT_H
#define ACCEL_CORE_KERNEL_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "accel/accel_plugin.h"
#include "accel_kernel_ids.h"

/* Range i of a list of memory ranges (0: skip it). */
typedef int (*accel_range_fn)(void *ctx, size_t i, const void **ptr, size_t *size);

/* A reference-counted object that a recorded command keeps alive (e.g. a chunk table in device
 * memory used by a captured kernel). release() runs when the count drops to zero. */
typedef struct accel_keepalive {
  int refcount; /* atomic; use accel_keepalive_retain/release */
  void (*release)(struct accel_keepalive *self);
} accel_keepalive_t;

void accel_keepalive_retain(accel_keepalive_t *k);
void accel_keepalive_release(accel_keepalive_t *k);

/* Chunk-table entries a stream remembers (chunk_table.c): its last one per operation, so a
 * list repeated on the stream is found without the cache's lock. One per operation of the
 * kernel table (accel_kernel_list.h), then ACCEL_KOP_MEMO_USER_SLOTS that user kernels share by
 * launch id (ids are never reused: an entry found in a slot is the kernel's own or a miss). */
#define ACCEL_KOP_MEMO_USER_SLOTS 4
#define ACCEL_KOP_MEMO_SLOTS (ACCEL_KERNEL_TABLE_USERS + ACCEL_KOP_MEMO_USER_SLOTS)
/* The stream's ACCEL_KOP_MEMO_SLOTS slots (owned by chunk_table.c, accessed atomically). */
void **accel_stream_kop_memo(accel_stream_t *stream);
/* Drops what the stream remembers (stream teardown, before the device's kernel state). */
void accel_kernel_stream_forget(accel_stream_t *stream);

/* Validates a stream handle for an API entry point named fn. On failure sets the error message
 * and returns the status; on success *device receives the stream's device. */
accel_status_t accel_stream_check(accel_stream_t *stream, const char *fn,
                                  accel_device_t **device);

/* 1 when [ptr, ptr + size) lies inside one live device allocation of device (size 0: ptr must
 * be inside or one past a live allocation). */
int accel_device_range_is_valid(accel_device_t *device, const void *ptr, size_t size);
/* 1 when [ptr, ptr + size) lies in a read-only registration (accel_memory_register). */
int accel_device_range_is_read_only(accel_device_t *device, const void *ptr, size_t size);
/* Changes whenever a live device allocation is freed: ranges found valid stay valid while it
 * is unchanged (lock-free; see accel_allocator_free_generation). */
uint64_t accel_device_free_generation(accel_device_t *device);
/* accel_device_range_is_valid for ranges 0..n-1 under one lock of the allocator: range(ctx, i,
 * &ptr, &size) gives range i (returning 0 to skip it). The index of the first invalid range, or
 * SIZE_MAX when all are valid. */
size_t accel_device_ranges_valid(accel_device_t *device, size_t n, accel_range_fn range,
                                 void *ctx);

/* ACCEL_OK when the device's backend knows kernel id; else UNSUPPORTED with a message naming fn:
 * its plugin was built against an older kernel table (a smaller kernel_count). */
accel_status_t accel_device_check_kernel(accel_device_t *device, const char *fn, uint32_t id);

/* Enqueues a kernel launch on stream, going through capture, lazy queue, tracing and eager
 * submission. The launch (and its params) is copied. keep (may be NULL) is retained for as
 * long as a recorded copy of the launch exists (graph or lazy queue). ranges(ctx, i, ...) for
 * i < nranges give the memory the launch uses, asked for only when the launch is captured: the
 * capture pins the allocations under them, so memory a live graph uses is not freed under it. */
accel_status_t accel_enqueue_kernel(accel_stream_t *stream, const accel_kernel_launch_t *launch,
                                    accel_keepalive_t *keep, accel_range_fn ranges, void *ctx,
                                    size_t nranges);

/* A host operation: a host function whose lifetime the stream manages (collectives). run(op)
 * runs in stream order. Recorded (graph capture, lazy queue), the list holds a reference to
 * keep for as long as the recording exists and run may be called many times; dispatched
 * eagerly, the stream takes one reference that is dropped after the single run. The caller
 * keeps its own reference and drops it when it no longer needs op. ranges as for
 * accel_enqueue_kernel. */
typedef struct accel_host_op {
  accel_keepalive_t keep;
  void (*run)(struct accel_host_op *op);
  int oneshot; /* set under the stream's lock when dispatched eagerly */
} accel_host_op_t;
accel_status_t accel_enqueue_host_op(accel_stream_t *stream, const char *name,
                                     accel_host_op_t *op, accel_range_fn ranges, void *ctx,
                                     size_t nranges);

/* Runs run(ctx) on the calling thread as the stream's next command, when s is eager (not
 * capturing, not lazy), idle, and its backend lets the caller hold it (accel_plugin.h
 * stream_try_hold: on the CPU backend, a process bound to one CPU); work submitted to s by
 * other threads meanwhile starts after it, and a synchronize of s waits for it. Returns
 * false, having done nothing, otherwise (the caller then enqueues the work). s must have been
 * checked. Only for work that never waits for later work of this process (a host engine's
 * collective): the call returns once it has run. */
bool accel_stream_run_on_caller(accel_stream_t *stream, const char *name, void (*run)(void *ctx),
                                void *ctx);

/* Native work (ACCEL_CMD_NATIVE): enqueue(ctx, native stream) issues it on the vendor stream
 * under s. Eager: run at once (after earlier work was submitted). Captured or lazy: recorded
 * with a reference to keep (may be NULL when ctx needs none) when the backend sets
 * native_commands; otherwise a capture is refused with UNSUPPORTED and invalidated, and a lazy
 * queue is flushed first. ranges as for accel_enqueue_kernel (pinned by a capture). */
accel_status_t accel_enqueue_native(accel_stream_t *stream, const char *name,
                                    accel_status_t (*enqueue)(void *ctx,
                                                              const accel_native_t *stream),
                                    void *ctx, accel_keepalive_t *keep, accel_range_fn ranges,
                                    void *rctx, size_t nranges);

/* Internal device memory outside the caching allocator and the user's memory statistics
 * (chunk tables). Not stream ordered: free only memory no queued work still reads. */
accel_status_t accel_device_internal_alloc(accel_device_t *device, size_t size, void **ptr);
void accel_device_internal_free(accel_device_t *device, void *ptr);
/* Synchronous host->device upload of internal memory; allowed during capture (it is not part
 * of any stream's work). */
accel_status_t accel_device_upload(accel_device_t *device, void *dst, const void *src,
                                   size_t size);
/* Waits until every stream of the device drained (internal: no capture checks; holds no lock
 * while waiting). */
accel_status_t accel_device_drain(accel_device_t *device);
/* Calls fn(ctx) once every stream of the device finished the work submitted before this call,
 * without waiting here (core/retire.c). */
void accel_device_retire(accel_device_t *device, void (*fn)(void *ctx), void *ctx);

/* Per-device state owned by chunk_table.c (the chunk-table cache). The core calls
 * accel_kernel_state_destroy(device, state) when the device is torn down, after draining it. */
void **accel_device_kernel_state(accel_device_t *device);
void accel_kernel_state_destroy(accel_device_t *device, void *state);

/* Sets the thread's last-error message and returns status. */
accel_status_t accel_set_error(accel_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
