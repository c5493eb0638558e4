/* accel-bench built without the OpenCL ICD loader (tools/bench/meson.build): no OpenCL bounds.
 * bench_cl_bound_open always fails, so no sample is ever asked for. */
#include "bench.h"

int bench_cl_bound_open(accel_device_t *dev, bench_cl_bound_t **out, char *why, size_t cap) {
  (void)dev;
  (void)out;
  snprintf(why, cap, "accel-bench was built without the OpenCL ICD loader");
  return 1;
}

double bench_cl_bound_sample(bench_cl_bound_t *b, const bench_loop_t *loop) {
  (void)b;
  (void)loop;
  return -1.0;
}

void bench_cl_bound_close(bench_cl_bound_t *b) { (void)b; }
