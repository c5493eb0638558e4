/*
 * The kernel table: every kernel every backend provides, one row each, as an X-macro (host C
 * only; the kernel targets never include it). The row order defines kernel_id in
 * accel_kernel_launch_t: append only.
 *
 *   ACCEL_KERNEL(ID, symbol, params_t, op, lists, scalars)
 *
 * ID        ACCEL_KERNEL_<ID> (accel_kernel_ids.h); symbol: the kernel's name in every target;
 * params_t  its by-value parameter struct (accel_kernel_abi.h);
 * op        ACC_OP("public function", table): the operation whose chunk table this kernel's
 *           launch walks (the validation unit: one cache key, one per-stream memo slot), with
 *           table = ACC_TABLE_SHARED or ACC_TABLE_PER_STREAM (the table carries per-stream
 *           scratch); ACC_NO_OP for a kernel launched only as a second step of another row's op;
 *           ACC_ROW_OP("public function"): ACC_OP(fn, ACC_TABLE_SHARED) whose public function is
 *           generated from the row (one launch, one block per chunk, or one block for a row
 *           without lists: gen_kernel_rows.py --row-ops-c), the struct declared in
 *           accel_kernel_abi.h checked against the row's layout; a scalar's pointer type in that
 *           function follows its bytes (4: float; sizeof(acc_u32): uint32_t; the kernel ABI's
 *           struct: its public twin);
 * lists     (ACC_LIST(...), ...): the operation's tensor lists in chunk-slot order
 *           (acc_chunk_t.ptr[k] is list k):
 *             ACC_LIST("name", access, dtype, aliasing), or ACC_OPT_LIST(...) for a list the
 *             call may leave out (NULL: every chunk holds address 0 for it; never list 0)
 *             access    ACC_IO(R | W | RW), or ACC_IO_IF(field, FLAG, mode, mode_with_flag): the
 *                       mode depends on a flag bit of params_t.field (the op's flags in core);
 *             dtype     ACC_ANY_DT(field): F32, F16 or BF16, one per list, passed in
 *                       params_t.field; ACC_F32_DT: F32 only; ACC_SAME_DT(k): list k's dtype;
 *                       ACC_STATE_DT(field): a state format, F32, BF16 or U8, in
 *                       params_t.field; ACC_F32_PER_ROW(k): F32, k elements per row of
 *                       ACC_BLOCK elements of list 0 (chunk slot: the chunk's first row's);
 *             aliasing  ACC_NO_ALIAS: must not overlap anything where either side is written;
 *                       ACC_ALIAS(k): tensor i may be exactly tensor i of list k (in place);
 *             (k: an earlier list of the row; at most ACC_MAX_LISTS lists and 8 scalars per
 *             row);
 * scalars   (ACC_SCALAR(...), ACC_SCRATCH(...), ...): device memory outside the chunk table:
 *             ACC_SCALAR("name", field, bytes, R | W, ACC_REQUIRED | ACC_OPTIONAL, blocks)
 *               a device pointer argument of the operation (validated by core: aligned, live,
 *               no overlap); field: ACC_FIELD(member) of params_t holding its address (0: not
 *               accessed; optional ones may be 0), or ACC_NO_FIELD when another launch of the
 *               op uses it;
 *             ACC_SCRATCH(member, bytes, R | W, blocks): internal memory (the op allocates it);
 *             ACC_VALUE("name", ACC_FIELD(member)): a host float the call passes by value into
 *               the acc_f32 member (after every ACC_SCALAR and ACC_SCRATCH of the row);
 *             blocks: ACC_ALL_BLOCKS (any block), ACC_BLOCK0 (logical block 0 only),
 *               ACC_PER_BLOCK(stride) (block b touches [addr + b * stride, + bytes)) or
 *               ACC_PER_TENSOR (a scalar only: an array of `bytes` per tensor of the call,
 *               n of them; block b touches the element of its chunk's tensor).
 *
 * Generated from it: the ids and names (accel_kernel_ids.h), the installed kernel ABI
 * <accel/accel_kernel_abi.h> (gen_kernel_abi.py, through gen_kernel_rows.py's reader), the number
 * of table users (the per-stream memo slots, core/kernel_support.h), core's validation descriptors
 * (core/kernel_validate.c), the CPU backend's access table (kernels/cpu/accel_cpu_kernels.c);
 * tests/unit/test_kernel_docs.c checks that docs/KERNELS.md lists exactly these kernels, and
 * tests/plugins/check_*.{py,sh} read the symbols from the first line of each row. A row whose
 * params_t accel_kernel_abi.h does not declare (a build's extra rows only) also gets its struct,
 * public function and Python wrapper from kernels/gen_kernel_rows.py (docs/KERNELS.md).
 */
ACCEL_KERNEL(NORM_PARTIAL, accel_k_norm_partial, acc_norm_partial_params_t,
             ACC_OP("accel_multi_tensor_norm", ACC_TABLE_PER_STREAM),
             (ACC_LIST("tensors", ACC_IO(R), ACC_ANY_DT(dtype), ACC_NO_ALIAS)),
             (ACC_SCALAR("out_dev", ACC_NO_FIELD, 4, W, ACC_REQUIRED, ACC_ALL_BLOCKS),
              ACC_SCRATCH(partials, 4, W, ACC_PER_BLOCK(4))))
/* one block over every partial: not chunk-wise (never fused) */
ACCEL_KERNEL(NORM_FINAL, accel_k_norm_final, acc_norm_final_params_t, ACC_NO_OP, (), ())
ACCEL_KERNEL(CLIP, accel_k_clip, acc_clip_params_t,
             ACC_OP("accel_clip_by_global_norm", ACC_TABLE_SHARED),
             (ACC_LIST("tensors", ACC_IO(RW), ACC_ANY_DT(dtype), ACC_NO_ALIAS)),
             (ACC_SCALAR("total_norm_dev", ACC_FIELD(total_norm), 4, R, ACC_REQUIRED,
                         ACC_ALL_BLOCKS),
              ACC_SCALAR("coef_out_dev", ACC_FIELD(coef_out), 4, W, ACC_OPTIONAL, ACC_BLOCK0)))
ACCEL_KERNEL(UPDATE_HP, accel_k_update_hp, acc_update_hp_params_t,
             ACC_OP("accel_update_hp_grads", ACC_TABLE_SHARED),
             (ACC_LIST("lp_grads", ACC_IO_IF(flags, ACC_HP_ZERO_LP, R, RW), ACC_ANY_DT(lp_dtype),
                       ACC_NO_ALIAS),
              ACC_LIST("hp_grads", ACC_IO_IF(flags, ACC_HP_ASSIGN, RW, W), ACC_F32_DT,
                       ACC_NO_ALIAS)),
             ())
ACCEL_KERNEL(UNSCALE, accel_k_unscale, acc_unscale_params_t,
             ACC_ROW_OP("accel_unscale_and_check"),
             (ACC_LIST("tensors", ACC_IO(RW), ACC_ANY_DT(dtype), ACC_NO_ALIAS)),
             (ACC_SCALAR("inv_scale_dev", ACC_FIELD(inv_scale), 4, R, ACC_REQUIRED,
                         ACC_ALL_BLOCKS),
              ACC_SCALAR("found_inf_dev", ACC_FIELD(found_inf), 4, W, ACC_REQUIRED,
                         ACC_ALL_BLOCKS)))
ACCEL_KERNEL(ADAM, accel_k_adam, acc_adam_params_t, ACC_ROW_OP("accel_fused_adam"),
             (ACC_LIST("params", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS),
              ACC_LIST("grads", ACC_IO(R), ACC_ANY_DT(grad_dtype), ACC_NO_ALIAS),
              ACC_LIST("exp_avg", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS),
              ACC_LIST("exp_avg_sq", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS)),
             (ACC_SCALAR("args_dev", ACC_FIELD(args), sizeof(acc_adam_args_t), R, ACC_REQUIRED,
                         ACC_ALL_BLOCKS)))
ACCEL_KERNEL(FILL, accel_k_fill, acc_fill_params_t, ACC_ROW_OP("accel_fill"),
             (ACC_LIST("tensors", ACC_IO(W), ACC_ANY_DT(dtype), ACC_NO_ALIAS)),
             (ACC_VALUE("value", ACC_FIELD(value))))
ACCEL_KERNEL(SCALE, accel_k_scale, acc_scale_params_t, ACC_ROW_OP("accel_scale"),
             (ACC_LIST("tensors", ACC_IO(RW), ACC_ANY_DT(dtype), ACC_NO_ALIAS)),
             (ACC_SCALAR("scale_dev", ACC_FIELD(scale), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS)))
/* The mixed-precision step's bookkeeping (kernels/amp.h): one block each, no chunk table. */
ACCEL_KERNEL(AMP_BEGIN, accel_k_amp_begin, acc_amp_begin_params_t,
             ACC_ROW_OP("accel_amp_begin_step"), (),
             (ACC_SCALAR("scaler_dev", ACC_FIELD(scaler), sizeof(acc_amp_scaler_t), RW,
                         ACC_REQUIRED, ACC_BLOCK0),
              ACC_SCALAR("found_inf_dev", ACC_FIELD(found_inf), 4, W, ACC_REQUIRED, ACC_BLOCK0)))
ACCEL_KERNEL(AMP_UPDATE, accel_k_amp_update, acc_amp_update_params_t,
             ACC_ROW_OP("accel_amp_update_scale"), (),
             (ACC_SCALAR("scaler_dev", ACC_FIELD(scaler), sizeof(acc_amp_scaler_t), RW,
                         ACC_REQUIRED, ACC_BLOCK0),
              ACC_SCALAR("found_inf_dev", ACC_FIELD(found_inf), 4, R, ACC_REQUIRED, ACC_BLOCK0)))
ACCEL_KERNEL(STEP_COUNT, accel_k_step_count, acc_step_count_params_t,
             ACC_ROW_OP("accel_step_count"), (),
             (ACC_SCALAR("step_dev", ACC_FIELD(step), sizeof(acc_u32), RW, ACC_REQUIRED,
                         ACC_BLOCK0),
              ACC_SCALAR("skip_if_dev", ACC_FIELD(skip_if), 4, R, ACC_OPTIONAL, ACC_BLOCK0)))
ACCEL_KERNEL(CAST, accel_k_cast, acc_cast_params_t, ACC_ROW_OP("accel_cast"),
             (ACC_LIST("src", ACC_IO(R), ACC_ANY_DT(src_dtype), ACC_NO_ALIAS),
              ACC_LIST("dst", ACC_IO(W), ACC_ANY_DT(dst_dtype), ACC_NO_ALIAS)),
             (ACC_SCALAR("skip_if_dev", ACC_FIELD(skip_if), 4, R, ACC_OPTIONAL, ACC_ALL_BLOCKS)))
/* The fused optimizer step (kernels/step.h): the norm sweep over the gradients (partials, then
 * NORM_FINAL) and the one update pass. */
ACCEL_KERNEL(GRAD_NORM_PARTIAL, accel_k_grad_norm_partial, acc_grad_norm_params_t,
             ACC_OP("accel_adam_step_norm", ACC_TABLE_PER_STREAM),
             (ACC_LIST("grads", ACC_IO(R), ACC_ANY_DT(dtype), ACC_NO_ALIAS),
              ACC_OPT_LIST("hp_grads", ACC_IO(R), ACC_F32_DT, ACC_NO_ALIAS)),
             (ACC_SCALAR("norm_dev", ACC_NO_FIELD, 4, W, ACC_OPTIONAL, ACC_ALL_BLOCKS),
              ACC_SCALAR("inv_scale_dev", ACC_FIELD(inv_scale), 4, R, ACC_OPTIONAL,
                         ACC_ALL_BLOCKS),
              ACC_SCALAR("found_inf_dev", ACC_FIELD(found_inf), 4, W, ACC_OPTIONAL,
                         ACC_ALL_BLOCKS),
              ACC_SCALAR("has_grad_dev", ACC_FIELD(has_grad), 4, R, ACC_OPTIONAL,
                         ACC_PER_TENSOR),
              ACC_SCRATCH(partials, 4, W, ACC_PER_BLOCK(4))))
ACCEL_KERNEL(ADAM_STEP, accel_k_adam_step, acc_adam_step_params_t,
             ACC_OP("accel_adam_step_update", ACC_TABLE_SHARED),
             (ACC_LIST("grads", ACC_IO_IF(flags, ACC_STEP_ZERO_GRADS, R, RW),
                       ACC_ANY_DT(grad_dtype), ACC_NO_ALIAS),
              ACC_OPT_LIST("hp_grads", ACC_IO_IF(flags, ACC_STEP_ACCUMULATE, W, RW), ACC_F32_DT,
                           ACC_ALIAS(0)),
              ACC_LIST("params", ACC_IO(RW), ACC_ANY_DT(param_dtype), ACC_NO_ALIAS),
              ACC_LIST("exp_avg", ACC_IO(RW), ACC_STATE_DT(state_dtype), ACC_NO_ALIAS),
              ACC_LIST("exp_avg_sq", ACC_IO(RW), ACC_SAME_DT(3), ACC_NO_ALIAS),
              ACC_OPT_LIST("model_params", ACC_IO(W), ACC_ANY_DT(model_dtype), ACC_NO_ALIAS),
              ACC_OPT_LIST("max_exp_avg_sq", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS),
              ACC_OPT_LIST("state_scales", ACC_IO(RW), ACC_F32_PER_ROW(2), ACC_NO_ALIAS)),
             (ACC_SCALAR("args_dev", ACC_FIELD(args), sizeof(acc_adam_args_t), R, ACC_REQUIRED,
                         ACC_ALL_BLOCKS),
              ACC_SCALAR("inv_scale_dev", ACC_FIELD(inv_scale), 4, R, ACC_OPTIONAL,
                         ACC_ALL_BLOCKS),
              ACC_SCALAR("norm_dev", ACC_FIELD(total_norm), 4, R, ACC_OPTIONAL, ACC_ALL_BLOCKS),
              ACC_SCALAR("coef_out_dev", ACC_FIELD(coef_out), 4, W, ACC_OPTIONAL, ACC_BLOCK0),
              ACC_SCALAR("steps_dev", ACC_FIELD(steps), 4, R, ACC_OPTIONAL, ACC_PER_TENSOR),
              ACC_SCALAR("has_grad_dev", ACC_FIELD(has_grad), 4, R, ACC_OPTIONAL,
                         ACC_PER_TENSOR),
              ACC_SCALAR("generator", ACC_FIELD(rng), sizeof(acc_philox_state_t), R,
                         ACC_OPTIONAL, ACC_ALL_BLOCKS)))
/* Torch's per-parameter step counts (kernels/step.h): one block, no chunk table. */
ACCEL_KERNEL(STEP_COUNTS, accel_k_step_counts, acc_step_counts_params_t,
             ACC_OP("accel_step_counts", ACC_TABLE_SHARED), (),
             (ACC_SCALAR("steps_dev", ACC_FIELD(steps), 4, RW, ACC_REQUIRED, ACC_PER_TENSOR),
              ACC_SCALAR("has_grad_dev", ACC_FIELD(has_grad), 4, R, ACC_OPTIONAL,
                         ACC_PER_TENSOR),
              ACC_SCALAR("skip_if_dev", ACC_FIELD(skip_if), 4, R, ACC_OPTIONAL, ACC_BLOCK0)))
/* Random numbers (kernels/random.h): each reads its generator's state ("generator", the
 * generator's own device memory) in every block; RAND_ADVANCE, launched next by the same
 * operation, moves the state's counter past the blocks the first launch used. */
ACCEL_KERNEL(RAND_RAW, accel_k_rand_raw, acc_rand_params_t,
             ACC_OP("accel_generator_raw", ACC_TABLE_SHARED),
             (ACC_LIST("out", ACC_IO(W), ACC_F32_DT, ACC_NO_ALIAS)),
             (ACC_SCALAR("generator", ACC_FIELD(state), sizeof(acc_philox_state_t), R,
                         ACC_REQUIRED, ACC_ALL_BLOCKS)))
ACCEL_KERNEL(RAND_UNIFORM, accel_k_rand_uniform, acc_rand_params_t,
             ACC_OP("accel_rand_uniform", ACC_TABLE_SHARED),
             (ACC_LIST("tensors", ACC_IO(W), ACC_ANY_DT(dtype), ACC_NO_ALIAS)),
             (ACC_SCALAR("generator", ACC_FIELD(state), sizeof(acc_philox_state_t), R,
                         ACC_REQUIRED, ACC_ALL_BLOCKS)))
ACCEL_KERNEL(RAND_NORMAL, accel_k_rand_normal, acc_rand_params_t,
             ACC_OP("accel_rand_normal", ACC_TABLE_SHARED),
             (ACC_LIST("tensors", ACC_IO(W), ACC_ANY_DT(dtype), ACC_NO_ALIAS)),
             (ACC_SCALAR("generator", ACC_FIELD(state), sizeof(acc_philox_state_t), R,
                         ACC_REQUIRED, ACC_ALL_BLOCKS)))
ACCEL_KERNEL(DROPOUT, accel_k_dropout, acc_rand_params_t,
             ACC_OP("accel_dropout", ACC_TABLE_SHARED),
             (ACC_LIST("src", ACC_IO(R), ACC_ANY_DT(dtype), ACC_NO_ALIAS),
              ACC_LIST("dst", ACC_IO(W), ACC_SAME_DT(0), ACC_ALIAS(0))),
             (ACC_SCALAR("generator", ACC_FIELD(state), sizeof(acc_philox_state_t), R,
                         ACC_REQUIRED, ACC_ALL_BLOCKS)))
ACCEL_KERNEL(RAND_ADVANCE, accel_k_rand_advance, acc_rand_advance_params_t, ACC_NO_OP, (), ())
#ifdef ACCEL_EXTRA_KERNEL_ROWS
/* A build's own rows after every real kernel, from a header named by
 * -DACCEL_EXTRA_KERNEL_ROWS='"rows.h"' (tests/krow: a test kernel; tests/unit/test_kernel_table.c:
 * a throw-away row). Keep this the last line: gen_kernel_abi.py stops here. */
#include ACCEL_EXTRA_KERNEL_ROWS
#endif
