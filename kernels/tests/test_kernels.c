/*
 * Standalone test of the shared kernels without libaccel: runs every kernel's CPU form through
 * accel_cpu_kernel_lookup on chunk tables over host memory, checks it against double-precision
 * references, checks that any split of the logical blocks (all at once, one by one in reverse)
 * gives the same bits, and, when built with OpenCL (KT_OPENCL), runs the OpenCL C form on the
 * first OpenCL platform (PoCL here, fine-grained SVM) in both of its forms (SIMT, as GPUs run
 * it, and lane loops, as CPU devices do: accel_cl_launch.h) with several grid sizes and
 * requires the same bits as the CPU form. Exit 77 from the OpenCL part when no usable device
 * exists. The groups: test_kernels_norm.c, test_kernels_elementwise.c, test_kernels_amp.c,
 * test_kernels_random.c, over the harness kt_run.c.
 */
#include "kt_run.h"

int main(void) {
#ifdef KT_OPENCL
  g_cl_ok = kt_cl_setup();
  if (!g_cl_ok && !kt_failures) {
    fprintf(stderr, "test_kernels: no usable OpenCL device; skipped\n");
    return 77;
  }
#endif
  kt_test_norms();
  kt_test_elementwise();
  kt_test_amp();
  kt_test_step_counts();
  kt_test_random();
  if (kt_failures) {
    fprintf(stderr, "test_kernels: %d failures\n", kt_failures);
    return 1;
  }
#ifdef KT_OPENCL
  printf("test_kernels: CPU and OpenCL forms agree bitwise; references OK\n");
#else
  printf("test_kernels: CPU form OK (references, block splits)\n");
#endif
  return 0;
}
