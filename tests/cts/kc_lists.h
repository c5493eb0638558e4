/*
 * Tensor lists with guard bytes on the device and host copies of their bits, device scalar
 * blocks, and reference F16/BF16 conversions independent of the kernels: what the kernel cases
 * (cases_kernels.c, cases_step.c, cases_step_torch.c) share.
 */
#ifndef ACCEL_CTS_KC_LISTS_H
#define ACCEL_CTS_KC_LISTS_H

#include "cts.h"

#define KC_CHUNK 65536u /* ACC_CHUNK: the reduction order depends on it */
#define KC_LANES 256u
#define KC_GUARD 64u

float kc_f32_from_bits(uint32_t u);
uint32_t kc_f32_bits(float f);
/* Exact decode of a dtype's bits / round-to-nearest-even encode (F32: the bits themselves). */
float kc_ref_widen(uint32_t h, accel_dtype_t dt);
uint32_t kc_ref_narrow(float x, accel_dtype_t dt);
size_t kc_esz(accel_dtype_t dt);
uint32_t kc_raw_get(const void *p, size_t i, accel_dtype_t dt);
void kc_raw_set(void *p, size_t i, accel_dtype_t dt, uint32_t v);
/* Element i of p as a float. */
float kc_val(const void *p, size_t i, accel_dtype_t dt);
/* b^n by squaring in fp32: the kernels' beta^step (docs/KERNELS.md). */
float kc_powi(float b, uint32_t n);

typedef struct kc_list {
  size_t n;
  accel_dtype_t dtype;
  accel_tensor_t *t;
  cts_buf_t *buf;
  void **host;
} kc_list_t;

void kc_free(cts_ctx_t *ctx, kc_list_t *L);
/* n tensors of sizes[i] elements (sizes cycles if n > count) with values scale * U(-1, 1). */
accel_status_t kc_make(cts_ctx_t *ctx, kc_list_t *L, size_t n, const size_t *sizes, size_t count,
                       accel_dtype_t dt, float scale, uint64_t seed);
/* Uploads the host copy of tensor i again (after editing it). */
accel_status_t kc_push(cts_ctx_t *ctx, kc_list_t *L, size_t i);
/* Downloads tensor i into out (numel * esize bytes) and checks its guards. */
int kc_pull(cts_ctx_t *ctx, kc_list_t *L, size_t i, void *out);

/* A device scalar block (guarded): up to 16 floats. */
typedef struct kc_scalars {
  cts_buf_t buf;
  float *dev;
} kc_scalars_t;

accel_status_t kc_scalars(cts_ctx_t *ctx, kc_scalars_t *S, const void *init, size_t bytes);

/* The fused step of the state-format cases (cases_state.c, cases_master_bf16.c): its device
 * scalars, and the descriptor over n tensors of grads lp, params p and moments m, v with those
 * scalars, a loss scale, the overflow check and a clip to norm 1 (flags added). */
typedef struct kc_step_scalars {
  accel_adam_args_t args;
  float inv_scale, norm, coef, reserved;
} kc_step_scalars_t;

accel_status_t kc_step_scalars(cts_ctx_t *ctx, kc_scalars_t *S, const accel_adam_args_t *args,
                               kc_step_scalars_t **out);
accel_adam_step_t kc_step_desc(size_t n, const kc_list_t *lp, const kc_list_t *p,
                               const kc_list_t *m, const kc_list_t *v, kc_step_scalars_t *d,
                               uint32_t flags);
/* On stream s: found_inf = 0, then both sweeps of d. */
accel_status_t kc_step_run(accel_stream_t *s, const accel_adam_step_t *d);

/* Checks every tensor of L on the device against want(L, t, i) (the bits element i of tensor t
 * must have; L's host copies still hold the values before the operation) bit for bit, NaN
 * matching any NaN. */
typedef uint32_t (*kc_expect_fn)(const kc_list_t *L, size_t t, size_t i, const void *user);
cts_result_t kc_expect(cts_ctx_t *ctx, kc_list_t *L, kc_expect_fn want, const void *user,
                       const char *what);

#endif
