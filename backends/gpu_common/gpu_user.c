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
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_gpu_module_prelude.h"
#include "gpu_rtc.h"
#include "kernel_cache.h"
#include "module_text.h"

/* A device's user kernels: the loaded modules and the functions by launch id. */
struct gpu_user {
  gpuModule_t *modules;
  size_t nmodules;
  gpuFunction_t *fns; /* [id - ACCEL_KERNEL_ID_USER_BASE] */
  size_t cap;
};

/* Guards every device's gpu_user (launches read it; builds grow it). */
static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;

/* Grows d's table to hold id and stores fn; 0 without memory. Called with user_lock held. */
static int user_bind_locked(gpu_device_t *d, uint32_t id, gpuFunction_t fn) {
  struct gpu_user *u = d->user;
  const size_t k = id - ACCEL_KERNEL_ID_USER_BASE;
  if (k >= u->cap) {
    size_t cap = u->cap ? u->cap : 64;
    while (cap <= k) cap *= 2;
    gpuFunction_t *grown = realloc(u->fns, cap * sizeof *grown);
    if (!grown) return 0;
    memset(grown + u->cap, 0, (cap - u->cap) * sizeof *grown);
    u->fns = grown;
    u->cap = cap;
  }
  u->fns[k] = fn;
  return 1;
}

/* Keeps module loaded in d and binds its kernels' functions; on failure nothing is kept. */
static accel_status_t user_keep(gpu_device_t *d, gpuModule_t module,
                                const accel_module_build_t *b, const gpuFunction_t *fns) {
  pthread_mutex_lock(&user_lock);
  if (!d->user) d->user = calloc(1, sizeof *d->user);
  struct gpu_user *u = d->user;
  gpuModule_t *grown = u ? realloc(u->modules, (u->nmodules + 1) * sizeof *grown) : NULL;
  int ok = grown != NULL;
  if (ok) u->modules = grown;
  for (uint32_t k = 0; ok && k < b->nkernels; ++k)
    ok = user_bind_locked(d, b->first_id + k, fns[k]);
  if (ok) u->modules[u->nmodules++] = module;
  pthread_mutex_unlock(&user_lock);
  if (ok) return ACCEL_OK;
  return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: module_build: no memory",
                             GPU_BACKEND_NAME);
}

accel_status_t gpu_user_function(gpu_device_t *d, uint32_t id, gpuFunction_t *fn) {
  const size_t k = id - ACCEL_KERNEL_ID_USER_BASE;
  pthread_mutex_lock(&user_lock);
  *fn = d->user && k < d->user->cap ? d->user->fns[k] : NULL;
  pthread_mutex_unlock(&user_lock);
  if (*fn) return ACCEL_OK;
  return gpu_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown user kernel id %u",
                             GPU_BACKEND_NAME, id);
}

void gpu_user_unload(gpu_device_t *d) {
  struct gpu_user *u = d->user;
  if (!u) return;
  for (size_t i = 0; i < u->nmodules; ++i) GPU_WARN(d->backend, ModuleUnload, u->modules[i]);
  free(u->modules);
  free(u->fns);
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
  char *text = accel_module_text((const char *)accel_gpu_module_prelude, b, NULL);
  if (!text)
    return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: no memory", GPU_BACKEND_NAME);
  accel_status_t st = gpu_rtc_compile(rtc, text, target, b->options, code, size);
  free(text);
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
  gpuFunction_t *fns = calloc(b->nkernels ? b->nkernels : 1, sizeof *fns);
  if (!fns)
    st = gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: no memory", GPU_BACKEND_NAME);
  for (uint32_t k = 0; st == ACCEL_OK && k < b->nkernels; ++k)
    st = GPU_TRY(be, ModuleGetFunction, &fns[k], module, b->symbols[k]);
  if (st == ACCEL_OK) st = user_keep(d, module, b, fns);
  if (st != ACCEL_OK) GPU_WARN(be, ModuleUnload, module);
  free(fns);
  return st;
}

accel_status_t gpu_module_build(accel_be_device_t *device, const accel_module_build_t *build,
                                accel_be_module_t **out) {
  gpu_device_t *d = device;
  const gpu_rtc_t *rtc = NULL;
  accel_status_t st = gpu_rtc_get(&rtc);
  if (st != ACCEL_OK) return st;
  GPU_ENTER(entered, d);
  if (entered != ACCEL_OK) return entered;
  int cc[2] = {0, 0}; /* compute capability: the CUDA arch, a part of the cache key */
  st = GPU_TRY(d->backend, DeviceGetAttribute, &cc[0], GPU_ATTR_CC_MAJOR, d->handle);
  if (st == ACCEL_OK)
    st = GPU_TRY(d->backend, DeviceGetAttribute, &cc[1], GPU_ATTR_CC_MINOR, d->handle);
  char target[32];
  if (st == ACCEL_OK) st = gpu_rtc_target(rtc, cc[0], cc[1], target, sizeof target);
  char *code = NULL;
  size_t size = 0;
  if (st == ACCEL_OK) st = module_code(d, rtc, target, cc, build, &code, &size);
  if (st == ACCEL_OK) st = module_load(d, build, code);
  free(code);
  if (st != ACCEL_OK) return st;
  *out = d; /* the module's code stays loaded in the device (gpu_user_unload) */
  return ACCEL_OK;
}

/* Nothing to release: the code stays loaded in the device until it closes (gpu_user_unload),
 * since a graph may still replay the module's kernels. */
void gpu_module_destroy(accel_be_module_t *module) { (void)module; }
