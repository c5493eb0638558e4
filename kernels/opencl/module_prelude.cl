/*
 * What a user kernel built at run time by the OpenCL backend sees (accel_module.h;
 * docs/KERNELS.md, "Loading a kernel at run time"): the OpenCL prelude (its form chosen by the
 * device's build options, as for the shared kernels), the kernel ABI, the dtype conversions and
 * dispatch, and the Philox generator. Flattened and embedded with its SHA-256
 * (backends/opencl/acl_module.c).
 */
#include "../prelude_opencl.h"
#include "../accel_kernel_abi.h"
#include "../convert.h"
#include "../random.h"
