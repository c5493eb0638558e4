/*
 * CTS cases for the fused optimizer step (accel_adam_step_norm / accel_adam_step_update): its
 * results are bitwise those of the separate kernels it replaces, run one after the other (which
 * cases_kernels.c checks against the numerics contract), for every gradient dtype and flag,
 * with and without hp gradients, a loss scale, clipping and model weights of every dtype, with
 * steps that overflow, in every mode; and its bad input.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_lists.h"

static const size_t kStepSizes[] = {1, 3, 255, 256, 257, 0, KC_CHUNK - 1, KC_CHUNK, KC_CHUNK + 1,
                                    100003};
#define NSTEP (sizeof kStepSizes / sizeof kStepSizes[0])
#define NO_MODEL ((accel_dtype_t)-1)

/* The device scalars of a step, one guarded block. */
typedef struct step_scalars {
  accel_adam_args_t args; /* args.found_inf: the overflow flag */
  float inv_scale, norm, coef, reserved;
} step_scalars_t;

/* One configuration of the step. */
typedef struct step_cfg {
  uint32_t flags;      /* ACCEL_ADAM_STEP_* */
  int hp;              /* the fused step is given hp_grads */
  int scale;           /* loss scale (inv_scale and the overflow check) */
  accel_dtype_t model; /* NO_MODEL or the model weights' dtype */
  float norm_type, max_norm;
  accel_adam_args_t args;
  int inject; /* 0, or a gradient made Inf (1) / NaN (2), or two so large (3e38, finite in
                 F32 / BF16) that the sum of squares overflows: norm Inf, found_inf still 0 */
  int in_place; /* hp_grads = grads (F32 gradients only): unscaled and clipped in place */
} step_cfg_t;

/* One copy of the state: lists and scalars. */
typedef struct step_state {
  kc_list_t lp, hp, p, m, v, model;
  kc_scalars_t S;
  step_scalars_t *d;
} step_state_t;

typedef struct step_job {
  const step_cfg_t *c;
  step_state_t *st;
} step_job_t;

static void state_free(cts_ctx_t *ctx, step_state_t *st) {
  kc_free(ctx, &st->lp);
  kc_free(ctx, &st->hp);
  kc_free(ctx, &st->p);
  kc_free(ctx, &st->m);
  kc_free(ctx, &st->v);
  kc_free(ctx, &st->model);
  if (st->S.buf.base) cts_dev_free(ctx, &st->S.buf);
}

/* The same state for the same dtype and configuration every time (fixed seeds). */
static accel_status_t state_make(cts_ctx_t *ctx, step_state_t *st, accel_dtype_t dt,
                                 const step_cfg_t *c) {
  memset(st, 0, sizeof *st);
  accel_status_t s = kc_make(ctx, &st->lp, NSTEP, kStepSizes, NSTEP, dt, 4.0f, 61);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->hp, NSTEP, kStepSizes, NSTEP, ACCEL_F32, 0.5f, 62);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->p, NSTEP, kStepSizes, NSTEP, ACCEL_F32, 1.0f, 63);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->m, NSTEP, kStepSizes, NSTEP, ACCEL_F32, 0.01f, 64);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->v, NSTEP, kStepSizes, NSTEP, ACCEL_F32, 0.001f, 65);
  if (s == ACCEL_OK && c->model != NO_MODEL)
    s = kc_make(ctx, &st->model, NSTEP, kStepSizes, NSTEP, c->model, 1.0f, 66);
  for (size_t t = 0; s == ACCEL_OK && t < st->v.n; ++t) { /* second moments are >= 0 */
    for (size_t i = 0; i < st->v.t[t].numel; ++i)
      kc_raw_set(st->v.host[t], i, ACCEL_F32,
                 kc_f32_bits(fabsf(kc_val(st->v.host[t], i, ACCEL_F32))));
    s = kc_push(ctx, &st->v, t);
  }
  if (s == ACCEL_OK && c->inject) { /* one bad gradient in the second chunk of tensor 9 */
    const float bad = c->inject == 1 ? -INFINITY : c->inject == 2 ? NAN : 3e38f;
    kc_raw_set(st->lp.host[9], KC_CHUNK + 1, dt, kc_ref_narrow(bad, dt));
    if (c->inject == 3) kc_raw_set(st->lp.host[9], KC_CHUNK + 2, dt, kc_ref_narrow(-bad, dt));
    s = kc_push(ctx, &st->lp, 9);
  }
  if (s == ACCEL_OK && c->in_place) { /* a -0 gradient stays -0 in place, as torch leaves it */
    kc_raw_set(st->lp.host[2], 7, ACCEL_F32, 0x80000000u);
    s = kc_push(ctx, &st->lp, 2);
  }
  const step_scalars_t init = {c->args, c->scale ? 0x1p-10f : 1.0f, 0.0f, 0.0f, 0.0f};
  if (s == ACCEL_OK) s = kc_scalars(ctx, &st->S, &init, sizeof init);
  st->d = (step_scalars_t *)st->S.dev;
  return s;
}

/* The separate kernels, one after the other. */
static accel_status_t body_sequence(accel_stream_t *s, void *u) {
  const step_job_t *j = u;
  const step_cfg_t *c = j->c;
  step_state_t *st = j->st;
  const size_t n = st->lp.n;
  /* in place, the F32 gradients themselves are torch's hp */
  const accel_tensor_t *hp = c->in_place ? st->lp.t : st->hp.t;
  accel_status_t r = accel_memset_async(s, &st->d->args.found_inf, 0, sizeof(float));
  if (r == ACCEL_OK && !c->in_place && !(c->flags & ACCEL_ADAM_STEP_ACCUMULATE))
    r = accel_fill(s, hp, n, 0.0f);
  if (r == ACCEL_OK && !c->in_place)
    r = accel_update_hp_grads(s, st->lp.t, hp, n, (c->flags & ACCEL_ADAM_STEP_ZERO_GRADS) != 0);
  if (r == ACCEL_OK && c->scale)
    r = accel_unscale_and_check(s, hp, n, &st->d->inv_scale, &st->d->args.found_inf);
  if (r == ACCEL_OK) r = accel_multi_tensor_norm(s, hp, n, c->norm_type, &st->d->norm);
  if (r == ACCEL_OK && (c->flags & ACCEL_ADAM_STEP_CLIP))
    r = accel_clip_by_global_norm(s, hp, n, c->max_norm, &st->d->norm, 1e-6f, &st->d->coef);
  if (r == ACCEL_OK) r = accel_fused_adam(s, st->p.t, hp, st->m.t, st->v.t, n, &st->d->args);
  if (r == ACCEL_OK && c->model != NO_MODEL)
    r = accel_cast(s, st->p.t, st->model.t, n, &st->d->args.found_inf);
  return r;
}

static accel_adam_step_t step_desc(const step_cfg_t *c, step_state_t *st) {
  return (accel_adam_step_t){.struct_size = sizeof(accel_adam_step_t),
                             .n = st->lp.n,
                             .grads = st->lp.t,
                             .hp_grads = c->in_place ? st->lp.t : c->hp ? st->hp.t : NULL,
                             .params = st->p.t,
                             .exp_avg = st->m.t,
                             .exp_avg_sq = st->v.t,
                             .model_params = c->model != NO_MODEL ? st->model.t : NULL,
                             .args_dev = &st->d->args,
                             .inv_scale_dev = c->scale ? &st->d->inv_scale : NULL,
                             .found_inf_dev = c->scale ? &st->d->args.found_inf : NULL,
                             .norm_type = c->norm_type,
                             .norm_dev = &st->d->norm,
                             .max_norm = c->max_norm,
                             .clip_eps = 1e-6f,
                             .coef_out_dev = &st->d->coef,
                             .flags = c->flags};
}

/* The fused step: the norm sweep and the update pass. */
static accel_status_t body_fused(accel_stream_t *s, void *u) {
  const step_job_t *j = u;
  const accel_adam_step_t d = step_desc(j->c, j->st);
  accel_status_t r = accel_memset_async(s, &j->st->d->args.found_inf, 0, sizeof(float));
  if (r == ACCEL_OK) r = accel_adam_step_norm(s, &d);
  if (r == ACCEL_OK) r = accel_adam_step_update(s, &d);
  return r;
}

/* Every element of a and b has the same bits (and both keep their guard bytes). */
static cts_result_t same_lists(cts_ctx_t *ctx, kc_list_t *a, kc_list_t *b, const char *what,
                               const char *cfg) {
  for (size_t t = 0; t < a->n; ++t) {
    const size_t bytes = a->t[t].numel * kc_esz(a->dtype);
    unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    CTS_CHECK(x && y, "out of host memory");
    const int ok = kc_pull(ctx, a, t, x) && kc_pull(ctx, b, t, y);
    size_t i = 0;
    while (ok && i < a->t[t].numel && kc_raw_get(x, i, a->dtype) == kc_raw_get(y, i, a->dtype))
      ++i;
    const uint32_t want = i < a->t[t].numel ? kc_raw_get(x, i, a->dtype) : 0;
    const uint32_t got = i < a->t[t].numel ? kc_raw_get(y, i, a->dtype) : 0;
    free(x);
    free(y);
    CTS_CHECK(ok, "%s %s: tensor %zu: download failed or guard bytes overwritten", cfg, what, t);
    CTS_CHECK(i == a->t[t].numel, "%s %s: tensor %zu[%zu] fused %08x, separate kernels %08x", cfg,
              what, t, i, got, want);
  }
  return CTS_PASS;
}

static cts_result_t compare_states(cts_ctx_t *ctx, step_state_t *seq, step_state_t *fus,
                                   const step_cfg_t *c, const char *cfg) {
  cts_result_t r = same_lists(ctx, &seq->lp, &fus->lp, "grads", cfg);
  if (r == CTS_PASS && c->hp) r = same_lists(ctx, &seq->hp, &fus->hp, "hp_grads", cfg);
  if (r == CTS_PASS) r = same_lists(ctx, &seq->p, &fus->p, "params", cfg);
  if (r == CTS_PASS) r = same_lists(ctx, &seq->m, &fus->m, "exp_avg", cfg);
  if (r == CTS_PASS) r = same_lists(ctx, &seq->v, &fus->v, "exp_avg_sq", cfg);
  if (r == CTS_PASS && c->model != NO_MODEL)
    r = same_lists(ctx, &seq->model, &fus->model, "model_params", cfg);
  if (r != CTS_PASS) return r;
  step_scalars_t a, b;
  CTS_OK(cts_download(ctx, &a, seq->d, sizeof a));
  CTS_OK(cts_download(ctx, &b, fus->d, sizeof b));
  CTS_CHECK(kc_f32_bits(a.norm) == kc_f32_bits(b.norm), "%s: norm fused %a, separate %a", cfg,
            (double)b.norm, (double)a.norm);
  CTS_CHECK(kc_f32_bits(a.args.found_inf) == kc_f32_bits(b.args.found_inf),
            "%s: found_inf fused %g, separate %g", cfg, (double)b.args.found_inf,
            (double)a.args.found_inf);
  if (c->flags & ACCEL_ADAM_STEP_CLIP)
    CTS_CHECK(kc_f32_bits(a.coef) == kc_f32_bits(b.coef), "%s: coef fused %a, separate %a", cfg,
              (double)b.coef, (double)a.coef);
  const int bad = c->inject == 1 || c->inject == 2;
  CTS_CHECK(!c->scale || (a.args.found_inf != 0.0f) == bad, "%s: found_inf %g with %s bad gradient",
            cfg, (double)a.args.found_inf, bad ? "a" : "no");
  return CTS_PASS;
}

#define ADAMW {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3, 1, 0.0f}
#define ADAM_L2 {1e-2f, 0.8f, 0.99f, 1e-8f, 0.05f, 7, 0, 0.0f}
#define ADAM {1e-2f, 0.8f, 0.99f, 1e-8f, 0.0f, 2, 0, 0.0f}
#define Z ACCEL_ADAM_STEP_ZERO_GRADS
#define ACC ACCEL_ADAM_STEP_ACCUMULATE
#define CLIP ACCEL_ADAM_STEP_CLIP

static const step_cfg_t kConfigs[] = {
    /* DeepSpeed's fp16 / bf16 optimizers: zero the lp grads, clip, master -> model */
    {Z | CLIP, 1, 1, ACCEL_BF16, 2.0f, 1.0f, ADAMW, 0, 0},
    {Z | CLIP, 0, 0, ACCEL_F16, 2.0f, 1.0f, ADAM_L2, 0, 0},
    /* gradient accumulation into hp, no model weights */
    {ACC | CLIP, 1, 1, NO_MODEL, 2.0f, 1.0f, ADAM, 0, 0},
    {Z | ACC, 1, 0, ACCEL_F32, 1.0f, 1.0f, ADAMW, 0, 0},
    /* nothing optional: no zeroing, no clip, no hp, no model */
    {0, 0, 0, NO_MODEL, 2.0f, 1.0f, ADAMW, 0, 0},
    /* clip by the inf norm; a max_norm that does not clip */
    {Z | CLIP, 1, 1, ACCEL_F16, INFINITY, 1.0f, ADAM_L2, 0, 0},
    {Z | CLIP, 1, 1, ACCEL_BF16, 2.0f, 1e30f, ADAMW, 0, 0},
    /* overflowing steps: found_inf skips Adam and the cast; grads are still consumed */
    {CLIP, 1, 1, ACCEL_BF16, 2.0f, 1.0f, ADAMW, 1, 0}, /* kept: not zeroed */
    {Z | ACC | CLIP, 1, 1, ACCEL_F16, 2.0f, 1.0f, ADAMW, 2, 0},
    /* finite gradients whose squares overflow: an Inf norm (the clip zeroes), no overflow */
    {Z | CLIP, 1, 1, ACCEL_BF16, 2.0f, 1.0f, ADAMW, 3, 0},
    /* without the check, a NaN gradient flows through the norm and the clip as it does there */
    {Z | CLIP, 1, 0, NO_MODEL, 2.0f, 1.0f, ADAMW, 2, 0},
    /* accel.torch's step: F32 gradients unscaled and clipped in place */
    {CLIP, 0, 1, NO_MODEL, 2.0f, 1.0f, ADAMW, 0, 1},
    {CLIP, 0, 1, NO_MODEL, 2.0f, 1.0f, ADAMW, 1, 1},
};

CTS_CASE(kernels_adam_step_matches_sequence, CTS_TAG_KERNELS) {
  static const accel_dtype_t dts[] = {ACCEL_F32, ACCEL_F16, ACCEL_BF16};
  for (size_t d = 0; d < 3; ++d)
    for (size_t k = 0; k < sizeof kConfigs / sizeof kConfigs[0]; ++k) {
      const step_cfg_t *c = &kConfigs[k];
      if (c->in_place && dts[d] != ACCEL_F32) continue;
      char cfg[64];
      snprintf(cfg, sizeof cfg, "%s grads, config %zu", accel_dtype_name(dts[d]), k);
      step_state_t seq, fus;
      accel_status_t s = state_make(ctx, &seq, dts[d], c);
      if (s == ACCEL_OK) s = state_make(ctx, &fus, dts[d], c);
      step_job_t js = {c, &seq}, jf = {c, &fus};
      /* two steps: the second starts from what the first left (zeroed grads, moved state) */
      if (s == ACCEL_OK) s = cts_exec(ctx, body_sequence, &js, 2);
      if (s == ACCEL_OK) s = cts_exec(ctx, body_fused, &jf, 2);
      cts_result_t r = s == ACCEL_OK ? compare_states(ctx, &seq, &fus, c, cfg)
                                     : cts_fail(ctx, __FILE__, __LINE__, "%s: %s: %s", cfg,
                                                accel_status_name(s), accel_last_error());
      state_free(ctx, &seq);
      state_free(ctx, &fus);
      if (r != CTS_PASS) return r;
    }
  return CTS_PASS;
}

/* Empty lists: nothing to update, but the norm is 0 and the clip coefficient is stored. */
CTS_CASE(kernels_adam_step_empty, CTS_TAG_KERNELS) {
  const step_cfg_t c = {Z | CLIP, 1, 1, NO_MODEL, 2.0f, 1.0f, ADAMW, 0, 0};
  const step_scalars_t init = {c.args, 1.0f, 7.0f, 7.0f, 0.0f};
  kc_scalars_t S;
  CTS_OK(kc_scalars(ctx, &S, &init, sizeof init));
  step_scalars_t *d = (step_scalars_t *)S.dev;
  step_state_t st = {.d = d};
  accel_adam_step_t desc = step_desc(&c, &st);
  desc.n = 0;
  accel_stream_t *s;
  CTS_OK(accel_stream_create(ctx->dev, &s));
  CTS_OK(accel_adam_step_norm(s, &desc));
  CTS_OK(accel_adam_step_update(s, &desc));
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_stream_destroy(s));
  step_scalars_t got;
  CTS_OK(cts_download(ctx, &got, d, sizeof got));
  cts_dev_free(ctx, &S.buf);
  CTS_CHECK(got.norm == 0.0f, "empty: norm %g, want 0", (double)got.norm);
  CTS_CHECK(kc_f32_bits(got.coef) == kc_f32_bits(1.0f / (0.0f + 1e-6f)), "empty: coef %a",
            (double)got.coef);
  return CTS_PASS;
}

CTS_CASE(kernels_adam_step_bad_input, CTS_TAG_KERNELS) {
  const step_cfg_t c = {Z | CLIP, 1, 1, ACCEL_BF16, 2.0f, 1.0f, ADAMW, 0, 0};
  step_state_t st;
  CTS_OK(state_make(ctx, &st, ACCEL_BF16, &c));
  kc_list_t h16;
  CTS_OK(kc_make(ctx, &h16, NSTEP, kStepSizes, NSTEP, ACCEL_F16, 1.0f, 67));
  accel_stream_t *s;
  CTS_OK(accel_stream_create(ctx->dev, &s));
  const accel_status_t BAD = ACCEL_ERROR_INVALID_ARGUMENT;
  const accel_adam_step_t good = step_desc(&c, &st);
  accel_adam_step_t d = good;
  accel_tensor_t t[NSTEP];

  CTS_STATUS(accel_adam_step_norm(s, NULL), BAD);
  CTS_STATUS(accel_adam_step_update(s, NULL), BAD);
  CTS_STATUS(accel_adam_step_update(NULL, &good), ACCEL_ERROR_INVALID_HANDLE);
  d.struct_size = offsetof(accel_adam_step_t, flags); /* ends before flags */
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "struct_size"), "message: %s", accel_last_error());
  d = good;
  d.flags |= 0x100u;
  CTS_STATUS(accel_adam_step_norm(s, &d), BAD);
  d = good;
  d.norm_dev = NULL; /* CLIP without a norm */
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  d = good;
  d.hp_grads = NULL;
  d.flags |= ACCEL_ADAM_STEP_ACCUMULATE;
  CTS_STATUS(accel_adam_step_norm(s, &d), BAD);
  d = good;
  d.hp_grads = d.grads; /* in place needs F32 gradients */
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  kc_list_t g32;
  CTS_OK(kc_make(ctx, &g32, NSTEP, kStepSizes, NSTEP, ACCEL_F32, 1.0f, 68));
  d.grads = d.hp_grads = g32.t;
  CTS_OK(accel_adam_step_update(s, &d));
  d.flags |= ACCEL_ADAM_STEP_ACCUMULATE; /* nothing to add the gradient to */
  CTS_STATUS(accel_adam_step_norm(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "in place"), "message: %s", accel_last_error());
  d = good;
  d.norm_type = 0.0f;
  CTS_STATUS(accel_adam_step_norm(s, &d), BAD);
  d = good;
  d.params = h16.t; /* master weights must be F32 */
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  d = good;
  d.hp_grads = h16.t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  d = good;
  d.model_params = st.m.t; /* model weights on the first moments */
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "overlaps"), "message: %s", accel_last_error());
  d = good;
  d.args_dev = NULL;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  d = good;
  d.found_inf_dev = (float *)st.lp.t[2].data; /* an output on a gradient */
  CTS_STATUS(accel_adam_step_norm(s, &d), BAD);
  memcpy(t, st.v.t, sizeof t);
  t[4].numel += 1; /* numel differs from the gradient's */
  d = good;
  d.exp_avg_sq = t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  d = good;
  d.exp_avg = st.p.t; /* the same tensors twice */
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  /* the device still works */
  CTS_OK(accel_adam_step_norm(s, &good));
  CTS_OK(accel_adam_step_update(s, &good));
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_stream_destroy(s));
  kc_free(ctx, &h16);
  kc_free(ctx, &g32);
  state_free(ctx, &st);
  return CTS_PASS;
}
