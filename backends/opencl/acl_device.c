/*
 * device_open / device_close: context, SVM mode, command-buffer entry points.
 * Kernels are NOT built here (first launch builds them, see acl_program.c).
 */
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

accel_status_t acl_queue_create(acl_device_t *dev, int profiling, cl_command_queue *out) {
  cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueueWithProperties(dev->ctx, dev->phys->id,
                                                          profiling ? props : NULL, &err);
  if (err != CL_SUCCESS) return acl_fail("clCreateCommandQueueWithProperties", err);
  *out = q;
  return ACCEL_OK;
}

accel_status_t acl_device_init(acl_backend_t *be, int index, cl_context ctx, acl_device_t **out) {
  acl_phys_t *phys = &be->devs[index];
  cl_device_svm_capabilities svm = phys->svm_caps;
  if (!(svm & (CL_DEVICE_SVM_COARSE_GRAIN_BUFFER | CL_DEVICE_SVM_FINE_GRAIN_BUFFER |
               CL_DEVICE_SVM_FINE_GRAIN_SYSTEM)))
    return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "OpenCL device %d (%s) has no shared virtual memory "
                               "(CL_DEVICE_SVM_CAPABILITIES = 0); the opencl backend needs SVM "
                               "(OpenCL 2.0+) so that device memory is a plain pointer",
                               index, phys->name);
  acl_device_t *dev = calloc(1, sizeof *dev);
  if (!dev) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "opencl device_open: out of memory");
  cl_int err = clRetainContext(ctx);
  if (err != CL_SUCCESS) {
    free(dev);
    return acl_fail("clRetainContext", err);
  }
  dev->backend = be;
  dev->phys = phys;
  dev->index = index;
  dev->ctx = ctx;
  int fine_buffer = (svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
  dev->fine_grain_system = (svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) != 0;
  /* Fine-grained buffers let the host dereference device pointers (host_accessible). */
  dev->svm_flags = CL_MEM_READ_WRITE | (fine_buffer ? CL_MEM_SVM_FINE_GRAIN_BUFFER : 0);
  dev->host_svm = fine_buffer;
  uint32_t cu = phys->compute_units ? phys->compute_units : 1;
  dev->max_blocks = cu * ACC_CL_BLOCKS_PER_CU;
  dev->form = acc_cl_kernel_form((phys->type & CL_DEVICE_TYPE_CPU) != 0);
  dev->build_options = acc_cl_build_options(dev->form, phys->correct_div_sqrt);
  if (!phys->correct_div_sqrt) {
    acl_host->log(ACCEL_LOG_WARN, ACL_DOMAIN,
                  "%s: no correctly rounded fp32 divide/sqrt; norms may differ from other "
                  "backends in the last bit", phys->name);
  }
  dev->use_command_buffer = acl_wants_command_buffer(phys);
  pthread_mutex_init(&dev->lock, NULL);
  pthread_mutex_init(&dev->program_lock, NULL);
  dev->alloc_generation = 1;
  *out = dev;
  return ACCEL_OK;
}

accel_status_t acl_device_open(accel_be_backend_t *backend, int index, accel_be_device_t **out) {
  acl_backend_t *be = backend;
  acl_phys_t *phys = &be->devs[index];
  cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)phys->platform,
                                    0};
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(cprops, 1, &phys->id, NULL, NULL, &err);
  if (err != CL_SUCCESS) return acl_fail("clCreateContext", err);
  acl_device_t *dev = NULL;
  accel_status_t st = acl_device_init(be, index, ctx, &dev);
  clReleaseContext(ctx); /* the device holds its own reference */
  if (st == ACCEL_OK) *out = dev;
  return st;
}

void acl_device_close(accel_be_device_t *device) {
  acl_device_t *dev = device;
  if (dev->program) clReleaseProgram(dev->program);
  /* The core frees every allocation before closing; anything left is released here. */
  for (size_t i = 0; i < dev->alloc_count; i++) {
    if (dev->allocs[i].foreign) continue;
    if (!dev->allocs[i].host)
      __atomic_fetch_sub(&dev->phys->allocated, dev->allocs[i].size, __ATOMIC_RELAXED);
    clSVMFree(dev->ctx, dev->allocs[i].base);
  }
  free(dev->allocs);
  free(dev->svm_ptrs);
  clReleaseContext(dev->ctx); /* the device's reference: a wrapped context lives on */
  pthread_mutex_destroy(&dev->lock);
  pthread_mutex_destroy(&dev->program_lock);
  free(dev);
}

/* Device memory is the host's memory when any host pointer is device memory (fine-grained
 * system SVM) or the device is the host's CPU (PoCL) with fine-grained buffers. Conditional
 * regions are predicated on the device (acl_predicate.c). */
int acl_device_attribute(accel_be_device_t *device, uint32_t attr, int64_t *value) {
  const acl_phys_t *p = ((const acl_device_t *)device)->phys;
  if (attr == ACCEL_ATTR_CONDITIONALS) {
    *value = ACCEL_CONDITIONALS_PREDICATED;
    return 1;
  }
  if (attr != ACCEL_ATTR_UNIFIED_MEMORY) return 0;
  *value = (p->svm_caps & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) != 0 ||
           ((p->type & CL_DEVICE_TYPE_CPU) && (p->svm_caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER));
  return 1;
}
