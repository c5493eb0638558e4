/*
 * CTS cases for the optimizer state formats of the fused update (accel_adam_step_update with
 * BF16 exp_avg / exp_avg_sq, docs/KERNELS.md "State formats"): one step from moments that are
 * BF16 values gives, in every mode, the F32 state's step (which cases_step.c checks against the
 * separate kernels) bit for bit in the gradients, the master and the model weights, and its new
 * moments rounded to nearest even (kc_ref_narrow, independent of the kernels). One step from
 * 8-bit moments (U8 codes with their block scales) gives the F32 state's step from the decoded
 * moments bit for bit, and new codes and scales that are the F32 step's new moments encoded by
 * the format's reference (tests/common/ref_q8.h). The formats' bad input is refused with a
 * message.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../common/ref_q8.h"
#include "kc_lists.h"

static const size_t kSizes[] = {1, 3, 255, 256, 257, KC_CHUNK + 1, 100003};
#define NT (sizeof kSizes / sizeof kSizes[0])

typedef struct sf_state {
  kc_list_t lp, p, m, v, model;
  kc_list_t sc; /* U8 moments: the scales [s_m, s_v] of each block of Q8_BLOCK elements */
  kc_scalars_t S;
  kc_step_scalars_t *d;
} sf_state_t;

typedef struct sf_cfg {
  uint32_t flags;
  int model; /* BF16 model weights */
  accel_adam_args_t args;
} sf_cfg_t;

typedef struct sf_job {
  const sf_cfg_t *c;
  sf_state_t *st;
} sf_job_t;

static void sf_free(cts_ctx_t *ctx, sf_state_t *st) {
  kc_free(ctx, &st->lp);
  kc_free(ctx, &st->p);
  kc_free(ctx, &st->m);
  kc_free(ctx, &st->v);
  kc_free(ctx, &st->model);
  kc_free(ctx, &st->sc);
  if (st->S.buf.base) cts_dev_free(ctx, &st->S.buf);
}

/* Moments of dtype sdt holding the same BF16 values for every sdt (|x| when nonneg). */
static accel_status_t sf_moments(cts_ctx_t *ctx, kc_list_t *L, accel_dtype_t sdt, float scale,
                                 uint64_t seed, int nonneg) {
  kc_list_t b;
  accel_status_t s = kc_make(ctx, &b, NT, kSizes, NT, ACCEL_BF16, scale, seed);
  if (s == ACCEL_OK) s = kc_make(ctx, L, NT, kSizes, NT, sdt, 1.0f, seed + 100);
  for (size_t t = 0; s == ACCEL_OK && t < NT; ++t) {
    for (size_t i = 0; i < kSizes[t]; ++i) {
      const float x = kc_val(b.host[t], i, ACCEL_BF16);
      kc_raw_set(L->host[t], i, sdt, kc_ref_narrow(nonneg ? fabsf(x) : x, sdt));
    }
    s = kc_push(ctx, L, t);
  }
  kc_free(ctx, &b);
  return s;
}

#define Q8_BLOCK 256u
static size_t q8_blocks(size_t n) { return (n + Q8_BLOCK - 1) / Q8_BLOCK; }

/* 8-bit moments: every code at random, the blocks' scales [s_m, s_v] at random but for a block
 * of zeros (the first of tensor 2: scales 0). */
static accel_status_t sf_q8_moments(cts_ctx_t *ctx, sf_state_t *st) {
  size_t scale_sizes[NT];
  for (size_t t = 0; t < NT; ++t) scale_sizes[t] = 2 * q8_blocks(kSizes[t]);
  accel_status_t s = kc_make(ctx, &st->m, NT, kSizes, NT, ACCEL_U8, 1.0f, 64);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->v, NT, kSizes, NT, ACCEL_U8, 1.0f, 65);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->sc, NT, scale_sizes, NT, ACCEL_F32, 1.0f, 66);
  uint64_t r = 67;
  for (size_t t = 0; s == ACCEL_OK && t < NT; ++t) {
    for (size_t i = 0; i < kSizes[t]; ++i) {
      kc_raw_set(st->m.host[t], i, ACCEL_U8, (uint32_t)(cts_rand_u64(&r) & 0xffu));
      kc_raw_set(st->v.host[t], i, ACCEL_U8, (uint32_t)(cts_rand_u64(&r) & 0xffu));
    }
    float *sc = st->sc.host[t];
    for (size_t b = 0; b < q8_blocks(kSizes[t]); ++b) {
      sc[2 * b] = t == 2 && b == 0 ? 0.0f : 0.01f * cts_rand_uniform(&r, 0.5f, 1.0f);
      sc[2 * b + 1] = t == 2 && b == 0 ? 0.0f : 1e-4f * cts_rand_uniform(&r, 0.5f, 1.0f);
    }
    s = kc_push(ctx, &st->m, t);
    if (s == ACCEL_OK) s = kc_push(ctx, &st->v, t);
    if (s == ACCEL_OK) s = kc_push(ctx, &st->sc, t);
  }
  return s;
}

static accel_status_t sf_make(cts_ctx_t *ctx, sf_state_t *st, accel_dtype_t sdt,
                              const sf_cfg_t *c) {
  memset(st, 0, sizeof *st);
  accel_status_t s = kc_make(ctx, &st->lp, NT, kSizes, NT, ACCEL_BF16, 4.0f, 61);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->p, NT, kSizes, NT, ACCEL_F32, 1.0f, 63);
  if (s == ACCEL_OK && sdt == ACCEL_U8) s = sf_q8_moments(ctx, st);
  if (s == ACCEL_OK && sdt != ACCEL_U8) s = sf_moments(ctx, &st->m, sdt, 0.01f, 64, 0);
  if (s == ACCEL_OK && sdt != ACCEL_U8) s = sf_moments(ctx, &st->v, sdt, 0.001f, 65, 1);
  if (s == ACCEL_OK && c->model)
    s = kc_make(ctx, &st->model, NT, kSizes, NT, ACCEL_BF16, 1.0f, 66);
  if (s == ACCEL_OK) s = kc_step_scalars(ctx, &st->S, &c->args, &st->d);
  return s;
}

static accel_adam_step_t sf_desc(const sf_cfg_t *c, sf_state_t *st) {
  accel_adam_step_t d = kc_step_desc(NT, &st->lp, &st->p, &st->m, &st->v, st->d, c->flags);
  d.model_params = c->model ? st->model.t : NULL;
  d.state_scales = st->sc.n ? st->sc.t : NULL;
  return d;
}

static accel_status_t sf_body(accel_stream_t *s, void *u) {
  const sf_job_t *j = u;
  const accel_adam_step_t d = sf_desc(j->c, j->st);
  return kc_step_run(s, &d);
}

/* Element by element: b's bits are a's, narrowed to b's dtype (a's values read as F32). */
static cts_result_t sf_same(cts_ctx_t *ctx, kc_list_t *a, kc_list_t *b, const char *what) {
  for (size_t t = 0; t < a->n; ++t) {
    void *x = malloc(a->t[t].numel * kc_esz(a->dtype) + 1);
    void *y = malloc(b->t[t].numel * kc_esz(b->dtype) + 1);
    CTS_CHECK(x && y, "out of host memory");
    const int ok = kc_pull(ctx, a, t, x) && kc_pull(ctx, b, t, y);
    size_t i = 0;
    uint32_t want = 0, got = 0;
    for (; ok && i < a->t[t].numel; ++i) {
      want = a->dtype == b->dtype ? kc_raw_get(x, i, a->dtype)
                                  : kc_ref_narrow(kc_val(x, i, a->dtype), b->dtype);
      got = kc_raw_get(y, i, b->dtype);
      if (want != got) break;
    }
    free(x);
    free(y);
    CTS_CHECK(ok, "%s: tensor %zu: download failed or guard bytes overwritten", what, t);
    CTS_CHECK(i == a->t[t].numel, "%s: tensor %zu[%zu]: BF16 state %08x, want %08x", what, t, i,
              got, want);
  }
  return CTS_PASS;
}

#define ADAMW {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3, 1, 0.0f}
#define ADAM_L2 {1e-2f, 0.8f, 0.99f, 1e-8f, 0.05f, 7, 0, 0.0f}

CTS_CASE(kernels_adam_step_bf16_state, CTS_TAG_KERNELS) {
  static const sf_cfg_t cfgs[] = {
      {ACCEL_ADAM_STEP_ZERO_GRADS | ACCEL_ADAM_STEP_CLIP, 1, ADAMW},
      {ACCEL_ADAM_STEP_CLIP | ACCEL_ADAM_STEP_MAXIMIZE, 0, ADAM_L2},
  };
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; ++k) {
    sf_state_t f32, b16;
    accel_status_t s = sf_make(ctx, &f32, ACCEL_F32, &cfgs[k]);
    if (s == ACCEL_OK) s = sf_make(ctx, &b16, ACCEL_BF16, &cfgs[k]);
    sf_job_t jf = {&cfgs[k], &f32}, jb = {&cfgs[k], &b16};
    if (s == ACCEL_OK) s = cts_exec(ctx, sf_body, &jf, 1);
    if (s == ACCEL_OK) s = cts_exec(ctx, sf_body, &jb, 1);
    cts_result_t r = s == ACCEL_OK ? sf_same(ctx, &f32.lp, &b16.lp, "grads")
                                   : cts_fail(ctx, __FILE__, __LINE__, "config %zu: %s: %s", k,
                                              accel_status_name(s), accel_last_error());
    if (r == CTS_PASS) r = sf_same(ctx, &f32.p, &b16.p, "params");
    if (r == CTS_PASS) r = sf_same(ctx, &f32.m, &b16.m, "exp_avg");
    if (r == CTS_PASS) r = sf_same(ctx, &f32.v, &b16.v, "exp_avg_sq");
    if (r == CTS_PASS && cfgs[k].model) r = sf_same(ctx, &f32.model, &b16.model, "model");
    sf_free(ctx, &f32);
    sf_free(ctx, &b16);
    if (r != CTS_PASS) return r;
  }
  return CTS_PASS;
}

/* f's moments become q's decoded: map[code] * scale in fp32 (q: 8-bit state). */
static accel_status_t sf_q8_decode(cts_ctx_t *ctx, const sf_state_t *q, sf_state_t *f,
                                   const float *map_m, const float *map_v) {
  accel_status_t s = ACCEL_OK;
  for (size_t t = 0; s == ACCEL_OK && t < NT; ++t) {
    const float *sc = q->sc.host[t];
    for (size_t i = 0; i < kSizes[t]; ++i) {
      const size_t b = i / Q8_BLOCK;
      const float m = map_m[kc_raw_get(q->m.host[t], i, ACCEL_U8)] * sc[2 * b];
      const float v = map_v[kc_raw_get(q->v.host[t], i, ACCEL_U8)] * sc[2 * b + 1];
      kc_raw_set(f->m.host[t], i, ACCEL_F32, kc_f32_bits(m));
      kc_raw_set(f->v.host[t], i, ACCEL_F32, kc_f32_bits(v));
    }
    s = kc_push(ctx, &f->m, t);
    if (s == ACCEL_OK) s = kc_push(ctx, &f->v, t);
  }
  return s;
}

/* Block b of a tensor: its reference scales [max |m|, max v] and codes against the device's;
 * 0 or the first element (1 + index) that differs. */
static size_t sf_q8_block(const float *m, const float *v, const uint8_t *cm, const uint8_t *cv,
                          const float *sc, size_t lo, size_t hi, const float *map_m,
                          const float *map_v) {
  float sm = 0.0f, sv = 0.0f;
  for (size_t i = lo; i < hi; ++i) {
    sm = fabsf(m[i]) > sm ? fabsf(m[i]) : sm;
    sv = v[i] > sv ? v[i] : sv;
  }
  if (kc_f32_bits(sc[0]) != kc_f32_bits(sm) || kc_f32_bits(sc[1]) != kc_f32_bits(sv))
    return lo + 1;
  for (size_t i = lo; i < hi; ++i)
    if (cm[i] != ref_q8_code(map_m, sm > 0.0f ? m[i] / sm : 0.0f) ||
        cv[i] != ref_q8_code(map_v, sv > 0.0f ? v[i] / sv : 0.0f))
      return i + 1;
  return 0;
}

/* q's new codes and scales are f's new (F32) moments encoded by the reference. */
static cts_result_t sf_q8_check(cts_ctx_t *ctx, sf_state_t *f, sf_state_t *q,
                                const float *map_m, const float *map_v) {
  for (size_t t = 0; t < NT; ++t) {
    const size_t n = kSizes[t], nb = q8_blocks(n);
    float *m = malloc(4 * n), *v = malloc(4 * n), *sc = malloc(8 * nb);
    uint8_t *cm = malloc(n), *cv = malloc(n);
    int ok = m && v && sc && cm && cv;
    ok = ok && kc_pull(ctx, &f->m, t, m) && kc_pull(ctx, &f->v, t, v) &&
         kc_pull(ctx, &q->m, t, cm) && kc_pull(ctx, &q->v, t, cv) && kc_pull(ctx, &q->sc, t, sc);
    size_t bad = 0, b = 0;
    for (; ok && bad == 0 && b < nb; ++b) {
      const size_t hi = (b + 1) * Q8_BLOCK < n ? (b + 1) * Q8_BLOCK : n;
      bad = sf_q8_block(m, v, cm, cv, sc + 2 * b, b * Q8_BLOCK, hi, map_m, map_v);
    }
    const uint32_t got_m = bad ? cm[bad - 1] : 0, got_v = bad ? cv[bad - 1] : 0;
    free(m);
    free(v);
    free(sc);
    free(cm);
    free(cv);
    CTS_CHECK(ok, "tensor %zu: out of host memory, download failed or guards overwritten", t);
    CTS_CHECK(bad == 0, "tensor %zu block %zu: the scales or element %zu (codes %u, %u) are not "
              "the reference's", t, b - 1, bad - 1, got_m, got_v);
  }
  return CTS_PASS;
}

CTS_CASE(kernels_adam_step_q8_state, CTS_TAG_KERNELS) {
  static const sf_cfg_t cfgs[] = {
      {ACCEL_ADAM_STEP_ZERO_GRADS | ACCEL_ADAM_STEP_CLIP, 1, ADAMW},
      {ACCEL_ADAM_STEP_CLIP | ACCEL_ADAM_STEP_MAXIMIZE, 0, ADAM_L2},
  };
  float map_m[256], map_v[256];
  double d[256];
  ref_q8_map(1, d);
  for (int k = 0; k < 256; ++k) map_m[k] = (float)d[k];
  ref_q8_map(0, d);
  for (int k = 0; k < 256; ++k) map_v[k] = (float)d[k];
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; ++k) {
    sf_state_t f32, q8;
    accel_status_t s = sf_make(ctx, &q8, ACCEL_U8, &cfgs[k]);
    if (s == ACCEL_OK) s = sf_make(ctx, &f32, ACCEL_F32, &cfgs[k]);
    if (s == ACCEL_OK) s = sf_q8_decode(ctx, &q8, &f32, map_m, map_v);
    sf_job_t jf = {&cfgs[k], &f32}, jq = {&cfgs[k], &q8};
    if (s == ACCEL_OK) s = cts_exec(ctx, sf_body, &jf, 1);
    if (s == ACCEL_OK) s = cts_exec(ctx, sf_body, &jq, 1);
    cts_result_t r = s == ACCEL_OK ? sf_same(ctx, &f32.lp, &q8.lp, "grads")
                                   : cts_fail(ctx, __FILE__, __LINE__, "config %zu: %s: %s", k,
                                              accel_status_name(s), accel_last_error());
    if (r == CTS_PASS) r = sf_same(ctx, &f32.p, &q8.p, "params");
    if (r == CTS_PASS && cfgs[k].model) r = sf_same(ctx, &f32.model, &q8.model, "model");
    if (r == CTS_PASS) r = sf_q8_check(ctx, &f32, &q8, map_m, map_v);
    sf_free(ctx, &f32);
    sf_free(ctx, &q8);
    if (r != CTS_PASS) return r;
  }
  return CTS_PASS;
}

/* The 8-bit format's own refusals: codes without scales, scales with other moments or of the
 * wrong size, AMSGrad, codes beside BF16 moments, and U8 anywhere but the moments. */
CTS_CASE(kernels_adam_step_q8_bad_input, CTS_TAG_KERNELS) {
  const sf_cfg_t c = {ACCEL_ADAM_STEP_CLIP, 1, ADAMW};
  sf_state_t q8, b16;
  CTS_OK(sf_make(ctx, &q8, ACCEL_U8, &c));
  CTS_OK(sf_make(ctx, &b16, ACCEL_BF16, &c));
  accel_stream_t *s;
  CTS_OK(accel_stream_create(ctx->dev, &s));
  const accel_status_t BAD = ACCEL_ERROR_INVALID_ARGUMENT;
  const accel_adam_step_t good = sf_desc(&c, &q8);
  accel_adam_step_t d = good;
  accel_tensor_t t[NT];
  d.state_scales = NULL;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "state_scales is NULL"), "message: %s", accel_last_error());
  d = good;
  /* an older descriptor: state_scales cut, so absent */
  d.struct_size = offsetof(accel_adam_step_t, state_scales) + sizeof d.state_scales - 1;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "state_scales is NULL"), "message: %s", accel_last_error());
  d = sf_desc(&c, &b16);
  d.state_scales = q8.sc.t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "only U8 moments have scales"), "message: %s",
            accel_last_error());
  memcpy(t, q8.sc.t, sizeof t);
  t[5].numel -= 2; /* one block's scales short */
  d = good;
  d.state_scales = t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "state_scales[5] has 512 elements but grads[5] has 65537: "
                                       "it needs 2 per block of 256"),
            "message: %s", accel_last_error());
  d = good;
  d.flags |= ACCEL_ADAM_STEP_AMSGRAD;
  d.max_exp_avg_sq = b16.p.t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "AMSGRAD takes F32 or BF16 moments"), "message: %s",
            accel_last_error());
  d = good;
  d.exp_avg_sq = b16.v.t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "same dtype"), "message: %s", accel_last_error());
  float *out = &q8.d->reserved;
  CTS_STATUS(accel_multi_tensor_norm(s, q8.m.t, NT, 2.0f, out), BAD);
  CTS_CHECK(strstr(accel_last_error(), "is U8: only the moments"), "message: %s",
            accel_last_error());
  CTS_OK(accel_adam_step_norm(s, &good)); /* the device still works */
  CTS_OK(accel_adam_step_update(s, &good));
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_stream_destroy(s));
  sf_free(ctx, &q8);
  sf_free(ctx, &b16);
  return CTS_PASS;
}

/* Mixed formats (between the moments, inside a list), F16 moments, a wrong size in either
 * moment and AMSGrad's maximum in BF16 (it stays F32 in every format). */
CTS_CASE(kernels_adam_step_state_bad_input, CTS_TAG_KERNELS) {
  const sf_cfg_t c = {ACCEL_ADAM_STEP_CLIP, 1, ADAMW};
  sf_state_t st;
  kc_list_t v32, h16, b16;
  CTS_OK(sf_make(ctx, &st, ACCEL_BF16, &c));
  CTS_OK(kc_make(ctx, &v32, NT, kSizes, NT, ACCEL_F32, 0.001f, 70));
  CTS_OK(kc_make(ctx, &h16, NT, kSizes, NT, ACCEL_F16, 0.001f, 71));
  CTS_OK(kc_make(ctx, &b16, NT, kSizes, NT, ACCEL_BF16, 0.001f, 72));
  accel_stream_t *s;
  CTS_OK(accel_stream_create(ctx->dev, &s));
  const accel_status_t BAD = ACCEL_ERROR_INVALID_ARGUMENT;
  const accel_adam_step_t good = sf_desc(&c, &st);
  accel_adam_step_t d = good;
  accel_tensor_t t[NT];
  d.exp_avg_sq = v32.t; /* BF16 first moments, F32 second moments */
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "same dtype"), "message: %s", accel_last_error());
  d = good;
  d.exp_avg = d.exp_avg_sq = h16.t; /* F16 is no state format */
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "state format"), "message: %s", accel_last_error());
  memcpy(t, st.m.t, sizeof t);
  t[3] = v32.t[3]; /* one F32 tensor in a BF16 list */
  d = good;
  d.exp_avg = t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "one dtype per list"), "message: %s", accel_last_error());
  memcpy(t, st.v.t, sizeof t);
  t[5].numel -= 1; /* a state tensor of the wrong size */
  d = good;
  d.exp_avg_sq = t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "exp_avg_sq[5] has 65536 elements but grads[5] has 65537"),
            "message: %s", accel_last_error());
  memcpy(t, st.m.t, sizeof t);
  t[6].numel += 1; /* the first moment one element too long */
  d = good;
  d.exp_avg = t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "exp_avg[6] has 100004 elements but grads[6] has 100003"),
            "message: %s", accel_last_error());
  d = good;
  d.flags |= ACCEL_ADAM_STEP_AMSGRAD;
  d.max_exp_avg_sq = b16.t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "max_exp_avg_sq[0] must be F32, not BF16"), "message: %s",
            accel_last_error());
  CTS_OK(accel_adam_step_norm(s, &good)); /* the device still works */
  CTS_OK(accel_adam_step_update(s, &good));
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_stream_destroy(s));
  kc_free(ctx, &v32);
  kc_free(ctx, &h16);
  kc_free(ctx, &b16);
  sf_free(ctx, &st);
  return CTS_PASS;
}
