/* The plugin entry point and the backend vtable of the Level Zero backend. */
#include <stdio.h>

#include "accel_kernel_abi_host.h"
#include "ze_internal.h"

const accel_host_api_t *accel_ze_host;

accel_status_t accel_ze_fail(const char *call, ze_result_t r) {
  accel_status_t st = (r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY ||
                       r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
                          ? ACCEL_ERROR_OUT_OF_MEMORY
                          : ACCEL_ERROR_BACKEND;
  return accel_ze_host->set_error(st, "%s failed: %s (0x%x)", call, accel_ze_result_name(r),
                                  (unsigned)r);
}

accel_status_t accel_ze_poll_result(const char *call, ze_result_t r) {
  if (r == ZE_RESULT_SUCCESS) return ACCEL_OK;
  if (r == ZE_RESULT_NOT_READY) return ACCEL_ERROR_NOT_READY;
  return accel_ze_fail(call, r);
}

static const accel_backend_vtable_t accel_ze_vtable = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_backend_vtable_t),
    .name = "level_zero",
    .description = "oneAPI Level Zero (USM, SPIR-V kernels, lazy by default)",
    .backend_init = accel_ze_backend_init,
    .backend_shutdown = accel_ze_backend_shutdown,
    .device_count = accel_ze_device_count,
    .device_info = accel_ze_device_info,
    .device_open = accel_ze_device_open,
    .device_close = accel_ze_device_close,
    .mem_alloc = accel_ze_mem_alloc,
    .mem_free = accel_ze_mem_free,
    .host_alloc = accel_ze_host_alloc,
    .host_free = accel_ze_host_free,
    .stream_create = accel_ze_stream_create,
    .stream_destroy = accel_ze_stream_destroy,
    .stream_synchronize = accel_ze_stream_synchronize,
    .stream_query = accel_ze_stream_query,
    .stream_wait_event = accel_ze_stream_wait_event,
    .event_create = accel_ze_event_create,
    .event_destroy = accel_ze_event_destroy,
    .event_record = accel_ze_event_record,
    .event_synchronize = accel_ze_event_synchronize,
    .event_query = accel_ze_event_query,
    .event_elapsed_ms = accel_ze_event_elapsed_ms,
    .memcpy_async = accel_ze_memcpy_async,
    .memset_async = accel_ze_memset_async,
    .launch_host_func = accel_ze_launch_host_func,
    .launch_kernel = accel_ze_launch_kernel,
    .submit_batch = accel_ze_submit_batch,
    .graph_instantiate = accel_ze_graph_instantiate,
    .graph_launch = accel_ze_graph_launch,
    .graph_destroy = accel_ze_graph_destroy,
    .device_synchronize = NULL, /* the core synchronizes each stream */
    .mem_info = accel_ze_mem_info,
    .visible_devices_env = "ZE_AFFINITY_MASK",
    .dlpack_device_type = ACCEL_DL_ONEAPI,
    .mem_register = accel_ze_mem_register, /* nothing to undo: no mem_unregister */
    .device_native = accel_ze_device_native,
    .device_wrap_native = accel_ze_device_wrap_native,
    .stream_native = accel_ze_stream_native,
    .stream_wrap_native = accel_ze_stream_wrap_native,
    .event_native = accel_ze_event_native,
    .stream_wait_native_event = accel_ze_stream_wait_native_event,
    .kernel_forms = ACCEL_KERNEL_FORM_NATIVE, /* the SPIR-V module, embedded */
    .kernel_abi_version = ACCEL_KERNEL_ABI_VERSION,
    .kernel_count = ACCEL_KERNEL_COUNT,
    .comm_engine = "oneccl", /* collectives on its immediate command lists */
    .module_build = accel_ze_module_build, /* clang + llvm-spirv at run time (ze_user.c) */
    .module_destroy = accel_ze_module_destroy,
};

ACCEL_BACKEND_DEFINE_QUERY(accel_ze_vtable, accel_ze_host)
