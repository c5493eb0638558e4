/*
 * Streams. Every command runs to completion in the calling thread before the submitting call
 * returns, so stream order is program order and a stream is never busy. The core serialises
 * calls on one stream object; different streams may be driven from different threads at once,
 * which needs no locking here because a stream owns no mutable state.
 *
 * A backend with a real queue keeps the same contract asynchronously: memcpy_async must have
 * read a host source by the time the stream reaches the copy (the core keeps it alive until
 * then), host functions run on a host thread once earlier work finished and block later work,
 * and stream_query returns ACCEL_ERROR_NOT_READY while anything is pending.
 */
#include <stdlib.h>
#include <string.h>

#include "example_internal.h"

accel_status_t example_stream_create(accel_be_device_t *device, accel_be_stream_t **out) {
  example_stream_t *s = calloc(1, sizeof *s);
  if (!s)
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": calloc(%zu) for a stream failed", sizeof *s);
  s->device = device;
  *out = s;
  return ACCEL_OK;
}

void example_stream_destroy(accel_be_stream_t *stream) { free(stream); }

/* Nothing is ever pending: commands finished before their submitting call returned. */
accel_status_t example_stream_synchronize(accel_be_stream_t *stream) {
  (void)stream;
  return ACCEL_OK;
}

accel_status_t example_stream_query(accel_be_stream_t *stream) {
  (void)stream;
  return ACCEL_OK;
}

/* The event's record already completed (records complete immediately), so later work on
 * stream is ordered after it without waiting. */
accel_status_t example_stream_wait_event(accel_be_stream_t *stream, accel_be_event_t *event) {
  (void)stream;
  (void)event;
  return ACCEL_OK;
}

/* Every kind is a host-to-host copy here. The core has checked that both ranges lie inside
 * live allocations or are host memory, and that they do not overlap. */
accel_status_t example_memcpy_async(accel_be_stream_t *stream, void *dst, const void *src,
                                    size_t size, accel_copy_kind_t kind) {
  (void)stream;
  (void)kind;
  memcpy(dst, src, size);
  return ACCEL_OK;
}

accel_status_t example_memset_async(accel_be_stream_t *stream, void *dst, uint8_t value,
                                    size_t size) {
  (void)stream;
  memset(dst, value, size);
  return ACCEL_OK;
}

accel_status_t example_launch_host_func(accel_be_stream_t *stream, accel_host_fn_t fn,
                                        void *user) {
  (void)stream;
  fn(user);
  return ACCEL_OK;
}

/* accel's kernels (kernels/ in the source tree) are compiled per backend by the project's own
 * build: C for the CPU, fatbins for CUDA/HIP, OpenCL C and SPIR-V. An out-of-tree backend has
 * none of these, so it refuses every launch; accel_kernels.h calls then fail with this status
 * and message, and the CTS reports its kernel cases SKIPPED. */
accel_status_t example_launch_kernel(accel_be_stream_t *stream,
                                     const accel_kernel_launch_t *launch) {
  (void)stream;
  return example_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                 EXAMPLE_NAME ": kernel '%s' (id %u) is not available: this "
                                 "out-of-tree backend has no compiled accel kernels",
                                 launch->kernel_name ? launch->kernel_name : "?",
                                 launch->kernel_id);
}
