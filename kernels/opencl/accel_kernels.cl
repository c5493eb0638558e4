/*
 * The OpenCL C 1.2 form of the shared kernels, and the OpenCL backend's predication kernels.
 * gen_opencl.py flattens the includes into one source (accel_kernels_flat.cl) and embeds it
 * with its SHA-256 (accel_kernels_cl.h).
 */
#include "../prelude_opencl.h"
#include "../accel_kernels_all.h"
#include "../predicate.h"
