/*
 * Multi-tensor norm in two launches with one fixed reduction order:
 *  partial: per chunk, lane l folds elements l, l+256, ... in increasing order, then the fixed
 *           pairwise tree (s = 128 ... 1) gives one partial per chunk;
 *  final:   one block folds the partials the same way and finishes (sqrt, pow 1/p, identity).
 */
#ifndef ACCEL_KERNELS_NORM_H
#define ACCEL_KERNELS_NORM_H

/* A lane's running value a with element i of src (dtype dt) folded in. */
ACC_INLINE acc_f32 acc_norm_elem(acc_f32 a, acc_idx i, acc_u64 src, acc_u32 dt, acc_u32 kind,
                                 acc_f32 p) {
  return acc_norm_step(a, acc_load(src, i, dt), kind, p);
}

/* ... and partial i of a previous launch. */
ACC_INLINE acc_f32 acc_norm_partial_elem(acc_f32 a, acc_idx i, ACC_GPTR(const acc_f32) partials,
                                         acc_u32 kind) {
  return acc_norm_combine(a, partials[i], kind);
}

/* Lane l folds elements l, l + ACC_BLOCK, ... of chunk b (dtype dt) into a (norm kind). */
ACC_INLINE void acc_norm_chunk(const acc_norm_partial_params_t P, acc_u32 b,
                               ACC_LANE_ARG(acc_f32, a), acc_u32 dt, acc_u32 kind) {
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  const acc_u64 src = chunks[b].ptr[0];
  const acc_u32 count = chunks[b].count;
  const acc_f32 p = P.p;
  ACC_LANE_FOLD_AHEAD(a, count, src, acc_dt_bytes(dt), acc_norm_elem, src, dt, kind, p);
}

/* The inf norm of bf16 data, in 16 bits: |x| as an f32 bit pattern is (h & 0x7fff) << 16, so
 * the unsigned max of the patterns (acc_absmax) is the max of the h & 0x7fff, shifted once at
 * the end: the same bits, with no widening and twice the lanes per vector. (The widening form
 * read at 63-87% of the read loop on an AMD EPYC: docs/PERFORMANCE.md, section 24.) */
ACC_INLINE acc_u32 acc_absmax_bf16_elem(acc_u32 m, acc_idx i, acc_u64 src) {
  const acc_u32 h = ACC_PTR(const acc_u16, src)[i] & 0x7fffu;
  return m > h ? m : h;
}

ACC_INLINE void acc_norm_chunk_bf16_inf(const acc_norm_partial_params_t P, acc_u32 b,
                                        ACC_LANE_ARG(acc_f32, a)) {
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  const acc_u64 src = chunks[b].ptr[0];
  ACC_PRIVATE(acc_u16, m);
  ACC_LANES(ACC_LV(m) = 0u;)
  ACC_LANE_FOLD_AHEAD(m, chunks[b].count, src, 2u, acc_absmax_bf16_elem, src);
  ACC_LANES(ACC_LV(a) = ACC_AS_F32((acc_u32)ACC_LV(m) << 16);)
}

ACC_KERNEL(accel_k_norm_partial, acc_norm_partial_params_t, P) {
  ACC_SHARED(acc_f32, red, ACC_BLOCK);
  ACC_GPTR(acc_f32) partials = ACC_PTR(acc_f32, P.partials);
  const acc_u32 kind = P.kind;
  ACC_FOR_BLOCKS(b, P.num_chunks) {
    ACC_PRIVATE(acc_f32, a);
    ACC_LANES(ACC_LV(a) = 0.0f;)
    if (kind == ACC_NORM_INF && P.dtype == ACC_DT_BF16) {
      acc_norm_chunk_bf16_inf(P, b, a);
    } else {
      ACC_DTYPE_CALL(P.dtype, ACC_NORM_KIND_CALL, kind, acc_norm_chunk, P, b, a);
    }
    ACC_LANES(red[lane] = ACC_LV(a);)
    ACC_BARRIER();
    ACC_TREE(red, acc_norm_combine, P.kind)
    ACC_LANE0(partials[b] = red[0];)
    ACC_BARRIER();
  }
}

ACC_INLINE acc_f32 acc_norm_finish(acc_f32 s, acc_u32 kind, acc_f32 p) {
  if (kind == ACC_NORM_L2) return ACC_SQRTF(s);
  if (kind == ACC_NORM_P) return ACC_POWF(s, 1.0f / p);
  return s;
}

ACC_KERNEL(accel_k_norm_final, acc_norm_final_params_t, P) {
  ACC_SHARED(acc_f32, red, ACC_BLOCK);
  ACC_GPTR(const acc_f32) partials = ACC_PTR(const acc_f32, P.partials);
  ACC_GPTR(acc_f32) out = ACC_PTR(acc_f32, P.out);
  ACC_FOR_BLOCKS(b, 1u) {
    ACC_PRIVATE(acc_f32, a);
    ACC_LANES(ACC_LV(a) = 0.0f;)
    ACC_LANE_FOLD(a, P.num_partials, acc_norm_partial_elem, partials, P.kind);
    ACC_LANES(red[lane] = ACC_LV(a);)
    ACC_BARRIER();
    ACC_TREE(red, acc_norm_combine, P.kind)
    ACC_LANE0(out[0] = acc_norm_finish(red[0], P.kind, P.p);)
  }
}

#endif
