/* accel_kernel_abi.h for host C code: defines the ABI scalar types, then includes it. */
#ifndef ACCEL_KERNEL_ABI_HOST_H
#define ACCEL_KERNEL_ABI_HOST_H

#include <stdint.h>

typedef uint64_t acc_u64;
typedef uint32_t acc_u32;
typedef float acc_f32;

#include "accel_kernel_abi.h"

_Static_assert(sizeof(acc_chunk_t) == 72, "acc_chunk_t has padding");
_Static_assert(sizeof(acc_norm_partial_params_t) == 32, "norm_partial params padded");
_Static_assert(sizeof(acc_norm_final_params_t) == 32, "norm_final params padded");
_Static_assert(sizeof(acc_clip_params_t) == 40, "clip params padded");
_Static_assert(sizeof(acc_update_hp_params_t) == 24, "update_hp params padded");
_Static_assert(sizeof(acc_unscale_params_t) == 32, "unscale params padded");
_Static_assert(sizeof(acc_adam_params_t) == 24, "adam params padded");
_Static_assert(sizeof(acc_adam_args_t) == 32, "adam args padded");
_Static_assert(sizeof(acc_fill_params_t) == 24, "fill params padded");
_Static_assert(sizeof(acc_scale_params_t) == 24, "scale params padded");
_Static_assert(sizeof(acc_amp_scaler_t) == 24, "amp scaler padded");
_Static_assert(sizeof(acc_amp_begin_params_t) == 32, "amp_begin params padded");
_Static_assert(sizeof(acc_amp_update_params_t) == 32, "amp_update params padded");
_Static_assert(sizeof(acc_step_count_params_t) == 32, "step_count params padded");
_Static_assert(sizeof(acc_cast_params_t) == 32, "cast params padded");
_Static_assert(sizeof(acc_grad_norm_params_t) == 64, "grad_norm params padded");
_Static_assert(sizeof(acc_adam_step_params_t) == 96, "adam_step params padded");
_Static_assert(sizeof(acc_step_counts_params_t) == 40, "step_counts params padded");
_Static_assert(sizeof(acc_philox_state_t) == 24, "philox state padded");
_Static_assert(sizeof(acc_rand_params_t) == 32, "rand params padded");
_Static_assert(sizeof(acc_rand_advance_params_t) == 32, "rand_advance params padded");

#endif
