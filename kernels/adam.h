/*
 * Fused Adam / AdamW step, torch.optim formulation (see accel_kernels.h):
 *   p *= 1 - lr*wd (AdamW) | g += wd*p (Adam, wd != 0)
 *   m = m + (1-beta1)*(g-m);  v = beta2*v + ((1-beta2)*g)*g
 *   p = p - ((lr/bc1)*m) / (sqrt(v)/sqrt(bc2) + eps),  bc = 1 - beta^step
 * beta^step by exponentiation by squaring in fp32 (pow differs across math libraries).
 */
#ifndef ACCEL_KERNELS_ADAM_H
#define ACCEL_KERNELS_ADAM_H

ACC_INLINE acc_f32 acc_powi(acc_f32 base, acc_u32 n) {
  acc_f32 r = 1.0f;
  while (n != 0u) {
    if (n & 1u) r = r * base;
    base = base * base;
    n >>= 1;
  }
  return r;
}

/* The per-step constants of the element function. */
typedef struct acc_adam_consts {
  acc_f32 step_size, bc2_sqrt, decay, wd, w1, w2, beta2, eps;
} acc_adam_consts_t;

/* One element. MODE: 0 Adam without weight decay, 1 Adam with L2, 2 AdamW (a constant per
 * loop, so that the loops have no branches and vectorise). */
ACC_INLINE void acc_adam_elem(acc_idx i, ACC_GPTR(acc_f32) param, acc_u64 grad,
                              ACC_GPTR(acc_f32) exp_avg, ACC_GPTR(acc_f32) exp_avg_sq,
                              acc_u32 dt, acc_u32 mode, const acc_adam_consts_t C) {
  acc_f32 p = param[i];
  acc_f32 g = acc_load(grad, i, dt);
  if (mode == 2u)
    p = p * C.decay;
  else if (mode == 1u)
    g = g + C.wd * p;
  const acc_f32 m = exp_avg[i] + C.w1 * (g - exp_avg[i]);
  const acc_f32 v = C.beta2 * exp_avg_sq[i] + (C.w2 * g) * g;
  const acc_f32 denom = ACC_SQRTF(v) / C.bc2_sqrt + C.eps;
  exp_avg[i] = m;
  exp_avg_sq[i] = v;
  param[i] = p - (C.step_size * m) / denom;
}

ACC_KERNEL(accel_k_adam, acc_adam_params_t, P) {
  const acc_adam_args_t A = ACC_PTR(const acc_adam_args_t, P.args)[0];
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  if (A.found_inf == 0.0f) {
    const acc_f32 bc1 = 1.0f - acc_powi(A.beta1, A.step);
    const acc_f32 bc2 = 1.0f - acc_powi(A.beta2, A.step);
    acc_adam_consts_t C;
    C.step_size = A.lr / bc1;
    C.bc2_sqrt = ACC_SQRTF(bc2);
    C.decay = 1.0f - A.lr * A.weight_decay;
    C.wd = A.weight_decay;
    C.w1 = 1.0f - A.beta1;
    C.w2 = 1.0f - A.beta2;
    C.beta2 = A.beta2;
    C.eps = A.eps;
    ACC_FOR_BLOCKS(b, P.num_chunks) {
      ACC_GPTR(acc_f32) param = ACC_PTR(acc_f32, chunks[b].ptr[0]);
      const acc_u64 grad = chunks[b].ptr[1];
      ACC_GPTR(acc_f32) exp_avg = ACC_PTR(acc_f32, chunks[b].ptr[2]);
      ACC_GPTR(acc_f32) exp_avg_sq = ACC_PTR(acc_f32, chunks[b].ptr[3]);
      const acc_u32 count = chunks[b].count;
      ACC_DTYPE_SWITCH(P.grad_dtype, DT,
        if (A.adamw) {
          ACC_ELEM_MAP(count, acc_adam_elem, param, grad, exp_avg, exp_avg_sq, DT, 2u, C);
        } else if (C.wd != 0.0f) {
          ACC_ELEM_MAP(count, acc_adam_elem, param, grad, exp_avg, exp_avg_sq, DT, 1u, C);
        } else {
          ACC_ELEM_MAP(count, acc_adam_elem, param, grad, exp_avg, exp_avg_sq, DT, 0u, C);
        })
    }
  }
}

#endif
