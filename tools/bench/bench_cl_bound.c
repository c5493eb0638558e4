/*
 * The bandwidth bounds through an OpenCL device (bench.h, bench_cl_bound_*): the loops of
 * bench_cl_bound.cl, built in accel's own context (accel_device_native) and run on accel's own
 * SVM buffers from a queue of their own, so that they move the kernels' bytes through the same
 * runtime, the same threads and the same memory.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_interop.h"
#include "bench.h"
#include "bench_cl_bound_cl.h"

/* Work-items per compute unit of the all-threads form (kernels/opencl/accel_cl_launch.h runs as
 * many logical blocks at once). */
#define ITEMS_PER_CU 4u

enum { K_READ, K_HP, K_HP_ZERO, K_ADAM, K_STEP, K_READ_BF16, NUM_K };
static const char *const kernel_names[NUM_K] = {"bound_read", "bound_hp",   "bound_hp_zero",
                                                "bound_adam", "bound_step", "bound_read_bf16"};

struct bench_cl_bound {
  cl_device_id dev;
  cl_context ctx; /* accel's */
  cl_command_queue queue;
  cl_program program[2]; /* plain, prefetching */
  cl_kernel k[2][NUM_K];
  cl_mem out; /* bound_read's partial sums */
  uint32_t items;
  char error[256];
};

static int build(bench_cl_bound_t *b, int form, char *why, size_t cap) {
  const char *src = (const char *)bench_cl_bound_source;
  const char *options = form ? "-cl-std=CL1.2 -DAHEAD=4096" : "-cl-std=CL1.2 -DAHEAD=0";
  cl_int err = CL_SUCCESS;
  b->program[form] = clCreateProgramWithSource(b->ctx, 1, &src, NULL, &err);
  if (err != CL_SUCCESS)
    return bench_why(why, cap, "clCreateProgramWithSource: error %d", (int)err);
  err = clBuildProgram(b->program[form], 1, &b->dev, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[1024] = "";
    clGetProgramBuildInfo(b->program[form], b->dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                          NULL);
    return bench_why(why, cap, "clBuildProgram(%s): error %d: %s", options, (int)err, log);
  }
  for (int k = 0; k < NUM_K; k++) {
    b->k[form][k] = clCreateKernel(b->program[form], kernel_names[k], &err);
    if (err != CL_SUCCESS)
      return bench_why(why, cap, "clCreateKernel(%s): error %d", kernel_names[k], (int)err);
  }
  return 0;
}

int bench_cl_bound_open(accel_device_t *dev, bench_cl_bound_t **out, char *why, size_t cap) {
  accel_native_t nat = {.struct_size = sizeof nat};
  accel_status_t st = accel_device_native(dev, &nat);
  if (st != ACCEL_OK)
    return bench_why(why, cap, "accel_device_native: %s: %s", accel_status_name(st),
                     accel_last_error());
  if (strcmp(nat.backend, "opencl") != 0)
    return bench_why(why, cap, "the device is not an OpenCL device (%s)", nat.backend);
  bench_cl_bound_t *b = calloc(1, sizeof *b);
  if (!b) return bench_why(why, cap, "out of host memory");
  b->dev = nat.device;
  b->ctx = nat.context;
  cl_uint cu = 0;
  cl_int err = clGetDeviceInfo(b->dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
  if (err != CL_SUCCESS) {
    bench_why(why, cap, "clGetDeviceInfo(MAX_COMPUTE_UNITS): error %d", (int)err);
    goto fail;
  }
  b->items = (cu ? cu : 1) * ITEMS_PER_CU;
  b->queue = clCreateCommandQueueWithProperties(b->ctx, b->dev, NULL, &err);
  if (err == CL_SUCCESS)
    b->out = clCreateBuffer(b->ctx, CL_MEM_READ_WRITE, b->items * sizeof(float), NULL, &err);
  if (err != CL_SUCCESS) {
    bench_why(why, cap, "clCreateCommandQueueWithProperties/clCreateBuffer: error %d", (int)err);
    goto fail;
  }
  if (build(b, 0, why, cap) || build(b, 1, why, cap)) goto fail;
  *out = b;
  return 0;
fail:
  bench_cl_bound_close(b);
  return 1;
}

void bench_cl_bound_close(bench_cl_bound_t *b) {
  if (!b) return;
  if (b->queue) clFinish(b->queue);
  for (int f = 0; f < 2; f++) {
    for (int k = 0; k < NUM_K; k++)
      if (b->k[f][k]) clReleaseKernel(b->k[f][k]);
    if (b->program[f]) clReleaseProgram(b->program[f]);
  }
  if (b->out) clReleaseMemObject(b->out);
  if (b->queue) clReleaseCommandQueue(b->queue);
  free(b);
}

/* Sets the arguments of kernel k: pointers (SVM) first, then n. */
static cl_int set_args(cl_kernel k, const void *const *ptrs, int nptrs, cl_ulong n) {
  cl_int err = CL_SUCCESS;
  for (int i = 0; i < nptrs && err == CL_SUCCESS; i++)
    err = clSetKernelArgSVMPointer(k, (cl_uint)i, ptrs[i]);
  if (err == CL_SUCCESS) err = clSetKernelArg(k, (cl_uint)nptrs, sizeof n, &n);
  return err;
}

typedef struct run_ctx {
  bench_cl_bound_t *b;
  const bench_loop_t *loop;
} run_ctx_t;

/* One run to completion (bench_bound_run_fn); the first failure is kept in b->error. */
static void run(void *ctx, int prefetch, int threads) {
  bench_cl_bound_t *b = ((run_ctx_t *)ctx)->b;
  const bench_loop_t *loop = ((run_ctx_t *)ctx)->loop;
  if (b->error[0]) return;
  int id;
  switch (loop->kind) {
    case BENCH_LOOP_READ: id = K_READ; break;
    case BENCH_LOOP_HP: id = K_HP; break;
    case BENCH_LOOP_HP_ZERO: id = K_HP_ZERO; break;
    case BENCH_LOOP_ADAM: id = K_ADAM; break;
    case BENCH_LOOP_READ_BF16: id = K_READ_BF16; break;
    default: id = K_STEP; break;
  }
  cl_kernel k = b->k[prefetch != 0][id];
  cl_int err;
  if (id == K_READ || id == K_READ_BF16) {
    const void *const ptrs[1] = {id == K_READ ? (const void *)loop->f32[0] : loop->lp};
    err = set_args(k, ptrs, 1, loop->n);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof b->out, &b->out);
  } else if (id == K_HP || id == K_HP_ZERO) {
    const void *const ptrs[2] = {loop->lp, loop->f32[0]};
    err = set_args(k, ptrs, 2, loop->n);
  } else if (id == K_ADAM) {
    const void *const ptrs[4] = {loop->f32[0], loop->f32[1], loop->f32[2], loop->f32[3]};
    err = set_args(k, ptrs, 4, loop->n);
  } else {
    const void *const ptrs[5] = {loop->lp, loop->f32[0], loop->f32[1], loop->f32[2],
                                 loop->f32[3]};
    err = set_args(k, ptrs, 5, loop->n);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 6, sizeof loop->inv_scale, &loop->inv_scale);
  }
  /* One work-item is the one-thread form (a CPU runtime runs a work-item on one thread). */
  const size_t global = threads == 1 ? 1 : b->items, local = 1;
  if (err == CL_SUCCESS)
    err = clEnqueueNDRangeKernel(b->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
  if (err == CL_SUCCESS) err = clFinish(b->queue);
  if (err != CL_SUCCESS)
    snprintf(b->error, sizeof b->error, "OpenCL bound %s: error %d", kernel_names[id], (int)err);
}

double bench_cl_bound_sample(bench_cl_bound_t *b, const bench_loop_t *loop) {
  run_ctx_t ctx = {b, loop};
  const double ms = bench_bound_best(bench_loop_bytes(loop), run, &ctx);
  if (!b->error[0]) return ms;
  bench_progress_done();
  fprintf(stderr, "accel-bench: %s\n", b->error);
  return -1.0;
}
