/*
 * The "example" backend: a complete out-of-tree accel plugin over host memory.
 *
 * Device memory is ordinary host memory. Every stream is an in-order queue with its own worker
 * thread, so work is asynchronous as on a real device: a stream is busy while its queue is not
 * empty, an event completes when the worker reaches its record, and a wait on an event blocks
 * the waiting stream's worker. Tensor kernels run through the host's portable C kernels
 * (host->run_kernel_c, kernel form ACCEL_KERNEL_FORM_HOST_C), which need host-accessible
 * device memory: exactly what this device has.
 *
 * Built only against the installed headers <accel/accel_plugin.h> and
 * <accel/accel_kernel_abi.h>; see the Makefile.
 */
#ifndef EXAMPLE_INTERNAL_H
#define EXAMPLE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <accel/accel_kernel_abi.h>
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

/* One record of an event: completed when the recording stream's worker reaches it. Shared by
 * the event (its last record), the queued record command and every queued wait on it, each
 * holding a reference, so an event may be destroyed or re-recorded while they are pending. */
typedef struct example_fence {
  atomic_int refs;
  int done;         /* under the fence lock (example_event.c) */
  uint64_t done_ns; /* CLOCK_MONOTONIC at completion */
} example_fence_t;

typedef struct example_cmd example_cmd_t; /* a queued command (example_stream.c) */

typedef struct example_stream {
  example_device_t *device;
  pthread_t worker;
  pthread_mutex_t lock;
  pthread_cond_t changed; /* a command was queued or completed, or stop was set */
  example_cmd_t *head, *tail;
  uint64_t submitted, completed; /* commands queued / finished, under lock */
  int stop;
  /* A command that failed on the worker (a deferred device error): reported once, by the next
   * stream_synchronize; the stream stays usable. */
  accel_status_t deferred;
  char deferred_message[256];
} example_stream_t;

typedef struct example_event {
  example_fence_t *last; /* the last record, NULL before the first; under the fence lock */
} example_event_t;

/* example_event.c: fences */
example_fence_t *example_fence_new(void);
void example_fence_release(example_fence_t *fence);
void example_fence_signal(example_fence_t *fence);
void example_fence_wait(example_fence_t *fence);
/* A new reference to event's last record (NULL when never recorded). */
example_fence_t *example_event_last(example_event_t *event);
/* Makes fence (one reference passed in) the event's last record. */
void example_event_set_last(example_event_t *event, example_fence_t *fence);

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
/* Queues a record of fence (one reference passed in) on stream (example_event_record). */
accel_status_t example_stream_record(example_stream_t *stream, example_fence_t *fence);
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
