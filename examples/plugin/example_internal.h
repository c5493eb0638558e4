/*
 * The "example" backend: a complete out-of-tree accel plugin over host memory.
 *
 * Device memory is ordinary host memory and every stream executes its commands immediately, in
 * the calling thread, before the submitting call returns. That makes the backend synchronous:
 * a stream is always idle, an event is complete as soon as it is recorded, and a wait on an
 * event has nothing to wait for. Tensor kernels are refused with ACCEL_ERROR_UNSUPPORTED: an
 * out-of-tree backend has no compiled form of accel's kernels (see docs/PLUGINS.md).
 *
 * Built only against the installed header <accel/accel_plugin.h>; see the Makefile.
 */
#ifndef EXAMPLE_INTERNAL_H
#define EXAMPLE_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <accel/accel_plugin.h>

#define EXAMPLE_NAME "example"

/* The host's service table, kept by accel_plugin_query (the core passes the same table to
 * backend_init). Valid for the life of the process: plugins are never unloaded. */
extern const accel_host_api_t *example_host;

/* True when the host's table has `field`. The table only grows at its end, so a host built for
 * an older revision of the same ABI version has a smaller struct_size: check before using a
 * field that was added after the first revision. */
#define EXAMPLE_HOST_HAS(host, field) \
  ((host)->struct_size >= offsetof(accel_host_api_t, field) + sizeof((host)->field))

typedef struct example_backend {
  int device_count;
} example_backend_t;

typedef struct example_device {
  int index;
} example_device_t;

typedef struct example_stream {
  example_device_t *device;
} example_stream_t;

typedef struct example_event {
  /* CLOCK_MONOTONIC time of the last record, in ns. Atomic: one thread may record while
   * another computes an elapsed time. */
  _Atomic uint64_t recorded_ns;
} example_event_t;

/* example_device.c: backend and devices */
accel_status_t example_backend_init(const accel_host_api_t *host, accel_be_backend_t **out);
void example_backend_shutdown(accel_be_backend_t *backend);
accel_status_t example_device_count(accel_be_backend_t *backend, int *count);
accel_status_t example_device_info(accel_be_backend_t *backend, int index,
                                   accel_device_info_t *info);
accel_status_t example_device_open(accel_be_backend_t *backend, int index,
                                   accel_be_device_t **out);
void example_device_close(accel_be_device_t *device);
accel_status_t example_mem_info(accel_be_device_t *device, uint64_t *free_bytes,
                                uint64_t *total_bytes);

/* example_memory.c: raw allocations */
accel_status_t example_mem_alloc(accel_be_device_t *device, size_t size, void **ptr);
void example_mem_free(accel_be_device_t *device, void *ptr);
accel_status_t example_host_alloc(accel_be_device_t *device, size_t size, void **ptr);
void example_host_free(accel_be_device_t *device, void *ptr);

/* example_stream.c: streams and the commands they execute */
accel_status_t example_stream_create(accel_be_device_t *device, accel_be_stream_t **out);
void example_stream_destroy(accel_be_stream_t *stream);
accel_status_t example_stream_synchronize(accel_be_stream_t *stream);
accel_status_t example_stream_query(accel_be_stream_t *stream);
accel_status_t example_stream_wait_event(accel_be_stream_t *stream, accel_be_event_t *event);
accel_status_t example_memcpy_async(accel_be_stream_t *stream, void *dst, const void *src,
                                    size_t size, accel_copy_kind_t kind);
accel_status_t example_memset_async(accel_be_stream_t *stream, void *dst, uint8_t value,
                                    size_t size);
accel_status_t example_launch_host_func(accel_be_stream_t *stream, accel_host_fn_t fn,
                                        void *user);
accel_status_t example_launch_kernel(accel_be_stream_t *stream,
                                     const accel_kernel_launch_t *launch);

/* example_event.c: events */
accel_status_t example_event_create(accel_be_device_t *device, unsigned flags,
                                    accel_be_event_t **out);
void example_event_destroy(accel_be_event_t *event);
accel_status_t example_event_record(accel_be_event_t *event, accel_be_stream_t *stream);
accel_status_t example_event_synchronize(accel_be_event_t *event);
accel_status_t example_event_query(accel_be_event_t *event);
accel_status_t example_event_elapsed_ms(accel_be_event_t *start, accel_be_event_t *end,
                                        float *ms);

#endif /* EXAMPLE_INTERNAL_H */
