/*
 * The by-value parameter struct of every kernel and the chunk table entry, shared by the host
 * (C) and by every kernel target (C, CUDA, HIP, OpenCL C).
 *
 * Portability rules: only acc_u64 / acc_u32 / acc_f32 fields (the including prelude or
 * accel_kernel_abi_host.h defines them), 8-byte fields first, then 4-byte fields, and an even
 * number of 4-byte fields, so no struct has padding and the layout is identical everywhere.
 * Device addresses are acc_u64; kernels cast them to global pointers (OpenCL runs with SVM).
 */
#ifndef ACCEL_KERNEL_ABI_H
#define ACCEL_KERNEL_ABI_H

/* Version of this layout, installed as <accel/accel_kernel_abi.h> for out-of-tree plugins.
 * Bumped for any incompatible change (a field moved, a constant changed); appending a kernel
 * row (a new id, a new params struct) keeps it. 2: acc_chunk_t holds 8 addresses (the fused
 * optimizer step has up to 7 lists: its gradients, hp, the three of Adam, AMSGrad's maximum
 * and the model weights). 3: ACC_DT_U8 and the fused update's eighth list, the 8-bit state's
 * block scales (a plugin built before would read U8 moments as F32). 4: the fused update's
 * BF16 master weights (param_dtype, rng). 5: every kernel of the OpenCL C form (and its
 * SPIR-V) and of the CUDA / HIP form takes a second argument, the predicate of conditional
 * regions (prelude_opencl.h, prelude_gpu.h; NULL outside them): a plugin that passes only the
 * first gets CL_INVALID_KERNEL_ARGS, or a kernel reading garbage on CUDA and HIP. A plugin
 * declares the version it was built with in its vtable (kernel_abi_version) and the loader
 * refuses one that differs from libaccel's (docs/PLUGINS.md, "The kernel ABI handshake").
 * Guarded, so that a build may state another value (-DACCEL_KERNEL_ABI_VERSION=4243u; the
 * loader tests build such a plugin). */
#ifndef ACCEL_KERNEL_ABI_VERSION
#define ACCEL_KERNEL_ABI_VERSION 5u
#endif

/* Alignment a copy of a kernel's parameter block needs to be read as its struct (the largest
 * field is 8 bytes): _Alignas(ACCEL_KERNEL_PARAMS_ALIGN) unsigned char params[...]. The block
 * a launch points to is aligned so; run_kernel_c copies it and accepts any alignment. */
#define ACCEL_KERNEL_PARAMS_ALIGN 8u

/* Elements per chunk. A chunk never crosses a tensor boundary; it is one logical block of a
 * launch and one norm partial. Changing it changes norm bits (the reduction order). */
#define ACC_CHUNK 65536u
/* Lanes per block (ACCEL_KERNEL_BLOCK in accel_plugin.h). */
#define ACC_BLOCK 256u

/* Element types (values of accel_dtype_t). */
#define ACC_DT_F32 0u
#define ACC_DT_F16 1u
#define ACC_DT_BF16 2u
#define ACC_DT_U8 3u /* 8-bit codes: the 8-bit state format's moments only (kernels/quant.h) */

/* Norm kinds (how |x| is mapped before summing, and how the sum is finished). */
#define ACC_NORM_L1 0u  /* sum |x| */
#define ACC_NORM_L2 1u  /* sqrt(sum x*x) */
#define ACC_NORM_INF 2u /* max |x|, NaN propagating */
#define ACC_NORM_P 3u   /* (sum |x|^p)^(1/p) */

/* Tensor lists an operation can have (acc_chunk_t.ptr). */
#define ACC_MAX_LISTS 8u

/* One chunk: the element addresses (already offset to the chunk start) of the lists of the
 * operation, in the order the operation documents, and the element count. A list the call left
 * out (an optional list) has address 0 in every chunk; slots past the operation's lists are 0. */
typedef struct acc_chunk {
  acc_u64 ptr[ACC_MAX_LISTS];
  acc_u32 count;  /* 1..ACC_CHUNK */
  acc_u32 tensor; /* index of the tensor in its list (diagnostics) */
} acc_chunk_t;

/* accel_k_norm_partial: ptr[0] = data; partials[b] = partial of chunk b. */
typedef struct acc_norm_partial_params {
  acc_u64 chunks;
  acc_u64 partials; /* f32[num_chunks] */
  acc_u32 num_chunks;
  acc_u32 dtype;
  acc_u32 kind; /* ACC_NORM_* */
  acc_f32 p;    /* exponent for ACC_NORM_P */
} acc_norm_partial_params_t;

/* accel_k_norm_final: one logical block; out[0] = finish(reduce(partials)); 0 partials -> 0. */
typedef struct acc_norm_final_params {
  acc_u64 partials;
  acc_u64 out;
  acc_u32 num_partials;
  acc_u32 kind;
  acc_f32 p;
  acc_u32 reserved;
} acc_norm_final_params_t;

/* accel_k_clip: ptr[0] = data. coef = max_norm / (total_norm[0] + eps); logical block 0 stores
 * it to coef_out (when nonzero); data *= min(coef, 1) with NaN kept. */
typedef struct acc_clip_params {
  acc_u64 chunks;
  acc_u64 total_norm;
  acc_u64 coef_out; /* 0: not stored */
  acc_u32 num_chunks;
  acc_u32 dtype;
  acc_f32 max_norm;
  acc_f32 eps;
} acc_clip_params_t;

/* accel_k_update_hp: ptr[0] = lp (lp_dtype), ptr[1] = hp (f32). hp += float(lp), or with
 * ACC_HP_ASSIGN hp = init + float(lp) (hp is only written: a fill of hp with init followed by
 * the update, folded into one pass by a graph planner); then lp = 0 with ACC_HP_ZERO_LP. */
#define ACC_HP_ZERO_LP 1u
#define ACC_HP_ASSIGN 2u
typedef struct acc_update_hp_params {
  acc_u64 chunks;
  acc_u32 num_chunks;
  acc_u32 lp_dtype;
  acc_u32 flags; /* ACC_HP_* */
  acc_f32 init;  /* ACC_HP_ASSIGN only */
} acc_update_hp_params_t;

/* accel_k_unscale: ptr[0] = data. data *= inv_scale[0]; a non-finite result stores 1.0f to
 * found_inf[0] (never anything else). */
typedef struct acc_unscale_params {
  acc_u64 chunks;
  acc_u64 inv_scale;
  acc_u64 found_inf;
  acc_u32 num_chunks;
  acc_u32 dtype;
} acc_unscale_params_t;

/* accel_k_adam: ptr[0] = param, ptr[1] = grad (grad_dtype), ptr[2] = exp_avg,
 * ptr[3] = exp_avg_sq. args points to accel_adam_args_t (acc_adam_args_t below). */
typedef struct acc_adam_params {
  acc_u64 chunks;
  acc_u64 args;
  acc_u32 num_chunks;
  acc_u32 grad_dtype;
} acc_adam_params_t;

/* Device layout of accel_adam_args_t (accel_kernels.h); kept in sync by a static assert in
 * core/kernel_validate.c. */
typedef struct acc_adam_args {
  acc_f32 lr;
  acc_f32 beta1;
  acc_f32 beta2;
  acc_f32 eps;
  acc_f32 weight_decay;
  acc_u32 step;
  acc_u32 adamw;
  acc_f32 found_inf;
} acc_adam_args_t;

/* accel_k_fill: ptr[0] = data; every element = value rounded to dtype. */
typedef struct acc_fill_params {
  acc_u64 chunks;
  acc_u32 num_chunks;
  acc_u32 dtype;
  acc_f32 value;
  acc_u32 reserved;
} acc_fill_params_t;

/* accel_k_scale: ptr[0] = data; data *= scale[0]. */
typedef struct acc_scale_params {
  acc_u64 chunks;
  acc_u64 scale;
  acc_u32 num_chunks;
  acc_u32 dtype;
} acc_scale_params_t;

/* Dynamic loss scaler state (accel_loss_scaler_t in accel_kernels.h; kept in sync by a static
 * assert in core/kernel_validate.c), torch.cuda.amp.GradScaler's tensors and settings. */
typedef struct acc_amp_scaler {
  acc_f32 scale;
  acc_f32 inv_scale; /* 1 / scale, stored by accel_k_amp_begin */
  acc_u32 growth_tracker;
  acc_u32 growth_interval;
  acc_f32 growth_factor;
  acc_f32 backoff_factor;
} acc_amp_scaler_t;

/* accel_k_amp_begin: one logical block, no chunks (chunks = num_chunks = 0: the fields every
 * table user has). found_inf[0] = 0; scaler->inv_scale = 1 / scaler->scale. */
typedef struct acc_amp_begin_params {
  acc_u64 chunks;
  acc_u64 scaler;
  acc_u64 found_inf;
  acc_u32 num_chunks;
  acc_u32 reserved;
} acc_amp_begin_params_t;

/* accel_k_amp_update: one logical block, no chunks. torch._amp_update_scale_: on found_inf[0]
 * != 0 scale *= backoff_factor and growth_tracker = 0; else growth_tracker + 1 reaching
 * growth_interval multiplies scale by growth_factor (kept only when finite) and restarts the
 * tracker at 0, any other count is stored. */
typedef struct acc_amp_update_params {
  acc_u64 chunks;
  acc_u64 scaler;
  acc_u64 found_inf;
  acc_u32 num_chunks;
  acc_u32 reserved;
} acc_amp_update_params_t;

/* accel_k_step_count: one logical block, no chunks. step[0] += 1 unless skip_if != 0 and
 * skip_if[0] != 0. */
typedef struct acc_step_count_params {
  acc_u64 chunks;
  acc_u64 step;
  acc_u64 skip_if; /* 0: never skipped */
  acc_u32 num_chunks;
  acc_u32 reserved;
} acc_step_count_params_t;

/* accel_k_cast: ptr[0] = src (src_dtype), ptr[1] = dst (dst_dtype). dst = src converted
 * through f32 (round to nearest even), unless skip_if != 0 and skip_if[0] != 0. */
typedef struct acc_cast_params {
  acc_u64 chunks;
  acc_u64 skip_if; /* 0: never skipped */
  acc_u32 num_chunks;
  acc_u32 src_dtype;
  acc_u32 dst_dtype;
  acc_u32 reserved;
} acc_cast_params_t;

/* The fused optimizer step (accel_adam_step_norm / accel_adam_step_update): its flags. The
 * gradient of element i is g = base + float(grads[i]), base = hp[i] with ACC_STEP_ACCUMULATE
 * (earlier micro-batches' sum), else 0 (the addition accel_update_hp_grads makes into a zeroed
 * hp, so the same bits), then g *= inv_scale[0] when inv_scale != 0 (accel_unscale_and_check's
 * product). */
#define ACC_STEP_ZERO_GRADS 1u /* update: grads = 0 once read */
#define ACC_STEP_ACCUMULATE 2u /* hp is read: g = hp + float(grads) */
#define ACC_STEP_MAXIMIZE 8u   /* update: AdamW steps with -g (hp still receives g) */

/* A tensor without a gradient in this step: has_grad != 0 and has_grad[t] == 0 (u32 per tensor
 * of the call, t = acc_chunk_t.tensor). Both sweeps skip its chunks: nothing of it is read or
 * written, and its norm partials are 0. */

/* accel_k_grad_norm_partial: ptr[0] = grads (dtype), ptr[1] = hp (f32) with
 * ACC_STEP_ACCUMULATE. partials[b] = the norm partial of chunk b over the gradients g, in the
 * order of accel_k_norm_partial; a non-finite g stores 1.0f to found_inf[0] when found_inf !=
 * 0. accel_k_norm_final then reduces the partials. */
typedef struct acc_grad_norm_params {
  acc_u64 chunks;
  acc_u64 partials;  /* f32[num_chunks] */
  acc_u64 inv_scale; /* 0: no loss scale */
  acc_u64 found_inf; /* 0: not checked */
  acc_u64 has_grad;  /* 0: every tensor has a gradient */
  acc_u32 num_chunks;
  acc_u32 dtype;
  acc_u32 kind; /* ACC_NORM_* */
  acc_f32 p;    /* exponent for ACC_NORM_P */
  acc_u32 flags; /* ACC_STEP_* */
  acc_u32 reserved;
} acc_grad_norm_params_t;

/* accel_k_adam_step: ptr[0] = grads (grad_dtype), ptr[1] = hp (f32, or 0), ptr[2] = params
 * (param_dtype), ptr[3] = exp_avg, ptr[4] = exp_avg_sq (state_dtype), ptr[5] = model params
 * (model_dtype, or 0), ptr[6] = max_exp_avg_sq (f32, or 0: AMSGrad when given), ptr[7] = with
 * U8 moments, the f32 scales [s_m, s_v] of each row of ACC_BLOCK elements (kernels/quant.h).
 * Per element: g as above; grads = 0 with ACC_STEP_ZERO_GRADS; g *= min(coef, 1) when
 * total_norm != 0 (coef = max_norm / (total_norm[0] + eps), accel_k_clip's; block 0 stores coef
 * to coef_out when that is nonzero); hp = g when hp is given; then, unless args->found_inf !=
 * 0, accel_k_adam's update of params / exp_avg / exp_avg_sq with g (-g with
 * ACC_STEP_MAXIMIZE; with max_exp_avg_sq, max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq),
 * NaN kept, is the denominator's), and model = round(params) when model params are given. The
 * step of tensor t is steps[t] (f32, a whole number) when steps != 0, else args->step. BF16
 * params are read exactly and stored rounded: with rng != 0, element i of chunk b by
 * (bits + r) >> 16, r the half (i % 2) of word j = i / 2 of the chunk, word j % 4 of Philox
 * block b * ACC_RAND_CHUNK_BLOCKS + j / 4 of the state (accel_k_rand_raw's word; Inf and NaN
 * to nearest even); without, to nearest. */
typedef struct acc_adam_step_params {
  acc_u64 chunks;
  acc_u64 args;       /* acc_adam_args_t */
  acc_u64 inv_scale;  /* 0: no loss scale */
  acc_u64 total_norm; /* 0: no clipping */
  acc_u64 coef_out;   /* 0: not stored */
  acc_u64 steps;      /* 0: args->step for every tensor */
  acc_u64 has_grad;   /* 0: every tensor has a gradient */
  acc_u64 rng;        /* BF16 params: 0 (nearest even), or acc_philox_state_t (read only) */
  acc_u32 num_chunks;
  acc_u32 grad_dtype;
  acc_u32 model_dtype; /* ignored without model params */
  acc_u32 flags;       /* ACC_STEP_* */
  acc_f32 max_norm;
  acc_f32 eps;         /* of the clip */
  acc_u32 state_dtype; /* the moments' dtype, the state format: ACC_DT_F32, ACC_DT_BF16 or
                          ACC_DT_U8 (chunk slot 7: the blocks' scales) */
  acc_u32 param_dtype; /* the master weights: ACC_DT_F32, or ACC_DT_BF16 (F32 or BF16 moments;
                          stored rounded stochastically with rng's words, else to nearest) */
} acc_adam_step_params_t;

/* accel_k_step_counts: one logical block, no chunks (chunks = num_chunks = 0: the fields every
 * table user has). Unless skip_if != 0 and skip_if[0] != 0, steps[t] += 1 (f32) for every t <
 * num_tensors with a gradient (has_grad == 0 or has_grad[t] != 0): accel_k_step_count for a
 * count per tensor, as torch keeps state["step"] per parameter. */
typedef struct acc_step_counts_params {
  acc_u64 chunks;
  acc_u64 steps;    /* f32[num_tensors] */
  acc_u64 has_grad; /* 0: every tensor has a gradient */
  acc_u64 skip_if;  /* 0: never skipped */
  acc_u32 num_chunks;
  acc_u32 num_tensors;
} acc_step_counts_params_t;

/* Random numbers (kernels/random.h). A generator's state in device memory
 * (accel_generator_state_t in accel_random.h; kept in sync by a static assert in
 * core/generator.c): the Philox4x32-10 key and the 128-bit counter of its next block, least
 * significant word first. */
typedef struct acc_philox_state {
  acc_u32 key0;
  acc_u32 key1;
  acc_u32 ctr0;
  acc_u32 ctr1;
  acc_u32 ctr2;
  acc_u32 ctr3;
} acc_philox_state_t;

/* Philox blocks each chunk of a random launch reserves: chunk b's element i takes word i % 4
 * of block (counter + b * ACC_RAND_CHUNK_BLOCKS + i / 4). */
#define ACC_RAND_CHUNK_BLOCKS (ACC_CHUNK / 4u)

/* accel_k_rand_raw: ptr[0] = out (u32 words; dtype unused); accel_k_rand_uniform: ptr[0] =
 * data (dtype), data = a + b * u with u in [0, 1); accel_k_rand_normal: data = a + b * z, z
 * standard normal (Box-Muller); accel_k_dropout: ptr[0] = src, ptr[1] = dst (both dtype),
 * dst = u >= a ? src * b : 0. state: acc_philox_state_t, only read. */
typedef struct acc_rand_params {
  acc_u64 chunks;
  acc_u64 state;
  acc_u32 num_chunks;
  acc_u32 dtype;
  acc_f32 a;
  acc_f32 b;
} acc_rand_params_t;

/* accel_k_rand_advance: one logical block, no chunks; the state's counter += blocks (mod
 * 2^128). */
typedef struct acc_rand_advance_params {
  acc_u64 chunks;
  acc_u64 state;
  acc_u64 blocks;
  acc_u32 num_chunks;
  acc_u32 reserved;
} acc_rand_advance_params_t;
/* The parameter structs gen_kernel_rows.py generates from a build's extra rows (a row whose
 * params_t no struct above defines), named by -DACCEL_EXTRA_KERNEL_PARAMS='"params.h"'. */
#ifdef ACCEL_EXTRA_KERNEL_PARAMS
#include ACCEL_EXTRA_KERNEL_PARAMS
#endif

#endif
