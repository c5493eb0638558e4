/*
 * User kernels on Level Zero (accel_module.h; the vtable's module_build): the module's SPIR-V
 * (ze_spirv.c) becomes a device module with zeModuleCreate(ZE_MODULE_FORMAT_IL_SPIRV), whose
 * build log goes into the error; each kernel is created with the group size and indirect access
 * of the table's kernels and bound to its launch id. Modules stay until the device closes (a
 * graph may replay a kernel after its module's release). A bundle's SPIR-V form is created the
 * same way, with no compiler run (UNSUPPORTED naming the forms when it has none).
 */
#include <stdlib.h>
#include <string.h>

#include "id_table.h"
#include "module_bundle.h"
#include "ze_internal.h"

/* Keeps module in dev with its kernels bound to their ids; on failure nothing is kept. */
static accel_status_t user_keep(accel_ze_device_t *dev, ze_module_handle_t module,
                                const accel_module_build_t *b, void *const *ks) {
  pthread_mutex_lock(&dev->kernel_lock);
  if (!dev->user) dev->user = calloc(1, sizeof *dev->user);
  const int ok = dev->user && accel_user_kernels_add(dev->user, module, b->first_id, ks,
                                                     b->nkernels);
  pthread_mutex_unlock(&dev->kernel_lock);
  return ok ? ACCEL_OK
            : accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: no memory");
}

/* Creates the device module from spv and its kernels, and keeps them. */
static accel_status_t module_load(accel_ze_device_t *dev, const accel_module_build_t *b,
                                  const unsigned char *spv, size_t size) {
  const accel_ze_api_t *api = dev->api;
  ze_module_handle_t module = NULL;
  accel_status_t st = accel_ze_spirv_module(dev, spv, size, &module);
  if (st != ACCEL_OK) return st;
  void **ks = calloc(b->nkernels ? b->nkernels : 1, sizeof *ks);
  if (!ks) st = accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: no memory");
  for (uint32_t k = 0; st == ACCEL_OK && k < b->nkernels; ++k) {
    ze_kernel_handle_t kernel = NULL;
    st = accel_ze_kernel_create(dev, module, b->symbols[k], &kernel);
    ks[k] = kernel;
  }
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
  char why[512]; /* a bundle: its SPIR-V form, no compiler */
  if (accel_bundle_lacks_form(build, ACCEL_MODULE_FORM_SPIRV, NULL, "level_zero", why,
                              sizeof why))
    return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s", why);
  const uint32_t nforms = accel_bundle_nforms(build);
  const accel_module_form_t *form =
      nforms ? accel_bundle_find_form(build->forms, nforms, ACCEL_MODULE_FORM_SPIRV, NULL) : NULL;
  unsigned char *spv = NULL;
  size_t size = 0;
  accel_status_t st = form ? ACCEL_OK : accel_ze_module_spirv(build, &spv, &size);
  if (st == ACCEL_OK)
    st = form ? module_load(dev, build, form->data, form->size)
              : module_load(dev, build, spv, size);
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
  *out = dev->user ? accel_id_table_get(&dev->user->ids, id) : NULL;
  if (*out) return ACCEL_OK;
  return accel_ze_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                                  "level_zero: unknown user kernel id %u", id);
}

void accel_ze_user_release(accel_ze_device_t *dev) {
  accel_user_kernels_t *u = dev->user;
  if (!u) return;
  for (size_t i = 0; i < u->ids.cap; ++i)
    if (u->ids.slots[i]) dev->api->zeKernelDestroy(u->ids.slots[i]);
  for (size_t i = 0; i < u->nmodules; ++i) dev->api->zeModuleDestroy(u->modules[i]);
  accel_user_kernels_free(u);
  free(u);
  dev->user = NULL;
}
