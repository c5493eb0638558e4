/*
 * How host code launches the OpenCL C form of the shared kernels: the build options and the
 * NDRange of each of its two forms (prelude_opencl.h). The OpenCL backend, the kernel tests and
 * accel-bench's hand-written OpenCL loop all launch the kernels through these, so they launch
 * them alike.
 */
#ifndef ACCEL_CL_LAUNCH_H
#define ACCEL_CL_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accel_kernel_abi_host.h"

typedef enum acc_cl_form {
  ACC_CL_SIMT = 0,      /* a logical block per work-group of ACC_BLOCK work-items (GPUs) */
  ACC_CL_LANE_LOOPS = 1 /* a logical block per work-item, lanes as loops (CPU devices) */
} acc_cl_form_t;

/* The form for a device: lane loops on CPU devices (a CPU runtime such as PoCL runs a
 * work-group's work-items one after another on one thread, docs/backends/opencl.md), SIMT on
 * GPUs and accelerators. ACCEL_OPENCL_KERNEL_FORM=simt or =lane-loops overrides it (to compare
 * the two on one device, and to run the SIMT form's launches through the backend here). */
static inline acc_cl_form_t acc_cl_kernel_form(int cpu_device) {
  const char *env = getenv("ACCEL_OPENCL_KERNEL_FORM");
  if (env && strcmp(env, "simt") == 0) return ACC_CL_SIMT;
  if (env && strcmp(env, "lane-loops") == 0) return ACC_CL_LANE_LOOPS;
  return cpu_device ? ACC_CL_LANE_LOOPS : ACC_CL_SIMT;
}

/* Work-groups (SIMT) or work-items (lane loops) per compute unit: the kernels loop over their
 * logical blocks grid-stride, so a few per compute unit keep every unit busy without paying
 * for thousands of tiny groups. */
#define ACC_CL_BLOCKS_PER_CU 4u

/* clBuildProgram options: OpenCL C 1.2, the form, and correctly rounded fp32 division and
 * sqrt when the device has them (exact = 0 only for devices without: their norms may then
 * differ from other backends in the last bit). */
static inline const char *acc_cl_build_options(acc_cl_form_t form, int exact) {
  static const char *const options[2][2] = {
      {"-cl-std=CL1.2", "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"},
      {"-cl-std=CL1.2 -DACC_LANE_LOOPS",
       "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -DACC_LANE_LOOPS"}};
  return options[form == ACC_CL_LANE_LOOPS][exact != 0];
}

/* Work-items per work-group of a form (the kernels' reqd_work_group_size). */
static inline size_t acc_cl_group_size(acc_cl_form_t form) {
  return form == ACC_CL_LANE_LOOPS ? 1u : ACC_BLOCK;
}

/* The NDRange of a launch of num_blocks logical blocks: at most max_blocks of them run at once
 * (one per work-group or work-item); any count gives the same bits. */
static inline void acc_cl_ndrange(acc_cl_form_t form, uint32_t num_blocks, uint32_t max_blocks,
                                  size_t *global, size_t *local) {
  uint32_t blocks = num_blocks < max_blocks ? num_blocks : max_blocks;
  if (blocks == 0) blocks = 1;
  *local = acc_cl_group_size(form);
  *global = (size_t)blocks * *local;
}

#endif
