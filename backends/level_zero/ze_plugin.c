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
    ACCEL_BACKEND_VTABLE_HEAD("level_zero",
                              "oneAPI Level Zero (USM, SPIR-V kernels, lazy by default)"),
    ACCEL_BACKEND_SLOTS(accel_ze),
    ACCEL_BACKEND_SLOTS_NATIVE(accel_ze),
    .device_synchronize = NULL, /* the core synchronizes each stream */
    .visible_devices_env = "ZE_AFFINITY_MASK",
    .dlpack_device_type = ACCEL_DL_ONEAPI,
    .mem_register = accel_ze_mem_register, /* nothing to undo: no mem_unregister */
    .kernel_forms = ACCEL_KERNEL_FORM_NATIVE, /* the SPIR-V module, embedded */
    .kernel_abi_version = ACCEL_KERNEL_ABI_VERSION,
    .kernel_count = ACCEL_KERNEL_COUNT,
    .comm_engine = "oneccl", /* collectives on its immediate command lists */
    .module_build = accel_ze_module_build, /* clang + llvm-spirv at run time (ze_user.c) */
    .module_destroy = accel_ze_module_destroy,
    .graph_update = accel_ze_graph_update, /* mutable command lists (ze_mutable.h) */
    .device_attribute = accel_ze_device_attribute,
};

ACCEL_BACKEND_DEFINE_QUERY(accel_ze_vtable, accel_ze_host)
