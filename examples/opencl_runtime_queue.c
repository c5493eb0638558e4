/*
 * opencl_runtime_queue.c: accel's kernels on an OpenCL queue a runtime owns.
 *
 * The "runtime" (this program) creates its context, queue and kernel with the OpenCL API. It
 * opens an accel device over its context, wraps its queue as an accel stream, and then mixes
 * its own kernel and accel's kernels on that one queue, on accel memory (an SVM pointer of the
 * runtime's context): x = x * 2 + 1 (runtime), x *= 3 (accel), x = x * 2 + 1 (runtime),
 * then the 2-norm of x (accel). Queue order is the only synchronization.
 *
 * Build: cc opencl_runtime_queue.c $(pkg-config --cflags --libs accel) -lOpenCL
 * Run:   ./a.out          (exit 77 when no OpenCL 2.0 device with SVM exists)
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <accel/accel.h>
#include <accel/accel_interop.h>
#include <accel/accel_kernels.h>

#define N 4096
#define ACCEL_OK_OR_DIE(call)                                                              \
  do {                                                                                     \
    accel_status_t st_ = (call);                                                           \
    if (st_ != ACCEL_OK) {                                                                 \
      fprintf(stderr, "%s: %s (%s)\n", #call, accel_last_error(), accel_status_name(st_)); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)
#define CL_OK_OR_DIE(call)                                \
  do {                                                    \
    cl_int err_ = (call);                                 \
    if (err_ != CL_SUCCESS) {                             \
      fprintf(stderr, "%s: OpenCL error %d\n", #call, err_); \
      return 1;                                           \
    }                                                     \
  } while (0)

static const char *source =
    "__kernel void affine(__global float *x, float a, float b) {\n"
    "  size_t i = get_global_id(0); x[i] = x[i] * a + b;\n"
    "}\n";

/* The runtime's own launch: x = x * 2 + 1 on its queue. */
static cl_int runtime_affine(cl_command_queue q, cl_kernel k, float *x) {
  float a = 2.0f, b = 1.0f;
  size_t global = N;
  cl_int err = clSetKernelArgSVMPointer(k, 0, x);
  if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof a, &a);
  if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof b, &b);
  if (err == CL_SUCCESS) err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
  return err;
}

int main(void) {
  /* --- the runtime's objects ------------------------------------------------------------ */
  cl_platform_id platform;
  cl_device_id device;
  cl_uint n = 0;
  cl_device_svm_capabilities svm = 0;
  if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0 ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &n) != CL_SUCCESS ||
      clGetDeviceInfo(device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL) !=
          CL_SUCCESS || !svm) {
    printf("no OpenCL device with SVM\n");
    return 77;
  }
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  CL_OK_OR_DIE(err);
  cl_command_queue queue = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
  CL_OK_OR_DIE(err);
  cl_program program = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
  CL_OK_OR_DIE(err);
  CL_OK_OR_DIE(clBuildProgram(program, 1, &device, "", NULL, NULL));
  cl_kernel affine = clCreateKernel(program, "affine", &err);
  CL_OK_OR_DIE(err);

  /* --- accel over them -------------------------------------------------------------------- */
  accel_native_t native;
  memset(&native, 0, sizeof native);
  native.struct_size = sizeof native;
  native.device = device;
  native.context = ctx;
  accel_device_t *dev;
  ACCEL_OK_OR_DIE(accel_device_wrap_native("opencl", &native, &dev));
  native.queue = queue;
  accel_stream_t *stream;
  ACCEL_OK_OR_DIE(accel_stream_wrap_native(dev, &native, &stream));

  /* accel memory lives in the runtime's context: its kernels take it as an SVM pointer */
  float *x, *three, *norm;
  ACCEL_OK_OR_DIE(accel_malloc(dev, N * sizeof(float), (void **)&x));
  ACCEL_OK_OR_DIE(accel_malloc(dev, sizeof(float), (void **)&three));
  ACCEL_OK_OR_DIE(accel_malloc(dev, sizeof(float), (void **)&norm));
  accel_tensor_t t = {x, N, ACCEL_F32};
  const float three_host = 3.0f;
  ACCEL_OK_OR_DIE(accel_memcpy_async(stream, three, &three_host, sizeof three_host));
  ACCEL_OK_OR_DIE(accel_fill(stream, &t, 1, 0.5f));

  /* --- one queue, one order --------------------------------------------------------------- */
  CL_OK_OR_DIE(runtime_affine(queue, affine, x));              /* x = 0.5 * 2 + 1 = 2 */
  ACCEL_OK_OR_DIE(accel_scale(stream, &t, 1, three));          /* x = 6 */
  CL_OK_OR_DIE(runtime_affine(queue, affine, x));              /* x = 13 */
  ACCEL_OK_OR_DIE(accel_multi_tensor_norm(stream, &t, 1, 2.0f, norm));
  float result = 0.0f;
  ACCEL_OK_OR_DIE(accel_memcpy_async(stream, &result, norm, sizeof result));
  ACCEL_OK_OR_DIE(accel_stream_synchronize(stream));           /* clFinish on the queue */

  const float expected = 13.0f * sqrtf((float)N);
  printf("||x||_2 = %g (expected %g)\n", (double)result, (double)expected);
  int ok = fabsf(result - expected) <= 1e-5f * expected;

  /* --- accel lets go; the runtime's objects are still the runtime's ---------------------- */
  ACCEL_OK_OR_DIE(accel_free(dev, x));
  ACCEL_OK_OR_DIE(accel_free(dev, three));
  ACCEL_OK_OR_DIE(accel_free(dev, norm));
  ACCEL_OK_OR_DIE(accel_stream_destroy(stream)); /* waits; does not release the runtime's queue */
  ACCEL_OK_OR_DIE(accel_device_close(dev));      /* drops accel's context reference only */
  clReleaseKernel(affine);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx);
  return ok ? 0 : 1;
}
