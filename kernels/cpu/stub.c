/* placeholder until the kernels land */ typedef int accel_cpu_kernels_placeholder;
