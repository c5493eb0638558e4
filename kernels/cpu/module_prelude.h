/*
 * What a user kernel compiled at run time on the CPU sees (accel_module.h; docs/KERNELS.md,
 * "Loading a kernel at run time"): the C prelude, the kernel ABI (acc_chunk_t), the dtype
 * conversions and dispatch (acc_load, ACC_DTYPE_CALL, ACC_ELEM_MAP) and the Philox generator.
 * Flattened into one text at build time (gen_opencl.py --flat --system) and embedded in
 * libaccel (backends/cpu/cpu_module.c), so it needs no installed header.
 */
#include "../prelude_c.h"
#include "../accel_kernel_abi.h"
#include "../convert.h"
#include "../random.h"
