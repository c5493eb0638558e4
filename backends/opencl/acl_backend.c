/*
 * Plugin entry point, vtable, and device enumeration (every device of every platform; the
 * device index runs across platforms in clGetPlatformIDs order).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_kernel_abi_host.h"
#include "acl_internal.h"

const accel_host_api_t *acl_host;

static int has_extension(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; (p = strstr(p, name)) != NULL; p += n) {
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
  }
  return 0;
}

/* Reads a device's string parameter into buf (truncating). */
static cl_int device_string(cl_device_id id, cl_device_info param, char *buf, size_t cap) {
  size_t len = 0;
  cl_int err = clGetDeviceInfo(id, param, 0, NULL, &len);
  if (err != CL_SUCCESS) return err;
  char *tmp = malloc(len + 1);
  if (!tmp) return CL_OUT_OF_HOST_MEMORY;
  err = clGetDeviceInfo(id, param, len, tmp, NULL);
  if (err == CL_SUCCESS) snprintf(buf, cap, "%.*s", (int)len, tmp);
  free(tmp);
  return err;
}

/* The version the device gives an extension (CL_DEVICE_EXTENSIONS_WITH_VERSION, OpenCL 3.0),
 * or 0 when it cannot say. */
static cl_version extension_version(cl_device_id id, const char *name) {
  size_t size = 0;
  if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, NULL, &size) != CL_SUCCESS)
    return 0;
  cl_name_version *v = size ? malloc(size) : NULL;
  cl_version found = 0;
  if (v && clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS_WITH_VERSION, size, v, NULL) == CL_SUCCESS)
    for (size_t i = 0; i < size / sizeof *v && !found; ++i)
      if (strncmp(v[i].name, name, sizeof v[i].name) == 0) found = v[i].version;
  free(v);
  return found;
}

/* 1 when the device's cl_khr_command_buffer takes the calls this backend makes: the
 * provisional entry points of 0.9.0 to 0.9.4. 0.9.5 added a properties argument to every
 * command (clCommandCopyBufferKHR...), so a newer driver called with the old arguments would
 * read garbage: it replays as a batch instead, and says so. */
static int cmdbuf_version_known(const acl_phys_t *d) {
  const cl_version v = extension_version(d->id, "cl_khr_command_buffer");
  if (v >= CL_MAKE_VERSION(0, 9, 0) && v < CL_MAKE_VERSION(0, 9, 5)) return 1;
  acl_host->log(ACCEL_LOG_INFO, ACL_DOMAIN,
                "%s: cl_khr_command_buffer %u.%u.%u is not used (the calls made here are those "
                "of 0.9.0 to 0.9.4; 0.0.0: the device does not say)", d->name,
                (unsigned)CL_VERSION_MAJOR(v), (unsigned)CL_VERSION_MINOR(v),
                (unsigned)CL_VERSION_PATCH(v));
  return 0;
}

/* Resolves the cl_khr_command_buffer entry points; 1 when all are present. */
static int load_cmdbuf_fns(acl_phys_t *d) {
  acl_cmdbuf_fns_t *f = &d->cb;
#define LOAD(field, sym) \
  f->field = (sym##_fn)clGetExtensionFunctionAddressForPlatform(d->platform, #sym)
  LOAD(create, clCreateCommandBufferKHR);
  LOAD(finalize, clFinalizeCommandBufferKHR);
  LOAD(release, clReleaseCommandBufferKHR);
  LOAD(enqueue, clEnqueueCommandBufferKHR);
  LOAD(ndrange, clCommandNDRangeKernelKHR);
  LOAD(copy_buffer, clCommandCopyBufferKHR);
  LOAD(fill_buffer, clCommandFillBufferKHR);
#undef LOAD
  return f->create && f->finalize && f->release && f->enqueue && f->ndrange && f->copy_buffer &&
         f->fill_buffer;
}

static cl_int probe_device(acl_phys_t *d) {
  cl_int err;
  if ((err = device_string(d->id, CL_DEVICE_NAME, d->name, sizeof d->name)) ||
      (err = device_string(d->id, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor)) ||
      (err = device_string(d->id, CL_DRIVER_VERSION, d->driver, sizeof d->driver)))
    return err;
  cl_device_fp_config fp = 0;
  if ((err = clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof d->type, &d->type, NULL)) ||
      (err = clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem,
                             &d->global_mem, NULL)) ||
      (err = clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units,
                             &d->compute_units, NULL)) ||
      (err = clGetDeviceInfo(d->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL)))
    return err;
  d->correct_div_sqrt = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  /* OpenCL 1.x devices reject the SVM query: they simply have no SVM. */
  if (clGetDeviceInfo(d->id, CL_DEVICE_SVM_CAPABILITIES, sizeof d->svm_caps, &d->svm_caps,
                      NULL) != CL_SUCCESS)
    d->svm_caps = 0;

  size_t len = 0;
  if ((err = clGetDeviceInfo(d->id, CL_DEVICE_EXTENSIONS, 0, NULL, &len))) return err;
  char *ext = malloc(len + 1);
  if (!ext) return CL_OUT_OF_HOST_MEMORY;
  err = clGetDeviceInfo(d->id, CL_DEVICE_EXTENSIONS, len, ext, NULL);
  ext[len] = '\0';
  if (err == CL_SUCCESS) {
    d->fp16 = has_extension(ext, "cl_khr_fp16");
    if (has_extension(ext, "cl_khr_command_buffer")) {
      /* Replaying one graph while its previous replay still runs needs simultaneous use. */
      cl_device_command_buffer_capabilities_khr caps = 0;
      if (clGetDeviceInfo(d->id, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof caps, &caps,
                          NULL) == CL_SUCCESS)
        d->has_cmdbuf = (caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR) != 0 &&
                        cmdbuf_version_known(d) && load_cmdbuf_fns(d);
    }
  }
  free(ext);
  return err;
}

static void backend_free(acl_backend_t *be) {
  if (!be) return;
  for (int i = 0; i < be->count; i++) {
    pthread_mutex_destroy(&be->devs[i].lock);
    free(be->devs[i].binary);
  }
  free(be->devs);
  free(be);
}

/* Appends the devices of one platform; returns the OpenCL error of the first failing device
 * query. A platform whose device list cannot be read is skipped (logged), so that one broken
 * ICD does not hide the devices of the others. */
static cl_int add_platform_devices(acl_backend_t *be, cl_platform_id p) {
  cl_uint n = 0;
  cl_int err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, NULL, &n);
  if (err != CL_SUCCESS && err != CL_DEVICE_NOT_FOUND)
    acl_host->log(ACCEL_LOG_WARN, ACL_DOMAIN, "platform skipped: clGetDeviceIDs: %s (%d)",
                  acl_error_name(err), (int)err);
  if (err != CL_SUCCESS || n == 0) return CL_SUCCESS;
  cl_device_id *ids = calloc(n, sizeof *ids);
  acl_phys_t *grown = realloc(be->devs, (be->count + n) * sizeof *grown);
  if (!ids || !grown) {
    free(ids);
    if (grown) be->devs = grown;
    return CL_OUT_OF_HOST_MEMORY;
  }
  be->devs = grown;
  err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids, NULL);
  for (cl_uint i = 0; err == CL_SUCCESS && i < n; i++) {
    acl_phys_t *d = &be->devs[be->count];
    memset(d, 0, sizeof *d);
    d->platform = p;
    d->id = ids[i];
    err = probe_device(d);
    if (err == CL_SUCCESS) {
      pthread_mutex_init(&d->lock, NULL);
      be->count++;
    }
  }
  free(ids);
  return err;
}

static accel_status_t acl_backend_init(const accel_host_api_t *host, accel_be_backend_t **out) {
  (void)host;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && np == 0))
    return acl_host->set_error(ACCEL_ERROR_UNAVAILABLE,
                               "no OpenCL platform: clGetPlatformIDs: %s (%d) (no ICD "
                               "registered in /etc/OpenCL/vendors or OCL_ICD_VENDORS)",
                               acl_error_name(err), (int)err);
  if (err != CL_SUCCESS)
    return acl_host->set_error(ACCEL_ERROR_UNAVAILABLE, "OpenCL unusable: clGetPlatformIDs: %s (%d)",
                               acl_error_name(err), (int)err);
  cl_platform_id *plats = calloc(np, sizeof *plats);
  acl_backend_t *be = calloc(1, sizeof *be);
  if (!plats || !be) {
    free(plats);
    free(be);
    return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "opencl backend_init: out of memory");
  }
  err = clGetPlatformIDs(np, plats, NULL);
  for (cl_uint i = 0; err == CL_SUCCESS && i < np; i++) err = add_platform_devices(be, plats[i]);
  free(plats);
  if (err != CL_SUCCESS) {
    backend_free(be);
    return acl_host->set_error(ACCEL_ERROR_UNAVAILABLE,
                               "OpenCL device enumeration failed: %s (%d)",
                               acl_error_name(err), (int)err);
  }
  if (be->count == 0) {
    backend_free(be);
    return acl_host->set_error(ACCEL_ERROR_UNAVAILABLE,
                               "%u OpenCL platform(s) but no device (clGetDeviceIDs: "
                               "CL_DEVICE_NOT_FOUND)", np);
  }
  *out = be;
  return ACCEL_OK;
}

static void acl_backend_shutdown(accel_be_backend_t *backend) { backend_free(backend); }

static accel_status_t acl_device_count(accel_be_backend_t *backend, int *count) {
  *count = ((acl_backend_t *)backend)->count;
  return ACCEL_OK;
}

static accel_device_type_t map_type(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return ACCEL_DEVICE_TYPE_GPU;
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return ACCEL_DEVICE_TYPE_ACCELERATOR;
  if (t & CL_DEVICE_TYPE_CPU) return ACCEL_DEVICE_TYPE_CPU;
  return ACCEL_DEVICE_TYPE_OTHER;
}

int acl_wants_command_buffer(const acl_phys_t *d) {
  const char *env = getenv("ACCEL_OPENCL_COMMAND_BUFFER");
  return d->has_cmdbuf && env && strcmp(env, "1") == 0;
}

static accel_status_t acl_device_info(accel_be_backend_t *backend, int index,
                                      accel_device_info_t *info) {
  acl_phys_t *d = &((acl_backend_t *)backend)->devs[index];
  memset(info, 0, sizeof *info);
  snprintf(info->name, sizeof info->name, "%s", d->name);
  snprintf(info->vendor, sizeof info->vendor, "%s", d->vendor);
  snprintf(info->backend, sizeof info->backend, "opencl");
  snprintf(info->driver_version, sizeof info->driver_version, "%s", d->driver);
  info->index = index;
  info->type = map_type(d->type);
  info->memory_total = d->global_mem;
  uint64_t used = __atomic_load_n(&d->allocated, __ATOMIC_RELAXED);
  info->memory_free = used < d->global_mem ? d->global_mem - used : 0;
  info->compute_units = d->compute_units;
  info->supports_fp16 = (uint32_t)d->fp16;
  info->supports_bf16 = 0;
  info->native_graphs = (uint32_t)acl_wants_command_buffer(d);
  info->lazy_default = 0;
  info->host_accessible = (d->svm_caps & (CL_DEVICE_SVM_FINE_GRAIN_BUFFER |
                                          CL_DEVICE_SVM_FINE_GRAIN_SYSTEM)) != 0;
  return ACCEL_OK;
}

static const accel_backend_vtable_t acl_vtable = {
  ACCEL_BACKEND_VTABLE_HEAD("opencl", "OpenCL 2.0+ devices with SVM (ICD loader); graphs via "
                                      "cl_khr_command_buffer"),
  ACCEL_BACKEND_SLOTS(acl),
  ACCEL_BACKEND_SLOTS_NATIVE(acl),
  .device_synchronize = NULL, /* core: clFinish on every stream via stream_synchronize */
  /* DLPack's OpenCL tensors carry cl_mem handles, accel's OpenCL memory is SVM pointers: no
   * DLPack device type (accel_dlpack_* say UNSUPPORTED), docs/INTEROP.md. */
  .dlpack_device_type = 0,
  .mem_register = acl_mem_register,
  .mem_unregister = acl_mem_unregister,
  .kernel_forms = ACCEL_KERNEL_FORM_NATIVE, /* the embedded OpenCL C source */
  .kernel_abi_version = ACCEL_KERNEL_ABI_VERSION,
  .kernel_count = ACCEL_KERNEL_COUNT,
  .device_attribute = acl_device_attribute,
  .graph_update = NULL, /* emulated: no mutable dispatch used (docs/backends/opencl.md) */
  .conditionals = 1, /* predicated by submit_batch (acl_predicate.c; device_attribute says so) */
  .module_build = acl_module_build, /* clBuildProgram (acl_module.c) */
  .module_destroy = acl_module_destroy,
};

ACCEL_BACKEND_DEFINE_QUERY(acl_vtable, acl_host)
