/* dlopen of the Level Zero loader (common/vendor_lib.h) and the ze_result_t names used
 * in error messages. */
#include "ze_loader.h"
#include "vendor_lib.h"

#include <stdio.h>
#include <string.h>

static const char *const accel_ze_lib_names[] = {"libze_loader.so.1", "libze_loader.so"};

int accel_ze_api_load(accel_ze_api_t *api, char *why, size_t why_size) {
  memset(api, 0, sizeof(*api));
  char tried[512];
  api->lib = accel_vendor_open(accel_ze_lib_names,
                               sizeof(accel_ze_lib_names) / sizeof(accel_ze_lib_names[0]),
                               &api->lib_name, tried, sizeof(tried));
  if (!api->lib) {
    snprintf(why, why_size, "dlopen: %s", tried);
    return 1;
  }
  const accel_vendor_symbol_t syms[] = {
#define ACCEL_ZE_SYMBOL(name, required) {#name, #name, (void **)&api->name, required},
      ACCEL_ZE_SYMBOLS(ACCEL_ZE_SYMBOL)
#undef ACCEL_ZE_SYMBOL
  };
  char missing[512];
  /* The handle stays open even on failure: a loader that failed here is not retried. */
  if (accel_vendor_resolve(api->lib, NULL, NULL, syms, sizeof(syms) / sizeof(syms[0]), missing,
                           sizeof(missing)) == 0)
    return 0;
  snprintf(why, why_size, "%s lacks required symbols: %s", api->lib_name, missing);
  return 1;
}

const char *accel_ze_result_name(ze_result_t r) {
  switch (r) {
#define N(x) \
  case x:    \
    return #x;
    N(ZE_RESULT_SUCCESS)
    N(ZE_RESULT_NOT_READY)
    N(ZE_RESULT_ERROR_DEVICE_LOST)
    N(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
    N(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
    N(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
    N(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
    N(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
    N(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
    N(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
    N(ZE_RESULT_ERROR_NOT_AVAILABLE)
    N(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
    N(ZE_RESULT_ERROR_UNINITIALIZED)
    N(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
    N(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    N(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    N(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
    N(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
    N(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
    N(ZE_RESULT_ERROR_INVALID_SIZE)
    N(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
    N(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
    N(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
    N(ZE_RESULT_ERROR_INVALID_ENUMERATION)
    N(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
    N(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)
    N(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)
    N(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
    N(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)
    N(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
    N(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION)
    N(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
    N(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
    N(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE)
    N(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED)
    N(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)
    N(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
    N(ZE_RESULT_ERROR_UNKNOWN)
#undef N
    default:
      return "ZE_RESULT_<unknown>";
  }
}
