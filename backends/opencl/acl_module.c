/*
 * User kernels on OpenCL (accel_module.h; the vtable's module_build): one program per module,
 * clBuildProgram on the embedded prelude (kernels/opencl/module_prelude.cl), the rows'
 * parameter structs and the user's source under `#line 1 "<module>"`, with the device's build
 * options (the prelude's form, exact division and square root) and the module's. Its binary
 * goes to the kernel cache (common/kernel_cache.c) under the module's key, the device, the
 * driver and the prelude's hash; a later build with the same key only loads it. Programs are kept for the life
 * of the process (a graph may outlive its module); each stream or graph creates its own kernel
 * objects from them (acl_kernel_set_t.user). A bundle loads through its SPIR-V form
 * (clCreateProgramWithIL) when the device takes SPIR-V, else through its OpenCL C form.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_cl_module_prelude.h"
#include "acl_internal.h"
#include "module_bundle.h"
#include "module_text.h"

/* Launch ids of user kernels -> their program and kernel name. */
typedef struct acl_user_entry {
  cl_program prog; /* a reference per entry */
  char *name;
} acl_user_entry_t;

static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;
static acl_user_entry_t *user_entries; /* [id - ACCEL_KERNEL_ID_USER_BASE] */
static size_t user_cap;

static accel_status_t user_bind(uint32_t id, cl_program prog, const char *name) {
  const size_t k = id - ACCEL_KERNEL_ID_USER_BASE;
  char *copy = strdup(name);
  pthread_mutex_lock(&user_lock);
  if (copy && k >= user_cap) {
    size_t cap = user_cap ? user_cap : 64;
    while (cap <= k) cap *= 2;
    acl_user_entry_t *grown = realloc(user_entries, cap * sizeof *grown);
    if (grown) {
      memset(grown + user_cap, 0, (cap - user_cap) * sizeof *grown);
      user_entries = grown;
      user_cap = cap;
    }
  }
  const int ok = copy && k < user_cap;
  if (ok) {
    clRetainProgram(prog);
    user_entries[k] = (acl_user_entry_t){prog, copy};
  }
  pthread_mutex_unlock(&user_lock);
  if (ok) return ACCEL_OK;
  free(copy);
  return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "module_build: out of host memory");
}

/* Builds program p for dev with options: *out = p, or p released and the build log in the
 * error. */
static accel_status_t build_program(acl_device_t *dev, cl_program p, const char *options,
                                    cl_program *out) {
  cl_int err = clBuildProgram(p, 1, &dev->phys->id, options, NULL, NULL);
  if (err == CL_SUCCESS) {
    *out = p;
    return ACCEL_OK;
  }
  char log[800] = "";
  clGetProgramBuildInfo(p, dev->phys->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
  log[sizeof log - 1] = '\0';
  clReleaseProgram(p);
  return acl_host->set_error(ACCEL_ERROR_BACKEND,
                             "opencl: the module does not compile (clBuildProgram on %s: %s):\n%s",
                             dev->phys->name, acl_error_name(err), log);
}

static accel_status_t build_source(acl_device_t *dev, const accel_module_build_t *b,
                                   const char *options, cl_program *out) {
  if (acl_host->fault_should_fail(ACCEL_FAULT_KERNEL_BUILD))
    return acl_host->set_error(ACCEL_ERROR_BACKEND,
                               "clBuildProgram: injected fault (ACCEL_FAULT_KERNEL_BUILD)");
  char *text = accel_module_text((const char *)accel_cl_module_prelude, b, NULL);
  if (!text) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "module_build: no memory");
  const char *src = text;
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(dev->ctx, 1, &src, NULL, &err);
  free(text);
  if (err != CL_SUCCESS) return acl_fail("clCreateProgramWithSource", err);
  return build_program(dev, p, options, out);
}

/* A bundle's SPIR-V form, created with clCreateProgramWithIL and built by the driver (no
 * compiler of ours runs). */
static accel_status_t build_spirv(acl_device_t *dev, const accel_module_form_t *spirv,
                                  const accel_module_build_t *b, cl_program *out) {
  char options[1024];
  snprintf(options, sizeof options, "%s %s", dev->build_options, b->options);
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithIL(dev->ctx, spirv->data, spirv->size, &err);
  if (err != CL_SUCCESS) return acl_fail("clCreateProgramWithIL", err);
  return build_program(dev, p, options, out);
}

/* The module's program: from the cache, else built (and its binary stored). */
static accel_status_t module_program(acl_device_t *dev, const accel_module_build_t *b,
                                     cl_program *out) {
  char options[1024], key[2048];
  snprintf(options, sizeof options, "%s %s", dev->build_options, b->options);
  snprintf(key, sizeof key, "opencl-module%s|%s|%s|%s|%s|%016llx", ACCEL_MODULE_TEXT_VERSION,
           dev->phys->name, dev->phys->driver, ACCEL_CL_MODULE_PRELUDE_HASH, options,
           (unsigned long long)b->key);
  unsigned char *bin = NULL;
  size_t size = 0;
  cl_program p = NULL;
  if (acl_cache_load(key, &bin, &size) == 0) p = acl_program_from_binary(dev, bin, size, options);
  free(bin);
  if (p) {
    *out = p;
    return ACCEL_OK;
  }
  accel_status_t st = build_source(dev, b, options, &p);
  if (st != ACCEL_OK) return st;
  if (acl_program_binary(p, &bin, &size) == 0) {
    acl_cache_store(key, bin, size);
    free(bin);
  }
  *out = p;
  return ACCEL_OK;
}

/* 1 when dev takes SPIR-V programs (CL_DEVICE_IL_VERSION names SPIR-V: OpenCL 2.1 and up). */
static int takes_spirv(const acl_device_t *dev) {
  char il[1024] = "";
  return clGetDeviceInfo(dev->phys->id, CL_DEVICE_IL_VERSION, sizeof il - 1, il, NULL) ==
             CL_SUCCESS && strstr(il, "SPIR-V");
}

/* A bundle's form on OpenCL: its SPIR-V (*spirv) when the device takes IL, else its OpenCL C
 * form (the source, built as a source load); UNSUPPORTED naming the forms without either. */
static accel_status_t bundle_form(const acl_device_t *dev, const accel_module_build_t *b,
                                  const accel_module_form_t **spirv) {
  const uint32_t n = accel_bundle_nforms(b);
  *spirv = n ? accel_bundle_find_form(b->forms, n, ACCEL_MODULE_FORM_SPIRV, NULL) : NULL;
  if (*spirv && takes_spirv(dev)) return ACCEL_OK;
  *spirv = NULL;
  char why[512];
  if (!accel_bundle_lacks_form(b, ACCEL_MODULE_FORM_OPENCL_C, NULL, "opencl", why, sizeof why))
    return ACCEL_OK;
  return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s", why);
}

accel_status_t acl_module_build(accel_be_device_t *device, const accel_module_build_t *build,
                                accel_be_module_t **out) {
  acl_device_t *dev = device;
  cl_program p = NULL;
  const accel_module_form_t *spirv = NULL;
  accel_status_t st = bundle_form(dev, build, &spirv);
  if (st == ACCEL_OK)
    st = spirv ? build_spirv(dev, spirv, build, &p) : module_program(dev, build, &p);
  for (uint32_t k = 0; st == ACCEL_OK && k < build->nkernels; ++k) {
    cl_kernel probe; /* the symbol exists and fits the device */
    st = acl_kernel_create(dev, p, build->symbols[k], &probe);
    if (st == ACCEL_OK) clReleaseKernel(probe);
    if (st == ACCEL_OK) st = user_bind(build->first_id + k, p, build->symbols[k]);
  }
  if (st != ACCEL_OK) {
    if (p) clReleaseProgram(p);
    return st;
  }
  *out = p; /* the module's own reference (module_destroy) */
  return ACCEL_OK;
}

void acl_module_destroy(accel_be_module_t *module) { clReleaseProgram(module); }

accel_status_t acl_module_kernel(acl_device_t *dev, acl_kernel_set_t *set, uint32_t id,
                                 cl_kernel **k, uint64_t **generation) {
  for (size_t i = 0; i < set->nuser; ++i)
    if (set->user[i].id == id) {
      *k = &set->user[i].k;
      *generation = &set->user[i].svm_generation;
      return ACCEL_OK;
    }
  pthread_mutex_lock(&user_lock);
  const size_t e = id - ACCEL_KERNEL_ID_USER_BASE;
  const acl_user_entry_t entry = e < user_cap ? user_entries[e] : (acl_user_entry_t){0};
  pthread_mutex_unlock(&user_lock);
  if (!entry.prog)
    return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT, "unknown user kernel id %u", id);
  acl_user_kernel_t *grown = realloc(set->user, (set->nuser + 1) * sizeof *grown);
  if (!grown) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  set->user = grown;
  acl_user_kernel_t *u = &set->user[set->nuser];
  *u = (acl_user_kernel_t){id, NULL, 0};
  accel_status_t st = acl_kernel_create(dev, entry.prog, entry.name, &u->k);
  if (st != ACCEL_OK) return st;
  set->nuser++;
  *k = &u->k;
  *generation = &u->svm_generation;
  return ACCEL_OK;
}
