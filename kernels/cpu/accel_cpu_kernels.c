/* The CPU form of the shared kernels: the kernel bodies (kernels/ *.h) compiled with the C prelude. */
#include "accel_cpu_kernels.h"

#include "../prelude_c.h"
#include "../accel_kernels_all.h"
#include "../accel_kernel_ids.h"

static const accel_cpu_kernel_fn kernel_table[ACCEL_KERNEL_COUNT] = {
#define ACCEL_KERNEL(id, name) [ACCEL_KERNEL_##id] = name,
#include "../accel_kernel_list.h"
#undef ACCEL_KERNEL
};

accel_cpu_kernel_fn accel_cpu_kernel_lookup(uint32_t kernel_id) {
  return kernel_id < ACCEL_KERNEL_COUNT ? kernel_table[kernel_id] : NULL;
}

static uint64_t dtype_bytes(uint32_t dtype) { return dtype == ACC_DT_F32 ? 4u : 2u; }

uint64_t accel_cpu_kernel_block_bytes(uint32_t kernel_id, const void *params) {
  /* Bytes read + written by one full chunk (the last chunk of a tensor may be shorter). */
  switch (kernel_id) {
  case ACCEL_KERNEL_NORM_PARTIAL: {
    acc_norm_partial_params_t p;
    memcpy(&p, params, sizeof p);
    return ACC_CHUNK * dtype_bytes(p.dtype);
  }
  case ACCEL_KERNEL_NORM_FINAL: {
    acc_norm_final_params_t p;
    memcpy(&p, params, sizeof p);
    return 4u * (uint64_t)p.num_partials;
  }
  case ACCEL_KERNEL_CLIP: {
    acc_clip_params_t p;
    memcpy(&p, params, sizeof p);
    return 2u * ACC_CHUNK * dtype_bytes(p.dtype);
  }
  case ACCEL_KERNEL_UPDATE_HP: {
    acc_update_hp_params_t p;
    memcpy(&p, params, sizeof p);
    return ACC_CHUNK * ((p.zero_lp ? 2u : 1u) * dtype_bytes(p.lp_dtype) + 8u);
  }
  case ACCEL_KERNEL_UNSCALE: {
    acc_unscale_params_t p;
    memcpy(&p, params, sizeof p);
    return 2u * ACC_CHUNK * dtype_bytes(p.dtype);
  }
  case ACCEL_KERNEL_ADAM: {
    acc_adam_params_t p;
    memcpy(&p, params, sizeof p);
    return ACC_CHUNK * (24u + dtype_bytes(p.grad_dtype));
  }
  case ACCEL_KERNEL_FILL: {
    acc_fill_params_t p;
    memcpy(&p, params, sizeof p);
    return ACC_CHUNK * dtype_bytes(p.dtype);
  }
  case ACCEL_KERNEL_SCALE: {
    acc_scale_params_t p;
    memcpy(&p, params, sizeof p);
    return 2u * ACC_CHUNK * dtype_bytes(p.dtype);
  }
  default:
    return 0;
  }
}
