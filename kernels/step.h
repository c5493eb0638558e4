/*
 * The fused optimizer step (accel_adam_step_norm / accel_adam_step_update, accel_kernels.h): a
 * mixed-precision AdamW step in two sweeps over the gradients instead of five passes.
 *  norm:   accel_k_grad_norm_partial reads each gradient once: g = base + float(grads) (base =
 *          hp with ACC_STEP_ACCUMULATE, else 0), g *= inv_scale; the norm partial of each
 *          chunk (accel_k_norm_partial's order, so accel_k_norm_final reduces them to the bits
 *          accel_multi_tensor_norm gives over the unscaled hp), and a non-finite g sets
 *          found_inf (accel_unscale_and_check's check of the stored value);
 *  update: accel_k_adam_step, one pass per chunk: the same g, grads = 0, g *= min(coef, 1)
 *          (the clip), hp = g, AdamW (accel_k_adam's element function, with maximize and
 *          AMSGrad) and the model weights' cast, each skipped as the separate kernels skip.
 *          BF16 master weights are read exactly and stored rounded, stochastically with the
 *          generator's words (acc_bf16_round_sr), and have no model weights.
 * A tensor without a gradient in this step (its has_grad flag 0) is skipped by both: its norm
 * partials are 0 and nothing of it is read or written. Its step count (steps[t], counted by
 * accel_k_step_counts before the update) does not advance either.
 * So the results are bitwise those of update_hp (+ its fill fold), unscale, norm, clip, Adam
 * and cast run one after the other (the CTS compares them). Multiplying by an inv_scale or a
 * clip factor of exactly 1 changes no bits of an arithmetic result (it is never a signalling
 * NaN), so both are applied unconditionally.
 */
#ifndef ACCEL_KERNELS_STEP_H
#define ACCEL_KERNELS_STEP_H

/* A form of the update's gradient stage besides ACC_STEP_ZERO_GRADS / ACC_STEP_ACCUMULATE: the
 * chunk has hp. */
#define ACC_STEP_HAS_HP 4u

/* 1 when tensor t has a gradient in this step (has_grad: u32 per tensor, or 0 for all). */
ACC_INLINE acc_u32 acc_step_has_grad(acc_u64 has_grad, acc_u32 t) {
  return (acc_u32)(has_grad == 0u || ACC_PTR(const acc_u32, has_grad)[t] != 0u);
}

/* The gradient of element i (see the top of the file); ACC: ACC_STEP_ACCUMULATE or 0. In place
 * (hp is the F32 gradients themselves, torch's unscale_ and clip_grad_norm_ on the grads) there
 * is no addition: 0 + x would turn a -0 gradient into +0 where torch leaves it. */
ACC_INLINE acc_f32 acc_step_grad(acc_idx i, acc_u64 grads, acc_u64 hp, acc_u32 dt, acc_u32 acc,
                                 acc_u32 in_place, acc_f32 s) {
  const acc_f32 x = acc_load(grads, i, dt);
  const acc_f32 base = acc != 0u ? ACC_PTR(const acc_f32, hp)[i] : 0.0f;
  const acc_f32 sum = base + x;
  return (in_place != 0u ? x : sum) * s;
}

ACC_INLINE acc_f32 acc_grad_norm_elem(acc_f32 a, acc_idx i, acc_u64 grads, acc_u64 hp,
                                      acc_u32 dt, acc_u32 acc, acc_f32 s, acc_u32 kind,
                                      acc_f32 p) {
  return acc_norm_step(a, acc_step_grad(i, grads, hp, dt, acc, 0u, s), kind, p);
}

/* bad | 1 when the gradient is not finite (acc and dt at run time: a cold path). */
ACC_INLINE acc_u32 acc_grad_bad_elem(acc_u32 bad, acc_idx i, acc_u64 grads, acc_u64 hp,
                                     acc_u32 dt, acc_u32 acc, acc_f32 s) {
  return bad | (acc_is_finite(acc_step_grad(i, grads, hp, dt, acc, 0u, s)) ^ 1u);
}

/* Lane l folds the norm terms of the gradients l, l + ACC_BLOCK, ... of a chunk (n_el of them)
 * into a: the gradients' dtype dt, the norm kind and acc (ACC_STEP_ACCUMULATE or 0) constants. */
ACC_INLINE void acc_grad_norm_chunk(acc_u64 grads, acc_u64 hp, acc_u32 n_el, acc_f32 s,
                                    acc_f32 p, ACC_LANE_ARG(acc_f32, a), acc_u32 dt,
                                    acc_u32 kind, acc_u32 acc) {
  ACC_LANE_FOLD_AHEAD(a, n_el, grads, acc_dt_bytes(dt), acc_grad_norm_elem, grads, hp, dt, acc, s,
                      kind, p);
}

/* The norm partials of the gradients, in accel_k_norm_partial's loop and order. The overflow
 * check costs nothing while the gradients are finite: a non-finite gradient makes its lane's
 * value, and so the chunk's partial, non-finite (x*x, |x|, |x|^p and the NaN-propagating max
 * all keep Inf and NaN, and no term is negative), so only a chunk whose partial is not finite
 * (a bad gradient, or a finite sum that overflowed) is read again to tell the two apart. */
ACC_KERNEL(accel_k_grad_norm_partial, acc_grad_norm_params_t, P) {
  ACC_SHARED(acc_f32, red, ACC_BLOCK);
  ACC_SHARED(acc_u32, red_bad, ACC_BLOCK);
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  ACC_GPTR(acc_f32) partials = ACC_PTR(acc_f32, P.partials);
  const acc_f32 s = P.inv_scale != 0u ? ACC_PTR(const acc_f32, P.inv_scale)[0] : 1.0f;
  const acc_u32 accumulate = P.flags & ACC_STEP_ACCUMULATE;
  const acc_u32 kind = P.kind;
  const acc_f32 p = P.p;
  ACC_FOR_BLOCKS(b, P.num_chunks) {
    const acc_u64 grads = chunks[b].ptr[0];
    const acc_u64 hp = chunks[b].ptr[1];
    const acc_u32 count = chunks[b].count;
    ACC_PRIVATE(acc_f32, a);
    /* the same for every lane of the block: uniform control flow around the barriers */
    const acc_u32 n_el = acc_step_has_grad(P.has_grad, chunks[b].tensor) ? count : 0u;
    ACC_LANES(ACC_LV(a) = 0.0f;)
    ACC_DTYPE_CALL(P.dtype, ACC_NORM_KIND_CALL, kind, ACC_FLAG_CALL, accumulate,
                   ACC_STEP_ACCUMULATE, acc_grad_norm_chunk, grads, hp, n_el, s, p, a);
    ACC_LANES(red[lane] = ACC_LV(a);)
    ACC_BARRIER();
    ACC_TREE(red, acc_norm_combine, P.kind)
    ACC_LANE0(partials[b] = red[0];)
    if (P.found_inf != 0u && !acc_is_finite(red[0])) {
      ACC_PRIVATE(acc_u32, bad);
      ACC_LANES(ACC_LV(bad) = 0u;)
      ACC_LANE_FOLD(bad, n_el, acc_grad_bad_elem, grads, hp, P.dtype, accumulate, s);
      ACC_LANES(red_bad[lane] = ACC_LV(bad);)
      ACC_BARRIER();
      ACC_TREE(red_bad, acc_or_u32, 0u)
      ACC_LANE0(if (red_bad[0] != 0u) ACC_PTR(acc_f32, P.found_inf)[0] = 1.0f;)
    }
    ACC_BARRIER();
  }
}

/* The update runs each row in stages joined by the lane-private gradient (ACC_FOR_ROWS), so
 * that the gradient's forms and the model weights' dtypes each get their own loops without
 * multiplying. Stage 1 of element i: the gradient, with grads zeroed and hp
 * stored as FORM says (ACC_STEP_* flags). Run alone when the step is skipped (found_inf): the
 * gradients are still consumed, as accel_update_hp_grads and the clip do not skip.
 *
 * Where a prelude sets ACC_STORES_AFTER_LOADS (the SIMT ones), stage 1 only reads and the stores
 * wait for stage 3, after the optimizer's stage 2: a store to the element a load has just asked
 * for, issued before that load returns, stalls a GPU's memory pipeline, and with the zeroing in
 * stage 1 the update ran at a fifth of its speed on an H200 (docs/GPU.md). By stage 3 every load
 * of the row has returned (stage 2 used them). No list overlaps another (validation), so the
 * order changes no result; in place (hp is grads) the zeroing still comes first and hp's store
 * wins. The CPU keeps the stores in stage 1, one pass over the row's gradients. */
#ifndef ACC_STORES_AFTER_LOADS
#define ACC_STORES_AFTER_LOADS 0u
#endif
#define ACC_STEP_STORES (ACC_STEP_ZERO_GRADS | ACC_STEP_HAS_HP)
ACC_INLINE acc_f32 acc_step_grad_elem(acc_idx i, acc_u64 grads, acc_u64 hp, acc_u32 dt,
                                      acc_u32 form, acc_u32 in_place, acc_f32 s, acc_f32 c) {
  const acc_f32 g = acc_step_grad(i, grads, hp, dt, form & ACC_STEP_ACCUMULATE, in_place, s) * c;
  if ((form & ACC_STEP_ZERO_GRADS) != 0u) acc_store(grads, i, dt, 0.0f);
  if ((form & ACC_STEP_HAS_HP) != 0u) ACC_PTR(acc_f32, hp)[i] = g;
  return g;
}

/* Stage 1 of a row (elements row .. row + rn - 1) into the lane-private g: the gradients' dtype
 * dt and the form's three bits z, ac, h constants. */
ACC_INLINE void acc_step_grad_row(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                  acc_u64 grads, acc_u64 hp, acc_u32 in_place, acc_f32 s,
                                  acc_f32 c, acc_u32 dt, acc_u32 z, acc_u32 ac, acc_u32 h) {
  ACC_ROW_LANES(rn, ACC_LV(g) = acc_step_grad_elem(row + lane, grads, hp, dt, z | ac | h,
                                                   in_place, s, c);)
}

/* The form's bits one dispatch at a time (a macro cannot expand inside itself, so each
 * ACC_FLAG_CALL after the first is in a function of its own). */
ACC_INLINE void acc_step_grad_row_za(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                     acc_u64 grads, acc_u64 hp, acc_u32 in_place, acc_f32 s,
                                     acc_f32 c, acc_u32 form, acc_u32 dt, acc_u32 z,
                                     acc_u32 ac) {
  ACC_FLAG_CALL(form, ACC_STEP_HAS_HP, acc_step_grad_row, row, rn, g, grads, hp, in_place, s, c,
                dt, z, ac);
}

ACC_INLINE void acc_step_grad_row_z(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                    acc_u64 grads, acc_u64 hp, acc_u32 in_place, acc_f32 s,
                                    acc_f32 c, acc_u32 form, acc_u32 dt, acc_u32 z) {
  ACC_FLAG_CALL(form, ACC_STEP_ACCUMULATE, acc_step_grad_row_za, row, rn, g, grads, hp, in_place,
                s, c, form, dt, z);
}

/* Stage 3 of element i (ACC_STORES_AFTER_LOADS): z, h: the ACC_STEP_ZERO_GRADS and
 * ACC_STEP_HAS_HP bits. */
ACC_INLINE void acc_step_store_elem(acc_idx i, acc_f32 g, acc_u64 grads, acc_u64 hp, acc_u32 dt,
                                    acc_u32 z, acc_u32 h) {
  if (z != 0u) acc_store(grads, i, dt, 0.0f);
  if (h != 0u) ACC_PTR(acc_f32, hp)[i] = g;
}

ACC_INLINE void acc_step_store_row(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                   acc_u64 grads, acc_u64 hp, acc_u32 dt, acc_u32 z, acc_u32 h) {
  ACC_ROW_LANES(rn, acc_step_store_elem(row + lane, ACC_LV(g), grads, hp, dt, z, h);)
}

ACC_INLINE void acc_step_store_row_z(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                     acc_u64 grads, acc_u64 hp, acc_u32 form, acc_u32 dt,
                                     acc_u32 z) {
  ACC_FLAG_CALL(form, ACC_STEP_HAS_HP, acc_step_store_row, row, rn, g, grads, hp, dt, z);
}

/* Stage 2: AdamW with gradient g (AMSGrad's maximum in vmax when AMS; the moments of dtype SDT,
 * the state format), then the model weights (MDT; with ACC_DT_NONE none) = round(param). */
#define ACC_DT_NONE 4u
ACC_INLINE void acc_step_adam_elem(acc_idx i, acc_f32 g, ACC_GPTR(acc_f32) param,
                                   acc_u64 exp_avg, acc_u64 exp_avg_sq, ACC_GPTR(acc_f32) vmax,
                                   acc_u64 model, acc_u32 sdt, acc_u32 mdt, acc_u32 mode,
                                   acc_u32 ams, const acc_adam_consts_t C) {
  const acc_f32 p = acc_adam_apply(i, g, param, exp_avg, exp_avg_sq, vmax, sdt, mode, ams, C);
  if (mdt != ACC_DT_NONE) acc_store(model, i, mdt, p);
}

/* The pointers of a chunk's update stage (the chunk table's columns 2-7). */
typedef struct acc_step_state {
  ACC_GPTR(acc_f32) param;
  acc_u64 exp_avg;
  acc_u64 exp_avg_sq;
  ACC_GPTR(acc_f32) vmax;
  acc_u64 model;
  ACC_GPTR(acc_f32) scales; /* 8-bit moments: [s_m, s_v] per row, from the chunk's first */
} acc_step_state_t;

/* Stage 2 of a row: the model weights' dtype mdt, ams and bf16 (1: BF16 moments, else F32)
 * constants. */
ACC_INLINE void acc_step_adam_row(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                  const acc_step_state_t S, acc_u32 mode,
                                  const acc_adam_consts_t C, acc_u32 mdt, acc_u32 ams,
                                  acc_u32 bf16) {
  ACC_GPTR(acc_f32) param = S.param;
  const acc_u64 exp_avg = S.exp_avg;
  const acc_u64 exp_avg_sq = S.exp_avg_sq;
  ACC_GPTR(acc_f32) vmax = S.vmax;
  const acc_u64 model = S.model;
  const acc_u32 sdt = bf16 != 0u ? ACC_DT_BF16 : ACC_DT_F32;
  ACC_ROW_LANES(rn, acc_step_adam_elem(row + lane, ACC_LV(g), param, exp_avg, exp_avg_sq, vmax,
                                       model, sdt, mdt, mode, ams, C);)
}

/* The state format's dispatch (see acc_step_grad_row_z). */
ACC_INLINE void acc_step_adam_row_s(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                    const acc_step_state_t S, acc_u32 mode,
                                    const acc_adam_consts_t C, acc_u32 bf16, acc_u32 mdt,
                                    acc_u32 ams) {
  ACC_FLAG_CALL(bf16, 1u, acc_step_adam_row, row, rn, g, S, mode, C, mdt, ams);
}

/* BF16 master weights: x rounded to bf16 stochastically with the 16 random bits r when sr != 0
 * (finite x: the bf16 next away from zero with probability (x's 16 dropped bits + r) >= 2^16,
 * i.e. the dropped fraction), else, and for Inf and NaN, to nearest even. */
ACC_INLINE acc_u32 acc_bf16_round_sr(acc_f32 x, acc_u32 r, acc_u32 sr) {
  const acc_u32 u = ACC_AS_U32(x);
  const acc_u32 finite = (acc_u32)((u & 0x7f800000u) != 0x7f800000u);
  return acc_sel(finite & (acc_u32)(sr != 0u), (u + r) >> 16, acc_f32_to_bf16(x));
}

/* Where the stochastic rounding of a chunk's BF16 master weights draws (sr = 0: none): the
 * chunk's words are accel_k_rand_raw's, word j being word j % 4 of block first + j / 4, and
 * element i takes the 16 bits of word i / 2 that i's parity names (the low half for even i). */
typedef struct acc_step_rng {
  acc_philox_state_t s;
  acc_u64 first;
  acc_u32 sr;
} acc_step_rng_t;

/* The random bits of a row's elements (rn of them; row a multiple of ACC_BLOCK): lane q <
 * rn / 8 computes block q of the row and spreads its words' halves to the bits of lanes 8q ..
 * 8q + 7, so that each block is computed once and each lane then reads its own bits[lane]. */
ACC_INLINE void acc_sr_row_bits(acc_idx row, acc_idx rn, const acc_step_rng_t G,
                                ACC_SHARED_ARG(acc_u32, bits)) {
  ACC_ROW_LANES((rn + 7u) / 8u, const acc_x4_t v =
                                    acc_philox_block(G.s, G.first + (acc_u64)(row / 8u + lane));
                const acc_u32 o = 8u * lane; bits[o] = v.x & 0xffffu; bits[o + 1u] = v.x >> 16;
                bits[o + 2u] = v.y & 0xffffu; bits[o + 3u] = v.y >> 16;
                bits[o + 4u] = v.z & 0xffffu; bits[o + 5u] = v.z >> 16;
                bits[o + 6u] = v.w & 0xffffu; bits[o + 7u] = v.w >> 16;)
  ACC_BARRIER();
}

/* Stage 2 with BF16 master weights (no model weights: they are the model's): AdamW from the
 * bf16 parameter read exactly, then stored rounded (acc_bf16_round_sr with the bits r); ams,
 * bf16 (moments) and sr constants. */
ACC_INLINE void acc_step_b16p_elem(acc_idx i, acc_f32 g, const acc_step_state_t S,
                                   acc_u32 mode, const acc_adam_consts_t C, acc_u32 r,
                                   acc_u32 ams, acc_u32 bf16, acc_u32 sr) {
  ACC_GPTR(acc_u16) param = (ACC_GPTR(acc_u16))S.param;
  const acc_u32 sdt = bf16 != 0u ? ACC_DT_BF16 : ACC_DT_F32;
  const acc_f32 p = acc_adam_state(i, g, acc_bf16_to_f32(param[i]), S.exp_avg, S.exp_avg_sq,
                                   S.vmax, sdt, mode, ams, C);
  param[i] = (acc_u16)acc_bf16_round_sr(p, r, sr);
}

ACC_INLINE void acc_step_b16p_row(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                  const acc_step_state_t S, acc_u32 mode,
                                  const acc_adam_consts_t C, const acc_step_rng_t G,
                                  ACC_SHARED_ARG(acc_u32, bits), acc_u32 ams, acc_u32 bf16,
                                  acc_u32 sr) {
  if (sr != 0u) acc_sr_row_bits(row, rn, G, bits);
  ACC_ROW_LANES(rn, acc_step_b16p_elem(row + lane, ACC_LV(g), S, mode, C,
                                       sr != 0u ? bits[lane] : 0u, ams, bf16, sr);)
  if (sr != 0u) ACC_BARRIER(); /* the next row's bits wait for every read of these */
}

/* The constants' dispatch, one ACC_FLAG_CALL per function (see acc_step_grad_row_z). */
ACC_INLINE void acc_step_b16p_row_b(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                    const acc_step_state_t S, acc_u32 mode,
                                    const acc_adam_consts_t C, const acc_step_rng_t G,
                                    ACC_SHARED_ARG(acc_u32, bits), acc_u32 ams, acc_u32 bf16) {
  ACC_FLAG_CALL(G.sr, 1u, acc_step_b16p_row, row, rn, g, S, mode, C, G, bits, ams, bf16);
}

ACC_INLINE void acc_step_b16p_row_a(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                    const acc_step_state_t S, acc_u32 mode,
                                    const acc_adam_consts_t C, const acc_step_rng_t G,
                                    ACC_SHARED_ARG(acc_u32, bits), acc_u32 bf16, acc_u32 ams) {
  ACC_FLAG_CALL(bf16, 1u, acc_step_b16p_row_b, row, rn, g, S, mode, C, G, bits, ams);
}

/* Element i with 8-bit moments: the step from the decoded moments m0, v0 into param and the
 * model weights (mdt); returns the new moments unencoded. */
ACC_INLINE acc_adam_new_t acc_step_q8_elem(acc_idx i, acc_f32 g, const acc_step_state_t S,
                                           acc_f32 m0, acc_f32 v0, acc_u32 mode,
                                           const acc_adam_consts_t C, acc_u32 mdt) {
  const acc_adam_new_t r = acc_adam_moments(g, S.param[i], m0, v0, mode, C);
  const acc_f32 p = acc_adam_param(r, r.v, C);
  S.param[i] = p;
  if (mdt != ACC_DT_NONE) acc_store(S.model, i, mdt, p);
  return r;
}

/* Stage 2 with 8-bit moments (ACC_DT_U8, kernels/quant.h): a row is one block of the format.
 * Each lane decodes its moments with the block's scales and takes its element's step (the
 * parameter from the new moments before they are encoded, as with BF16 moments); the new
 * scales are the block's largest |m| and v (NaN kept; lanes past the row count 0), by the
 * fixed tree; then each lane encodes its moments and lane 0 stores the scales. Every lane
 * reads the old scales before the first barrier and the new ones before the last, so neither
 * the stores nor the next row's tree overtake a read. Each statement is a loop of its own over
 * private values on the CPU, so that every one vectorises (the codes' table lookups become
 * gathers; a loop that also stores bytes to global memory did not vectorise at all). */
ACC_INLINE void acc_step_adam_row_q8(acc_idx row, acc_idx rn, ACC_LANE_ARG(acc_f32, g),
                                     const acc_step_state_t S, acc_u32 mode,
                                     const acc_adam_consts_t C, ACC_SHARED_ARG(acc_f32, red_m),
                                     ACC_SHARED_ARG(acc_f32, red_v), acc_u32 mdt) {
  ACC_GPTR(acc_u8) qm = ACC_PTR(acc_u8, S.exp_avg) + row;
  ACC_GPTR(acc_u8) qv = ACC_PTR(acc_u8, S.exp_avg_sq) + row;
  ACC_GPTR(acc_f32) scale = S.scales + 2u * (row / ACC_BLOCK);
  const acc_f32 sm = scale[0], sv = scale[1];
  ACC_PRIVATE(acc_f32, m);
  ACC_PRIVATE(acc_f32, v);
  ACC_PRIVATE(acc_u32, code);
  ACC_ROW_LANES(rn, ACC_LV(code) = (acc_u32)qm[lane] | ((acc_u32)qv[lane] << 8);)
  ACC_ROW_LANES(rn, ACC_LV(m) = acc_q8_decode_signed(ACC_LV(code) & 0xffu, sm);
                ACC_LV(v) = acc_q8_decode_unsigned(ACC_LV(code) >> 8, sv);)
  ACC_ROW_LANES(rn, const acc_adam_new_t r = acc_step_q8_elem(row + lane, ACC_LV(g), S, ACC_LV(m),
                                                              ACC_LV(v), mode, C, mdt);
                ACC_LV(m) = r.m; ACC_LV(v) = r.v; red_m[lane] = ACC_FABSF(r.m);
                red_v[lane] = r.v;)
  if (rn < ACC_BLOCK) {
    ACC_LANES(if (lane >= rn) {
      red_m[lane] = 0.0f;
      red_v[lane] = 0.0f;
    })
  }
  ACC_BARRIER();
  ACC_TREE(red_m, acc_q8_max, 0u)
  ACC_TREE(red_v, acc_q8_max, 0u)
  const acc_f32 nsm = red_m[0], nsv = red_v[0];
  ACC_ROW_LANES(rn, ACC_LV(code) = acc_q8_encode_signed(ACC_LV(m), nsm) |
                                   (acc_q8_encode_unsigned(ACC_LV(v), nsv) << 8);)
  ACC_ROW_LANES(rn, qm[lane] = (acc_u8)ACC_LV(code); qv[lane] = (acc_u8)(ACC_LV(code) >> 8);)
  ACC_LANE0(scale[0] = nsm; scale[1] = nsv;)
  ACC_BARRIER();
}

/* The launch-wide values of the update. */
typedef struct acc_step_run {
  acc_f32 s, c;
  acc_u32 mode, go;
  acc_philox_state_t rs; /* BF16 master weights with rng: the generator's state */
} acc_step_run_t;

/* A per-tensor step count as the caller stores it (a float, as torch keeps it): a negative,
 * NaN or too large value clamps instead of converting with undefined behaviour (which differs
 * between targets); every count a caller can reach is exact. */
ACC_INLINE acc_u32 acc_step_count_of(acc_f32 s) {
  return s >= 4294967040.0f ? 4294967040u : s >= 0.0f ? (acc_u32)s : 0u;
}

/* Chunk b of the update, row by row (see above). */
ACC_INLINE void acc_adam_step_chunk(const acc_adam_step_params_t P, const acc_adam_args_t A,
                                    const acc_step_run_t R, acc_u32 b, ACC_LANE_ARG(acc_f32, g),
                                    ACC_SHARED_ARG(acc_f32, red_m),
                                    ACC_SHARED_ARG(acc_f32, red_v),
                                    ACC_SHARED_ARG(acc_u32, sr_bits)) {
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  const acc_u32 t = chunks[b].tensor;
  const acc_u32 step =
      P.steps != 0u ? acc_step_count_of(ACC_PTR(const acc_f32, P.steps)[t]) : A.step;
  const acc_adam_consts_t C = acc_adam_consts(A, step);
  const acc_u64 grads = chunks[b].ptr[0];
  const acc_u64 hp = chunks[b].ptr[1];
  acc_step_state_t S;
  S.param = ACC_PTR(acc_f32, chunks[b].ptr[2]);
  S.exp_avg = chunks[b].ptr[3];
  S.exp_avg_sq = chunks[b].ptr[4];
  S.model = chunks[b].ptr[5];
  S.vmax = ACC_PTR(acc_f32, chunks[b].ptr[6]);
  S.scales = ACC_PTR(acc_f32, chunks[b].ptr[7]);
  const acc_u32 ams = (acc_u32)(chunks[b].ptr[6] != 0u);
  const acc_u32 count = chunks[b].count;
  const acc_u32 form = (P.flags & (ACC_STEP_ZERO_GRADS | ACC_STEP_ACCUMULATE)) |
                       (hp != 0u ? ACC_STEP_HAS_HP : 0u);
  const acc_u32 in_place = (acc_u32)(hp == grads); /* a run-time select, not a loop copy */
  const acc_f32 s = R.s, c = R.c;
  const acc_u32 mode = R.mode, go = R.go, model = (acc_u32)(S.model != 0u);
  const acc_u32 bf16 = (acc_u32)(P.state_dtype == ACC_DT_BF16);
  const acc_u32 q8 = (acc_u32)(P.state_dtype == ACC_DT_U8); /* the same for every lane */
  const acc_u32 b16p = (acc_u32)(P.param_dtype == ACC_DT_BF16);
  acc_step_rng_t G;
  G.s = R.rs;
  G.first = acc_rand_chunk_first(b);
  G.sr = (acc_u32)(P.rng != 0u);
  /* the stores stage 1 makes (none where stage 3 makes them) */
  const acc_u32 form1 = ACC_STORES_AFTER_LOADS != 0u ? form & ~ACC_STEP_STORES : form;
  ACC_FOR_ROWS(row, rn, count) {
    ACC_DTYPE_CALL(P.grad_dtype, ACC_FLAG_CALL, form1, ACC_STEP_ZERO_GRADS, acc_step_grad_row_z,
                   row, rn, g, grads, hp, in_place, s, c, form1);
    if (go && b16p) {
      ACC_FLAG_CALL(ams, 1u, acc_step_b16p_row_a, row, rn, g, S, mode, C, G, sr_bits, bf16);
    } else if (go && q8 && !model) {
      acc_step_adam_row_q8(row, rn, g, S, mode, C, red_m, red_v, ACC_DT_NONE);
    } else if (go && q8) {
      ACC_DTYPE_CALL(P.model_dtype, acc_step_adam_row_q8, row, rn, g, S, mode, C, red_m, red_v);
    } else if (go && !model) {
      ACC_FLAG_CALL(ams, 1u, acc_step_adam_row_s, row, rn, g, S, mode, C, bf16, ACC_DT_NONE);
    } else if (go) {
      ACC_DTYPE_CALL(P.model_dtype, ACC_FLAG_CALL, ams, 1u, acc_step_adam_row_s, row, rn, g, S,
                     mode, C, bf16);
    }
    if (ACC_STORES_AFTER_LOADS != 0u) {
      ACC_DTYPE_CALL(P.grad_dtype, ACC_FLAG_CALL, form, ACC_STEP_ZERO_GRADS, acc_step_store_row_z,
                     row, rn, g, grads, hp, form);
    }
  }
}

ACC_KERNEL(accel_k_adam_step, acc_adam_step_params_t, P) {
  ACC_SHARED(acc_f32, red_m, ACC_BLOCK); /* the 8-bit moments' block scales */
  ACC_SHARED(acc_f32, red_v, ACC_BLOCK);
  ACC_SHARED(acc_u32, sr_bits, ACC_BLOCK); /* a row's bits for stochastic rounding */
  const acc_adam_args_t A = ACC_PTR(const acc_adam_args_t, P.args)[0];
  const acc_f32 coef = P.total_norm != 0u
                           ? P.max_norm / (ACC_PTR(const acc_f32, P.total_norm)[0] + P.eps)
                           : 1.0f;
  acc_step_run_t R;
  R.c = coef > 1.0f ? 1.0f : coef;
  R.s = P.inv_scale != 0u ? ACC_PTR(const acc_f32, P.inv_scale)[0] : 1.0f;
  R.mode = acc_adam_mode(A) | ((P.flags & ACC_STEP_MAXIMIZE) != 0u ? ACC_ADAM_NEGATE : 0u);
  R.go = (acc_u32)(A.found_inf == 0.0f);
  const acc_philox_state_t none = {0u, 0u, 0u, 0u, 0u, 0u};
  R.rs = P.rng != 0u ? ACC_PTR(const acc_philox_state_t, P.rng)[0] : none;
  /* with no chunks a single block still stores coef_out (as accel_k_clip) */
  ACC_FOR_BLOCKS(b, P.num_chunks > 0u ? P.num_chunks : 1u) {
    if (b == 0u && P.coef_out != 0u) {
      ACC_LANE0(ACC_PTR(acc_f32, P.coef_out)[0] = coef;)
    }
    if (b >= P.num_chunks) continue;
    const acc_u32 t = ACC_PTR(const acc_chunk_t, P.chunks)[b].tensor;
    if (!acc_step_has_grad(P.has_grad, t)) continue;
    ACC_PRIVATE(acc_f32, g);
    acc_adam_step_chunk(P, A, R, b, g, red_m, red_v, sr_bits);
  }
}

/* Step count t + 1 when tensor t has a gradient. */
ACC_INLINE void acc_step_count_elem(acc_idx t, ACC_GPTR(acc_f32) steps, acc_u64 has_grad) {
  if (acc_step_has_grad(has_grad, (acc_u32)t)) steps[t] = steps[t] + 1.0f;
}

ACC_KERNEL(accel_k_step_counts, acc_step_counts_params_t, P) {
  if (acc_not_skipped(P.skip_if)) {
    ACC_FOR_BLOCKS(b, 1u) {
      ACC_ELEM_MAP(P.num_tensors, acc_step_count_elem, ACC_PTR(acc_f32, P.steps), P.has_grad);
    }
  }
}

#endif
