/*
 * accel tensor kernels: multi-tensor gradient and norm operations for optimizer steps.
 *
 * Every operation takes a whole list of tensors and runs in a constant number of kernel
 * launches whatever the list length (multi-tensor apply). Per-step values (loss scale, clip
 * coefficient, learning rate, step) are device scalars, so a captured graph sees new values on
 * every replay without being captured again. Nothing here synchronizes with the host, and every
 * call may be captured into a graph or queued in lazy mode.
 *
 * Reductions have one fixed order (fixed chunk size, fixed lane count, fixed tree), fp32
 * accumulation, no fp contraction, correctly rounded sqrt and division: norms for p = 1, 2, inf
 * and Adam results are bitwise identical across runs, CPU thread counts and backends.
 *
 * Validation (ACCEL_ERROR_INVALID_ARGUMENT with a message): NULL list with n > 0, NULL data
 * with numel > 0, unknown dtype, dtypes that differ within a list, lists whose lengths differ
 * (numel per tensor), misaligned data, byte sizes that overflow, device pointers outside a live
 * allocation of the stream's device, and outputs that overlap each other or an input they are
 * not allowed to alias.
 */
#ifndef ACCEL_ACCEL_KERNELS_H
#define ACCEL_ACCEL_KERNELS_H

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum accel_dtype {
  ACCEL_F32 = 0,
  ACCEL_F16 = 1,  /* IEEE binary16 */
  ACCEL_BF16 = 2, /* bfloat16 */
  ACCEL_U8 = 3    /* 8-bit codes: storage of the 8-bit state format only (the moments of
                     accel_adam_step_update, accel_adam_step_t.state_scales); every other
                     operation and the collectives refuse it */
} accel_dtype_t;

typedef struct accel_tensor {
  void *data;          /* device pointer, aligned to the element size */
  size_t numel;        /* number of elements (0 allowed) */
  accel_dtype_t dtype;
} accel_tensor_t;

/* Bytes per element (0 for an unknown dtype). */
ACCEL_API size_t accel_dtype_size(accel_dtype_t dtype);
ACCEL_API const char *accel_dtype_name(accel_dtype_t dtype);

/* out_dev[0] = (sum_i sum_j |t_ij|^p)^(1/p) over all tensors, as torch.linalg.vector_norm of the
 * concatenation. norm_type: 1, 2, any finite p > 0, or INFINITY. An Inf element gives Inf (for
 * p = inf too), a NaN element gives NaN. n = 0 or all-empty tensors give 0. */
ACCEL_API accel_status_t accel_multi_tensor_norm(accel_stream_t *stream,
                                                 const accel_tensor_t *tensors, size_t n,
                                                 float norm_type, float *out_dev);

/* coef = max_norm / (total_norm_dev[0] + eps), computed on the device and stored in
 * coef_out_dev[0] when that is not NULL. Tensors are multiplied by coef only when coef < 1; a
 * NaN total norm gives NaN tensors and an Inf norm gives zeros (NaN where an element was Inf),
 * exactly like torch.nn.utils.clip_grad_norm_ (error_if_nonfinite=False). */
ACCEL_API accel_status_t accel_clip_by_global_norm(accel_stream_t *stream,
                                                   const accel_tensor_t *tensors, size_t n,
                                                   float max_norm, const float *total_norm_dev,
                                                   float eps, float *coef_out_dev);

/* hp[i] += float(lp[i]) elementwise for every pair; then lp[i] = 0 when zero_lp is nonzero.
 * hp tensors are F32; lp tensors have any dtype; pair i must have equal numel. */
ACCEL_API accel_status_t accel_update_hp_grads(accel_stream_t *stream,
                                               const accel_tensor_t *lp_grads,
                                               const accel_tensor_t *hp_grads, size_t n,
                                               int zero_lp);

/* t *= inv_scale_dev[0] for every tensor; if any element of the result is not finite,
 * found_inf_dev[0] is set to 1.0f (it is never cleared: zero it before the step), as
 * torch._amp_foreach_non_finite_check_and_unscale_. */
ACCEL_API accel_status_t accel_unscale_and_check(accel_stream_t *stream,
                                                 const accel_tensor_t *tensors, size_t n,
                                                 const float *inv_scale_dev, float *found_inf_dev);

/* Optimizer hyper-parameters, read from device memory at run time. */
typedef struct accel_adam_args {
  float lr;
  float beta1;
  float beta2;
  float eps;
  float weight_decay;
  uint32_t step;      /* the step being taken, 1 for the first (bias correction uses it) */
  uint32_t adamw;     /* 1: decoupled weight decay (AdamW); 0: Adam (L2 added to the grad) */
  float found_inf;    /* when nonzero the update is skipped: point accel_unscale_and_check's
                         found_inf_dev at this field to skip steps that overflowed */
} accel_adam_args_t;

/* One Adam/AdamW step as torch.optim.Adam/AdamW (maximize=False, amsgrad=False; the fused
 * step, accel_adam_step_update, has both):
 *   p *= 1 - lr*wd (AdamW) | g += wd*p (Adam)
 *   m = m + (1-beta1)*(g-m);  v = beta2*v + (1-beta2)*g*g
 *   p -= (lr / (1-beta1^step)) * m / (sqrt(v)/sqrt(1-beta2^step) + eps)
 * params, exp_avg, exp_avg_sq: F32; grads: F32, F16 or BF16. All four lists have n tensors with
 * matching numel; params, exp_avg and exp_avg_sq must not overlap anything. */
ACCEL_API accel_status_t accel_fused_adam(accel_stream_t *stream, const accel_tensor_t *params,
                                          const accel_tensor_t *grads,
                                          const accel_tensor_t *exp_avg,
                                          const accel_tensor_t *exp_avg_sq, size_t n,
                                          const accel_adam_args_t *args_dev);

/* Every element of every tensor = value (converted to the tensor's dtype, round to nearest
 * even). */
ACCEL_API accel_status_t accel_fill(accel_stream_t *stream, const accel_tensor_t *tensors,
                                    size_t n, float value);

/* t *= scale_dev[0] for every tensor (computed in fp32, rounded to the tensor's dtype). */
ACCEL_API accel_status_t accel_scale(accel_stream_t *stream, const accel_tensor_t *tensors,
                                     size_t n, const float *scale_dev);

/* ---- The mixed-precision step on the device ------------------------------------------------
 * torch.cuda.amp.GradScaler's state lives in device memory and kernels update it, so a step
 * captured once replays with no host write and no host sync: accel_amp_begin_step at the start
 * (found_inf = 0, inv_scale = 1/scale), accel_unscale_and_check (sets found_inf), the step
 * counter (accel_step_count), the optimizer (accel_fused_adam reads found_inf) and the cast of
 * the master weights (accel_cast) skip themselves on overflow, accel_amp_update_scale at the
 * end. docs/KERNELS.md ("The mixed-precision step") shows the whole step. */

/* Dynamic loss scaler, in device memory (one 4-byte aligned struct). Initialise it as
 * GradScaler(init_scale, growth_factor, backoff_factor, growth_interval) does: scale =
 * init_scale, growth_tracker = 0; inv_scale is written by accel_amp_begin_step. */
typedef struct accel_loss_scaler {
  float scale;              /* the loss scale (multiply the loss by it before backward) */
  float inv_scale;          /* 1 / scale for accel_unscale_and_check */
  int32_t growth_tracker;   /* steps without overflow since the scale last changed */
  int32_t growth_interval;  /* grow after this many steps without overflow (torch: 2000) */
  float growth_factor;      /* torch: 2.0 */
  float backoff_factor;     /* torch: 0.5 */
} accel_loss_scaler_t;

/* The start of a step: found_inf_dev[0] = 0 and scaler_dev->inv_scale = 1 / scale (fp32
 * division, correctly rounded; torch forms the reciprocal in double: the same for every scale
 * that is a power of two, which all scales are from a power-of-two init with the default
 * factors). One one-block launch. */
ACCEL_API accel_status_t accel_amp_begin_step(accel_stream_t *stream,
                                              accel_loss_scaler_t *scaler_dev,
                                              float *found_inf_dev);

/* torch._amp_update_scale_ on the device: when found_inf_dev[0] != 0 (NaN counts as set),
 * scale *= backoff_factor and growth_tracker = 0; otherwise growth_tracker += 1, and when it
 * reaches growth_interval scale *= growth_factor (kept only when finite) and growth_tracker =
 * 0. The products are fp32 (torch: fp32 * double, rounded: equal for power-of-two factors). */
ACCEL_API accel_status_t accel_amp_update_scale(accel_stream_t *stream,
                                                accel_loss_scaler_t *scaler_dev,
                                                const float *found_inf_dev);

/* step_dev[0] += 1 unless skip_if_dev is given and skip_if_dev[0] != 0 (an overflowed step is
 * not counted, as GradScaler skips optimizer.step()). Point step_dev at accel_adam_args_t.step
 * (0 before the first step) and run it before accel_fused_adam: Adam then sees the step being
 * taken with no host write. skip_if_dev may be NULL (always counts). */
ACCEL_API accel_status_t accel_step_count(accel_stream_t *stream, uint32_t *step_dev,
                                          const float *skip_if_dev);

/* A step count per tensor, torch's state["step"] of each parameter: steps_dev[i] += 1 for
 * every i < n whose tensor has a gradient in this step (has_grad_dev NULL: all; else
 * has_grad_dev[i] != 0), unless skip_if_dev is given and skip_if_dev[0] != 0. The counts are
 * float (torch's step tensors are float32; whole numbers up to 2^24 are exact, and as in torch
 * a count stops growing there). Run it before accel_adam_step_update with the same steps_dev
 * and has_grad_dev: each tensor then takes its own step. One one-block launch (none for n =
 * 0). */
ACCEL_API accel_status_t accel_step_counts(accel_stream_t *stream, float *steps_dev,
                                           const uint32_t *has_grad_dev, size_t n,
                                           const float *skip_if_dev);

/* dst[i] = src[i] converted through fp32 for every pair (any dtypes: fp32 master -> bf16/fp16
 * model weights rounds to nearest even; bf16/fp16 -> fp32 is exact, for initialisation).
 * Skipped entirely when skip_if_dev is given and skip_if_dev[0] != 0 (the model keeps its
 * weights on an overflowed step). src and dst must not overlap; pair i has equal numel. */
ACCEL_API accel_status_t accel_cast(accel_stream_t *stream, const accel_tensor_t *src,
                                    const accel_tensor_t *dst, size_t n,
                                    const float *skip_if_dev);

/* ---- The fused optimizer step ---------------------------------------------------------------
 * A DeepSpeed-style mixed-precision AdamW step in two sweeps over the gradients instead of one
 * pass per kernel (update_hp, unscale, norm, clip, Adam, cast): accel_adam_step_norm reads the
 * gradients once for the global norm and the overflow check; accel_adam_step_update then makes
 * one pass per chunk that takes each gradient to fp32, unscales, clips, runs AdamW and writes
 * the model weights. Between the two, a distributed step reduces the norm and the overflow
 * flag over the ranks (accel_comm.h). The separate kernels above stay for callers that want
 * them; the results are bitwise those of
 *   accel_fill(hp, 0) + accel_update_hp_grads(grads, hp, zero)   (without ACCUMULATE)
 *   accel_update_hp_grads(grads, hp, zero)                       (with ACCUMULATE)
 *   accel_unscale_and_check(hp, inv_scale, found_inf)            (inv_scale given)
 *   accel_multi_tensor_norm(hp, norm_type, norm)
 *   accel_clip_by_global_norm(hp, max_norm, norm, clip_eps, coef_out)   (with CLIP)
 *   accel_fused_adam(params, hp, exp_avg, exp_avg_sq, args)
 *   accel_cast(params, model_params, &args->found_inf)          (model_params given)
 * run one after the other (docs/KERNELS.md, "The fused step"). */

/* accel_adam_step_t.flags */
#define ACCEL_ADAM_STEP_ZERO_GRADS 1u /* the update sets grads to 0 once read (DeepSpeed's
                                         zero_grad of the lp gradients) */
#define ACCEL_ADAM_STEP_ACCUMULATE 2u /* the gradient is hp_grads + grads: hp_grads holds the
                                         sum of earlier micro-batches (both sweeps read it) */
#define ACCEL_ADAM_STEP_CLIP 4u       /* the update clips by norm_dev (clip_grad_norm_) */
#define ACCEL_ADAM_STEP_MAXIMIZE 8u   /* torch's maximize: AdamW steps with -g (hp_grads still
                                         receive g) */
#define ACCEL_ADAM_STEP_AMSGRAD 16u   /* torch's amsgrad: max_exp_avg_sq = max(max_exp_avg_sq,
                                         exp_avg_sq) (NaN kept, as torch.maximum) is the
                                         denominator's second moment */

/* One step's lists and device scalars; both calls take the same descriptor. Growable: set
 * struct_size = sizeof(accel_adam_step_t); fields past a caller's struct_size read as absent
 * (a descriptor that ends at flags, as the first version did, is accepted). */
typedef struct accel_adam_step {
  size_t struct_size;
  size_t n;                           /* tensors in every list */
  const accel_tensor_t *grads;        /* the gradients backward left (F32, F16 or BF16) */
  const accel_tensor_t *hp_grads;     /* NULL, or F32: receives the final fp32 gradients
                                         (unscaled, clipped); read with ACCUMULATE. May be
                                         grads itself (F32 grads, tensor for tensor): then
                                         they are unscaled and clipped in place, as torch's
                                         unscale_ and clip_grad_norm_ leave them, bitwise
                                         (not with ACCUMULATE; it overrides ZERO_GRADS) */
  const accel_tensor_t *params;       /* the master weights: F32, or BF16 (stored by
                                         stochastic rounding with generator, else rounded
                                         to nearest even; not with U8 moments) */
  const accel_tensor_t *exp_avg;      /* F32, BF16 or U8: the state format (update only) */
  const accel_tensor_t *exp_avg_sq;   /* the same dtype as exp_avg. BF16 moments are read
                                         exactly and stored rounded to nearest even; U8
                                         moments are 8-bit codes of blocks of 256 elements
                                         with their scales in state_scales; the update uses
                                         the new moments before either rounding
                                         (docs/KERNELS.md, "State formats") */
  const accel_tensor_t *model_params; /* NULL, or any dtype: = params rounded after the update
                                         (skipped on overflow). With BF16 params it must be
                                         NULL: they are the model's weights themselves */
  const accel_adam_args_t *args_dev;  /* hyper-parameters, step; the update is skipped when
                                         args_dev->found_inf != 0 */
  const float *inv_scale_dev;         /* NULL: no loss scale; else gradients *= inv_scale */
  float *found_inf_dev;               /* norm sweep: set to 1.0f when a gradient is not finite
                                         (never cleared); NULL: not checked. Point it at
                                         &args_dev->found_inf to skip the update on overflow */
  float norm_type;                    /* norm sweep: p as accel_multi_tensor_norm */
  float *norm_dev;                    /* norm sweep: the global norm (NULL: not computed);
                                         update: what CLIP clips by */
  float max_norm;                     /* CLIP: coef = max_norm / (norm + clip_eps), applied */
  float clip_eps;                     /*       when < 1 (accel_clip_by_global_norm) */
  float *coef_out_dev;                /* NULL, or CLIP's coefficient (stored raw) */
  uint32_t flags;                     /* ACCEL_ADAM_STEP_* */
  const accel_tensor_t *max_exp_avg_sq; /* AMSGRAD (only then): F32, AMSGrad's running
                                           maximum of exp_avg_sq (torch starts it at 0) */
  const float *steps_dev;             /* NULL: every tensor takes step args_dev->step; else
                                         float[n]: tensor i takes step steps_dev[i] (count
                                         them with accel_step_counts before the update) */
  const uint32_t *has_grad_dev;       /* NULL: every tensor has a gradient; else uint32_t[n]:
                                         0 = tensor i has none in this step. Both sweeps skip
                                         it: its grads and hp_grads are not read or written
                                         (not zeroed), it adds nothing to the norm or the
                                         overflow check, its params and state stay */
  const accel_tensor_t *state_scales; /* U8 moments (only then): F32, 2 * ceil(numel / 256)
                                         per tensor: the scales [s_m, s_v] of each block of
                                         256 elements, exp_avg's then exp_avg_sq's */
  struct accel_generator *generator;  /* BF16 params (only then): NULL, or the generator
                                         (accel_random.h) whose words round the new master
                                         weights stochastically: element i of chunk c of the
                                         call (chunks of ACCEL_RAND_CHUNK elements of one
                                         tensor, in list order) takes the 16 bits r = (w >>
                                         16 * (i % 2)) & 0xffff of the word w that
                                         accel_generator_raw writes at c * ACCEL_RAND_CHUNK +
                                         i / 2 (word j % 4 of block counter + c *
                                         ACCEL_RAND_CHUNK / 4 + j / 4, j = i / 2) and stores
                                         the bf16 (fp32 bits + r) >> 16 (Inf and NaN: nearest
                                         even). The counter then advances by
                                         ACCEL_RAND_CHUNK / 4 blocks per chunk, in stream
                                         order, skipped step or not */
} accel_adam_step_t;

/* The smallest struct_size the calls take: the first accel_adam_step_t, which ended at flags. */
#define ACCEL_ADAM_STEP_SIZE_MIN (offsetof(accel_adam_step_t, flags) + sizeof(uint32_t))

/* The norm sweep: the gradients' global norm into norm_dev and the overflow check into
 * found_inf_dev, reading each gradient (and hp_grads with ACCUMULATE) once. With neither
 * norm_dev nor found_inf_dev it does nothing. Two launches (one per chunk, then one block). */
ACCEL_API accel_status_t accel_adam_step_norm(accel_stream_t *stream,
                                              const accel_adam_step_t *step);

/* The update pass: one launch (a second, with generator, advances its counter), one pass over
 * every list. Validation as the other operations
 * (lists of n tensors with matching numel, dtypes, alignment, live memory, no overlaps), plus:
 * CLIP needs norm_dev, ACCUMULATE needs hp_grads, AMSGRAD needs max_exp_avg_sq (and only
 * AMSGRAD takes it), unknown flags and a struct_size that ends before flags are
 * INVALID_ARGUMENT; so are F16 moments, moments of two dtypes (between exp_avg and
 * exp_avg_sq, or inside one list), U8 moments without state_scales (or with AMSGRAD), and
 * state_scales with other moments or of the wrong size; F16 params, BF16 params with U8 moments,
 * and a generator with F32 params. */
ACCEL_API accel_status_t accel_adam_step_update(accel_stream_t *stream,
                                                const accel_adam_step_t *step);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_KERNELS_H */
