// Configure-time probe: hipcc must compile this for an --offload-arch to be used.
#include <hip/hip_runtime.h>
extern "C" __global__ void accel_probe(float *x) { x[threadIdx.x] = 1.0f; }
