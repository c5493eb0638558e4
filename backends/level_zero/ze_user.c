/*
 * User kernels on Level Zero (accel_module.h; the vtable's module_build): the module's SPIR-V
 * (ze_spirv.c) becomes a device module with zeModuleCreate(ZE_MODULE_FORMAT_IL_SPIRV), whose
 * build log goes into the error; each kernel is created with the group size and indirect access
 * of the table's kernels and bound to its launch id. Modules stay until the device closes (a
 * graph may replay a kernel after its module's release).
 */
#include <stdlib.h>
#include <string.h>

#include "ze_internal.h"

/* A device's user kernels: the modules and the kernels by launch id (kernel_lock). */
struct accel_ze_user {
  ze_module_handle_t *modules;
  size_t nmodules;
  ze_kernel_handle_t *kernels; /* [id - ACCEL_KERNEL_ID_USER_BASE] */
  size_t cap;
};

/* Binds kernel k of module to id in dev's table (kernel_lock held); 0 without memory. */
static int user_bind_locked(accel_ze_device_t *dev, uint32_t id, ze_kernel_handle_t k) {
  struct accel_ze_user *u = dev->user;
  const size_t i = id - ACCEL_KERNEL_ID_USER_BASE;
  if (i >= u->cap) {
    size_t cap = u->cap ? u->cap : 64;
    while (cap <= i) cap *= 2;
    ze_kernel_handle_t *grown = realloc(u->kernels, cap * sizeof *grown);
    if (!grown) return 0;
    memset(grown + u->cap, 0, (cap - u->cap) * sizeof *grown);
    u->kernels = grown;
    u->cap = cap;
  }
  u->kernels[i] = k;
  return 1;
}

/* Keeps module in dev with its kernels bound to their ids; on failure nothing is kept. */
static accel_status_t user_keep(accel_ze_device_t *dev, ze_module_handle_t module,
                                const accel_module_build_t *b, ze_kernel_handle_t *ks) {
  pthread_mutex_lock(&dev->kernel_lock);
  if (!dev->user) dev->user = calloc(1, sizeof *dev->user);
  struct accel_ze_user *u = dev->user;
  ze_module_handle_t *grown = u ? realloc(u->modules, (u->nmodules + 1) * sizeof *grown) : NULL;
  int ok = grown != NULL;
  if (ok) u->modules = grown;
  for (uint32_t k = 0; ok && k < b->nkernels; ++k)
    ok = user_bind_locked(dev, b->first_id + k, ks[k]);
  if (ok) u->modules[u->nmodules++] = module;
  pthread_mutex_unlock(&dev->kernel_lock);
  return ok ? ACCEL_OK
            : accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: no memory");
}

/* Creates the device module from spv and its kernels, and keeps them. */
static accel_status_t module_load(accel_ze_device_t *dev, const accel_module_build_t *b,
                                  const unsigned char *spv, size_t size) {
  const accel_ze_api_t *api = dev->api;
  ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_IL_SPIRV,
                           .inputSize = size,
                           .pInputModule = spv,
                           .pBuildFlags = "-cl-fp32-correctly-rounded-divide-sqrt"};
  ze_module_handle_t module = NULL;
  ze_module_build_log_handle_t log = NULL;
  ze_result_t r = api->zeModuleCreate(dev->ctx, dev->dev, &desc, &module, &log);
  if (r != ZE_RESULT_SUCCESS) return accel_ze_build_failed(api, r, log);
  if (log) api->zeModuleBuildLogDestroy(log);
  ze_kernel_handle_t *ks = calloc(b->nkernels ? b->nkernels : 1, sizeof *ks);
  accel_status_t st =
      ks ? ACCEL_OK : accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: no memory");
  for (uint32_t k = 0; st == ACCEL_OK && k < b->nkernels; ++k)
    st = accel_ze_kernel_create(dev, module, b->symbols[k], &ks[k]);
  if (st == ACCEL_OK) st = user_keep(dev, module, b, ks);
  if (st != ACCEL_OK) {
    for (uint32_t k = 0; ks && k < b->nkernels; ++k)
      if (ks[k]) api->zeKernelDestroy(ks[k]);
    api->zeModuleDestroy(module);
  }
  free(ks);
  return st;
}

accel_status_t accel_ze_module_build(accel_be_device_t *device, const accel_module_build_t *build,
                                     accel_be_module_t **out) {
  accel_ze_device_t *dev = device;
  unsigned char *spv = NULL;
  size_t size = 0;
  accel_status_t st = accel_ze_module_spirv(build, &spv, &size);
  if (st == ACCEL_OK) st = module_load(dev, build, spv, size);
  free(spv);
  if (st != ACCEL_OK) return st;
  *out = dev; /* the module's kernels stay in the device (accel_ze_user_release) */
  return ACCEL_OK;
}

/* Nothing to release: the kernels stay until the device closes, since a graph may still replay
 * them. */
void accel_ze_module_destroy(accel_be_module_t *module) { (void)module; }

accel_status_t accel_ze_user_kernel_locked(accel_ze_device_t *dev, uint32_t id,
                                           ze_kernel_handle_t *out) {
  const size_t i = id - ACCEL_KERNEL_ID_USER_BASE;
  *out = dev->user && i < dev->user->cap ? dev->user->kernels[i] : NULL;
  if (*out) return ACCEL_OK;
  return accel_ze_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                                  "level_zero: unknown user kernel id %u", id);
}

void accel_ze_user_release(accel_ze_device_t *dev) {
  struct accel_ze_user *u = dev->user;
  if (!u) return;
  for (size_t i = 0; i < u->cap; ++i)
    if (u->kernels[i]) dev->api->zeKernelDestroy(u->kernels[i]);
  for (size_t i = 0; i < u->nmodules; ++i) dev->api->zeModuleDestroy(u->modules[i]);
  free(u->kernels);
  free(u->modules);
  free(u);
  dev->user = NULL;
}
