/*
 * The hand-written OpenCL host loop of the opencl scenario: the OpenCL API used directly, no
 * accel, running the same accel_k_fill / accel_k_scale kernels from the same flattened source
 * with the same build options, chunk table, parameter structs and launch geometry as the
 * OpenCL backend (backends/opencl; both take the form, options and NDRange from
 * kernels/opencl/accel_cl_launch.h) and core (kernel_ops.c, chunk_table.c). It is the floor
 * accel's per-launch host cost is compared against: one context, one in-order queue without
 * profiling, one clSetKernelArg + clEnqueueNDRangeKernel per launch, no events, one clFinish at
 * the end.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdlib.h>
#include <string.h>

#include "accel_kernel_abi_host.h"
#include "accel_kernels_cl.h"
#include "bench.h"
#include "opencl/accel_cl_launch.h"

struct bench_cl_host {
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue queue;
  cl_program program;
  cl_kernel fill, scale;
  int fine_grain_system;
  acc_cl_form_t form;
  uint32_t max_blocks;
  /* the tensor of bench_cl_host_prepare */
  float *data;
  float *scale_dev;
  acc_chunk_t *chunks;
  uint32_t num_chunks;
};

/* The device accel calls opencl:index: every device of every platform, in enumeration order
 * (backends/opencl/acl_backend.c). */
static int find_device(int index, const char *name, cl_platform_id *plat, cl_device_id *dev,
                       char *why, size_t cap) {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err != CL_SUCCESS || np == 0)
    return bench_why(why, cap, "clGetPlatformIDs: error %d, %u platforms", (int)err, np);
  cl_platform_id *plats = calloc(np, sizeof *plats);
  if (!plats) return bench_why(why, cap, "out of host memory");
  int rc = 1, seen = 0;
  if ((err = clGetPlatformIDs(np, plats, NULL)) != CL_SUCCESS) {
    bench_why(why, cap, "clGetPlatformIDs: error %d", (int)err);
    goto done;
  }
  for (cl_uint p = 0; p < np; p++) {
    cl_uint nd = 0;
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (err == CL_DEVICE_NOT_FOUND || nd == 0) continue;
    if (err != CL_SUCCESS) {
      bench_why(why, cap, "clGetDeviceIDs: error %d", (int)err);
      goto done;
    }
    if (index >= seen + (int)nd) {
      seen += (int)nd;
      continue;
    }
    cl_device_id *ids = calloc(nd, sizeof *ids);
    if (!ids) {
      bench_why(why, cap, "out of host memory");
      goto done;
    }
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL);
    *dev = ids[index - seen];
    free(ids);
    char got[256] = "";
    if (err == CL_SUCCESS) err = clGetDeviceInfo(*dev, CL_DEVICE_NAME, sizeof got - 1, got, NULL);
    if (err != CL_SUCCESS)
      bench_why(why, cap, "clGetDeviceIDs/clGetDeviceInfo(NAME): error %d", (int)err);
    else if (strcmp(got, name) != 0)
      bench_why(why, cap, "OpenCL device %d is '%s', accel opened '%s'", index, got, name);
    else
      rc = 0;
    *plat = plats[p];
    goto done;
  }
  bench_why(why, cap, "no OpenCL device %d (%d devices)", index, seen);
done:
  free(plats);
  return rc;
}

static int build(bench_cl_host_t *h, char *why, size_t cap) {
  const char *src = (const char *)accel_kernels_cl_source;
  const char *options = acc_cl_build_options(h->form, 1);
  cl_int err = CL_SUCCESS;
  h->program = clCreateProgramWithSource(h->ctx, 1, &src, NULL, &err);
  if (err != CL_SUCCESS)
    return bench_why(why, cap, "clCreateProgramWithSource: error %d", (int)err);
  err = clBuildProgram(h->program, 1, &h->dev, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[1024] = "";
    clGetProgramBuildInfo(h->program, h->dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    return bench_why(why, cap, "clBuildProgram(%s): error %d: %s", options, (int)err, log);
  }
  h->fill = clCreateKernel(h->program, "accel_k_fill", &err);
  if (err == CL_SUCCESS) h->scale = clCreateKernel(h->program, "accel_k_scale", &err);
  if (err != CL_SUCCESS) return bench_why(why, cap, "clCreateKernel: error %d", (int)err);
  /* no predicate (the kernels' second argument, prelude_opencl.h), as the backend outside a
   * conditional region */
  err = clSetKernelArg(h->fill, 1, sizeof(cl_mem), NULL);
  if (err == CL_SUCCESS) err = clSetKernelArg(h->scale, 1, sizeof(cl_mem), NULL);
  if (err != CL_SUCCESS) return bench_why(why, cap, "clSetKernelArg(1, NULL): error %d", (int)err);
  if (h->fine_grain_system) {
    cl_bool yes = CL_TRUE;
    err = clSetKernelExecInfo(h->fill, CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM, sizeof yes, &yes);
    if (err == CL_SUCCESS)
      err = clSetKernelExecInfo(h->scale, CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM, sizeof yes,
                                &yes);
    if (err != CL_SUCCESS)
      return bench_why(why, cap, "clSetKernelExecInfo(SVM_FINE_GRAIN_SYSTEM): error %d", (int)err);
  }
  return 0;
}

int bench_cl_host_open(int index, const char *name, bench_cl_host_t **out, char *why,
                       size_t cap) {
  bench_cl_host_t *h = calloc(1, sizeof *h);
  if (!h) return bench_why(why, cap, "out of host memory");
  cl_platform_id plat = NULL;
  cl_int err = CL_SUCCESS;
  cl_device_svm_capabilities svm = 0;
  cl_device_type type = 0;
  cl_uint cu = 0;
  if (find_device(index, name, &plat, &h->dev, why, cap)) goto fail;
  err = clGetDeviceInfo(h->dev, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
  if (err != CL_SUCCESS || !(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)) {
    bench_why(why, cap,
              "no fine-grained buffer SVM (clGetDeviceInfo(SVM_CAPABILITIES): error %d, "
              "caps 0x%llx)",
              (int)err, (unsigned long long)svm);
    goto fail;
  }
  h->fine_grain_system = (svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) != 0;
  err = clGetDeviceInfo(h->dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
  if (err == CL_SUCCESS) err = clGetDeviceInfo(h->dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  if (err != CL_SUCCESS) {
    bench_why(why, cap, "clGetDeviceInfo(MAX_COMPUTE_UNITS, TYPE): error %d", (int)err);
    goto fail;
  }
  h->max_blocks = (cu ? cu : 1) * ACC_CL_BLOCKS_PER_CU;
  h->form = acc_cl_kernel_form((type & CL_DEVICE_TYPE_CPU) != 0);
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
  h->ctx = clCreateContext(props, 1, &h->dev, NULL, NULL, &err);
  if (err != CL_SUCCESS) {
    bench_why(why, cap, "clCreateContext: error %d", (int)err);
    goto fail;
  }
  h->queue = clCreateCommandQueueWithProperties(h->ctx, h->dev, NULL, &err);
  if (err != CL_SUCCESS) {
    bench_why(why, cap, "clCreateCommandQueueWithProperties: error %d", (int)err);
    goto fail;
  }
  if (build(h, why, cap)) goto fail;
  *out = h;
  return 0;
fail:
  bench_cl_host_close(h);
  return 1;
}

static void free_tensor(bench_cl_host_t *h) {
  void *bufs[] = {h->data, h->scale_dev, h->chunks};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i]) clSVMFree(h->ctx, bufs[i]);
  h->data = NULL;
  h->scale_dev = NULL;
  h->chunks = NULL;
  h->num_chunks = 0;
}

static void *svm_alloc(bench_cl_host_t *h, size_t bytes) {
  return clSVMAlloc(h->ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, bytes, 0);
}

int bench_cl_host_prepare(bench_cl_host_t *h, size_t numel, float scale, char *why,
                          size_t cap) {
  free_tensor(h);
  if (numel == 0) return bench_why(why, cap, "empty tensor");
  const size_t nc = (numel + ACC_CHUNK - 1) / ACC_CHUNK;
  h->data = svm_alloc(h, numel * sizeof(float));
  h->scale_dev = svm_alloc(h, sizeof(float));
  h->chunks = svm_alloc(h, nc * sizeof(acc_chunk_t));
  if (!h->data || !h->scale_dev || !h->chunks) {
    free_tensor(h);
    return bench_why(why, cap, "clSVMAlloc(%zu elements, fine-grained buffer) returned NULL",
                     numel);
  }
  *h->scale_dev = scale;
  /* One entry per ACC_CHUNK elements, as kop_build in core/chunk_table.c. */
  for (size_t c = 0; c < nc; c++) {
    const size_t off = c * ACC_CHUNK;
    h->chunks[c] = (acc_chunk_t){
        .ptr = {(acc_u64)(uintptr_t)(h->data + off)},
        .count = (acc_u32)(numel - off < ACC_CHUNK ? numel - off : ACC_CHUNK),
        .tensor = 0};
  }
  h->num_chunks = (uint32_t)nc;
  if (h->fine_grain_system) return 0;
  /* The kernels reach the data and the scale through addresses stored in memory. */
  void *ptrs[] = {h->data, h->scale_dev, h->chunks};
  cl_int err = clSetKernelExecInfo(h->fill, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof ptrs, ptrs);
  if (err == CL_SUCCESS)
    err = clSetKernelExecInfo(h->scale, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof ptrs, ptrs);
  if (err != CL_SUCCESS)
    return bench_why(why, cap, "clSetKernelExecInfo(SVM_PTRS): error %d", (int)err);
  return 0;
}

int bench_cl_host_run(bench_cl_host_t *h, const float *values, int n, char *why, size_t cap) {
  size_t global, local;
  acc_cl_ndrange(h->form, h->num_chunks, h->max_blocks, &global, &local);
  const acc_u64 chunks = (acc_u64)(uintptr_t)h->chunks;
  const acc_scale_params_t sp = {chunks, (acc_u64)(uintptr_t)h->scale_dev, h->num_chunks,
                                 ACC_DT_F32};
  for (int k = 0; k < n; k++) {
    const acc_fill_params_t fp = {chunks, h->num_chunks, ACC_DT_F32, values[k], 0};
    cl_int err = clSetKernelArg(h->fill, 0, sizeof fp, &fp);
    if (err != CL_SUCCESS)
      return bench_why(why, cap, "clSetKernelArg(accel_k_fill): error %d", (int)err);
    err = clEnqueueNDRangeKernel(h->queue, h->fill, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return bench_why(why, cap, "clEnqueueNDRangeKernel(accel_k_fill): error %d", (int)err);
    err = clSetKernelArg(h->scale, 0, sizeof sp, &sp);
    if (err != CL_SUCCESS)
      return bench_why(why, cap, "clSetKernelArg(accel_k_scale): error %d", (int)err);
    err = clEnqueueNDRangeKernel(h->queue, h->scale, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return bench_why(why, cap, "clEnqueueNDRangeKernel(accel_k_scale): error %d", (int)err);
  }
  cl_int err = clFinish(h->queue);
  return err == CL_SUCCESS ? 0 : bench_why(why, cap, "clFinish: error %d", (int)err);
}

const float *bench_cl_host_data(const bench_cl_host_t *h) { return h->data; }

void bench_cl_host_close(bench_cl_host_t *h) {
  if (!h) return;
  if (h->queue) clFinish(h->queue);
  if (h->ctx) free_tensor(h);
  if (h->fill) clReleaseKernel(h->fill);
  if (h->scale) clReleaseKernel(h->scale);
  if (h->program) clReleaseProgram(h->program);
  if (h->queue) clReleaseCommandQueue(h->queue);
  if (h->ctx) clReleaseContext(h->ctx);
  free(h);
}
