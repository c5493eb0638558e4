/*
 * The prototypes of a backend's vtable functions (include/accel/accel_plugin.h), one list for
 * every in-tree backend instead of a copy of each slot's signature in each backend's header.
 * A backend names the function that fills a slot PREFIX_slot: ACCEL_BACKEND_DECLARE_EVENTS(cpu)
 * declares cpu_event_create, cpu_event_destroy, ... (the prefixes: cpu, acl, gpu, accel_ze).
 * The vtable's designated initializers check each function against its slot's type; those of
 * the groups every backend fills the same way are here too (ACCEL_BACKEND_VTABLE_HEAD,
 * ACCEL_BACKEND_SLOTS, ACCEL_BACKEND_SLOTS_NATIVE), so a vtable spells out only what is its own.
 * Also the plugins' one exported symbol, the same for every in-tree plugin
 * (ACCEL_BACKEND_DEFINE_QUERY).
 */
#ifndef ACCEL_COMMON_BACKEND_SLOTS_H
#define ACCEL_COMMON_BACKEND_SLOTS_H

#include <stddef.h>

#include "accel/accel_plugin.h"

/* backend_init, backend_shutdown, device_count, device_info, device_open, device_close */
#define ACCEL_BACKEND_DECLARE_DEVICES(P)                                                           \
  accel_status_t P##_backend_init(const accel_host_api_t *host, accel_be_backend_t **out);         \
  void P##_backend_shutdown(accel_be_backend_t *backend);                                          \
  accel_status_t P##_device_count(accel_be_backend_t *backend, int *count);                        \
  accel_status_t P##_device_info(accel_be_backend_t *backend, int index,                           \
                                 accel_device_info_t *info);                                       \
  accel_status_t P##_device_open(accel_be_backend_t *backend, int index, accel_be_device_t **out); \
  void P##_device_close(accel_be_device_t *device)

/* mem_alloc, mem_free, host_alloc, host_free, mem_info */
#define ACCEL_BACKEND_DECLARE_MEMORY(P)                                              \
  accel_status_t P##_mem_alloc(accel_be_device_t *device, size_t size, void **ptr);  \
  void P##_mem_free(accel_be_device_t *device, void *ptr);                           \
  accel_status_t P##_host_alloc(accel_be_device_t *device, size_t size, void **ptr); \
  void P##_host_free(accel_be_device_t *device, void *ptr);                          \
  accel_status_t P##_mem_info(accel_be_device_t *device, uint64_t *free_bytes,       \
                              uint64_t *total_bytes)

/* stream_create, stream_destroy, stream_synchronize, stream_query, stream_wait_event */
#define ACCEL_BACKEND_DECLARE_STREAMS(P)                                                \
  accel_status_t P##_stream_create(accel_be_device_t *device, accel_be_stream_t **out); \
  void P##_stream_destroy(accel_be_stream_t *stream);                                   \
  accel_status_t P##_stream_synchronize(accel_be_stream_t *stream);                     \
  accel_status_t P##_stream_query(accel_be_stream_t *stream);                           \
  accel_status_t P##_stream_wait_event(accel_be_stream_t *stream, accel_be_event_t *event)

/* memcpy_async, memset_async, launch_host_func, launch_kernel, submit_batch */
#define ACCEL_BACKEND_DECLARE_COMMANDS(P)                                                         \
  accel_status_t P##_memcpy_async(accel_be_stream_t *stream, void *dst, const void *src,          \
                                  size_t size, accel_copy_kind_t kind);                           \
  accel_status_t P##_memset_async(accel_be_stream_t *stream, void *dst, uint8_t value,            \
                                  size_t size);                                                   \
  accel_status_t P##_launch_host_func(accel_be_stream_t *stream, accel_host_fn_t fn, void *user); \
  accel_status_t P##_launch_kernel(accel_be_stream_t *stream,                                     \
                                   const accel_kernel_launch_t *launch);                          \
  accel_status_t P##_submit_batch(accel_be_stream_t *stream, const accel_cmd_t *cmds, size_t n)

/* event_create, event_destroy, event_record, event_synchronize, event_query, event_elapsed_ms */
#define ACCEL_BACKEND_DECLARE_EVENTS(P)                                                \
  accel_status_t P##_event_create(accel_be_device_t *device, unsigned flags,           \
                                  accel_be_event_t **out);                             \
  void P##_event_destroy(accel_be_event_t *event);                                     \
  accel_status_t P##_event_record(accel_be_event_t *event, accel_be_stream_t *stream); \
  accel_status_t P##_event_synchronize(accel_be_event_t *event);                       \
  accel_status_t P##_event_query(accel_be_event_t *event);                             \
  accel_status_t P##_event_elapsed_ms(accel_be_event_t *start, accel_be_event_t *end, float *ms)

/* graph_instantiate, graph_launch, graph_destroy */
#define ACCEL_BACKEND_DECLARE_GRAPHS(P)                                                    \
  accel_status_t P##_graph_instantiate(accel_be_device_t *device, const accel_cmd_t *cmds, \
                                       size_t n, accel_be_graph_t **out);                  \
  accel_status_t P##_graph_launch(accel_be_graph_t *graph, accel_be_stream_t *stream);     \
  void P##_graph_destroy(accel_be_graph_t *graph)

/* device_native, device_wrap_native, stream_native, stream_wrap_native, event_native,
 * stream_wait_native_event */
#define ACCEL_BACKEND_DECLARE_NATIVE(P)                                                            \
  accel_status_t P##_device_native(accel_be_device_t *device, accel_native_t *out);                \
  accel_status_t P##_device_wrap_native(accel_be_backend_t *backend, const accel_native_t *native, \
                                        int *index, accel_be_device_t **out);                      \
  accel_status_t P##_stream_native(accel_be_stream_t *stream, accel_native_t *out);                \
  accel_status_t P##_stream_wrap_native(accel_be_device_t *device, const accel_native_t *native,   \
                                        accel_be_stream_t **out);                                  \
  accel_status_t P##_event_native(accel_be_event_t *event, accel_native_t *out);                   \
  accel_status_t P##_stream_wait_native_event(accel_be_stream_t *stream, void *native_event)

/* The opening of a vtable: the plugin ABI it is built for, its size, its name and description. */
#define ACCEL_BACKEND_VTABLE_HEAD(name_, description_)                                    \
  .abi_version = ACCEL_PLUGIN_ABI_VERSION, .struct_size = sizeof(accel_backend_vtable_t), \
  .name = (name_), .description = (description_)

/* The initializers of the slots that every in-tree backend fills, each with P_slot: those of
 * ACCEL_BACKEND_DECLARE_DEVICES, _MEMORY, _STREAMS, _EVENTS, _COMMANDS and _GRAPHS. */
#define ACCEL_BACKEND_SLOTS(P)                                                                  \
  .backend_init = P##_backend_init, .backend_shutdown = P##_backend_shutdown,                   \
  .device_count = P##_device_count, .device_info = P##_device_info,                             \
  .device_open = P##_device_open, .device_close = P##_device_close, .mem_alloc = P##_mem_alloc, \
  .mem_free = P##_mem_free, .host_alloc = P##_host_alloc, .host_free = P##_host_free,           \
  .mem_info = P##_mem_info, .stream_create = P##_stream_create,                                 \
  .stream_destroy = P##_stream_destroy, .stream_synchronize = P##_stream_synchronize,           \
  .stream_query = P##_stream_query, .stream_wait_event = P##_stream_wait_event,                 \
  .event_create = P##_event_create, .event_destroy = P##_event_destroy,                         \
  .event_record = P##_event_record, .event_synchronize = P##_event_synchronize,                 \
  .event_query = P##_event_query, .event_elapsed_ms = P##_event_elapsed_ms,                     \
  .memcpy_async = P##_memcpy_async, .memset_async = P##_memset_async,                           \
  .launch_host_func = P##_launch_host_func, .launch_kernel = P##_launch_kernel,                 \
  .submit_batch = P##_submit_batch, .graph_instantiate = P##_graph_instantiate,                 \
  .graph_launch = P##_graph_launch, .graph_destroy = P##_graph_destroy

/* The initializers of ACCEL_BACKEND_DECLARE_NATIVE's slots, each with P_slot. */
#define ACCEL_BACKEND_SLOTS_NATIVE(P)                                               \
  .device_native = P##_device_native, .device_wrap_native = P##_device_wrap_native, \
  .stream_native = P##_stream_native, .stream_wrap_native = P##_stream_wrap_native, \
  .event_native = P##_event_native, .stream_wait_native_event = P##_stream_wait_native_event

/* The plugin's one exported symbol, accel_plugin_query: refuses a host of another plugin ABI
 * and a host service table that does not reach cache_dir (the newest service the in-tree
 * backends call), keeps the host in host_var and answers &vt. */
#define ACCEL_BACKEND_DEFINE_QUERY(vt, host_var)                                              \
  ACCEL_PLUGIN_EXPORT accel_status_t accel_plugin_query(                                      \
      uint32_t host_abi, const accel_host_api_t *host, const accel_backend_vtable_t **out) {  \
    if (!host || !out) return ACCEL_ERROR_INVALID_ARGUMENT;                                   \
    if (host_abi != ACCEL_PLUGIN_ABI_VERSION)                                                 \
      return host->set_error(ACCEL_ERROR_PLUGIN,                                              \
                             "%s plugin built for plugin ABI %u, host has ABI %u", (vt).name, \
                             ACCEL_PLUGIN_ABI_VERSION, host_abi);                             \
    if (host->struct_size < offsetof(accel_host_api_t, cache_dir) + sizeof host->cache_dir)   \
      return host->set_error(ACCEL_ERROR_PLUGIN,                                              \
                             "%s plugin: host service table too small (%u bytes)", (vt).name, \
                             host->struct_size);                                              \
    host_var = host;                                                                          \
    *out = &(vt);                                                                             \
    return ACCEL_OK;                                                                          \
  }

#endif
