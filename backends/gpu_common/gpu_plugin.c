/* The plugin's one exported symbol and its vtable. */
#include "accel_kernel_abi_host.h"
#include "gpu_backend.h"

static const accel_backend_vtable_t gpu_vtable = {
    ACCEL_BACKEND_VTABLE_HEAD(GPU_BACKEND_NAME, GPU_BACKEND_DESCRIPTION),
    ACCEL_BACKEND_SLOTS(gpu),
    ACCEL_BACKEND_SLOTS_NATIVE(gpu),
    .device_synchronize = gpu_device_synchronize,
    .visible_devices_env = GPU_VISIBLE_DEVICES_ENV,
    .dlpack_device_type = GPU_DLPACK_DEVICE_TYPE,
    .mem_register = gpu_mem_register, /* nothing to undo: no mem_unregister */
    .kernel_forms = ACCEL_KERNEL_FORM_NATIVE, /* embedded fatbin / code objects */
    .native_commands = 1, /* gpu_issue runs them; gpu_graph_instantiate captures them */
    .kernel_abi_version = ACCEL_KERNEL_ABI_VERSION,
    .kernel_count = ACCEL_KERNEL_COUNT,
    .comm_engine = GPU_COMM_ENGINE,
    .device_attribute = gpu_device_attribute,
    .graph_update = gpu_graph_update, /* cuGraphExecUpdate / hipGraphExecUpdate */
    .conditionals = 1, /* predicated (gpu_predicate.c; device_attribute says so) */
    .module_build = gpu_module_build, /* NVRTC / hiprtc (gpu_user.c) */
    .module_destroy = gpu_module_destroy,
};

ACCEL_BACKEND_DEFINE_QUERY(gpu_vtable, gpu_host)
