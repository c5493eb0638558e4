/*
 * The plugin's one exported symbol and its vtable.
 *
 * The loader dlopen's libaccel-example.so (RTLD_NOW | RTLD_LOCAL), calls accel_plugin_query,
 * checks the vtable (ABI version, struct_size, required slots, name) and copies it. Everything
 * else in this plugin is static or hidden (-fvisibility=hidden): no symbol can clash with the
 * application, libaccel or another plugin.
 */
#include "example_internal.h"

const accel_host_api_t *example_host;

static const accel_backend_vtable_t example_vtable = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_backend_vtable_t),
    .name = EXAMPLE_NAME,
    .description = "example out-of-tree backend: host memory, a worker thread per stream, "
                   "accel's kernels through the host's portable C form",

    .backend_init = example_backend_init,
    .backend_shutdown = example_backend_shutdown,
    .device_count = example_device_count,
    .device_info = example_device_info,
    .device_open = example_device_open,
    .device_close = example_device_close,

    .mem_alloc = example_mem_alloc,
    .mem_free = example_mem_free,
    .host_alloc = example_host_alloc,
    .host_free = example_host_free,

    .stream_create = example_stream_create,
    .stream_destroy = example_stream_destroy,
    .stream_synchronize = example_stream_synchronize,
    .stream_query = example_stream_query,
    .stream_wait_event = example_stream_wait_event,

    .event_create = example_event_create,
    .event_destroy = example_event_destroy,
    .event_record = example_event_record,
    .event_synchronize = example_event_synchronize,
    .event_query = example_event_query,
    .event_elapsed_ms = example_event_elapsed_ms,

    .memcpy_async = example_memcpy_async,
    .memset_async = example_memset_async,
    .launch_host_func = example_launch_host_func,
    .launch_kernel = example_launch_kernel,

    /* Optional slots left NULL on purpose, each with the core's fallback:
     *   submit_batch       -> the core issues batched commands one by one (graph replays and
     *                         lazy flushes included); queueing one by one is cheap here.
     *   graph_instantiate,
     *   graph_launch,
     *   graph_destroy      -> graphs replay from the core's recorder (never a no-op).
     *   device_synchronize -> the core synchronizes every stream of the device. */
    .mem_info = example_mem_info,
    .visible_devices_env = NULL, /* no vendor runtime selecting devices */
    .kernel_forms = ACCEL_KERNEL_FORM_HOST_C,
    .device_score = NULL, /* a host-memory device of type OTHER: never ahead of the cpu */
    /* The kernel ABI this plugin was built with: a libaccel of another version refuses to load
     * it, and never launches a kernel newer than these on it (docs/PLUGINS.md). */
    .kernel_abi_version = ACCEL_KERNEL_ABI_VERSION,
    .kernel_count = ACCEL_KERNEL_ID_COUNT,
};

ACCEL_PLUGIN_EXPORT accel_status_t accel_plugin_query(uint32_t host_abi,
                                                      const accel_host_api_t *host,
                                                      const accel_backend_vtable_t **out) {
  /* A host of another ABI version refuses this vtable itself, naming both versions, and never
   * calls into the plugin: only look at its table when the versions agree. */
  if (host_abi == ACCEL_PLUGIN_ABI_VERSION) {
    if (!host || !EXAMPLE_HOST_HAS(host, set_error) || !EXAMPLE_HOST_HAS(host, log))
      return ACCEL_ERROR_PLUGIN;
    example_host = host;
  }
  *out = &example_vtable;
  return ACCEL_OK;
}
