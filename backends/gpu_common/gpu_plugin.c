/* The plugin's one exported symbol and its vtable. */
#include "accel_kernel_abi_host.h"
#include "gpu_backend.h"

static const accel_backend_vtable_t gpu_vtable = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_backend_vtable_t),
    .name = GPU_BACKEND_NAME,
    .description = GPU_BACKEND_DESCRIPTION,
    .backend_init = gpu_backend_init,
    .backend_shutdown = gpu_backend_shutdown,
    .device_count = gpu_device_count,
    .device_info = gpu_device_info,
    .device_open = gpu_device_open,
    .device_close = gpu_device_close,
    .mem_alloc = gpu_mem_alloc,
    .mem_free = gpu_mem_free,
    .host_alloc = gpu_host_alloc,
    .host_free = gpu_host_free,
    .stream_create = gpu_stream_create,
    .stream_destroy = gpu_stream_destroy,
    .stream_synchronize = gpu_stream_synchronize,
    .stream_query = gpu_stream_query,
    .stream_wait_event = gpu_stream_wait_event,
    .event_create = gpu_event_create,
    .event_destroy = gpu_event_destroy,
    .event_record = gpu_event_record,
    .event_synchronize = gpu_event_synchronize,
    .event_query = gpu_event_query,
    .event_elapsed_ms = gpu_event_elapsed_ms,
    .memcpy_async = gpu_memcpy_async,
    .memset_async = gpu_memset_async,
    .launch_host_func = gpu_launch_host_func,
    .launch_kernel = gpu_launch_kernel,
    .submit_batch = gpu_submit_batch,
    .graph_instantiate = gpu_graph_instantiate,
    .graph_launch = gpu_graph_launch,
    .graph_destroy = gpu_graph_destroy,
    .device_synchronize = gpu_device_synchronize,
    .mem_info = gpu_mem_info,
    .visible_devices_env = GPU_VISIBLE_DEVICES_ENV,
    .dlpack_device_type = GPU_DLPACK_DEVICE_TYPE,
    .mem_register = gpu_mem_register, /* nothing to undo: no mem_unregister */
    .device_native = gpu_device_native,
    .device_wrap_native = gpu_device_wrap_native,
    .stream_native = gpu_stream_native,
    .stream_wrap_native = gpu_stream_wrap_native,
    .event_native = gpu_event_native,
    .stream_wait_native_event = gpu_stream_wait_native_event,
    .kernel_forms = ACCEL_KERNEL_FORM_NATIVE, /* embedded fatbin / code objects */
    .native_commands = 1, /* gpu_issue runs them; gpu_graph_instantiate captures them */
    .kernel_abi_version = ACCEL_KERNEL_ABI_VERSION,
    .kernel_count = ACCEL_KERNEL_COUNT,
    .comm_engine = GPU_COMM_ENGINE,
    .module_build = gpu_module_build, /* NVRTC / hiprtc (gpu_user.c) */
    .module_destroy = gpu_module_destroy,
};

ACCEL_BACKEND_DEFINE_QUERY(gpu_vtable, gpu_host)
