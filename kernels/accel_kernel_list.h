/*
 * The kernels every backend provides, as an X-macro: ACCEL_KERNEL(ENUM_SUFFIX, symbol_name).
 * The order defines kernel_id in accel_kernel_launch_t; append only. Each kernel takes one
 * by-value parameter struct from accel_kernel_abi.h.
 */
ACCEL_KERNEL(NORM_PARTIAL, accel_k_norm_partial)
ACCEL_KERNEL(NORM_FINAL, accel_k_norm_final)
ACCEL_KERNEL(CLIP, accel_k_clip)
ACCEL_KERNEL(UPDATE_HP, accel_k_update_hp)
ACCEL_KERNEL(UNSCALE, accel_k_unscale)
ACCEL_KERNEL(ADAM, accel_k_adam)
ACCEL_KERNEL(FILL, accel_k_fill)
ACCEL_KERNEL(SCALE, accel_k_scale)
