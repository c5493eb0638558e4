/*
 * The mixed-precision step's device-side bookkeeping (torch.cuda.amp.GradScaler semantics):
 * the start of a step (found_inf = 0, inv_scale = 1/scale), the dynamic loss scale update
 * (torch._amp_update_scale_), the optimizer step counter (skipped on overflow), and the
 * fp32 master -> bf16/fp16 model weight cast (skipped on overflow).
 * The first three are one-block kernels with no chunk table: lane 0 of logical block 0 does
 * the work, so no two lanes touch the state.
 */
#ifndef ACCEL_KERNELS_AMP_H
#define ACCEL_KERNELS_AMP_H

/* 1 when the step goes ahead: no flag given (address 0), or the flag reads 0. A NaN flag
 * counts as set, as torch's `if (*found_inf)`. */
ACC_INLINE acc_u32 acc_not_skipped(acc_u64 skip_if) {
  return (acc_u32)(skip_if == 0u || ACC_PTR(const acc_f32, skip_if)[0] == 0.0f);
}

/* 1 when f is neither Inf nor NaN (a bit test, the same on every target). */
ACC_INLINE acc_u32 acc_is_finite(acc_f32 f) {
  return (acc_u32)((ACC_AS_U32(f) & 0x7f800000u) != 0x7f800000u);
}

ACC_KERNEL(accel_k_amp_begin, acc_amp_begin_params_t, P) {
  ACC_GPTR(acc_amp_scaler_t) s = ACC_PTR(acc_amp_scaler_t, P.scaler);
  ACC_FOR_BLOCKS(b, 1u) {
    ACC_LANE0(s[0].inv_scale = 1.0f / s[0].scale;
              ACC_PTR(acc_f32, P.found_inf)[0] = 0.0f;)
  }
}

/* torch._amp_update_scale_ for one scaler (the products are formed in fp32: torch multiplies
 * the fp32 scale by a double factor and rounds; the same for factors that are powers of two,
 * the defaults 2 and 0.5). */
ACC_INLINE void acc_amp_update_scale(ACC_GPTR(acc_amp_scaler_t) s, acc_f32 found_inf) {
  if (found_inf != 0.0f) {
    s[0].scale = s[0].scale * s[0].backoff_factor;
    s[0].growth_tracker = 0u;
  } else {
    const acc_u32 successful = s[0].growth_tracker + 1u;
    if (successful == s[0].growth_interval) {
      const acc_f32 grown = s[0].scale * s[0].growth_factor;
      if (acc_is_finite(grown)) s[0].scale = grown;
      s[0].growth_tracker = 0u;
    } else {
      s[0].growth_tracker = successful;
    }
  }
}

ACC_KERNEL(accel_k_amp_update, acc_amp_update_params_t, P) {
  ACC_FOR_BLOCKS(b, 1u) {
    ACC_LANE0(acc_amp_update_scale(ACC_PTR(acc_amp_scaler_t, P.scaler),
                                   ACC_PTR(const acc_f32, P.found_inf)[0]);)
  }
}

ACC_KERNEL(accel_k_step_count, acc_step_count_params_t, P) {
  ACC_FOR_BLOCKS(b, 1u) {
    ACC_LANE0(if (acc_not_skipped(P.skip_if)) ACC_PTR(acc_u32, P.step)[0] += 1u;)
  }
}

/* dst[i] = src[i] converted through f32 (widening is exact; narrowing rounds to nearest even). */
ACC_INLINE void acc_cast_elem(acc_idx i, acc_u64 src, acc_u64 dst, acc_u32 sdt, acc_u32 ddt) {
  acc_store(dst, i, ddt, acc_load(src, i, sdt));
}

/* Chunk b, from dtype sdt to ddt. */
ACC_INLINE void acc_cast_chunk(ACC_GPTR(const acc_chunk_t) chunks, acc_u32 b, acc_u32 sdt,
                               acc_u32 ddt) {
  const acc_u64 src = chunks[b].ptr[0];
  const acc_u64 dst = chunks[b].ptr[1];
  const acc_u32 count = chunks[b].count;
  ACC_ELEM_MAP(count, acc_cast_elem, src, dst, sdt, ddt);
}

/* ... with sdt a constant: the dispatch on the destination's dtype. */
ACC_INLINE void acc_cast_chunk_from(ACC_GPTR(const acc_chunk_t) chunks, acc_u32 b, acc_u32 dst_dt,
                                    acc_u32 sdt) {
  ACC_DTYPE_CALL(dst_dt, acc_cast_chunk, chunks, b, sdt);
}

ACC_KERNEL(accel_k_cast, acc_cast_params_t, P) {
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  const acc_u32 dst_dt = P.dst_dtype;
  if (acc_not_skipped(P.skip_if)) {
    ACC_FOR_BLOCKS(b, P.num_chunks)
      ACC_DTYPE_CALL(P.src_dtype, acc_cast_chunk_from, chunks, b, dst_dt);
  }
}

#endif
