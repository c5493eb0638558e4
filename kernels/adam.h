/*
 * Fused Adam / AdamW step, torch.optim formulation (see accel_kernels.h):
 *   g = -g (maximize)
 *   p *= 1 - lr*wd (AdamW) | g += wd*p (Adam, wd != 0)
 *   m = m + (1-beta1)*(g-m);  v = beta2*v + ((1-beta2)*g)*g
 *   vmax = max(vmax, v) (AMSGrad, NaN kept: torch.maximum), else vmax = v
 *   p = p - ((lr/bc1)*m) / (sqrt(vmax)/sqrt(bc2) + eps),  bc = 1 - beta^step
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

/* The per-step constants of the element functions. */
typedef struct acc_adam_consts {
  acc_f32 step_size, bc2_sqrt, decay, wd, w1, w2, beta2, eps;
} acc_adam_consts_t;

ACC_INLINE acc_adam_consts_t acc_adam_consts(const acc_adam_args_t A, acc_u32 step) {
  const acc_f32 bc1 = 1.0f - acc_powi(A.beta1, step);
  const acc_f32 bc2 = 1.0f - acc_powi(A.beta2, step);
  acc_adam_consts_t C;
  C.step_size = A.lr / bc1;
  C.bc2_sqrt = ACC_SQRTF(bc2);
  C.decay = 1.0f - A.lr * A.weight_decay;
  C.wd = A.weight_decay;
  C.w1 = 1.0f - A.beta1;
  C.w2 = 1.0f - A.beta2;
  C.beta2 = A.beta2;
  C.eps = A.eps;
  return C;
}

/* The weight decay: ACC_ADAM_L2 (Adam: g += wd * p), ACC_ADAM_DECOUPLED (AdamW: p *= 1 - lr *
 * wd) or 0 (Adam without weight decay); ACC_ADAM_NEGATE: maximize (the fused step's flag).
 * Tested bit by bit, and never dispatched on as a value (accel_k_adam tests the arguments):
 * LLVM turns an if/else chain over the three values into a switch on a 2-bit integer, which
 * llvm-spirv-14 cannot translate. */
#define ACC_ADAM_L2 1u
#define ACC_ADAM_DECOUPLED 2u
#define ACC_ADAM_NEGATE 4u
ACC_INLINE acc_u32 acc_adam_mode(const acc_adam_args_t A) {
  return A.adamw ? ACC_ADAM_DECOUPLED : A.weight_decay != 0.0f ? ACC_ADAM_L2 : 0u;
}

/* One element's step in values: the new moments m, v from the stored m0, v0 and gradient g,
 * and p, the parameter with its decoupled decay (acc_adam_param finishes it). */
typedef struct acc_adam_new {
  acc_f32 p, m, v;
} acc_adam_new_t;

ACC_INLINE acc_adam_new_t acc_adam_moments(acc_f32 g, acc_f32 p, acc_f32 m0, acc_f32 v0,
                                           acc_u32 mode, const acc_adam_consts_t C) {
  acc_adam_new_t r;
  if ((mode & ACC_ADAM_NEGATE) != 0u) g = -g;
  if ((mode & ACC_ADAM_L2) != 0u) g = g + C.wd * p;
  r.p = (mode & ACC_ADAM_DECOUPLED) != 0u ? p * C.decay : p;
  r.m = m0 + C.w1 * (g - m0);
  r.v = C.beta2 * v0 + (C.w2 * g) * g;
  return r;
}

/* The new parameter; vd: the denominator's second moment (r.v, or AMSGrad's maximum). */
ACC_INLINE acc_f32 acc_adam_param(const acc_adam_new_t r, acc_f32 vd, const acc_adam_consts_t C) {
  const acc_f32 denom = ACC_SQRTF(vd) / C.bc2_sqrt + C.eps;
  return r.p - (C.step_size * r.m) / denom;
}

/* Element i of the parameters with gradient g: updates param, exp_avg, exp_avg_sq (and, when
 * ams is nonzero, AMSGrad's maximum vmax) and returns the new parameter. mode: acc_adam_mode
 * bits; ams: a constant at every call (a loop of its own), so that no loop branches on it and
 * they vectorise; mode is one too where the caller makes it one. sdt: the moments' dtype (the
 * state format, a constant: ACC_DT_F32, or ACC_DT_BF16 for bf16 moments, read exactly and
 * stored rounded to nearest even; the update itself uses the fp32 moments before rounding;
 * 8-bit moments take acc_adam_moments and acc_adam_param directly: step.h). acc_adam_state
 * takes the old parameter p0 and returns the new one without storing it (BF16 master weights,
 * step.h). */
ACC_INLINE acc_f32 acc_adam_state(acc_idx i, acc_f32 g, acc_f32 p0, acc_u64 exp_avg,
                                  acc_u64 exp_avg_sq, ACC_GPTR(acc_f32) vmax, acc_u32 sdt,
                                  acc_u32 mode, acc_u32 ams, const acc_adam_consts_t C) {
  const acc_adam_new_t r = acc_adam_moments(g, p0, acc_load(exp_avg, i, sdt),
                                            acc_load(exp_avg_sq, i, sdt), mode, C);
  acc_f32 vd = r.v;
  if (ams != 0u) {
    vd = acc_nanmax(vmax[i], r.v);
    vmax[i] = vd;
  }
  acc_store(exp_avg, i, sdt, r.m);
  acc_store(exp_avg_sq, i, sdt, r.v);
  return acc_adam_param(r, vd, C);
}

ACC_INLINE acc_f32 acc_adam_apply(acc_idx i, acc_f32 g, ACC_GPTR(acc_f32) param,
                                  acc_u64 exp_avg, acc_u64 exp_avg_sq, ACC_GPTR(acc_f32) vmax,
                                  acc_u32 sdt, acc_u32 mode, acc_u32 ams,
                                  const acc_adam_consts_t C) {
  const acc_f32 p = acc_adam_state(i, g, param[i], exp_avg, exp_avg_sq, vmax, sdt, mode, ams, C);
  param[i] = p;
  return p;
}

ACC_INLINE void acc_adam_elem(acc_idx i, ACC_GPTR(acc_f32) param, acc_u64 grad,
                              acc_u64 exp_avg, acc_u64 exp_avg_sq, acc_u32 dt, acc_u32 mode,
                              const acc_adam_consts_t C) {
  /* no AMSGrad here: vmax is never touched; F32 moments */
  acc_adam_apply(i, acc_load(grad, i, dt), param, exp_avg, exp_avg_sq, param, ACC_DT_F32, mode,
                 0u, C);
}

/* Chunk b, gradients of dtype dt; the weight decay's form from A (one loop each). */
ACC_INLINE void acc_adam_chunk(ACC_GPTR(const acc_chunk_t) chunks, acc_u32 b,
                               const acc_adam_args_t A, const acc_adam_consts_t C, acc_u32 dt) {
  ACC_GPTR(acc_f32) param = ACC_PTR(acc_f32, chunks[b].ptr[0]);
  const acc_u64 grad = chunks[b].ptr[1];
  const acc_u64 exp_avg = chunks[b].ptr[2];
  const acc_u64 exp_avg_sq = chunks[b].ptr[3];
  const acc_u32 count = chunks[b].count;
  if (A.adamw) {
    ACC_ELEM_MAP(count, acc_adam_elem, param, grad, exp_avg, exp_avg_sq, dt, ACC_ADAM_DECOUPLED,
                 C);
  } else if (C.wd != 0.0f) {
    ACC_ELEM_MAP(count, acc_adam_elem, param, grad, exp_avg, exp_avg_sq, dt, ACC_ADAM_L2, C);
  } else {
    ACC_ELEM_MAP(count, acc_adam_elem, param, grad, exp_avg, exp_avg_sq, dt, 0u, C);
  }
}

ACC_KERNEL(accel_k_adam, acc_adam_params_t, P) {
  const acc_adam_args_t A = ACC_PTR(const acc_adam_args_t, P.args)[0];
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  if (A.found_inf == 0.0f) {
    const acc_adam_consts_t C = acc_adam_consts(A, A.step);
    ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.grad_dtype, acc_adam_chunk, chunks, b, A, C);
  }
}

#endif
