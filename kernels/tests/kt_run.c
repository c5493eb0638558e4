/* The harness of the standalone kernel tests (kt_run.h). */
#include "kt_run.h"

#ifdef KT_OPENCL
#define CL_TARGET_OPENCL_VERSION 200
#include <CL/cl.h>
#include "accel_kernels_cl.h"
#include "opencl/accel_cl_launch.h"
/* The OpenCL forms, in the order of g_prog. */
static const acc_cl_form_t kForms[NFORMS] = {ACC_CL_SIMT, ACC_CL_LANE_LOOPS};
#endif

int kt_failures;
const size_t kSizes[NT] = {0, 1, 3, 255, 256, 257, ACC_CHUNK - 1, ACC_CHUNK, ACC_CHUNK + 1, 200003};

void run_cpu(uint32_t id, const void *params, uint32_t nblocks, int split) {
  accel_cpu_kernel_fn fn = accel_cpu_kernel_lookup(id);
  if (!split) {
    fn(params, 0, nblocks);
  } else {
    for (uint32_t b = nblocks; b-- > 0;) fn(params, b, b + 1);
  }
}

int g_cl_ok;

#ifdef KT_OPENCL
static cl_context g_ctx;
static cl_command_queue g_q;
static cl_program g_prog[NFORMS];

int kt_cl_setup(void) {
  cl_platform_id plat;
  cl_device_id dev;
  cl_uint np = 0;
  if (clGetPlatformIDs(1, &plat, &np) != CL_SUCCESS || np == 0) return 0;
  if (clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) return 0;
  cl_device_svm_capabilities svm = 0;
  if (clGetDeviceInfo(dev, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL) != CL_SUCCESS ||
      !(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)) {
    fprintf(stderr, "OpenCL device has no fine-grained buffer SVM\n");
    return 0;
  }
  cl_int err;
  g_ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  if (err) return 0;
  g_q = clCreateCommandQueueWithProperties(g_ctx, dev, NULL, &err);
  if (err) return 0;
  const char *src = (const char *)accel_kernels_cl_source;
  for (int f = 0; f < NFORMS; ++f) {
    const char *options = acc_cl_build_options(kForms[f], 1);
    g_prog[f] = clCreateProgramWithSource(g_ctx, 1, &src, NULL, &err);
    if (err) return 0;
    err = clBuildProgram(g_prog[f], 1, &dev, options, NULL, NULL);
    if (err) {
      char log[16384] = "";
      clGetProgramBuildInfo(g_prog[f], dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
      fprintf(stderr, "clBuildProgram(%s): %d\n%s\n", options, err, log);
      ++kt_failures;
      return 0;
    }
  }
  return 1;
}

void run_cl(int form, uint32_t id, const void *params, size_t psize, uint32_t blocks) {
  cl_int err;
  cl_kernel k = clCreateKernel(g_prog[form], accel_kernel_names[id], &err);
  KT_CHECK(err == CL_SUCCESS, "clCreateKernel %s: %d", accel_kernel_names[id], err);
  if (err) return;
  err = clSetKernelArg(k, 0, psize, params);
  if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof(cl_mem), NULL); /* no predicate */
  KT_CHECK(err == CL_SUCCESS, "clSetKernelArg: %d", err);
  size_t local, global;
  acc_cl_ndrange(kForms[form], blocks, blocks, &global, &local);
  err = clEnqueueNDRangeKernel(g_q, k, 1, NULL, &global, &local, 0, NULL, NULL);
  KT_CHECK(err == CL_SUCCESS, "clEnqueueNDRangeKernel: %d", err);
  clFinish(g_q);
  clReleaseKernel(k);
}
void *xalloc(size_t n) {
  return clSVMAlloc(g_ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, n ? n : 4, 64);
}
void xfree(void *p) { clSVMFree(g_ctx, p); }
#else
void *xalloc(size_t n) { return aligned_alloc(64, ((n ? n : 4) + 63) / 64 * 64); }
void xfree(void *p) { free(p); }
#endif

size_t esize(uint32_t dt) { return dt == ACC_DT_F32 ? 4 : 2; }
float ld(const void *p, size_t i, uint32_t dt) {
  uint16_t h;
  if (dt == ACC_DT_F32) return ((const float *)p)[i];
  h = ((const uint16_t *)p)[i];
  if (dt == ACC_DT_BF16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  _Float16 v;
  memcpy(&v, &h, 2);
  return (float)v;
}
void st(void *p, size_t i, uint32_t dt, float v) {
  if (dt == ACC_DT_F32) {
    ((float *)p)[i] = v;
  } else if (dt == ACC_DT_F16) {
    _Float16 h = (_Float16)v;
    memcpy((uint16_t *)p + i, &h, 2);
  } else {
    uint32_t u;
    memcpy(&u, &v, 4);
    ((uint16_t *)p)[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
}

void make_tensors(void **t, uint32_t dt, float scale, uint64_t seed) {
  uint64_t s = seed;
  for (size_t k = 0; k < NT; ++k) {
    t[k] = xalloc(kSizes[k] * esize(dt));
    for (size_t i = 0; i < kSizes[k]; ++i) st(t[k], i, dt, kt_uniform(&s) * scale);
  }
}

uint32_t total_chunks(void) {
  uint32_t c = 0;
  for (size_t k = 0; k < NT; ++k) c += (uint32_t)((kSizes[k] + ACC_CHUNK - 1) / ACC_CHUNK);
  return c;
}

uint32_t *make_has_grad(void) {
  uint32_t *f = xalloc(NT * sizeof *f);
  for (size_t k = 0; k < NT; ++k) f[k] = k != 2 && k != NT - 1;
  return f;
}

int form_runs(int form) { return form == 0 || g_cl_ok; }

void run_form(uint32_t id, const void *params, size_t psize, int form) {
  if (form == 0) run_cpu(id, params, 1, 0);
#ifdef KT_OPENCL
  else run_cl((form - 1) / 2, id, params, psize, (uint32_t)(form - 1) % 2 + 1);
#else
  (void)psize;
#endif
}
