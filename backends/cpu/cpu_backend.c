#include "cpu_backend.h"

#include "cpu_device.h"
#include "cpu_event.h"
#include "cpu_graph.h"
#include "cpu_module.h"
#include "cpu_stream.h"

static const accel_backend_vtable_t cpu_vtable = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_backend_vtable_t),
    .name = "cpu",
    .description = "built-in CPU backend: asynchronous stream workers and a thread pool",
    .backend_init = cpu_backend_init,
    .backend_shutdown = cpu_backend_shutdown,
    .device_count = cpu_device_count,
    .device_info = cpu_device_info,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_synchronize,
    .stream_query = cpu_stream_query,
    .stream_wait_event = cpu_stream_wait_event,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_synchronize = cpu_event_synchronize,
    .event_query = cpu_event_query,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .memcpy_async = cpu_memcpy_async,
    .memset_async = cpu_memset_async,
    .launch_host_func = cpu_launch_host_func,
    .launch_kernel = cpu_launch_kernel,
    .submit_batch = cpu_submit_batch,
    .graph_instantiate = cpu_graph_instantiate,
    .graph_launch = cpu_graph_launch,
    .graph_destroy = cpu_graph_destroy,
    .graph_update = cpu_graph_update, /* in place (cpu_graph.h) */
    .conditionals = 1,                /* the queue worker reads the flag (cpu_ops_run) */
    .device_synchronize = NULL,
    .mem_info = cpu_mem_info,
    .dlpack_device_type = ACCEL_DL_CPU, /* registers host memory as is: no mem_register */
    .kernel_forms = ACCEL_KERNEL_FORM_NATIVE,
    .stream_try_hold = cpu_stream_try_hold,
    .stream_release_hold = cpu_stream_release_hold,
    /* comm_engine NULL: the host engine (MPI) works on its memory */
    .no_native_reason = "it runs on host threads: there is no vendor object; host memory is "
                        "usable as is",
    .module_build = cpu_module_build, /* the system C compiler (cpu_module.h) */
    .module_destroy = cpu_module_destroy,
};

const accel_backend_vtable_t *accel_cpu_backend_vtable(void) { return &cpu_vtable; }
