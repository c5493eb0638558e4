/*
 * The SPIR-V kernel module: compiled at build time from the shared OpenCL C source (clang ->
 * llvm-spirv, see meson.build), embedded, and turned into a device module on first use.
 */
#include <stdlib.h>
#include <string.h>

#include "ze_internal.h"

#if ACCEL_ZE_HAVE_SPIRV
#include "accel_ze_spirv.h"
#endif

/* Copies the build log into the error message (truncated to what fits). */
static accel_status_t accel_ze_build_failed(const accel_ze_api_t *api, ze_result_t r,
                                            ze_module_build_log_handle_t log) {
  char *text = NULL;
  size_t size = 0;
  if (log && api->zeModuleBuildLogGetString(log, &size, NULL) == ZE_RESULT_SUCCESS && size) {
    text = malloc(size);
    if (text && api->zeModuleBuildLogGetString(log, &size, text) != ZE_RESULT_SUCCESS) {
      free(text);
      text = NULL;
    }
  }
  if (log) api->zeModuleBuildLogDestroy(log);
  accel_status_t st = accel_ze_host->set_error(
      ACCEL_ERROR_BACKEND, "zeModuleCreate(ZE_MODULE_FORMAT_IL_SPIRV) failed: %s (0x%x); build log: %s",
      accel_ze_result_name(r), (unsigned)r, text && text[0] ? text : "(empty)");
  free(text);
  return st;
}

accel_status_t accel_ze_spirv_module(accel_ze_device_t *dev, const void *spv, size_t size,
                                    ze_module_handle_t *out) {
  const accel_ze_api_t *api = dev->api;
  ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_IL_SPIRV,
                           .inputSize = size,
                           .pInputModule = spv,
                           /* exact IEEE division and sqrt, no fast math: bitwise identical
                            * results across backends */
                           .pBuildFlags = "-cl-fp32-correctly-rounded-divide-sqrt"};
  ze_module_build_log_handle_t log = NULL;
  ze_result_t r = api->zeModuleCreate(dev->ctx, dev->dev, &desc, out, &log);
  if (r != ZE_RESULT_SUCCESS) {
    *out = NULL;
    return accel_ze_build_failed(api, r, log);
  }
  if (log) api->zeModuleBuildLogDestroy(log);
  return ACCEL_OK;
}

accel_status_t accel_ze_kernel_create(accel_ze_device_t *dev, ze_module_handle_t module,
                                      const char *name, ze_kernel_handle_t *out) {
  const accel_ze_api_t *api = dev->api;
  ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = name};
  ze_result_t r = api->zeKernelCreate(module, &kd, out);
  if (r != ZE_RESULT_SUCCESS) {
    *out = NULL;
    return accel_ze_host->set_error(ACCEL_ERROR_BACKEND,
                                    "zeKernelCreate(\"%s\") failed: %s (0x%x)", name,
                                    accel_ze_result_name(r), (unsigned)r);
  }
  ACCEL_ZE_TRY(api, zeKernelSetGroupSize, *out, ACCEL_KERNEL_BLOCK, 1, 1);
  /* Kernels read tensor pointers from chunk tables in device memory: indirect access. */
  ACCEL_ZE_TRY(api, zeKernelSetIndirectAccess, *out,
               ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE | ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST);
  return ACCEL_OK;
}

#if ACCEL_ZE_HAVE_SPIRV
static accel_status_t accel_ze_create_kernels(accel_ze_device_t *dev) {
  for (int i = 0; i < ACCEL_KERNEL_COUNT; ++i) {
    accel_status_t st = accel_ze_kernel_create(dev, dev->module, accel_kernel_names[i],
                                               &dev->kernels[i]);
    if (st != ACCEL_OK) return st;
  }
  return ACCEL_OK;
}
#endif

/* Called with kernel_lock held. A failed build is not cached: the next launch retries. */
static accel_status_t accel_ze_module_ensure(accel_ze_device_t *dev) {
  if (dev->module) return ACCEL_OK;
#if ACCEL_ZE_HAVE_SPIRV
  if (accel_ze_host->fault_should_fail(ACCEL_FAULT_KERNEL_BUILD))
    return accel_ze_host->set_error(ACCEL_ERROR_BACKEND,
                                    "zeModuleCreate(ZE_MODULE_FORMAT_IL_SPIRV) failed: injected fault");
  accel_status_t st = accel_ze_spirv_module(dev, accel_ze_spirv, accel_ze_spirv_size, &dev->module);
  if (st != ACCEL_OK) return st;
  st = accel_ze_create_kernels(dev);
  if (st != ACCEL_OK) accel_ze_module_release(dev);
  return st;
#else
  (void)dev;
  return accel_ze_host->set_error(ACCEL_ERROR_UNAVAILABLE,
                                  "level_zero plugin was built without the SPIR-V kernel module "
                                  "(the kernels_cl_flat source was not part of the build)");
#endif
}

void accel_ze_module_release(accel_ze_device_t *dev) {
  for (int i = 0; i < ACCEL_KERNEL_COUNT; ++i) {
    if (dev->kernels[i]) dev->api->zeKernelDestroy(dev->kernels[i]);
    dev->kernels[i] = NULL;
  }
  if (dev->module) dev->api->zeModuleDestroy(dev->module);
  dev->module = NULL;
}

static accel_status_t accel_ze_append_kernel_locked(accel_ze_device_t *dev,
                                                    ze_command_list_handle_t list,
                                                    const accel_kernel_launch_t *launch,
                                                    uint64_t *mutable_id) {
  ze_kernel_handle_t k = NULL;
  accel_status_t st = launch->kernel_id >= ACCEL_KERNEL_ID_USER_BASE
                          ? accel_ze_user_kernel_locked(dev, launch->kernel_id, &k)
                          : accel_ze_module_ensure(dev);
  if (st != ACCEL_OK) return st;
  if (!k && launch->kernel_id >= ACCEL_KERNEL_COUNT)
    return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                    "level_zero: kernel id %u (%s) not in this plugin's module",
                                    launch->kernel_id, launch->kernel_name);
  const accel_ze_api_t *api = dev->api;
  if (!k) k = dev->kernels[launch->kernel_id];
  /* Argument values are captured at append time, so the kernel object can be reused. */
  ACCEL_ZE_TRY(api, zeKernelSetArgumentValue, k, 0, launch->params_size, launch->params);
  /* The OpenCL C form's second argument, the predicate of conditional regions
   * (prelude_opencl.h): NULL, as this plugin has no conditional regions. */
  void *const no_predicate = NULL;
  ACCEL_ZE_TRY(api, zeKernelSetArgumentValue, k, 1, sizeof no_predicate, &no_predicate);
  const ze_group_count_t count = accel_ze_group_count(dev, launch->num_blocks);
  if (mutable_id) { /* the id names the very next command appended */
    st = accel_ze_mcl_next_id(dev, list, mutable_id);
    if (st != ACCEL_OK) return st;
  }
  ACCEL_ZE_TRY(api, zeCommandListAppendLaunchKernel, list, k, &count, NULL, 0, NULL);
  return ACCEL_OK;
}

accel_status_t accel_ze_append_kernel(accel_ze_device_t *dev, ze_command_list_handle_t list,
                                      const accel_kernel_launch_t *launch, uint64_t *mutable_id) {
  pthread_mutex_lock(&dev->kernel_lock);
  accel_status_t st = accel_ze_append_kernel_locked(dev, list, launch, mutable_id);
  pthread_mutex_unlock(&dev->kernel_lock);
  return st;
}
