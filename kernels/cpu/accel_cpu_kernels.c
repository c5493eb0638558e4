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

static void set_chunks(accel_cpu_kernel_access_t *a, acc_u64 chunks, acc_u32 num_chunks) {
  a->chunks = (const void *)(uintptr_t)chunks;
  a->num_chunks = num_chunks;
}

static void set_slot(accel_cpu_kernel_access_t *a, unsigned slot, uint64_t bytes, unsigned mode) {
  a->elem_bytes[slot] = (uint8_t)bytes;
  a->slot_mode[slot] = (uint8_t)mode;
}

static void add_scalar(accel_cpu_kernel_access_t *a, acc_u64 addr, uint32_t size,
                       uint32_t block, int write) {
  a->scalars[a->num_scalars++] =
      (accel_cpu_kernel_scalar_t){.addr = addr, .size = size, .block = block,
                                  .write = (uint32_t)write};
}

enum { R = ACCEL_CPU_SLOT_READ, W = ACCEL_CPU_SLOT_WRITE, RW = R | W };

void accel_cpu_kernel_access(uint32_t kernel_id, const void *params,
                             accel_cpu_kernel_access_t *out) {
  memset(out, 0, sizeof *out);
  switch (kernel_id) {
  case ACCEL_KERNEL_NORM_PARTIAL: {
    acc_norm_partial_params_t p;
    memcpy(&p, params, sizeof p);
    set_chunks(out, p.chunks, p.num_chunks);
    set_slot(out, 0, acc_dt_bytes(p.dtype), R);
    out->scalars[out->num_scalars++] = (accel_cpu_kernel_scalar_t){
        .addr = p.partials, .size = 4u, .stride = 4u, .block = ACCEL_CPU_ALL_BLOCKS, .write = 1u};
    break;
  }
  case ACCEL_KERNEL_CLIP: {
    acc_clip_params_t p;
    memcpy(&p, params, sizeof p);
    set_chunks(out, p.chunks, p.num_chunks);
    set_slot(out, 0, acc_dt_bytes(p.dtype), RW);
    add_scalar(out, p.total_norm, 4u, ACCEL_CPU_ALL_BLOCKS, 0);
    if (p.coef_out != 0u) add_scalar(out, p.coef_out, 4u, 0u, 1);
    break;
  }
  case ACCEL_KERNEL_UPDATE_HP: {
    acc_update_hp_params_t p;
    memcpy(&p, params, sizeof p);
    set_chunks(out, p.chunks, p.num_chunks);
    set_slot(out, 0, acc_dt_bytes(p.lp_dtype), (p.flags & ACC_HP_ZERO_LP) != 0u ? RW : R);
    set_slot(out, 1, 4u, (p.flags & ACC_HP_ASSIGN) != 0u ? W : RW);
    break;
  }
  case ACCEL_KERNEL_UNSCALE: {
    acc_unscale_params_t p;
    memcpy(&p, params, sizeof p);
    set_chunks(out, p.chunks, p.num_chunks);
    set_slot(out, 0, acc_dt_bytes(p.dtype), RW);
    add_scalar(out, p.inv_scale, 4u, ACCEL_CPU_ALL_BLOCKS, 0);
    add_scalar(out, p.found_inf, 4u, ACCEL_CPU_ALL_BLOCKS, 1);
    break;
  }
  case ACCEL_KERNEL_ADAM: {
    acc_adam_params_t p;
    memcpy(&p, params, sizeof p);
    set_chunks(out, p.chunks, p.num_chunks);
    set_slot(out, 0, 4u, RW);
    set_slot(out, 1, acc_dt_bytes(p.grad_dtype), R);
    set_slot(out, 2, 4u, RW);
    set_slot(out, 3, 4u, RW);
    add_scalar(out, p.args, (uint32_t)sizeof(acc_adam_args_t), ACCEL_CPU_ALL_BLOCKS, 0);
    break;
  }
  case ACCEL_KERNEL_FILL: {
    acc_fill_params_t p;
    memcpy(&p, params, sizeof p);
    set_chunks(out, p.chunks, p.num_chunks);
    set_slot(out, 0, acc_dt_bytes(p.dtype), W);
    break;
  }
  case ACCEL_KERNEL_SCALE: {
    acc_scale_params_t p;
    memcpy(&p, params, sizeof p);
    set_chunks(out, p.chunks, p.num_chunks);
    set_slot(out, 0, acc_dt_bytes(p.dtype), RW);
    add_scalar(out, p.scale, 4u, ACCEL_CPU_ALL_BLOCKS, 0);
    break;
  }
  default: /* NORM_FINAL reads every partial: a reduction over all blocks, never fused */
    break;
  }
}

uint64_t accel_cpu_kernel_block_bytes(uint32_t kernel_id, const void *params) {
  /* Bytes read + written by one full chunk (the last chunk of a tensor may be shorter). */
  if (kernel_id == ACCEL_KERNEL_NORM_FINAL) {
    acc_norm_final_params_t p;
    memcpy(&p, params, sizeof p);
    return 4u * (uint64_t)p.num_partials;
  }
  accel_cpu_kernel_access_t a;
  accel_cpu_kernel_access(kernel_id, params, &a);
  uint64_t per_element = 0;
  for (unsigned k = 0; k < 4u; ++k) {
    const unsigned passes = ((a.slot_mode[k] & R) != 0u) + ((a.slot_mode[k] & W) != 0u);
    per_element += (uint64_t)a.elem_bytes[k] * passes;
  }
  return ACC_CHUNK * per_element;
}
