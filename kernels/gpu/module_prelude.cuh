/*
 * What a user kernel compiled at run time by the CUDA or HIP backend sees (accel_module.h;
 * docs/KERNELS.md, "Loading a kernel at run time"): the CUDA/HIP prelude, the kernel ABI, the
 * dtype conversions and dispatch, and the Philox generator. Flattened without its <...>
 * includes (NVRTC and hiprtc have the device runtime built in) and embedded with its SHA-256
 * (backends/gpu_common/gpu_user.c).
 */
#include "../prelude_gpu.h"
#include "../accel_kernel_abi.h"
#include "../convert.h"
#include "../random.h"
