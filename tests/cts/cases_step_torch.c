/*
 * CTS cases for torch.optim.AdamW's options of the fused step: a step count per tensor
 * (accel_step_counts + steps_dev), tensors without a gradient in a step (has_grad_dev),
 * AMSGrad and maximize. The update against an fp32 emulation of its formula, bitwise; the
 * whole step with per-tensor counts and missing gradients against the same step run one tensor
 * at a time with a counter of its own (accel_step_count), bitwise, with overflows; bad input.
 * In every mode.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_lists.h"

static const size_t kSizes[] = {1, 3, 255, 256, 257, 0, KC_CHUNK - 1, KC_CHUNK, KC_CHUNK + 1,
                                100003};
#define NT (sizeof kSizes / sizeof kSizes[0])
#define NO_MODEL ((accel_dtype_t)-1)
#define MAX ACCEL_ADAM_STEP_MAXIMIZE
#define AMS ACCEL_ADAM_STEP_AMSGRAD

/* Tensors 3 and 8 (two chunks) have no gradient in the steps of these cases; the others do. */
static int has_grad_of(size_t t) { return t != 3 && t != 8; }
/* Step counts before the first step: each tensor at a step of its own. */
static float first_step_of(size_t t) { return (float)((t * 37u) % 11u + (t == 9 ? 1233u : 0u)); }

/* The lists of one state: grads, hp, params, exp_avg, exp_avg_sq, max_exp_avg_sq, model. */
typedef struct pt_lists {
  kc_list_t g, hp, p, m, v, vmax, model;
} pt_lists_t;

static void lists_free(cts_ctx_t *ctx, pt_lists_t *L) {
  kc_free(ctx, &L->g);
  kc_free(ctx, &L->hp);
  kc_free(ctx, &L->p);
  kc_free(ctx, &L->m);
  kc_free(ctx, &L->v);
  kc_free(ctx, &L->vmax);
  kc_free(ctx, &L->model);
}

/* Sets every element of tensor t of L to the bits x. */
static accel_status_t fill_tensor(cts_ctx_t *ctx, kc_list_t *L, size_t t, uint32_t x) {
  for (size_t i = 0; i < L->t[t].numel; ++i) kc_raw_set(L->host[t], i, L->dtype, x);
  return kc_push(ctx, L, t);
}

/* The same lists every time for the same arguments (fixed seeds): second moments >= 0 (one
 * NaN in AMSGrad's maximum: torch.maximum keeps it), and the gradients and hp gradients of
 * tensors without a gradient set to `absent` (a NaN left over, or zeros). */
static accel_status_t lists_make(cts_ctx_t *ctx, pt_lists_t *L, accel_dtype_t gdt,
                                 accel_dtype_t mdt, uint32_t absent) {
  memset(L, 0, sizeof *L);
  accel_status_t s = kc_make(ctx, &L->g, NT, kSizes, NT, gdt, 2.0f, 71);
  if (s == ACCEL_OK) s = kc_make(ctx, &L->hp, NT, kSizes, NT, ACCEL_F32, 0.5f, 72);
  if (s == ACCEL_OK) s = kc_make(ctx, &L->p, NT, kSizes, NT, ACCEL_F32, 1.0f, 73);
  if (s == ACCEL_OK) s = kc_make(ctx, &L->m, NT, kSizes, NT, ACCEL_F32, 0.01f, 74);
  if (s == ACCEL_OK) s = kc_make(ctx, &L->v, NT, kSizes, NT, ACCEL_F32, 0.002f, 75);
  if (s == ACCEL_OK) s = kc_make(ctx, &L->vmax, NT, kSizes, NT, ACCEL_F32, 0.004f, 76);
  if (s == ACCEL_OK && mdt != NO_MODEL) s = kc_make(ctx, &L->model, NT, kSizes, NT, mdt, 1.0f, 77);
  for (size_t t = 0; s == ACCEL_OK && t < NT; ++t) {
    kc_list_t *sq[2] = {&L->v, &L->vmax};
    for (int k = 0; k < 2; ++k)
      for (size_t i = 0; i < kSizes[t]; ++i)
        kc_raw_set(sq[k]->host[t], i, ACCEL_F32,
                   kc_f32_bits(fabsf(kc_val(sq[k]->host[t], i, ACCEL_F32))));
    if (t == 4) kc_raw_set(L->vmax.host[t], 100, ACCEL_F32, kc_f32_bits(NAN));
    s = kc_push(ctx, &L->v, t);
    if (s == ACCEL_OK) s = kc_push(ctx, &L->vmax, t);
    if (s == ACCEL_OK && !has_grad_of(t)) s = fill_tensor(ctx, &L->g, t, absent);
    if (s == ACCEL_OK && !has_grad_of(t)) s = fill_tensor(ctx, &L->hp, t, absent);
  }
  return s;
}

/* Device scalars of one state: the fused step's (args, a count and a flag per tensor) and the
 * reference's (Adam's arguments per tensor, each with its own step counter). */
typedef struct pt_scalars {
  accel_adam_args_t args; /* args.found_inf: the overflow flag of both */
  accel_adam_args_t targs[NT];
  float steps[NT];
  uint32_t has_grad[NT];
  float inv_scale, norm, coef, reserved;
} pt_scalars_t;

static accel_status_t scalars_make(cts_ctx_t *ctx, cts_buf_t *buf, const accel_adam_args_t *a,
                                   pt_scalars_t **out) {
  pt_scalars_t init;
  memset(&init, 0, sizeof init);
  init.args = *a;
  for (size_t t = 0; t < NT; ++t) {
    init.targs[t] = *a;
    init.targs[t].step = (uint32_t)first_step_of(t);
    init.steps[t] = first_step_of(t);
    init.has_grad[t] = (uint32_t)has_grad_of(t);
  }
  init.inv_scale = 0x1p-3f;
  accel_status_t s = cts_dev_alloc(ctx, sizeof init, KC_GUARD, buf);
  if (s == ACCEL_OK) s = cts_upload(ctx, buf->data, &init, sizeof init);
  *out = buf->data;
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * The update against its formula
 * ------------------------------------------------------------------------------------------- */

typedef struct emu_job {
  pt_lists_t *L;
  pt_scalars_t *d;
  uint32_t flags;
} emu_job_t;

/* Counts the steps, then the update alone: no loss scale, no clip, no hp, no model. */
static accel_status_t body_update(accel_stream_t *s, void *u) {
  const emu_job_t *j = u;
  const pt_lists_t *L = j->L;
  const accel_adam_step_t d = {.struct_size = sizeof d,
                               .n = NT,
                               .grads = L->g.t,
                               .params = L->p.t,
                               .exp_avg = L->m.t,
                               .exp_avg_sq = L->v.t,
                               .args_dev = &j->d->args,
                               .flags = j->flags,
                               .max_exp_avg_sq = (j->flags & AMS) ? L->vmax.t : NULL,
                               .steps_dev = j->d->steps,
                               .has_grad_dev = j->d->has_grad};
  accel_status_t r = accel_step_counts(s, j->d->steps, j->d->has_grad, NT, NULL);
  if (r == ACCEL_OK) r = accel_adam_step_update(s, &d);
  return r;
}

typedef struct emu_ref {
  accel_adam_args_t a;
  uint32_t flags;
  const pt_lists_t *L;
  int which; /* 0 params, 1 exp_avg, 2 exp_avg_sq, 3 max_exp_avg_sq */
} emu_ref_t;

/* The update of accel_kernels.h in fp32, in the kernels' order (kernels/adam.h): the gradient
 * is (0 + g) * inv_scale * clip with both factors 1, then negated for maximize. */
static uint32_t want_update(const kc_list_t *out, size_t t, size_t i, const void *u) {
  const emu_ref_t *r = u;
  const accel_adam_args_t *a = &r->a;
  (void)out;
  float p = kc_val(r->L->p.host[t], i, ACCEL_F32), m = kc_val(r->L->m.host[t], i, ACCEL_F32);
  float v = kc_val(r->L->v.host[t], i, ACCEL_F32), vm = kc_val(r->L->vmax.host[t], i, ACCEL_F32);
  if (has_grad_of(t)) {
    const uint32_t step = (uint32_t)first_step_of(t) + 1u;
    const float bc1 = 1.0f - kc_powi(a->beta1, step), bc2 = 1.0f - kc_powi(a->beta2, step);
    float g = (0.0f + kc_val(r->L->g.host[t], i, r->L->g.dtype)) * 1.0f * 1.0f;
    if (r->flags & MAX) g = -g;
    if (a->adamw) p = p * (1.0f - a->lr * a->weight_decay);
    else if (a->weight_decay != 0.0f) g = g + a->weight_decay * p;
    m = m + (1.0f - a->beta1) * (g - m);
    v = a->beta2 * v + ((1.0f - a->beta2) * g) * g;
    float vd = v;
    if (r->flags & AMS) vm = vd = (v > vm || isnan(v)) ? v : vm;
    p = p - ((a->lr / bc1) * m) / (sqrtf(vd) / sqrtf(bc2) + a->eps);
  }
  const float x[4] = {p, m, v, vm};
  return kc_f32_bits(x[r->which]);
}

#define ADAMW {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 0, 1, 0.0f}
#define ADAM_L2 {1e-2f, 0.8f, 0.99f, 1e-8f, 0.05f, 0, 0, 0.0f}

CTS_CASE(kernels_adam_step_amsgrad_maximize, CTS_TAG_KERNELS) {
  static const accel_dtype_t dts[] = {ACCEL_F32, ACCEL_F16, ACCEL_BF16};
  static const uint32_t flags[] = {MAX, AMS, MAX | AMS, 0};
  static const accel_adam_args_t args[] = {ADAMW, ADAM_L2};
  for (size_t k = 0; k < 3 * 4 * 2; ++k) {
    const accel_dtype_t dt = dts[k % 3];
    pt_lists_t L;
    cts_buf_t buf = {0};
    pt_scalars_t *d = NULL;
    accel_status_t s = lists_make(ctx, &L, dt, NO_MODEL, kc_f32_bits(NAN));
    if (s == ACCEL_OK) s = scalars_make(ctx, &buf, &args[k / 12], &d);
    emu_job_t j = {&L, d, flags[k / 3 % 4]};
    if (s == ACCEL_OK) s = cts_exec(ctx, body_update, &j, 1);
    emu_ref_t r = {args[k / 12], j.flags, &L, 0};
    cts_result_t res = CTS_PASS;
    char what[96];
    kc_list_t *outs[4] = {&L.p, &L.m, &L.v, &L.vmax};
    for (r.which = 0; s == ACCEL_OK && res == CTS_PASS && r.which < 4; ++r.which) {
      snprintf(what, sizeof what, "%s grads, flags 0x%x, %s: list %d", accel_dtype_name(dt),
               (unsigned)j.flags, args[k / 12].adamw ? "AdamW" : "Adam", r.which);
      res = kc_expect(ctx, outs[r.which], want_update, &r, what);
    }
    pt_scalars_t got;
    if (s == ACCEL_OK && res == CTS_PASS) s = cts_download(ctx, &got, d, sizeof got);
    for (size_t t = 0; s == ACCEL_OK && res == CTS_PASS && t < NT; ++t)
      if (got.steps[t] != first_step_of(t) + (float)has_grad_of(t))
        res = cts_fail(ctx, __FILE__, __LINE__, "%s: step of tensor %zu is %g, want %g", what, t,
                       (double)got.steps[t], (double)(first_step_of(t) + has_grad_of(t)));
    if (s != ACCEL_OK)
      res = cts_fail(ctx, __FILE__, __LINE__, "config %zu: %s: %s", k, accel_status_name(s),
                     accel_last_error());
    lists_free(ctx, &L);
    if (buf.base) cts_dev_free(ctx, &buf);
    if (res != CTS_PASS) return res;
  }
  return CTS_PASS;
}

/* ---------------------------------------------------------------------------------------------
 * Per-tensor steps and missing gradients against one tensor at a time
 * ------------------------------------------------------------------------------------------- */

typedef struct pt_cfg {
  uint32_t flags; /* ACCEL_ADAM_STEP_* */
  int scale;      /* a loss scale and the overflow check */
  int in_place;   /* hp_grads = grads (F32 only), else hp_grads of their own */
  accel_dtype_t model;
  int inject; /* 0; 1: an Inf in a tensor without a gradient; 2: in one with a gradient */
} pt_cfg_t;

typedef struct pt_job {
  const pt_cfg_t *c;
  pt_lists_t *L;
  pt_scalars_t *d;
} pt_job_t;

static accel_adam_step_t pt_desc(const pt_job_t *j) {
  const pt_cfg_t *c = j->c;
  const pt_lists_t *L = j->L;
  return (accel_adam_step_t){.struct_size = sizeof(accel_adam_step_t),
                             .n = NT,
                             .grads = L->g.t,
                             .hp_grads = c->in_place ? L->g.t : L->hp.t,
                             .params = L->p.t,
                             .exp_avg = L->m.t,
                             .exp_avg_sq = L->v.t,
                             .model_params = c->model != NO_MODEL ? L->model.t : NULL,
                             .args_dev = &j->d->args,
                             .inv_scale_dev = c->scale ? &j->d->inv_scale : NULL,
                             .found_inf_dev = c->scale ? &j->d->args.found_inf : NULL,
                             .norm_type = 2.0f,
                             .norm_dev = &j->d->norm,
                             .max_norm = 1.0f,
                             .clip_eps = 1e-6f,
                             .coef_out_dev = &j->d->coef,
                             .flags = c->flags,
                             .max_exp_avg_sq = (c->flags & AMS) ? L->vmax.t : NULL};
}

/* The fused step: both sweeps skip the tensors without a gradient, whose steps stay. */
static accel_status_t body_fused(accel_stream_t *s, void *u) {
  const pt_job_t *j = u;
  accel_adam_step_t d = pt_desc(j);
  d.steps_dev = j->d->steps;
  d.has_grad_dev = j->d->has_grad;
  accel_status_t r = accel_memset_async(s, &j->d->args.found_inf, 0, sizeof(float));
  if (r == ACCEL_OK) r = accel_adam_step_norm(s, &d);
  if (r == ACCEL_OK)
    r = accel_step_counts(s, j->d->steps, j->d->has_grad, NT, &j->d->args.found_inf);
  if (r == ACCEL_OK) r = accel_adam_step_update(s, &d);
  return r;
}

/* The reference: the norm over every tensor (those without a gradient hold zeros: partials of
 * 0, as skipped ones give), then each tensor with a gradient alone, with its own arguments
 * (the overflow flag copied in) and a step counter of its own. */
static accel_status_t body_one_by_one(accel_stream_t *s, void *u) {
  const pt_job_t *j = u;
  const accel_adam_step_t all = pt_desc(j);
  accel_status_t r = accel_memset_async(s, &j->d->args.found_inf, 0, sizeof(float));
  if (r == ACCEL_OK) r = accel_adam_step_norm(s, &all);
  for (size_t t = 0; r == ACCEL_OK && t < NT; ++t) {
    if (!has_grad_of(t)) continue;
    accel_adam_args_t *a = &j->d->targs[t];
    accel_adam_step_t one = all;
    one.n = 1;
    one.grads += t;
    one.hp_grads += t;
    one.params += t;
    one.exp_avg += t;
    one.exp_avg_sq += t;
    if (one.model_params) one.model_params += t;
    if (one.max_exp_avg_sq) one.max_exp_avg_sq += t;
    one.args_dev = a;
    r = accel_memcpy_async(s, &a->found_inf, &j->d->args.found_inf, sizeof(float));
    if (r == ACCEL_OK) r = accel_step_count(s, &a->step, &a->found_inf);
    if (r == ACCEL_OK) r = accel_adam_step_update(s, &one);
  }
  return r;
}

/* Every element of tensor t of a on the device has the bits of tensor t of b on the device
 * (b_host = 0) or of its host copy, the values before the step (b_host = 1). */
static cts_result_t same_tensor(cts_ctx_t *ctx, kc_list_t *a, kc_list_t *b, int b_host, size_t t,
                                const char *what) {
  const size_t bytes = kSizes[t] * kc_esz(a->dtype);
  unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
  CTS_CHECK(x && y, "out of host memory");
  int ok = kc_pull(ctx, a, t, x);
  if (ok && b_host) memcpy(y, b->host[t], bytes);
  else ok = ok && kc_pull(ctx, b, t, y);
  const int same = ok && memcmp(x, y, bytes) == 0;
  free(x);
  free(y);
  CTS_CHECK(ok, "%s: tensor %zu: download failed or guard bytes overwritten", what, t);
  CTS_CHECK(same, "%s: tensor %zu differs from %s", what, t,
            b_host ? "its value before the steps" : "one tensor at a time");
  return CTS_PASS;
}

static cts_result_t compare(cts_ctx_t *ctx, pt_job_t *f, pt_job_t *r, const char *cfg) {
  const pt_cfg_t *c = f->c;
  char what[128];
  struct {
    kc_list_t *a, *b;
    const char *name;
    int used;
  } lists[] = {{&f->L->hp, &r->L->hp, "hp_grads", !c->in_place},
               {&f->L->p, &r->L->p, "params", 1},
               {&f->L->m, &r->L->m, "exp_avg", 1},
               {&f->L->v, &r->L->v, "exp_avg_sq", 1},
               {&f->L->vmax, &r->L->vmax, "max_exp_avg_sq", 1},
               {&f->L->model, &r->L->model, "model_params", c->model != NO_MODEL},
               {&f->L->g, &r->L->g, "grads", 1}};
  for (size_t k = 0; k < sizeof lists / sizeof lists[0]; ++k)
    for (size_t t = 0; t < NT && lists[k].used; ++t) {
      snprintf(what, sizeof what, "%s %s", cfg, lists[k].name);
      /* a tensor without a gradient: nothing of it changed (the reference's gradients are
       * zeros there, the fused step's a left-over NaN) */
      const cts_result_t res = has_grad_of(t)
                                   ? same_tensor(ctx, lists[k].a, lists[k].b, 0, t, what)
                                   : same_tensor(ctx, lists[k].a, lists[k].a, 1, t, what);
      if (res != CTS_PASS) return res;
    }
  pt_scalars_t a, b;
  CTS_OK(cts_download(ctx, &a, f->d, sizeof a));
  CTS_OK(cts_download(ctx, &b, r->d, sizeof b));
  CTS_CHECK(kc_f32_bits(a.norm) == kc_f32_bits(b.norm) &&
                kc_f32_bits(a.coef) == kc_f32_bits(b.coef),
            "%s: norm %a coef %a, one by one %a %a", cfg, (double)a.norm, (double)a.coef,
            (double)b.norm, (double)b.coef);
  CTS_CHECK(a.args.found_inf == b.args.found_inf &&
                (a.args.found_inf != 0.0f) == (c->scale && c->inject == 2),
            "%s: found_inf %g, one by one %g", cfg, (double)a.args.found_inf,
            (double)b.args.found_inf);
  for (size_t t = 0; t < NT; ++t)
    CTS_CHECK(a.steps[t] == (float)b.targs[t].step, "%s: tensor %zu at step %g, one by one %u",
              cfg, t, (double)a.steps[t], (unsigned)b.targs[t].step);
  return CTS_PASS;
}

static const pt_cfg_t kPtConfigs[] = {
    {ACCEL_ADAM_STEP_ZERO_GRADS | ACCEL_ADAM_STEP_CLIP, 1, 0, ACCEL_BF16, 0},
    {ACCEL_ADAM_STEP_CLIP | MAX | AMS, 1, 1, NO_MODEL, 0}, /* accel.torch's step */
    {ACCEL_ADAM_STEP_ZERO_GRADS | ACCEL_ADAM_STEP_ACCUMULATE | AMS, 0, 0, ACCEL_F16, 0},
    {ACCEL_ADAM_STEP_CLIP | MAX, 1, 1, NO_MODEL, 1}, /* an Inf where there is no gradient */
    {ACCEL_ADAM_STEP_CLIP | AMS, 1, 0, ACCEL_F32, 2}, /* both steps skipped: no count */
};

CTS_CASE(kernels_adam_step_per_tensor_steps, CTS_TAG_KERNELS) {
  static const accel_dtype_t dts[] = {ACCEL_F32, ACCEL_F16, ACCEL_BF16};
  const accel_adam_args_t args = ADAMW;
  for (size_t k = 0; k < 3 * sizeof kPtConfigs / sizeof kPtConfigs[0]; ++k) {
    const pt_cfg_t *c = &kPtConfigs[k / 3];
    const accel_dtype_t dt = dts[k % 3];
    if (c->in_place && dt != ACCEL_F32) continue;
    char cfg[64];
    snprintf(cfg, sizeof cfg, "%s grads, config %zu", accel_dtype_name(dt), k / 3);
    pt_lists_t Lf, Lr;
    cts_buf_t bf = {0}, br = {0};
    pt_job_t f = {c, &Lf, NULL}, r = {c, &Lr, NULL};
    accel_status_t s = lists_make(ctx, &Lf, dt, c->model, kc_f32_bits(NAN));
    if (s == ACCEL_OK) s = lists_make(ctx, &Lr, dt, c->model, 0u);
    for (int x = 0; s == ACCEL_OK && x < 2 && c->inject; ++x) {
      kc_list_t *g = x ? &Lr.g : &Lf.g; /* in the second chunk: tensor 8 has no gradient */
      const size_t t = c->inject == 1 ? 8 : 9;
      if (c->inject == 2 || !x) {
        kc_raw_set(g->host[t], KC_CHUNK, dt, kc_ref_narrow(INFINITY, dt));
        s = kc_push(ctx, g, t);
      }
    }
    if (s == ACCEL_OK) s = scalars_make(ctx, &bf, &args, &f.d);
    if (s == ACCEL_OK) s = scalars_make(ctx, &br, &args, &r.d);
    /* two steps: the second starts from the first's counts and state */
    if (s == ACCEL_OK) s = cts_exec(ctx, body_fused, &f, 2);
    if (s == ACCEL_OK) s = cts_exec(ctx, body_one_by_one, &r, 2);
    const cts_result_t res = s == ACCEL_OK ? compare(ctx, &f, &r, cfg)
                                           : cts_fail(ctx, __FILE__, __LINE__, "%s: %s: %s", cfg,
                                                      accel_status_name(s), accel_last_error());
    lists_free(ctx, &Lf);
    lists_free(ctx, &Lr);
    if (bf.base) cts_dev_free(ctx, &bf);
    if (br.base) cts_dev_free(ctx, &br);
    if (res != CTS_PASS) return res;
  }
  return CTS_PASS;
}

/* ---------------------------------------------------------------------------------------------
 * Bad input
 * ------------------------------------------------------------------------------------------- */

CTS_CASE(kernels_adam_step_torch_bad_input, CTS_TAG_KERNELS) {
  const pt_cfg_t c = {ACCEL_ADAM_STEP_CLIP | AMS, 1, 0, NO_MODEL, 0};
  const accel_adam_args_t args = ADAMW;
  pt_lists_t L;
  cts_buf_t buf;
  pt_job_t j = {&c, &L, NULL};
  CTS_OK(lists_make(ctx, &L, ACCEL_F32, NO_MODEL, 0u));
  CTS_OK(scalars_make(ctx, &buf, &args, &j.d));
  pt_scalars_t *d = j.d;
  accel_stream_t *s;
  CTS_OK(accel_stream_create(ctx->dev, &s));
  const accel_status_t BAD = ACCEL_ERROR_INVALID_ARGUMENT;
  accel_adam_step_t good = pt_desc(&j);
  good.steps_dev = d->steps;
  good.has_grad_dev = d->has_grad;
  accel_adam_step_t e = good;
  static float host_steps[NT];

  e.max_exp_avg_sq = NULL; /* AMSGRAD without its list */
  CTS_STATUS(accel_adam_step_update(s, &e), BAD);
  CTS_CHECK(strstr(accel_last_error(), "max_exp_avg_sq"), "message: %s", accel_last_error());
  e = good;
  e.flags &= ~AMS; /* the list without AMSGRAD */
  CTS_STATUS(accel_adam_step_update(s, &e), BAD);
  e = good;
  e.max_exp_avg_sq = L.v.t; /* the maximum on exp_avg_sq itself */
  CTS_STATUS(accel_adam_step_update(s, &e), BAD);
  CTS_CHECK(strstr(accel_last_error(), "overlaps"), "message: %s", accel_last_error());
  e = good;
  e.steps_dev = host_steps; /* not device memory */
  CTS_STATUS(accel_adam_step_update(s, &e), BAD);
  CTS_CHECK(strstr(accel_last_error(), "steps_dev"), "message: %s", accel_last_error());
  e = good;
  e.has_grad_dev = (const uint32_t *)(const void *)((const char *)d->has_grad + 2);
  CTS_STATUS(accel_adam_step_norm(s, &e), BAD); /* misaligned */
  cts_buf_t short_buf; /* one element short of a flag per tensor */
  CTS_OK(cts_dev_alloc(ctx, (NT - 1) * sizeof(uint32_t), 0, &short_buf));
  e = good;
  e.has_grad_dev = short_buf.data;
  CTS_STATUS(accel_adam_step_update(s, &e), BAD);
  CTS_CHECK(strstr(accel_last_error(), "one element per tensor"), "message: %s",
            accel_last_error());
  e = good;
  e.steps_dev = (const float *)L.p.t[2].data; /* on the parameters the update writes */
  CTS_STATUS(accel_adam_step_update(s, &e), BAD);
  e = good;
  e.struct_size = offsetof(accel_adam_step_t, flags); /* ends before flags */
  CTS_STATUS(accel_adam_step_update(s, &e), BAD);
  CTS_CHECK(strstr(accel_last_error(), "struct_size"), "message: %s", accel_last_error());
  /* the first descriptor ends at flags: the fields after it read as absent (NULL), so this
   * AMSGRAD has no list; and a field the size cuts is absent too */
  e = good;
  e.struct_size = offsetof(accel_adam_step_t, flags) + sizeof(uint32_t);
  CTS_STATUS(accel_adam_step_update(s, &e), BAD);
  CTS_CHECK(strstr(accel_last_error(), "needs max_exp_avg_sq"), "message: %s",
            accel_last_error());
  e.flags &= ~AMS;
  CTS_OK(accel_adam_step_update(s, &e));
  e = good;
  e.struct_size = offsetof(accel_adam_step_t, state_scales) - 1; /* has_grad_dev cut: absent */
  e.has_grad_dev = (const uint32_t *)host_steps;
  CTS_OK(accel_adam_step_update(s, &e));

  CTS_STATUS(accel_step_counts(NULL, d->steps, NULL, NT, NULL), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_step_counts(s, NULL, d->has_grad, NT, NULL), BAD);
  CTS_STATUS(accel_step_counts(s, host_steps, NULL, NT, NULL), BAD);
  CTS_STATUS(accel_step_counts(s, short_buf.data, NULL, NT, NULL), BAD);
  CTS_OK(accel_step_counts(s, short_buf.data, NULL, NT - 1, NULL));
  CTS_STATUS(accel_step_counts(s, d->steps, (const uint32_t *)(void *)d->steps, NT, NULL), BAD);
  CTS_CHECK(strstr(accel_last_error(), "overlaps"), "message: %s", accel_last_error());
  CTS_STATUS(accel_step_counts(s, d->steps, d->has_grad, NT, d->steps + 3), BAD);
  CTS_OK(accel_step_counts(s, d->steps, NULL, 0, NULL)); /* nothing to count */
  /* the device still works */
  CTS_OK(accel_step_counts(s, d->steps, d->has_grad, NT, &d->args.found_inf));
  CTS_OK(accel_adam_step_norm(s, &good));
  CTS_OK(accel_adam_step_update(s, &good));
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_stream_destroy(s));
  lists_free(ctx, &L);
  cts_dev_free(ctx, &buf);
  cts_dev_free(ctx, &short_buf);
  return CTS_PASS;
}
