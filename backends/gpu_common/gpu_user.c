/*
 * User kernels on CUDA and HIP (accel_module.h; the vtable's module_build). The module's text
 * (common/module_text.h: the embedded CUDA/HIP prelude, kernels/gpu/module_prelude.cuh, the rows'
 * parameter structs, the user's source under `#line 1 "<module>"`) is compiled by NVRTC or
 * hiprtc (gpu_rtc.c) for the device's arch, with the shared kernels' numerics options and the
 * module's; the code goes to the kernel cache (common/kernel_cache.h) under the module's key,
 * the compiler and its version, the target, the compute capability, the driver version and the
 * prelude's hash, and a later build with the same key only loads it. The vendor module is then
 * loaded into the device's context and each kernel's function bound to its launch id. Modules
 * stay loaded until the device closes (a graph may replay a kernel after its module's release).
 * A bundle (accel_module_load_bundle) runs no compiler: CUDA loads its PTX of the newest arch
 * not above the device's (the driver JIT-compiles it), HIP the code object the runtime accepts
 * for the device's gfx target; UNSUPPORTED naming the bundle's forms when none fits.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_gpu_module_prelude.h"
#include "gpu_rtc.h"
#include "id_table.h"
#include "kernel_cache.h"
#include "module_bundle.h"
#include "module_text.h" /* ACCEL_MODULE_TEXT_VERSION: a part of the cache key */

/* Guards every device's user kernels (d->user: launches read it, builds grow it). */
static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;

/* Keeps module loaded in d and binds its kernels' functions; on failure nothing is kept. */
static accel_status_t user_keep(gpu_device_t *d, gpuModule_t module,
                                const accel_module_build_t *b, void *const *fns) {
  pthread_mutex_lock(&user_lock);
  if (!d->user) d->user = calloc(1, sizeof *d->user);
  const int ok = d->user && accel_user_kernels_add(d->user, module, b->first_id, fns,
                                                   b->nkernels);
  pthread_mutex_unlock(&user_lock);
  if (ok) return ACCEL_OK;
  return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: module_build: no memory",
                             GPU_BACKEND_NAME);
}

accel_status_t gpu_user_function(gpu_device_t *d, uint32_t id, gpuFunction_t *fn) {
  pthread_mutex_lock(&user_lock);
  *fn = d->user ? accel_id_table_get(&d->user->ids, id) : NULL;
  pthread_mutex_unlock(&user_lock);
  if (*fn) return ACCEL_OK;
  return gpu_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown user kernel id %u",
                             GPU_BACKEND_NAME, id);
}

void gpu_user_unload(gpu_device_t *d) {
  accel_user_kernels_t *u = d->user;
  if (!u) return;
  for (size_t i = 0; i < u->nmodules; ++i) GPU_WARN(d->backend, ModuleUnload, u->modules[i]);
  accel_user_kernels_free(u);
  free(u);
  d->user = NULL;
}

/* The module's code for target on a device of compute capability cc[0].cc[1]: from the cache,
 * else compiled (and stored). */
static accel_status_t module_code(gpu_device_t *d, const gpu_rtc_t *rtc, const char *target,
                                  const int cc[2], const accel_module_build_t *b, char **code,
                                  size_t *size) {
  char key[2048];
  snprintf(key, sizeof key, "%s-module%s|%s %d.%d|%s|cc %d.%d|driver %d|%s|%s|%016llx",
           GPU_BACKEND_NAME, ACCEL_MODULE_TEXT_VERSION, GPU_RTC_NAME, rtc->major, rtc->minor,
           target, cc[0], cc[1], d->backend->driver_version, ACCEL_GPU_MODULE_PRELUDE_HASH,
           b->options, (unsigned long long)b->key);
  if (accel_kernel_cache_load(gpu_host, GPU_BACKEND_NAME, key, (unsigned char **)code, size) == 0)
    return ACCEL_OK;
  if (gpu_fault(ACCEL_FAULT_KERNEL_BUILD))
    return gpu_host->set_error(ACCEL_ERROR_BACKEND, "%s: %s: injected fault "
                               "(ACCEL_FAULT_KERNEL_BUILD)", GPU_BACKEND_NAME, GPU_RTC_NAME);
  accel_status_t st = gpu_rtc_compile_module(rtc, b, target, code, size);
  if (st == ACCEL_OK)
    accel_kernel_cache_store(gpu_host, GPU_BACKEND_NAME, key, (unsigned char *)*code, *size);
  return st;
}

/* Loads code into d's context and looks up every kernel of b. */
static accel_status_t module_load(gpu_device_t *d, const accel_module_build_t *b,
                                  const char *code) {
  gpu_backend_t *be = d->backend;
  gpuModule_t module = NULL;
  accel_status_t st = GPU_TRY(be, ModuleLoadData, &module, code);
  if (st != ACCEL_OK) return st;
  void **fns = calloc(b->nkernels ? b->nkernels : 1, sizeof *fns);
  if (!fns)
    st = gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: no memory", GPU_BACKEND_NAME);
  for (uint32_t k = 0; st == ACCEL_OK && k < b->nkernels; ++k) {
    gpuFunction_t fn = NULL;
    st = GPU_TRY(be, ModuleGetFunction, &fn, module, b->symbols[k]);
    fns[k] = fn;
  }
  if (st == ACCEL_OK) st = user_keep(d, module, b, fns);
  if (st != ACCEL_OK) GPU_WARN(be, ModuleUnload, module);
  free(fns);
  return st;
}

/* The module compiled from source (or its cached code) for a device of compute capability cc. */
static accel_status_t source_build(gpu_device_t *d, const gpu_rtc_t *rtc,
                                   const accel_module_build_t *b, const int cc[2]) {
  char target[32];
  accel_status_t st = gpu_rtc_target(rtc, cc[0], cc[1], target, sizeof target);
  char *code = NULL;
  size_t size = 0;
  if (st == ACCEL_OK) st = module_code(d, rtc, target, cc, b, &code, &size);
  if (st == ACCEL_OK) st = module_load(d, b, code);
  free(code);
  return st;
}

#if GPU_VENDOR_CUDA
/* A bundle on CUDA: its PTX of the newest arch not above the device's, which the driver
 * JIT-compiles at load (no compiler of ours runs). */
static accel_status_t bundle_build(gpu_device_t *d, const accel_module_build_t *b,
                                   const int cc[2]) {
  const accel_module_form_t *f = accel_bundle_ptx_form(b->forms, b->nforms, cc[0] * 10 + cc[1]);
  char why[512], target[32];
  snprintf(target, sizeof target, "sm_%d or below", cc[0] * 10 + cc[1]);
  if (!f) {
    accel_bundle_no_form(b, ACCEL_MODULE_FORM_PTX, target, GPU_BACKEND_NAME, why, sizeof why);
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s", why);
  }
  if (f->size == 0 || ((const char *)f->data)[f->size - 1] != '\0')
    return gpu_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: the bundle's ptx %s form is "
                               "not NUL-terminated text", GPU_BACKEND_NAME, f->target);
  return module_load(d, b, f->data);
}
#else
/* A bundle on HIP: the code object for the device's gfx target. The runtime refuses a code
 * object for another target, so each one is offered in turn and the first that loads is
 * kept. */
static accel_status_t bundle_build(gpu_device_t *d, const accel_module_build_t *b,
                                   const int cc[2]) {
  (void)cc;
  char why[512], last[300] = "";
  for (uint32_t i = 0; i < b->nforms; ++i) {
    if (b->forms[i].kind != ACCEL_MODULE_FORM_HIP_CO || b->forms[i].size == 0) continue;
    if (module_load(d, b, b->forms[i].data) == ACCEL_OK) return ACCEL_OK;
    snprintf(last, sizeof last, "; %s: %s", b->forms[i].target,
             gpu_host->last_error ? gpu_host->last_error() : "");
  }
  accel_bundle_no_form(b, ACCEL_MODULE_FORM_HIP_CO, "this device's gfx target",
                       GPU_BACKEND_NAME, why, sizeof why);
  return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s%s", why, last);
}
#endif

accel_status_t gpu_module_build(accel_be_device_t *device, const accel_module_build_t *build,
                                accel_be_module_t **out) {
  gpu_device_t *d = device;
  const gpu_rtc_t *rtc = NULL; /* a bundle never runs the compiler */
  accel_status_t st = accel_bundle_nforms(build) ? ACCEL_OK : gpu_rtc_get(&rtc);
  if (st != ACCEL_OK) return st;
  GPU_ENTER(entered, d);
  if (entered != ACCEL_OK) return entered;
  int cc[2] = {0, 0}; /* compute capability: the CUDA arch, a part of the cache key */
  st = GPU_TRY(d->backend, DeviceGetAttribute, &cc[0], GPU_ATTR_CC_MAJOR, d->handle);
  if (st == ACCEL_OK)
    st = GPU_TRY(d->backend, DeviceGetAttribute, &cc[1], GPU_ATTR_CC_MINOR, d->handle);
  if (st == ACCEL_OK) st = rtc ? source_build(d, rtc, build, cc) : bundle_build(d, build, cc);
  if (st != ACCEL_OK) return st;
  *out = d; /* the module's code stays loaded in the device (gpu_user_unload) */
  return ACCEL_OK;
}

/* Nothing to release: the code stays loaded in the device until it closes (gpu_user_unload),
 * since a graph may still replay the module's kernels. */
void gpu_module_destroy(accel_be_module_t *module) { (void)module; }
