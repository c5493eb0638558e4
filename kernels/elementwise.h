/* Elementwise multi-tensor kernels: plain fp32 arithmetic in a fixed expression order. */
#ifndef ACCEL_KERNELS_ELEMENTWISE_H
#define ACCEL_KERNELS_ELEMENTWISE_H

/* torch.nn.utils.clip_grad_norm_: coef = max_norm / (total + eps), clamped to at most 1 (a NaN
 * coefficient stays NaN); the tensors are multiplied by it. Multiplying by exactly 1 changes no
 * bits, so that pass is skipped. With no chunks a single block still stores coef_out. */
/* dst[i] *= c, stored rounded to dt (clip, scale). */
ACC_INLINE void acc_scale_elem(acc_idx i, acc_u64 dst, acc_u32 dt, acc_f32 c) {
  acc_store(dst, i, dt, acc_load(dst, i, dt) * c);
}

/* Chunk b: its elements *= c (dtype dt). */
ACC_INLINE void acc_scale_chunk(ACC_GPTR(const acc_chunk_t) chunks, acc_u32 b, acc_f32 c,
                                acc_u32 dt) {
  const acc_u64 dst = chunks[b].ptr[0];
  const acc_u32 count = chunks[b].count;
  ACC_ELEM_MAP_AHEAD(count, dst, acc_dt_bytes(dt), acc_scale_elem, dst, dt, c);
}

ACC_KERNEL(accel_k_clip, acc_clip_params_t, P) {
  const acc_f32 coef = P.max_norm / (ACC_PTR(const acc_f32, P.total_norm)[0] + P.eps);
  const acc_f32 c = coef > 1.0f ? 1.0f : coef;
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  ACC_FOR_BLOCKS(b, P.num_chunks > 0u ? P.num_chunks : 1u) {
    if (b == 0u && P.coef_out != 0u) {
      ACC_LANE0(ACC_PTR(acc_f32, P.coef_out)[0] = coef;)
    }
    if (b < P.num_chunks && c != 1.0f) ACC_DTYPE_CALL(P.dtype, acc_scale_chunk, chunks, b, c);
  }
}

/* hp += float(lp), or hp = init + float(lp) with ACC_HP_ASSIGN (the same addition a fill of
 * hp with init followed by the update makes, so the same bits); then lp = 0 (all-zero bits in
 * every dtype) with ACC_HP_ZERO_LP. One loop per flag combination, so each has no branch. */
ACC_INLINE void acc_update_hp_elem(acc_idx i, acc_u64 lp, ACC_GPTR(acc_f32) hp, acc_u32 dt,
                                   acc_f32 init, acc_u32 flags) {
  hp[i] = ((flags & ACC_HP_ASSIGN) != 0u ? init : hp[i]) + acc_load(lp, i, dt);
  if ((flags & ACC_HP_ZERO_LP) != 0u) acc_store(lp, i, dt, 0.0f);
}

/* Chunk b (lp of dtype dt). */
ACC_INLINE void acc_update_hp_chunk(const acc_update_hp_params_t P, acc_u32 b, acc_u32 dt) {
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  const acc_f32 init = P.init;
  const acc_u32 flags = P.flags;
  const acc_u64 lp = chunks[b].ptr[0];
  ACC_GPTR(acc_f32) hp = ACC_PTR(acc_f32, chunks[b].ptr[1]);
  const acc_u32 count = chunks[b].count;
  if (flags == (ACC_HP_ASSIGN | ACC_HP_ZERO_LP)) {
    ACC_ELEM_MAP(count, acc_update_hp_elem, lp, hp, dt, init, ACC_HP_ASSIGN | ACC_HP_ZERO_LP);
  } else if (flags == ACC_HP_ASSIGN) {
    ACC_ELEM_MAP(count, acc_update_hp_elem, lp, hp, dt, init, ACC_HP_ASSIGN);
  } else if (flags == ACC_HP_ZERO_LP) {
    ACC_ELEM_MAP(count, acc_update_hp_elem, lp, hp, dt, init, ACC_HP_ZERO_LP);
  } else {
    ACC_ELEM_MAP(count, acc_update_hp_elem, lp, hp, dt, init, 0u);
  }
}

ACC_KERNEL(accel_k_update_hp, acc_update_hp_params_t, P) {
  ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.lp_dtype, acc_update_hp_chunk, P, b);
}

/* t *= inv_scale; any non-finite stored value makes the block store 1.0f to found_inf (only
 * ever 1.0f, so blocks racing on it agree). */
/* dst[i] *= s; bad | 1 when the stored value is not finite. */
ACC_INLINE acc_u32 acc_unscale_elem(acc_u32 bad, acc_idx i, acc_u64 dst, acc_u32 dt, acc_f32 s) {
  return bad | acc_store(dst, i, dt, acc_load(dst, i, dt) * s);
}

/* Lane l of chunk b folds its elements l, l + ACC_BLOCK, ... into bad (dtype dt). */
ACC_INLINE void acc_unscale_chunk(ACC_GPTR(const acc_chunk_t) chunks, acc_u32 b, acc_f32 s,
                                  ACC_LANE_ARG(acc_u32, bad), acc_u32 dt) {
  const acc_u64 dst = chunks[b].ptr[0];
  const acc_u32 count = chunks[b].count;
  ACC_LANE_FOLD_AHEAD(bad, count, dst, acc_dt_bytes(dt), acc_unscale_elem, dst, dt, s);
}

ACC_KERNEL(accel_k_unscale, acc_unscale_params_t, P) {
  ACC_SHARED(acc_u32, red, ACC_BLOCK);
  const acc_f32 s = ACC_PTR(const acc_f32, P.inv_scale)[0];
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  ACC_PRIVATE(acc_u32, bad);
  ACC_LANES(ACC_LV(bad) = 0u;)
  ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.dtype, acc_unscale_chunk, chunks, b, s, bad);
  ACC_LANES(red[lane] = ACC_LV(bad);)
  ACC_BARRIER();
  ACC_TREE(red, acc_or_u32, 0u)
  ACC_LANE0(if (red[0] != 0u) ACC_PTR(acc_f32, P.found_inf)[0] = 1.0f;)
}

ACC_INLINE void acc_fill_elem(acc_idx i, acc_u64 dst, acc_u32 dt, acc_f32 value) {
  acc_store(dst, i, dt, value);
}

/* Chunk b: every element = value (dtype dt). */
ACC_INLINE void acc_fill_chunk(const acc_fill_params_t P, acc_u32 b, acc_u32 dt) {
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  const acc_u64 dst = chunks[b].ptr[0];
  const acc_u32 count = chunks[b].count;
  ACC_ELEM_MAP(count, acc_fill_elem, dst, dt, P.value);
}

ACC_KERNEL(accel_k_fill, acc_fill_params_t, P) {
  ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.dtype, acc_fill_chunk, P, b);
}

ACC_KERNEL(accel_k_scale, acc_scale_params_t, P) {
  const acc_f32 s = ACC_PTR(const acc_f32, P.scale)[0];
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.dtype, acc_scale_chunk, chunks, b, s);
}

#endif
