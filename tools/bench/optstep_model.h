/*
 * The synthetic model of the optstep scenario: a preset's tensor sizes and, on the device,
 * flat buffers per role (fp32 params, hp grads, exp_avg, exp_avg_sq; bf16 lp grads and their
 * pristine copy) with one tensor list view per role, plus the device block of per-step scalars.
 */
#ifndef ACCEL_BENCH_OPTSTEP_MODEL_H
#define ACCEL_BENCH_OPTSTEP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_kernels.h"

/* Device-side per-step values. args comes first so found_inf is a field of the Adam args;
 * args and inv_scale are uploaded before every step, norm and coef are kernel outputs. */
typedef struct os_scalars {
  accel_adam_args_t args;
  float inv_scale;
  float norm;
  float coef;
  float reserved;
} os_scalars_t;
#define OS_UPLOAD_BYTES (sizeof(accel_adam_args_t) + sizeof(float))
/* The optstep's clipping (accel_clip_by_global_norm's max_norm and eps). */
#define OS_MAX_NORM 1.0f
#define OS_CLIP_EPS 1e-6f

typedef struct os_model {
  char name[64];
  size_t n;       /* tensors */
  size_t *sizes;  /* numel of each */
  size_t *offsets;
  size_t flat;    /* padded elements of each flat buffer */
  size_t numel;   /* sum of sizes */
  accel_device_t *dev;
  float *params, *hp, *exp_avg, *exp_avg_sq;
  uint16_t *lp, *pristine;
  os_scalars_t *scalars;
  accel_tensor_t *P, *HP, *M, *V, *LP;
} os_model_t;

/* Sizes of a preset ("tiny", "many-small", "gpt2") or, for preset NULL, tensors/params custom.
 * A preset with params != 0 keeps its shape, scaled to params parameters in all (many-small
 * at 268435456: one GiB of fp32 in 3000 tensors). Returns 0 and prints why on a bad request. */
int os_model_sizes(os_model_t *md, const char *preset, size_t tensors, size_t params);
/* Allocates the device buffers and uploads the pristine bf16 grads (deterministic). */
int os_model_alloc(os_model_t *md, accel_device_t *dev);
/* Initial state before a variant runs: params from a fixed seed, exp_avg = exp_avg_sq = 0. */
int os_model_reset(os_model_t *md, accel_stream_t *s);
/* A 64-bit digest of params, exp_avg, exp_avg_sq and the scalar block (bitwise comparison). */
int os_model_digest(os_model_t *md, uint64_t *digest);
void os_model_free(os_model_t *md);
/* The fused step (accel_adam_step_norm, then _update) over n tensors of each list with sc's
 * scalars: loss scale, found_inf, the L2 norm clipped at OS_MAX_NORM, grads zeroed after. */
accel_adam_step_t os_adam_step(os_scalars_t *sc, size_t n, const accel_tensor_t *grads,
                               const accel_tensor_t *hp, const accel_tensor_t *params,
                               const accel_tensor_t *exp_avg, const accel_tensor_t *exp_avg_sq);

#endif
