/*
 * The kernel program: built from the embedded OpenCL C of kernels/ on the first launch on a
 * device (never at probe or device_open), reusing a binary from memory or from the on-disk
 * cache when one matches (device name, driver version, kernel source hash, build options).
 * Kernel objects live in per-stream / per-graph sets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

#ifdef ACCEL_OPENCL_HAVE_KERNELS
#include "accel_kernels_cl.h"
#endif

static void make_key(const acl_device_t *dev, char *key, size_t cap) {
#ifdef ACCEL_OPENCL_HAVE_KERNELS
  const char *hash = ACCEL_KERNELS_CL_HASH;
#else
  const char *hash = "none";
#endif
  snprintf(key, cap, "opencl|%s|%s|%s|%s", dev->phys->name, dev->phys->driver, hash,
           dev->build_options);
}

cl_program acl_program_from_binary(acl_device_t *dev, const unsigned char *bin, size_t size,
                                   const char *options) {
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program p = clCreateProgramWithBinary(dev->ctx, 1, &dev->phys->id, &size, &bin, &status,
                                           &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (p) clReleaseProgram(p);
    return NULL;
  }
  err = clBuildProgram(p, 1, &dev->phys->id, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    acl_host->log(ACCEL_LOG_WARN, ACL_DOMAIN, "cached binary rejected by clBuildProgram: %s",
                  acl_error_name(err));
    clReleaseProgram(p);
    return NULL;
  }
  return p;
}

int acl_program_binary(cl_program p, unsigned char **out, size_t *size) {
  size_t sz = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof sz, &sz, NULL) != CL_SUCCESS || !sz)
    return -1;
  unsigned char *bin = malloc(sz);
  if (!bin) return -1;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
    free(bin);
    return -1;
  }
  *out = bin;
  *size = sz;
  return 0;
}

static accel_status_t build_from_source(acl_device_t *dev, cl_program *out) {
#ifdef ACCEL_OPENCL_HAVE_KERNELS
  const char *src = (const char *)accel_kernels_cl_source;
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(dev->ctx, 1, &src, NULL, &err);
  if (err != CL_SUCCESS) return acl_fail("clCreateProgramWithSource", err);
  err = clBuildProgram(p, 1, &dev->phys->id, dev->build_options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[2048] = "";
    size_t len = 0;
    clGetProgramBuildInfo(p, dev->phys->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &len);
    log[sizeof log - 1] = '\0';
    clReleaseProgram(p);
    return acl_host->set_error(ACCEL_ERROR_BACKEND, "clBuildProgram(%s) on %s: %s (%d): %s",
                               dev->build_options, dev->phys->name, acl_error_name(err),
                               (int)err, log);
  }
  *out = p;
  return ACCEL_OK;
#else
  (void)out;
  return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                             "opencl plugin built without kernel source (kernels_cl_header was "
                             "not defined when %s was configured)", dev->phys->name);
#endif
}

static accel_status_t program_load(acl_device_t *dev, cl_program *out) {
  acl_phys_t *phys = dev->phys;
  char key[1024];
  make_key(dev, key, sizeof key);

  pthread_mutex_lock(&phys->lock);
  cl_program p = phys->binary ? acl_program_from_binary(dev, phys->binary, phys->binary_size,
                                                       dev->build_options)
                             : NULL;
  pthread_mutex_unlock(&phys->lock);
  if (p) {
    *out = p;
    return ACCEL_OK;
  }
  unsigned char *bin = NULL;
  size_t size = 0;
  if (acl_cache_load(key, &bin, &size) == 0) {
    p = acl_program_from_binary(dev, bin, size, dev->build_options);
    if (!p) free(bin);
  }
  if (!p) {
    accel_status_t st = build_from_source(dev, &p);
    if (st != ACCEL_OK) return st;
    if (acl_program_binary(p, &bin, &size) == 0) acl_cache_store(key, bin, size);
    else bin = NULL;
  }
  if (bin) {
    pthread_mutex_lock(&phys->lock);
    if (!phys->binary) {
      phys->binary = bin;
      phys->binary_size = size;
      bin = NULL;
    }
    pthread_mutex_unlock(&phys->lock);
    free(bin);
  }
  *out = p;
  return ACCEL_OK;
}

accel_status_t acl_program_get(acl_device_t *dev, cl_program *out) {
  accel_status_t st = ACCEL_OK;
  pthread_mutex_lock(&dev->program_lock);
  if (!dev->program) {
    if (acl_host->fault_should_fail(ACCEL_FAULT_KERNEL_BUILD))
      st = acl_host->set_error(ACCEL_ERROR_BACKEND,
                               "clBuildProgram: injected fault (ACCEL_FAULT_KERNEL_BUILD)");
    else
      st = program_load(dev, &dev->program);
  }
  *out = dev->program;
  pthread_mutex_unlock(&dev->program_lock);
  return st;
}

accel_status_t acl_kernel_create(acl_device_t *dev, cl_program prog, const char *name,
                                 cl_kernel *out) {
  accel_status_t st = ACCEL_OK;
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(prog, name, &err);
  if (err != CL_SUCCESS) return acl_fail("clCreateKernel", err);
  /* The kernel's reqd_work_group_size: a SIMT group holds a logical block's
   * ACCEL_KERNEL_BLOCK lanes, no fewer (the reduction order is defined for them). */
  const size_t need = acc_cl_group_size(dev->form);
  size_t wg = 0;
  err = clGetKernelWorkGroupInfo(k, dev->phys->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg,
                                 NULL);
  if (err != CL_SUCCESS) {
    st = acl_fail("clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)", err);
  } else if (wg < need) {
    st = acl_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: work-group size limit %zu < %zu on %s",
                             name, wg, need, dev->phys->name);
  } else if (dev->fine_grain_system) {
    cl_bool yes = CL_TRUE;
    err = clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM, sizeof yes, &yes);
    if (err != CL_SUCCESS) st = acl_fail("clSetKernelExecInfo(SVM_FINE_GRAIN_SYSTEM)", err);
  }
  if (st != ACCEL_OK) {
    clReleaseKernel(k);
    return st;
  }
  *out = k;
  return ACCEL_OK;
}

/* Gives the kernel the current list of live SVM allocations, which it may reach through
 * addresses stored in memory rather than passed as arguments. The common case (no allocation
 * or free since the list was applied) skips the lock: the generation is read with acquire
 * ordering, and an allocation a launch may use happened before the launch was called, so its
 * bump is visible here. */
static accel_status_t update_svm_ptrs(acl_device_t *dev, cl_kernel k, uint64_t *generation) {
  if (*generation == __atomic_load_n(&dev->alloc_generation, __ATOMIC_ACQUIRE))
    return ACCEL_OK;
  cl_int err = CL_SUCCESS;
  pthread_mutex_lock(&dev->lock);
  if (*generation != dev->alloc_generation && dev->alloc_count > 0) {
    err = clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_SVM_PTRS,
                              dev->alloc_count * sizeof(void *), dev->svm_ptrs);
    if (err == CL_SUCCESS) *generation = dev->alloc_generation;
  }
  pthread_mutex_unlock(&dev->lock);
  return err == CL_SUCCESS ? ACCEL_OK : acl_fail("clSetKernelExecInfo(SVM_PTRS)", err);
}

accel_status_t acl_kernel_prepare(acl_device_t *dev, acl_kernel_set_t *set,
                                  const accel_kernel_launch_t *launch, const int32_t *pred,
                                  cl_kernel *kernel, size_t *global, size_t *local) {
  const uint32_t id = launch->kernel_id;
  cl_kernel *k = &set->k[id < ACCEL_KERNEL_COUNT ? id : 0];
  uint64_t *gen = &set->svm_generation[id < ACCEL_KERNEL_COUNT ? id : 0];
  accel_status_t st = ACCEL_OK;
  if (id >= ACCEL_KERNEL_ID_USER_BASE) {
    st = acl_module_kernel(dev, set, id, &k, &gen);
  } else if (id >= ACCEL_KERNEL_COUNT) {
    return acl_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT, "unknown kernel id %u", id);
  } else if (!*k) {
    cl_program prog;
    st = acl_program_get(dev, &prog);
    if (st == ACCEL_OK) st = acl_kernel_create(dev, prog, accel_kernel_names[id], k);
  }
  if (st == ACCEL_OK && !dev->fine_grain_system) st = update_svm_ptrs(dev, *k, gen);
  if (st != ACCEL_OK) return st;
  cl_int err = clSetKernelArg(*k, 0, launch->params_size, launch->params);
  if (err == CL_SUCCESS) /* the predicate (prelude_opencl.h): NULL outside regions */
    err = pred ? clSetKernelArgSVMPointer(*k, 1, pred) : clSetKernelArg(*k, 1, sizeof(cl_mem), NULL);
  if (err != CL_SUCCESS) return acl_fail("clSetKernelArg", err);
  *kernel = *k;
  acc_cl_ndrange(dev->form, launch->num_blocks, dev->max_blocks, global, local);
  return ACCEL_OK;
}

void acl_kernel_set_release(acl_kernel_set_t *set) {
  for (int i = 0; i < ACCEL_KERNEL_COUNT; i++) {
    if (set->k[i]) clReleaseKernel(set->k[i]);
    set->k[i] = NULL;
  }
  for (size_t i = 0; i < set->nuser; i++) clReleaseKernel(set->user[i].k);
  free(set->user);
  set->user = NULL;
  set->nuser = 0;
}
