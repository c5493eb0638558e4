/* The test kernel's body (its row: axpby_row.h): y = alpha * x + beta * y + gamma, each product
 * rounded to f32 before the sums (no contraction), left to right, x read in its dtype. */
#ifndef ACCEL_TEST_KROW_AXPBY_H
#define ACCEL_TEST_KROW_AXPBY_H

ACC_INLINE void acc_test_axpby_elem(acc_idx i, acc_u64 x, ACC_GPTR(acc_f32) y, acc_u32 dt,
                                    acc_f32 alpha, acc_f32 beta, acc_f32 gamma) {
  y[i] = alpha * acc_load(x, i, dt) + beta * y[i] + gamma;
}

/* Chunk b (x of dtype dt). */
ACC_INLINE void acc_test_axpby_chunk(ACC_GPTR(const acc_chunk_t) chunks, acc_u32 b,
                                     acc_f32 alpha, acc_f32 beta, acc_f32 gamma, acc_u32 dt) {
  const acc_u64 x = chunks[b].ptr[0];
  ACC_GPTR(acc_f32) y = ACC_PTR(acc_f32, chunks[b].ptr[1]);
  ACC_ELEM_MAP(chunks[b].count, acc_test_axpby_elem, x, y, dt, alpha, beta, gamma);
}

ACC_KERNEL(accel_k_test_axpby, acc_test_axpby_params_t, P) {
  const acc_f32 alpha = ACC_PTR(const acc_f32, P.alpha)[0];
  const acc_f32 beta = ACC_PTR(const acc_f32, P.beta)[0];
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  ACC_FOR_BLOCKS(b, P.num_chunks)
  ACC_DTYPE_CALL(P.x_dtype, acc_test_axpby_chunk, chunks, b, alpha, beta, P.gamma);
}

#endif
