/*
 * CTS cases for the tensor kernels (accel_kernels.h).
 *
 * References are computed on the host: in double precision for accuracy (NMSE), and, where the
 * numerics contract fixes the bits (norms p = 1, 2, inf; Adam; clip; scale; conversions), by
 * emulating the contract in fp32 (the chunk/lane/tree order of docs/KERNELS.md), so every
 * backend, mode and CPU thread count must produce exactly those bits. F16/BF16 references are
 * independent of the kernels: values are decoded with ldexp and rounded by exact distances.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_lists.h"
#include "../common/ref_amp.h"

/* ---------------------------------------------------------------------------------------------
 * The contract, emulated in fp32 on the host
 * ------------------------------------------------------------------------------------------- */

enum { KC_L1, KC_L2, KC_INF, KC_P };

static float nanmax(float m, float v) { return (v > m || v != v) ? v : m; }
static float combine(float a, float b, int kind) { return kind == KC_INF ? nanmax(a, b) : a + b; }
static float step(float acc, float x, int kind, float p) {
  if (kind == KC_L2) return acc + x * x;
  if (kind == KC_L1) return acc + fabsf(x);
  if (kind == KC_INF) return nanmax(acc, fabsf(x));
  return acc + powf(fabsf(x), p);
}
static float tree(float *a, int kind) {
  for (unsigned s = KC_LANES / 2; s > 0; s >>= 1)
    for (unsigned l = 0; l < s; ++l) a[l] = combine(a[l], a[l + s], kind);
  return a[0];
}

static float emu_norm(const kc_list_t *L, int kind, float p) {
  size_t np = 0, cap = 16;
  float *parts = malloc(cap * sizeof *parts), a[KC_LANES];
  for (size_t t = 0; t < L->n; ++t)
    for (size_t off = 0; off < L->t[t].numel; off += KC_CHUNK) {
      const size_t cnt = L->t[t].numel - off < KC_CHUNK ? L->t[t].numel - off : KC_CHUNK;
      for (unsigned l = 0; l < KC_LANES; ++l) a[l] = 0.0f;
      for (size_t i = 0; i < cnt; ++i)
        a[i % KC_LANES] = step(a[i % KC_LANES], kc_val(L->host[t], off + i, L->dtype), kind, p);
      if (np == cap) parts = realloc(parts, (cap *= 2) * sizeof *parts);
      parts[np++] = tree(a, kind);
    }
  for (unsigned l = 0; l < KC_LANES; ++l) a[l] = 0.0f;
  for (size_t i = 0; i < np; ++i) a[i % KC_LANES] = combine(a[i % KC_LANES], parts[i], kind);
  free(parts);
  const float s = tree(a, kind);
  return kind == KC_L2 ? sqrtf(s) : kind == KC_P ? powf(s, 1.0f / p) : s;
}

static double ref_norm(const kc_list_t *L, int kind, double p) {
  double acc = 0;
  for (size_t t = 0; t < L->n; ++t)
    for (size_t i = 0; i < L->t[t].numel; ++i) {
      const double x = fabs((double)kc_val(L->host[t], i, L->dtype));
      if (kind == KC_INF) acc = (x > acc || x != x) ? x : acc;
      else if (kind == KC_L2) acc += x * x;
      else if (kind == KC_L1) acc += x;
      else acc += pow(x, p);
    }
  return kind == KC_L2 ? sqrt(acc) : kind == KC_P ? pow(acc, 1.0 / p) : acc;
}

/* ---------------------------------------------------------------------------------------------
 * Bodies for cts_exec
 * ------------------------------------------------------------------------------------------- */

typedef struct kc_job {
  const accel_tensor_t *a, *b, *c, *d;
  size_t n;
  float f0, f1;
  int i0;
  float *s0, *s1;
  const void *args;
} kc_job_t;

static accel_status_t body_norm(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  return accel_multi_tensor_norm(s, j->a, j->n, j->f0, j->s0);
}
static accel_status_t body_clip(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  return accel_clip_by_global_norm(s, j->a, j->n, j->f0, j->s0, j->f1, j->s1);
}
static accel_status_t body_norm_clip(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  accel_status_t st = accel_multi_tensor_norm(s, j->a, j->n, 2.0f, j->s0);
  return st != ACCEL_OK ? st : accel_clip_by_global_norm(s, j->a, j->n, j->f0, j->s0, j->f1, j->s1);
}
static accel_status_t body_update_hp(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  return accel_update_hp_grads(s, j->a, j->b, j->n, j->i0);
}
/* The start of a captured step: hp = f0, then hp += float(lp) (a backend may fold the pair). */
static accel_status_t body_fill_update_hp(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  accel_status_t st = accel_fill(s, j->b, j->n, j->f0);
  return st == ACCEL_OK ? accel_update_hp_grads(s, j->a, j->b, j->n, j->i0) : st;
}
static accel_status_t body_unscale(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  return accel_unscale_and_check(s, j->a, j->n, j->s0, j->s1);
}
static accel_status_t body_adam(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  return accel_fused_adam(s, j->a, j->b, j->c, j->d, j->n, j->args);
}
static accel_status_t body_fill(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  return accel_fill(s, j->a, j->n, j->f0);
}
static accel_status_t body_scale(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  return accel_scale(s, j->a, j->n, j->s0);
}

static const size_t kSizes[] = {1, 3, 255, 256, 257, 0, KC_CHUNK - 1, KC_CHUNK, KC_CHUNK + 1, 100003};
#define NSIZES (sizeof kSizes / sizeof kSizes[0])
static const accel_dtype_t kDtypes[] = {ACCEL_F32, ACCEL_F16, ACCEL_BF16};

/* ---------------------------------------------------------------------------------------------
 * Norms
 * ------------------------------------------------------------------------------------------- */

/* Runs the norm of L (2 replays: a norm is idempotent) and returns the result. */
static accel_status_t run_norm(cts_ctx_t *ctx, const kc_list_t *L, float p, kc_scalars_t *S,
                               float *out) {
  const float init = 7.0f;
  accel_status_t st = cts_upload(ctx, S->dev, &init, 4);
  kc_job_t j = {.a = L->t, .n = L->n, .f0 = p, .s0 = S->dev};
  if (st == ACCEL_OK) st = cts_exec(ctx, body_norm, &j, 2);
  if (st == ACCEL_OK) st = cts_download(ctx, out, S->dev, 4);
  return st;
}

CTS_CASE(kernels_norm, CTS_TAG_KERNELS) {
  const float ps[] = {1.0f, 2.0f, INFINITY, 3.5f};
  const int kinds[] = {KC_L1, KC_L2, KC_INF, KC_P};
  kc_scalars_t S;
  CTS_OK(kc_scalars(ctx, &S, NULL, 0));
  for (int d = 0; d < 3; ++d) {
    kc_list_t L;
    CTS_OK(kc_make(ctx, &L, NSIZES, kSizes, NSIZES, kDtypes[d], 4.0f, 11 + d));
    for (int k = 0; k < 4; ++k) {
      float got;
      CTS_OK(run_norm(ctx, &L, ps[k], &S, &got));
      const double ref = ref_norm(&L, kinds[k], ps[k]);
      const double nmse = cts_nmse(&got, &ref, 1);
      CTS_CHECK(nmse < 1e-10, "%s p=%g: %.9g vs double %.9g (NMSE %g)", accel_dtype_name(kDtypes[d]),
                (double)ps[k], (double)got, ref, nmse);
      if (kinds[k] != KC_P) {
        const float emu = emu_norm(&L, kinds[k], ps[k]);
        CTS_CHECK(kc_f32_bits(got) == kc_f32_bits(emu),
                  "%s p=%g: %a is not the contract's bits %a", accel_dtype_name(kDtypes[d]),
                  (double)ps[k], (double)got, (double)emu);
      }
    }
    for (size_t i = 0; i < L.n; ++i) CTS_CHECK(cts_dev_guard_ok(ctx, &L.buf[i]), "input guard %zu", i);
    kc_free(ctx, &L);
  }
  CTS_CHECK(cts_dev_guard_ok(ctx, &S.buf), "out_dev guard bytes overwritten");
  cts_dev_free(ctx, &S.buf);
  return CTS_PASS;
}

CTS_CASE(kernels_norm_nonfinite, CTS_TAG_KERNELS) {
  const float ps[] = {1.0f, 2.0f, INFINITY, 3.5f};
  kc_scalars_t S;
  CTS_OK(kc_scalars(ctx, &S, NULL, 0));
  for (int d = 0; d < 3; ++d) {
    kc_list_t L;
    const size_t sizes[] = {1000, KC_CHUNK + 5};
    CTS_OK(kc_make(ctx, &L, 2, sizes, 2, kDtypes[d], 1.0f, 5));
    for (int variant = 0; variant < 3; ++variant) {
      /* 0: one Inf; 1: one NaN; 2: NaN and Inf (NaN wins, as torch) */
      if (variant != 1) kc_raw_set(L.host[1], KC_CHUNK + 2, kDtypes[d], kc_ref_narrow(-INFINITY, kDtypes[d]));
      if (variant >= 1) kc_raw_set(L.host[0], 17, kDtypes[d], kc_ref_narrow(NAN, kDtypes[d]));
      CTS_OK(kc_push(ctx, &L, 0));
      CTS_OK(kc_push(ctx, &L, 1));
      for (int k = 0; k < 4; ++k) {
        float got;
        CTS_OK(run_norm(ctx, &L, ps[k], &S, &got));
        if (variant == 0)
          CTS_CHECK(isinf(got) && got > 0, "%s p=%g with an Inf: %g, want inf",
                    accel_dtype_name(kDtypes[d]), (double)ps[k], (double)got);
        else
          CTS_CHECK(isnan(got), "%s p=%g with a NaN (variant %d): %g, want nan",
                    accel_dtype_name(kDtypes[d]), (double)ps[k], variant, (double)got);
      }
    }
    kc_free(ctx, &L);
  }
  cts_dev_free(ctx, &S.buf);
  return CTS_PASS;
}

CTS_CASE(kernels_norm_empty, CTS_TAG_KERNELS) {
  kc_scalars_t S;
  CTS_OK(kc_scalars(ctx, &S, NULL, 0));
  const size_t zero[] = {0};
  kc_list_t L;
  CTS_OK(kc_make(ctx, &L, 3, zero, 1, ACCEL_F16, 1.0f, 1));
  const float ps[] = {1.0f, 2.0f, INFINITY, 3.5f};
  for (int k = 0; k < 4; ++k) {
    float got = -1;
    CTS_OK(run_norm(ctx, &L, ps[k], &S, &got));
    CTS_CHECK(got == 0.0f && !signbit(got), "all-empty list p=%g: %g, want 0", (double)ps[k], (double)got);
    kc_list_t none = {0};
    CTS_OK(run_norm(ctx, &none, ps[k], &S, &got));
    CTS_CHECK(got == 0.0f, "n = 0 p=%g: %g, want 0", (double)ps[k], (double)got);
  }
  kc_free(ctx, &L);
  CTS_CHECK(cts_dev_guard_ok(ctx, &S.buf), "out_dev guard bytes overwritten");
  cts_dev_free(ctx, &S.buf);
  return CTS_PASS;
}

/* 10 000 small tensors: one norm, then scale, both against the contract's bits. */
CTS_CASE(kernels_many_tensors, CTS_TAG_KERNELS) {
  enum { N = 10000 };
  size_t sizes[37];
  for (int i = 0; i < 37; ++i) sizes[i] = (size_t)(i * 7 % 61);
  kc_list_t L;
  CTS_OK(kc_make(ctx, &L, N, sizes, 37, ACCEL_BF16, 2.0f, 99));
  kc_scalars_t S;
  CTS_OK(kc_scalars(ctx, &S, NULL, 0));
  float got;
  CTS_OK(run_norm(ctx, &L, 2.0f, &S, &got));
  const float emu = emu_norm(&L, KC_L2, 2.0f);
  CTS_CHECK(kc_f32_bits(got) == kc_f32_bits(emu), "10000 tensors: %a, contract %a", (double)got, (double)emu);
  const float factor = 0.37f;
  CTS_OK(cts_upload(ctx, S.dev, &factor, 4));
  kc_job_t j = {.a = L.t, .n = N, .s0 = S.dev};
  CTS_OK(cts_exec(ctx, body_scale, &j, 1));
  uint16_t tmp[64];
  for (size_t i = 0; i < N; ++i) {
    CTS_CHECK(kc_pull(ctx, &L, i, tmp), "guard bytes of tensor %zu overwritten", i);
    for (size_t k = 0; k < L.t[i].numel; ++k) {
      const uint32_t want = kc_ref_narrow(kc_val(L.host[i], k, ACCEL_BF16) * factor, ACCEL_BF16);
      CTS_CHECK(tmp[k] == want, "scale tensor %zu[%zu]: %04x, want %04x", i, k, tmp[k], want);
    }
  }
  kc_free(ctx, &L);
  cts_dev_free(ctx, &S.buf);
  return CTS_PASS;
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise operations
 * ------------------------------------------------------------------------------------------- */

static uint32_t want_mul(const kc_list_t *L, size_t t, size_t i, const void *u) {
  return kc_ref_narrow(kc_val(L->host[t], i, L->dtype) * *(const float *)u, L->dtype);
}

CTS_CASE(kernels_clip, CTS_TAG_KERNELS) {
  /* total norms: < max (no change), > max (scaled), NaN (NaN tensors), Inf (zeros) */
  const float totals[] = {0.5f, 10.0f, NAN, INFINITY};
  for (int d = 0; d < 3; ++d)
    for (int c = 0; c < 4; ++c) {
      kc_list_t L;
      CTS_OK(kc_make(ctx, &L, NSIZES, kSizes, NSIZES, kDtypes[d], 1.0f, 3 + c));
      const float init[2] = {totals[c], -5.0f};
      kc_scalars_t S;
      CTS_OK(kc_scalars(ctx, &S, init, sizeof init));
      kc_job_t j = {.a = L.t, .n = L.n, .f0 = 1.0f, .f1 = 1e-6f, .s0 = S.dev, .s1 = S.dev + 1};
      CTS_OK(cts_exec(ctx, body_clip, &j, 1));
      float coef;
      CTS_OK(cts_download(ctx, &coef, S.dev + 1, 4));
      const float want_coef = 1.0f / (totals[c] + 1e-6f);
      CTS_CHECK(kc_f32_bits(coef) == kc_f32_bits(want_coef) || (isnan(coef) && isnan(want_coef)),
                "coef %g, want %g", (double)coef, (double)want_coef);
      const float applied = want_coef > 1.0f ? 1.0f : want_coef; /* NaN stays NaN */
      cts_result_t r = kc_expect(ctx, &L, want_mul, &applied, "clip");
      if (r != CTS_PASS) return r;
      CTS_CHECK(cts_dev_guard_ok(ctx, &S.buf), "scalar guards overwritten");
      cts_dev_free(ctx, &S.buf);
      kc_free(ctx, &L);
    }
  /* n = 0 still stores the coefficient */
  kc_scalars_t S;
  const float init[2] = {3.0f, -5.0f};
  CTS_OK(kc_scalars(ctx, &S, init, sizeof init));
  kc_job_t j = {.n = 0, .f0 = 1.5f, .f1 = 0.0f, .s0 = S.dev, .s1 = S.dev + 1};
  CTS_OK(cts_exec(ctx, body_clip, &j, 1));
  float coef;
  CTS_OK(cts_download(ctx, &coef, S.dev + 1, 4));
  CTS_CHECK(coef == 0.5f, "n = 0: coef %g, want 0.5", (double)coef);
  cts_dev_free(ctx, &S.buf);
  return CTS_PASS;
}

/* norm + clip in one body (the optimizer-step pattern), bitwise against the contract. */
CTS_CASE(kernels_norm_then_clip, CTS_TAG_KERNELS) {
  kc_list_t L;
  CTS_OK(kc_make(ctx, &L, NSIZES, kSizes, NSIZES, ACCEL_F32, 1.0f, 8));
  kc_scalars_t S;
  CTS_OK(kc_scalars(ctx, &S, NULL, 0));
  kc_job_t j = {.a = L.t, .n = L.n, .f0 = 1.0f, .f1 = 1e-6f, .s0 = S.dev, .s1 = S.dev + 1};
  CTS_OK(cts_exec(ctx, body_norm_clip, &j, 1));
  const float norm = emu_norm(&L, KC_L2, 2.0f);
  const float coef = 1.0f / (norm + 1e-6f), applied = coef > 1.0f ? 1.0f : coef;
  float got[2];
  CTS_OK(cts_download(ctx, got, S.dev, 8));
  CTS_CHECK(kc_f32_bits(got[0]) == kc_f32_bits(norm) && kc_f32_bits(got[1]) == kc_f32_bits(coef),
            "norm %a coef %a, want %a %a", (double)got[0], (double)got[1], (double)norm, (double)coef);
  cts_result_t r = kc_expect(ctx, &L, want_mul, &applied, "norm+clip");
  kc_free(ctx, &L);
  cts_dev_free(ctx, &S.buf);
  return r;
}

typedef struct hp_user {
  const kc_list_t *lp;
  int assign; /* hp = init + float(lp) instead of hp + float(lp) */
  float init;
} hp_user_t;
static uint32_t want_hp(const kc_list_t *L, size_t t, size_t i, const void *u) {
  const hp_user_t *h = u;
  const float base = h->assign ? h->init : kc_val(L->host[t], i, ACCEL_F32);
  return kc_f32_bits(base + kc_val(h->lp->host[t], i, h->lp->dtype));
}
static uint32_t want_lp(const kc_list_t *L, size_t t, size_t i, const void *u) {
  return *(const int *)u ? 0u : kc_raw_get(L->host[t], i, L->dtype);
}

/* Checks hp against want_hp and lp against want_lp (zeroed or kept), then frees both. */
static cts_result_t hp_lp_check(cts_ctx_t *ctx, kc_list_t *lp, kc_list_t *hp, const hp_user_t *u,
                                const int *zero, const char *what) {
  char w[64];
  snprintf(w, sizeof w, "%s hp", what);
  cts_result_t r = kc_expect(ctx, hp, want_hp, u, w);
  snprintf(w, sizeof w, "%s lp", what);
  if (r == CTS_PASS) r = kc_expect(ctx, lp, want_lp, zero, w);
  kc_free(ctx, lp);
  kc_free(ctx, hp);
  return r;
}

CTS_CASE(kernels_update_hp, CTS_TAG_KERNELS) {
  for (int d = 0; d < 3; ++d)
    for (int zero = 0; zero < 2; ++zero) {
      kc_list_t lp, hp;
      CTS_OK(kc_make(ctx, &lp, NSIZES, kSizes, NSIZES, kDtypes[d], 3.0f, 21));
      CTS_OK(kc_make(ctx, &hp, NSIZES, kSizes, NSIZES, ACCEL_F32, 1.0f, 22));
      kc_job_t j = {.a = lp.t, .b = hp.t, .n = NSIZES, .i0 = zero};
      CTS_OK(cts_exec(ctx, body_update_hp, &j, 1));
      const hp_user_t u = {&lp, 0, 0.0f};
      cts_result_t r = hp_lp_check(ctx, &lp, &hp, &u, &zero, "update_hp");
      if (r != CTS_PASS) return r;
    }
  return CTS_PASS;
}

/* fill(hp, v) then update_hp: hp = v + float(lp) bit for bit, whatever a backend makes of the
 * pair (the CPU graph planner folds it into one pass). -0.0 + +0.0 is +0.0; zeros, Inf and NaN
 * in lp; v = Inf gives NaN for -Inf. */
CTS_CASE(kernels_fill_then_update_hp, CTS_TAG_KERNELS) {
  const float inits[] = {-0.0f, 0.0f, 2.5f, INFINITY};
  const uint32_t specials[] = {0x0000u, 0x8000u, 0x0001u}; /* +0, -0, smallest subnormal */
  for (int d = 0; d < 3; ++d)
    for (int v = 0; v < 4; ++v) {
      kc_list_t lp, hp;
      CTS_OK(kc_make(ctx, &lp, NSIZES, kSizes, NSIZES, kDtypes[d], 3.0f, 61 + v));
      CTS_OK(kc_make(ctx, &hp, NSIZES, kSizes, NSIZES, ACCEL_F32, 1.0f, 62));
      for (size_t t = 0; t < NSIZES; ++t) {
        for (size_t k = 0; k < 3 && k < lp.t[t].numel; ++k)
          kc_raw_set(lp.host[t], k, kDtypes[d], kc_ref_narrow(kc_ref_widen(specials[k], ACCEL_BF16), kDtypes[d]));
        if (lp.t[t].numel > 3) kc_raw_set(lp.host[t], 3, kDtypes[d], kc_ref_narrow(-INFINITY, kDtypes[d]));
        if (lp.t[t].numel > 4) kc_raw_set(lp.host[t], 4, kDtypes[d], kc_ref_narrow(NAN, kDtypes[d]));
        CTS_OK(kc_push(ctx, &lp, t));
      }
      const int zero = v & 1;
      kc_job_t j = {.a = lp.t, .b = hp.t, .n = NSIZES, .i0 = zero, .f0 = inits[v]};
      CTS_OK(cts_exec(ctx, body_fill_update_hp, &j, 1));
      const hp_user_t u = {&lp, 1, inits[v]};
      cts_result_t r = hp_lp_check(ctx, &lp, &hp, &u, &zero, "fill + update_hp");
      if (r != CTS_PASS) return r;
    }
  return CTS_PASS;
}

/* Every 16-bit pattern widened exactly: hp = -0.0f + float(lp) leaves every value unchanged. */
CTS_CASE(kernels_convert_widen_all, CTS_TAG_KERNELS) {
  const size_t n = 65536;
  for (int d = 1; d < 3; ++d) {
    kc_list_t lp, hp;
    CTS_OK(kc_make(ctx, &lp, 1, &n, 1, kDtypes[d], 1.0f, 1));
    CTS_OK(kc_make(ctx, &hp, 1, &n, 1, ACCEL_F32, 1.0f, 1));
    for (size_t i = 0; i < n; ++i) {
      kc_raw_set(lp.host[0], i, kDtypes[d], (uint32_t)i);
      kc_raw_set(hp.host[0], i, ACCEL_F32, 0x80000000u);
    }
    CTS_OK(kc_push(ctx, &lp, 0));
    CTS_OK(kc_push(ctx, &hp, 0));
    kc_job_t j = {.a = lp.t, .b = hp.t, .n = 1, .i0 = 0};
    CTS_OK(cts_exec(ctx, body_update_hp, &j, 1));
    float *got = malloc(n * 4);
    CTS_CHECK(got && kc_pull(ctx, &hp, 0, got), "download/guards");
    for (size_t i = 0; i < n; ++i) {
      const float w = kc_ref_widen((uint32_t)i, kDtypes[d]);
      if (!(kc_f32_bits(got[i]) == kc_f32_bits(w) || (isnan(w) && isnan(got[i])))) {
        const uint32_t gb = kc_f32_bits(got[i]);
        free(got);
        return cts_fail(ctx, __FILE__, __LINE__, "%s %04zx widened to %08x, want %08x",
                        accel_dtype_name(kDtypes[d]), i, gb, kc_f32_bits(w));
      }
    }
    free(got);
    kc_free(ctx, &lp);
    kc_free(ctx, &hp);
  }
  return CTS_PASS;
}

/* Every 16-bit pattern times several factors, rounded back (ties, subnormals, overflow). */
CTS_CASE(kernels_convert_narrow_all, CTS_TAG_KERNELS) {
  const size_t n = 65536;
  const float factors[] = {1.0f, 0.5f, 1.0f / 3.0f, 3.0f, 1024.0f};
  for (int d = 1; d < 3; ++d)
    for (int f = 0; f < 5; ++f) {
      kc_list_t L;
      CTS_OK(kc_make(ctx, &L, 1, &n, 1, kDtypes[d], 1.0f, 1));
      for (size_t i = 0; i < n; ++i) kc_raw_set(L.host[0], i, kDtypes[d], (uint32_t)i);
      CTS_OK(kc_push(ctx, &L, 0));
      kc_scalars_t S;
      CTS_OK(kc_scalars(ctx, &S, &factors[f], 4));
      kc_job_t j = {.a = L.t, .n = 1, .s0 = S.dev};
      CTS_OK(cts_exec(ctx, body_scale, &j, 1));
      cts_result_t r = kc_expect(ctx, &L, want_mul, &factors[f], "scale (narrowing)");
      cts_dev_free(ctx, &S.buf);
      kc_free(ctx, &L);
      if (r != CTS_PASS) return r;
    }
  return CTS_PASS;
}

CTS_CASE(kernels_unscale, CTS_TAG_KERNELS) {
  for (int d = 0; d < 3; ++d)
    for (int bad = 0; bad < 3; ++bad) {
      /* 0: all finite; 1: an Inf; 2: a NaN */
      kc_list_t L;
      CTS_OK(kc_make(ctx, &L, NSIZES, kSizes, NSIZES, kDtypes[d], 100.0f, 31));
      if (bad) {
        kc_raw_set(L.host[9], 5000, kDtypes[d], kc_ref_narrow(bad == 1 ? INFINITY : NAN, kDtypes[d]));
        CTS_OK(kc_push(ctx, &L, 9));
      }
      const float init[2] = {0.125f, 0.0f};
      kc_scalars_t S;
      CTS_OK(kc_scalars(ctx, &S, init, sizeof init));
      kc_job_t j = {.a = L.t, .n = L.n, .s0 = S.dev, .s1 = S.dev + 1};
      CTS_OK(cts_exec(ctx, body_unscale, &j, 1));
      float found;
      CTS_OK(cts_download(ctx, &found, S.dev + 1, 4));
      CTS_CHECK(found == (bad ? 1.0f : 0.0f), "%s bad=%d: found_inf %g", accel_dtype_name(kDtypes[d]),
                bad, (double)found);
      cts_result_t r = kc_expect(ctx, &L, want_mul, &init[0], "unscale");
      CTS_CHECK(cts_dev_guard_ok(ctx, &S.buf), "scalar guards overwritten");
      cts_dev_free(ctx, &S.buf);
      kc_free(ctx, &L);
      if (r != CTS_PASS) return r;
    }
  return CTS_PASS;
}

typedef struct adam_ref {
  accel_adam_args_t a;
  const kc_list_t *p, *g, *m, *v; /* inputs (host copies hold the values before the step) */
  int which;                       /* which output to return: 0 param, 1 m, 2 v */
} adam_ref_t;

/* The accel_kernels.h formula in fp32, in the documented order. */
static uint32_t want_adam(const kc_list_t *out, size_t t, size_t i, const void *u) {
  const adam_ref_t *r = u;
  const accel_adam_args_t *a = &r->a;
  (void)out;
  float p = kc_val(r->p->host[t], i, ACCEL_F32), g = kc_val(r->g->host[t], i, r->g->dtype);
  float m = kc_val(r->m->host[t], i, ACCEL_F32), v = kc_val(r->v->host[t], i, ACCEL_F32);
  if (a->found_inf == 0.0f) {
    const float bc1 = 1.0f - kc_powi(a->beta1, a->step), bc2 = 1.0f - kc_powi(a->beta2, a->step);
    if (a->adamw) p = p * (1.0f - a->lr * a->weight_decay);
    else if (a->weight_decay != 0.0f) g = g + a->weight_decay * p;
    m = m + (1.0f - a->beta1) * (g - m);
    v = a->beta2 * v + ((1.0f - a->beta2) * g) * g;
    p = p - ((a->lr / bc1) * m) / (sqrtf(v) / sqrtf(bc2) + a->eps);
  }
  return kc_f32_bits(r->which == 0 ? p : r->which == 1 ? m : v);
}

CTS_CASE(kernels_adam, CTS_TAG_KERNELS) {
  const accel_adam_args_t variants[] = {
      {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1, 0.0f},  /* AdamW, first step */
      {3e-4f, 0.9f, 0.95f, 1e-6f, 0.1f, 1234, 1, 0.0f}, /* AdamW, late step */
      {1e-2f, 0.8f, 0.99f, 1e-8f, 0.05f, 7, 0, 0.0f},   /* Adam with L2 */
      {1e-2f, 0.8f, 0.99f, 1e-8f, 0.0f, 3, 0, 0.0f},    /* Adam */
      {1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f, 3, 1, 1.0f},   /* skipped: found_inf */
  };
  for (int d = 0; d < 3; ++d)
    for (int k = 0; k < 5; ++k) {
      kc_list_t P, G, M, V;
      CTS_OK(kc_make(ctx, &P, NSIZES, kSizes, NSIZES, ACCEL_F32, 1.0f, 41));
      CTS_OK(kc_make(ctx, &G, NSIZES, kSizes, NSIZES, kDtypes[d], 0.1f, 42));
      CTS_OK(kc_make(ctx, &M, NSIZES, kSizes, NSIZES, ACCEL_F32, 0.01f, 43));
      CTS_OK(kc_make(ctx, &V, NSIZES, kSizes, NSIZES, ACCEL_F32, 0.001f, 44));
      for (size_t t = 0; t < V.n; ++t) /* second moments are non-negative */
        for (size_t i = 0; i < V.t[t].numel; ++i)
          kc_raw_set(V.host[t], i, ACCEL_F32, kc_f32_bits(fabsf(kc_val(V.host[t], i, ACCEL_F32))));
      for (size_t t = 0; t < V.n; ++t) CTS_OK(kc_push(ctx, &V, t));
      kc_scalars_t S;
      CTS_OK(kc_scalars(ctx, &S, &variants[k], sizeof variants[k]));
      kc_job_t j = {.a = P.t, .b = G.t, .c = M.t, .d = V.t, .n = NSIZES, .args = S.dev};
      CTS_OK(cts_exec(ctx, body_adam, &j, 1));
      adam_ref_t r = {variants[k], &P, &G, &M, &V, 0};
      cts_result_t res = kc_expect(ctx, &P, want_adam, &r, "adam param");
      r.which = 1;
      if (res == CTS_PASS) res = kc_expect(ctx, &M, want_adam, &r, "adam exp_avg");
      r.which = 2;
      if (res == CTS_PASS) res = kc_expect(ctx, &V, want_adam, &r, "adam exp_avg_sq");
      kc_free(ctx, &P);
      kc_free(ctx, &G);
      kc_free(ctx, &M);
      kc_free(ctx, &V);
      cts_dev_free(ctx, &S.buf);
      if (res != CTS_PASS) return res;
    }
  return CTS_PASS;
}

static uint32_t want_fill(const kc_list_t *L, size_t t, size_t i, const void *u) {
  (void)t;
  (void)i;
  return kc_ref_narrow(*(const float *)u, L->dtype);
}

CTS_CASE(kernels_fill_scale, CTS_TAG_KERNELS) {
  const float values[] = {0.1f, -65520.0f, 1e-8f, 3.0e38f};
  for (int d = 0; d < 3; ++d)
    for (int v = 0; v < 4; ++v) {
      kc_list_t L;
      CTS_OK(kc_make(ctx, &L, NSIZES, kSizes, NSIZES, kDtypes[d], 1.0f, 51));
      kc_job_t j = {.a = L.t, .n = L.n, .f0 = values[v]};
      CTS_OK(cts_exec(ctx, body_fill, &j, 1));
      cts_result_t r = kc_expect(ctx, &L, want_fill, &values[v], "fill");
      kc_free(ctx, &L);
      if (r != CTS_PASS) return r;
    }
  for (int d = 0; d < 3; ++d) {
    kc_list_t L;
    CTS_OK(kc_make(ctx, &L, NSIZES, kSizes, NSIZES, kDtypes[d], 10.0f, 52));
    const float factor = -0.7f;
    kc_scalars_t S;
    CTS_OK(kc_scalars(ctx, &S, &factor, 4));
    kc_job_t j = {.a = L.t, .n = L.n, .s0 = S.dev};
    CTS_OK(cts_exec(ctx, body_scale, &j, 1));
    cts_result_t r = kc_expect(ctx, &L, want_mul, &factor, "scale");
    cts_dev_free(ctx, &S.buf);
    kc_free(ctx, &L);
    if (r != CTS_PASS) return r;
  }
  return CTS_PASS;
}

/* ---------------------------------------------------------------------------------------------
 * Bad input
 * ------------------------------------------------------------------------------------------- */

/* The objects of the bad-input cases: an eager stream *s, an F32 list A of na tensors and an
 * F16 list B of nb (sizes 100, 300, ...; seeds seed and seed + 1), device scalars S (init). */
static accel_status_t bad_open(cts_ctx_t *ctx, accel_stream_t **s, kc_list_t *A, kc_list_t *B,
                               kc_scalars_t *S, size_t na, size_t nb, uint64_t seed,
                               const void *init, size_t bytes) {
  static const size_t sizes[] = {100, 300};
  accel_status_t st = accel_stream_create_ex(ctx->dev, ACCEL_STREAM_EAGER, s);
  if (st == ACCEL_OK) st = kc_make(ctx, A, na, sizes, na < 2 ? na : 2, ACCEL_F32, 1.0f, seed);
  if (st == ACCEL_OK) st = kc_make(ctx, B, nb, sizes, nb < 2 ? nb : 2, ACCEL_F16, 1.0f, seed + 1);
  return st == ACCEL_OK ? kc_scalars(ctx, S, init, bytes) : st;
}

/* Waits for s (the refused calls launched nothing, the others must finish) and frees the rest. */
static cts_result_t bad_close(cts_ctx_t *ctx, accel_stream_t *s, kc_list_t *A, kc_list_t *B,
                              kc_scalars_t *S) {
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_stream_destroy(s));
  kc_free(ctx, A);
  kc_free(ctx, B);
  cts_dev_free(ctx, &S->buf);
  return CTS_PASS;
}

CTS_CASE(kernels_bad_input, CTS_TAG_KERNELS) {
  accel_stream_t *s;
  kc_list_t A, B;
  kc_scalars_t S;
  CTS_OK(bad_open(ctx, &s, &A, &B, &S, 2, 2, 1, NULL, 0));
  accel_tensor_t t[2];
  float host_scalar = 0;
  const accel_status_t BAD = ACCEL_ERROR_INVALID_ARGUMENT;

  CTS_STATUS(accel_multi_tensor_norm(s, NULL, 2, 2.0f, S.dev), BAD);
  CTS_STATUS(accel_multi_tensor_norm(s, A.t, 2, 0.0f, S.dev), BAD);
  CTS_STATUS(accel_multi_tensor_norm(s, A.t, 2, -1.0f, S.dev), BAD);
  CTS_STATUS(accel_multi_tensor_norm(s, A.t, 2, NAN, S.dev), BAD);
  CTS_STATUS(accel_multi_tensor_norm(s, A.t, 2, 2.0f, NULL), BAD);
  CTS_STATUS(accel_multi_tensor_norm(s, A.t, 2, 2.0f, &host_scalar), BAD);
  CTS_STATUS(accel_multi_tensor_norm(s, A.t, 2, 2.0f, (float *)A.t[1].data), BAD); /* overlap */
  memcpy(t, A.t, sizeof t);
  t[1].data = NULL;
  CTS_STATUS(accel_multi_tensor_norm(s, t, 2, 2.0f, S.dev), BAD);
  memcpy(t, A.t, sizeof t);
  t[1].dtype = (accel_dtype_t)7;
  CTS_STATUS(accel_multi_tensor_norm(s, t, 2, 2.0f, S.dev), BAD);
  t[1] = B.t[1]; /* mixed dtypes */
  CTS_STATUS(accel_multi_tensor_norm(s, t, 2, 2.0f, S.dev), BAD);
  memcpy(t, A.t, sizeof t);
  t[1].data = (char *)t[1].data + 2; /* misaligned */
  CTS_STATUS(accel_multi_tensor_norm(s, t, 2, 2.0f, S.dev), BAD);
  memcpy(t, A.t, sizeof t);
  t[1].numel = 100000; /* past the allocation */
  CTS_STATUS(accel_multi_tensor_norm(s, t, 2, 2.0f, S.dev), BAD);
  t[1].numel = SIZE_MAX / 2; /* byte size overflows */
  CTS_STATUS(accel_multi_tensor_norm(s, t, 2, 2.0f, S.dev), BAD);
  memcpy(t, A.t, sizeof t);
  t[1].data = t[0].data; /* two outputs on the same memory */
  t[1].numel = 50;
  CTS_STATUS(accel_scale(s, t, 2, S.dev), BAD);
  CTS_STATUS(accel_scale(s, A.t, 2, NULL), BAD);
  CTS_STATUS(accel_unscale_and_check(s, A.t, 2, S.dev, S.dev), BAD); /* scalar overlap */
  CTS_STATUS(accel_clip_by_global_norm(s, A.t, 2, 1.0f, NULL, 0.0f, NULL), BAD);
  CTS_STATUS(accel_clip_by_global_norm(s, A.t, 2, 1.0f, (float *)A.t[0].data, 0.0f, NULL), BAD);
  CTS_STATUS(accel_update_hp_grads(s, A.t, B.t, 2, 1), BAD); /* hp must be F32 */
  memcpy(t, A.t, sizeof t);
  t[0].numel = 99;
  CTS_STATUS(accel_update_hp_grads(s, B.t, t, 2, 1), BAD); /* numel mismatch */
  CTS_STATUS(accel_update_hp_grads(s, B.t, A.t, 2, 1), ACCEL_OK);
  CTS_STATUS(accel_fused_adam(s, A.t, B.t, A.t, B.t, 2, (const accel_adam_args_t *)S.dev), BAD);
  CTS_STATUS(accel_fused_adam(s, A.t, A.t, A.t, A.t, 2, NULL), BAD);
  CTS_STATUS(accel_fill(s, NULL, 1, 0.0f), BAD);
  CTS_STATUS(accel_fill(NULL, A.t, 2, 0.0f), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_fill(s, NULL, 0, 0.0f), ACCEL_OK);
  return bad_close(ctx, s, &A, &B, &S);
}

/* Bad input on lists seen before: a backend-independent cache of validated lists must still
 * catch what can change between calls (scalars, which lists are written, freed memory). */
CTS_CASE(kernels_bad_input_cached_list, CTS_TAG_KERNELS) {
  accel_stream_t *s;
  kc_list_t A, B;
  kc_scalars_t S;
  const float one = 1.0f;
  CTS_OK(bad_open(ctx, &s, &A, &B, &S, 3, 1, 3, &one, sizeof one));
  const accel_status_t BAD = ACCEL_ERROR_INVALID_ARGUMENT;
  for (int k = 0; k < 2; ++k) { /* twice: the second calls are cache hits */
    CTS_OK(accel_multi_tensor_norm(s, A.t, 3, 2.0f, &S.dev[1]));
    CTS_OK(accel_scale(s, A.t, 3, &S.dev[0]));
    CTS_OK(accel_unscale_and_check(s, A.t, 3, &S.dev[0], &S.dev[2]));
  }
  /* the same lists with scalars on a tensor or on each other */
  CTS_STATUS(accel_multi_tensor_norm(s, A.t, 3, 2.0f, (float *)A.t[1].data), BAD);
  if (!strstr(accel_last_error(), "overlaps"))
    return cts_fail(ctx, __FILE__, __LINE__, "message: %s", accel_last_error());
  CTS_STATUS(accel_scale(s, A.t, 3, (const float *)A.t[2].data + 7), BAD);
  CTS_STATUS(accel_unscale_and_check(s, A.t, 3, &S.dev[0], &S.dev[0]), BAD);
  /* lp read twice is fine while it is only read, not once it is zeroed */
  accel_tensor_t lp[2] = {B.t[0], B.t[0]}, hp[2] = {A.t[0], A.t[2]};
  CTS_OK(accel_update_hp_grads(s, lp, hp, 2, 0));
  CTS_OK(accel_update_hp_grads(s, lp, hp, 2, 0));
  CTS_STATUS(accel_update_hp_grads(s, lp, hp, 2, 1), BAD);
  /* a tensor of a cached list freed */
  CTS_OK(accel_stream_synchronize(s));
  cts_dev_free(ctx, &A.buf[1]);
  CTS_STATUS(accel_multi_tensor_norm(s, A.t, 3, 2.0f, &S.dev[1]), BAD);
  if (!strstr(accel_last_error(), "live allocation"))
    return cts_fail(ctx, __FILE__, __LINE__, "message: %s", accel_last_error());
  CTS_STATUS(accel_scale(s, A.t, 3, &S.dev[0]), BAD);
  /* the device is still usable */
  accel_tensor_t rest[2] = {A.t[0], A.t[2]};
  CTS_OK(accel_multi_tensor_norm(s, rest, 2, 2.0f, &S.dev[1]));
  return bad_close(ctx, s, &A, &B, &S);
}

/* ---------------------------------------------------------------------------------------------
 * The same kernel launched many times with different arguments in one submission (a per-tensor
 * loop). Regression: OpenCL command buffers on PoCL read kernel arguments at execution time, so
 * launches sharing one cl_kernel all ran with the last arguments.
 * ------------------------------------------------------------------------------------------- */

enum { RELAUNCH_N = 6, RELAUNCH_LEN = 1000 };

typedef struct relaunch_job {
  accel_tensor_t t[RELAUNCH_N];
  float *factors_dev; /* RELAUNCH_N device scalars */
} relaunch_job_t;

static accel_status_t body_relaunch(accel_stream_t *s, void *user) {
  relaunch_job_t *j = user;
  accel_status_t st = ACCEL_OK;
  for (int i = 0; i < RELAUNCH_N && st == ACCEL_OK; ++i)
    st = accel_fill(s, &j->t[i], 1, (float)(i + 1));
  for (int i = 0; i < RELAUNCH_N && st == ACCEL_OK; ++i)
    st = accel_scale(s, &j->t[i], 1, &j->factors_dev[i]);
  return st;
}

CTS_CASE(kernels_relaunch_per_tensor, CTS_TAG_KERNELS) {
  cts_buf_t bufs[RELAUNCH_N], fbuf;
  relaunch_job_t j;
  float factors[RELAUNCH_N];
  for (int i = 0; i < RELAUNCH_N; ++i) {
    CTS_OK(cts_dev_alloc(ctx, RELAUNCH_LEN * sizeof(float), KC_GUARD, &bufs[i]));
    j.t[i] = (accel_tensor_t){bufs[i].data, RELAUNCH_LEN, ACCEL_F32};
    factors[i] = 0.5f * (float)(i + 1); /* products are exact */
  }
  CTS_OK(cts_dev_alloc(ctx, sizeof factors, KC_GUARD, &fbuf));
  j.factors_dev = fbuf.data;
  CTS_OK(cts_upload(ctx, fbuf.data, factors, sizeof factors));
  CTS_OK(cts_exec(ctx, body_relaunch, &j, 2));
  static float got[RELAUNCH_LEN];
  cts_result_t r = CTS_PASS;
  for (int i = 0; i < RELAUNCH_N && r == CTS_PASS; ++i) {
    CTS_OK(cts_download(ctx, got, bufs[i].data, sizeof got));
    const float want = (float)(i + 1) * factors[i];
    for (int k = 0; k < RELAUNCH_LEN; ++k)
      if (got[k] != want) {
        r = cts_fail(ctx, __FILE__, __LINE__, "tensor %d element %d: %g, want %g", i, k,
                     (double)got[k], (double)want);
        break;
      }
    if (r == CTS_PASS && !cts_dev_guard_ok(ctx, &bufs[i]))
      r = cts_fail(ctx, __FILE__, __LINE__, "tensor %d: guard bytes overwritten", i);
  }
  for (int i = 0; i < RELAUNCH_N; ++i) cts_dev_free(ctx, &bufs[i]);
  cts_dev_free(ctx, &fbuf);
  return r;
}

/* ---------------------------------------------------------------------------------------------
 * Two launches over the same tensors in a different order: block b of the second reads what
 * block b^1 of the first writes. A backend that reorders or fuses launches of a graph (the CPU
 * backend runs independent launches tile by tile) must keep the second after the whole first.
 * ------------------------------------------------------------------------------------------- */

enum { ORDER_LEN = 65536 }; /* one full chunk per tensor: two blocks per launch */

typedef struct order_job {
  float *pristine[2];      /* the lp values, copied in at the start of every run */
  accel_tensor_t lp[2];    /* l0, l1 */
  accel_tensor_t lp_rev[2]; /* l1, l0 */
  accel_tensor_t hp[2];    /* h0, h1: get l0, l1 */
  accel_tensor_t hp2[2];   /* h2, h3: get l1, l0 after the first launch zeroed them: nothing */
} order_job_t;

static accel_status_t body_order(accel_stream_t *s, void *user) {
  order_job_t *j = user;
  accel_status_t st = ACCEL_OK;
  for (int i = 0; i < 2 && st == ACCEL_OK; ++i)
    st = accel_memcpy_async(s, j->lp[i].data, j->pristine[i], ORDER_LEN * sizeof(float));
  if (st == ACCEL_OK) st = accel_update_hp_grads(s, j->lp, j->hp, 2, 1);
  if (st == ACCEL_OK) st = accel_update_hp_grads(s, j->lp_rev, j->hp2, 2, 1);
  return st;
}

CTS_CASE(kernels_cross_block_order, CTS_TAG_KERNELS) {
  enum { RUNS = 3 };
  cts_buf_t pristine[2], lp[2], hp[4];
  order_job_t j;
  static float host[ORDER_LEN], got[ORDER_LEN];
  for (int i = 0; i < 2; ++i) {
    CTS_OK(cts_dev_alloc(ctx, sizeof host, KC_GUARD, &pristine[i]));
    CTS_OK(cts_dev_alloc(ctx, sizeof host, KC_GUARD, &lp[i]));
    for (int k = 0; k < ORDER_LEN; ++k) host[k] = (float)(1 + (k + 3 * i) % 7);
    CTS_OK(cts_upload(ctx, pristine[i].data, host, sizeof host));
    j.pristine[i] = pristine[i].data;
    j.lp[i] = (accel_tensor_t){lp[i].data, ORDER_LEN, ACCEL_F32};
    j.lp_rev[1 - i] = j.lp[i];
  }
  for (int i = 0; i < 4; ++i) {
    CTS_OK(cts_dev_alloc(ctx, sizeof host, KC_GUARD, &hp[i]));
    for (int k = 0; k < ORDER_LEN; ++k) host[k] = (float)(100 * (i + 1));
    CTS_OK(cts_upload(ctx, hp[i].data, host, sizeof host));
    accel_tensor_t t = {hp[i].data, ORDER_LEN, ACCEL_F32};
    if (i < 2) j.hp[i] = t; else j.hp2[i - 2] = t;
  }
  CTS_OK(cts_exec(ctx, body_order, &j, RUNS));
  cts_result_t r = CTS_PASS;
  for (int i = 0; i < 4 && r == CTS_PASS; ++i) {
    CTS_OK(cts_download(ctx, got, hp[i].data, sizeof got));
    for (int k = 0; k < ORDER_LEN; ++k) {
      const float want = (float)(100 * (i + 1)) + (i < 2 ? (float)(RUNS * (1 + (k + 3 * i) % 7)) : 0.0f);
      if (got[k] != want) {
        r = cts_fail(ctx, __FILE__, __LINE__, "hp %d element %d: %g, want %g", i, k,
                     (double)got[k], (double)want);
        break;
      }
    }
    if (r == CTS_PASS && !cts_dev_guard_ok(ctx, &hp[i]))
      r = cts_fail(ctx, __FILE__, __LINE__, "hp %d: guard bytes overwritten", i);
  }
  for (int i = 0; i < 2 && r == CTS_PASS; ++i) {
    CTS_OK(cts_download(ctx, got, lp[i].data, sizeof got));
    for (int k = 0; k < ORDER_LEN; ++k)
      if (got[k] != 0.0f) {
        r = cts_fail(ctx, __FILE__, __LINE__, "lp %d element %d: %g, want 0", i, k,
                     (double)got[k]);
        break;
      }
  }
  for (int i = 0; i < 2; ++i) {
    cts_dev_free(ctx, &pristine[i]);
    cts_dev_free(ctx, &lp[i]);
  }
  for (int i = 0; i < 4; ++i) cts_dev_free(ctx, &hp[i]);
  return r;
}

/* ---------------------------------------------------------------------------------------------
 * The mixed-precision step on the device: cast, loss scaler, step counter
 * ------------------------------------------------------------------------------------------- */

typedef struct cast_ref {
  const kc_list_t *src;
  int skipped;
} cast_ref_t;

/* dst = src converted through fp32 (round to nearest even), or the old dst when skipped. */
static uint32_t want_cast(const kc_list_t *dst, size_t t, size_t i, const void *u) {
  const cast_ref_t *r = u;
  if (r->skipped) return kc_raw_get(dst->host[t], i, dst->dtype);
  return kc_ref_narrow(kc_val(r->src->host[t], i, r->src->dtype), dst->dtype);
}

static accel_status_t body_cast(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  return accel_cast(s, j->a, j->b, j->n, j->s0);
}

/* Every dtype pair, every size, with no flag, a clear flag and a set flag (then nothing is
 * written); values up to 1e5 so that F16 overflows to Inf, plus NaN and Inf sources. */
CTS_CASE(kernels_cast, CTS_TAG_KERNELS) {
  for (int sd = 0; sd < 3; ++sd)
    for (int dd = 0; dd < 3; ++dd)
      for (int flag = 0; flag < 3; ++flag) {
        kc_list_t S, D;
        CTS_OK(kc_make(ctx, &S, NSIZES, kSizes, NSIZES, kDtypes[sd], 1e5f, 61 + sd));
        CTS_OK(kc_make(ctx, &D, NSIZES, kSizes, NSIZES, kDtypes[dd], 1.0f, 71 + dd));
        kc_raw_set(S.host[9], 17, kDtypes[sd], kc_ref_narrow(NAN, kDtypes[sd]));
        kc_raw_set(S.host[9], 18, kDtypes[sd], kc_ref_narrow(-INFINITY, kDtypes[sd]));
        kc_raw_set(S.host[9], 19, kDtypes[sd], kc_ref_narrow(1e-7f, kDtypes[sd])); /* F16 subnormal */
        CTS_OK(kc_push(ctx, &S, 9));
        const float flags[2] = {0.0f, 1.0f};
        kc_scalars_t F;
        CTS_OK(kc_scalars(ctx, &F, flags, sizeof flags));
        kc_job_t j = {.a = S.t, .b = D.t, .n = NSIZES, .s0 = flag == 0 ? NULL : F.dev + (flag - 1)};
        CTS_OK(cts_exec(ctx, body_cast, &j, 2));
        const cast_ref_t r = {&S, flag == 2};
        cts_result_t res = kc_expect(ctx, &D, want_cast, &r, "cast");
        if (res == CTS_PASS) res = kc_expect(ctx, &S, want_cast, &(cast_ref_t){&S, 1}, "cast src");
        CTS_CHECK(cts_dev_guard_ok(ctx, &F.buf), "flag guards overwritten");
        kc_free(ctx, &S);
        kc_free(ctx, &D);
        cts_dev_free(ctx, &F.buf);
        if (res != CTS_PASS) return res;
      }
  return CTS_PASS;
}

/* Device state of the step: the scaler, then Adam's arguments (found_inf and the step counter
 * live there, as a real step keeps them). */
typedef struct amp_dev {
  accel_loss_scaler_t scaler;
  uint32_t pad[2];
  accel_adam_args_t adam;
} amp_dev_t;
_Static_assert(sizeof(amp_dev_t) == 64, "amp_dev_t fills one kc_scalars block");

/* One step's bookkeeping: begin, unscale the gradients (sets found_inf), count the step, update
 * the scale. */
static accel_status_t body_amp_step(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  amp_dev_t *d = (amp_dev_t *)(void *)j->s0;
  accel_status_t st = accel_amp_begin_step(s, &d->scaler, &d->adam.found_inf);
  if (st == ACCEL_OK) st = accel_unscale_and_check(s, j->a, j->n, &d->scaler.inv_scale,
                                                   &d->adam.found_inf);
  if (st == ACCEL_OK) st = accel_step_count(s, &d->adam.step, &d->adam.found_inf);
  if (st == ACCEL_OK) st = accel_amp_update_scale(s, &d->scaler, &d->adam.found_inf);
  return st;
}

/* 12 steps with overflows at steps 2, 5, 6 and 11 (Inf, NaN, Inf in F16 from a large scaled
 * value, NaN) and growth_interval 3, each step its own cts_exec (one capture and replay in
 * graph mode), then 4 replays of one capture with finite gradients: scale, growth tracker,
 * found_inf, the step counter and the unscaled gradients checked after each. */
CTS_CASE(kernels_amp_scaler, CTS_TAG_KERNELS) {
  const accel_dtype_t dt = ACCEL_F16;
  kc_list_t G;
  CTS_OK(kc_make(ctx, &G, NSIZES, kSizes, NSIZES, dt, 10.0f, 81));
  amp_dev_t init = {{1024.0f, 0.0f, 0, 3, 2.0f, 0.5f}, {0, 0}, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, 1, 1.0f}};
  kc_scalars_t S;
  CTS_OK(kc_scalars(ctx, &S, &init, sizeof init));
  accel_loss_scaler_t want = init.scaler;
  uint32_t want_step = 0;
  for (int step = 0; step < 13; ++step) {
    const int replays = step == 12 ? 4 : 1;
    const int bad = step == 2 || step == 5 || step == 6 || step == 11;
    for (size_t t = 0; t < G.n; ++t) { /* fresh gradients every step */
      uint64_t seed = 1000u + (uint64_t)step * 17u + t;
      for (size_t i = 0; i < G.t[t].numel; ++i)
        kc_raw_set(G.host[t], i, dt, kc_ref_narrow(cts_rand_uniform(&seed, -10.0f, 10.0f), dt));
    }
    if (bad) kc_raw_set(G.host[8], 3, dt, kc_ref_narrow(step == 2 ? INFINITY : step == 5 ? 65504.0f : NAN, dt));
    if (step == 5) { /* 65504 * (1/2048) is finite: the overflow must come from an Inf */
      kc_raw_set(G.host[8], 4, dt, kc_ref_narrow(-INFINITY, dt));
    }
    for (size_t t = 0; t < G.n; ++t) CTS_OK(kc_push(ctx, &G, t));
    const float inv = 1.0f / want.scale; /* a power of two: exact */
    kc_job_t j = {.a = G.t, .n = G.n, .s0 = S.dev};
    CTS_OK(cts_exec(ctx, body_amp_step, &j, replays));
    for (int r = 0; r < replays; ++r) {
      REF_AMP_UPDATE_SCALE(&want, bad);
      want_step += !bad;
    }
    amp_dev_t got;
    CTS_OK(cts_download(ctx, &got, S.dev, sizeof got));
    CTS_CHECK(kc_f32_bits(got.scaler.scale) == kc_f32_bits(want.scale) &&
                  got.scaler.growth_tracker == want.growth_tracker &&
                  got.adam.step == want_step && got.adam.found_inf == (bad ? 1.0f : 0.0f) &&
                  got.scaler.growth_interval == 3 && got.scaler.growth_factor == 2.0f &&
                  got.scaler.backoff_factor == 0.5f,
              "step %d (overflow %d, %d replays): scale %g tracker %d step %u found_inf %g; "
              "want %g %d %u %d", step, bad, replays, (double)got.scaler.scale,
              (int)got.scaler.growth_tracker, (unsigned)got.adam.step,
              (double)got.adam.found_inf, (double)want.scale, (int)want.growth_tracker,
              (unsigned)want_step, bad);
    /* inv_scale is the last begin's: 1 / (the scale before the last replay's update) */
    if (replays == 1) {
      CTS_CHECK(got.scaler.inv_scale == inv, "step %d: inv_scale %g, want %g", step,
                (double)got.scaler.inv_scale, (double)inv);
      if (!bad) {
        cts_result_t res = kc_expect(ctx, &G, want_mul, &inv, "amp unscale");
        if (res != CTS_PASS) return res;
      }
    }
  }
  CTS_CHECK(cts_dev_guard_ok(ctx, &S.buf), "scalar guards overwritten");
  kc_free(ctx, &G);
  cts_dev_free(ctx, &S.buf);
  return CTS_PASS;
}

static accel_status_t body_step_count(accel_stream_t *s, void *u) {
  const kc_job_t *j = u;
  return accel_step_count(s, (uint32_t *)(void *)j->s0, j->s1);
}

/* The step counter without a flag counts every replay; with a set flag none. */
CTS_CASE(kernels_step_count, CTS_TAG_KERNELS) {
  const uint32_t init[4] = {7, 0, 0x3f800000u /* 1.0f */, 0};
  kc_scalars_t S;
  CTS_OK(kc_scalars(ctx, &S, init, sizeof init));
  kc_job_t j = {.s0 = S.dev, .s1 = NULL};
  CTS_OK(cts_exec(ctx, body_step_count, &j, 3));
  uint32_t got[4];
  CTS_OK(cts_download(ctx, got, S.dev, sizeof got));
  CTS_CHECK(got[0] == 10, "no flag, 3 runs: step %u, want 10", (unsigned)got[0]);
  j.s1 = S.dev + 2; /* set */
  CTS_OK(cts_exec(ctx, body_step_count, &j, 2));
  j.s1 = S.dev + 1; /* clear */
  CTS_OK(cts_exec(ctx, body_step_count, &j, 2));
  CTS_OK(cts_download(ctx, got, S.dev, sizeof got));
  CTS_CHECK(got[0] == 12 && got[1] == 0 && got[2] == 0x3f800000u && got[3] == 0,
            "flags: step %u (want 12), flags %08x %08x %08x", (unsigned)got[0], got[1], got[2], got[3]);
  CTS_CHECK(cts_dev_guard_ok(ctx, &S.buf), "scalar guards overwritten");
  cts_dev_free(ctx, &S.buf);
  return CTS_PASS;
}

CTS_CASE(kernels_amp_bad_input, CTS_TAG_KERNELS) {
  accel_stream_t *s;
  CTS_OK(accel_stream_create_ex(ctx->dev, ACCEL_STREAM_EAGER, &s));
  const size_t sizes[] = {100, 300};
  kc_list_t A, B;
  CTS_OK(kc_make(ctx, &A, 2, sizes, 2, ACCEL_F32, 1.0f, 1));
  CTS_OK(kc_make(ctx, &B, 2, sizes, 2, ACCEL_F16, 1.0f, 2));
  kc_scalars_t S;
  const amp_dev_t init = {{1024.0f, 0.0f, 0, 3, 2.0f, 0.5f}, {0, 0}, {.lr = 0.0f}};
  CTS_OK(kc_scalars(ctx, &S, &init, sizeof init));
  amp_dev_t *d = (amp_dev_t *)(void *)S.dev;
  accel_loss_scaler_t host_scaler = init.scaler;
  float host_flag = 0.0f;
  uint32_t host_step = 0;
  accel_tensor_t t[2];
  const accel_status_t BAD = ACCEL_ERROR_INVALID_ARGUMENT;

  CTS_STATUS(accel_amp_begin_step(NULL, &d->scaler, &d->adam.found_inf), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_amp_begin_step(s, NULL, &d->adam.found_inf), BAD);
  CTS_STATUS(accel_amp_begin_step(s, &d->scaler, NULL), BAD);
  CTS_STATUS(accel_amp_begin_step(s, &host_scaler, &d->adam.found_inf), BAD);
  CTS_STATUS(accel_amp_begin_step(s, &d->scaler, &host_flag), BAD);
  CTS_STATUS(accel_amp_begin_step(s, &d->scaler, &d->scaler.inv_scale), BAD); /* overlap */
  CTS_STATUS(accel_amp_begin_step(s, (accel_loss_scaler_t *)(void *)((char *)S.dev + 2),
                                  &d->adam.found_inf), BAD); /* misaligned */
  CTS_STATUS(accel_amp_begin_step(s, (accel_loss_scaler_t *)(void *)((char *)S.dev + 48),
                                  &d->adam.found_inf), BAD); /* past the allocation */
  CTS_STATUS(accel_amp_update_scale(NULL, &d->scaler, &d->adam.found_inf), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_amp_update_scale(s, NULL, &d->adam.found_inf), BAD);
  CTS_STATUS(accel_amp_update_scale(s, &d->scaler, NULL), BAD);
  CTS_STATUS(accel_amp_update_scale(s, &d->scaler, &d->scaler.backoff_factor), BAD);
  CTS_STATUS(accel_amp_update_scale(s, &d->scaler, (const float *)A.t[0].data), ACCEL_OK);
  CTS_STATUS(accel_amp_update_scale(s, (accel_loss_scaler_t *)A.t[0].data, &d->adam.found_inf),
             ACCEL_OK); /* any live device memory */
  CTS_STATUS(accel_step_count(NULL, &d->adam.step, NULL), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_step_count(s, NULL, &d->adam.found_inf), BAD);
  CTS_STATUS(accel_step_count(s, &host_step, NULL), BAD);
  CTS_STATUS(accel_step_count(s, &d->adam.step, &host_flag), BAD);
  CTS_STATUS(accel_step_count(s, &d->adam.step, (const float *)(void *)&d->adam.step), BAD);
  CTS_STATUS(accel_step_count(s, &d->adam.step, NULL), ACCEL_OK);
  CTS_STATUS(accel_cast(NULL, A.t, B.t, 2, NULL), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_cast(s, NULL, B.t, 2, NULL), BAD);
  CTS_STATUS(accel_cast(s, A.t, NULL, 2, NULL), BAD);
  CTS_STATUS(accel_cast(s, A.t, A.t, 2, NULL), BAD); /* in place is not allowed */
  CTS_STATUS(accel_cast(s, A.t, B.t, 2, &host_flag), BAD);
  CTS_STATUS(accel_cast(s, A.t, B.t, 2, (const float *)B.t[1].data), BAD); /* flag in dst */
  memcpy(t, B.t, sizeof t);
  t[1].numel = 299;
  CTS_STATUS(accel_cast(s, A.t, t, 2, NULL), BAD); /* numel mismatch */
  t[1] = A.t[1]; /* mixed dtypes in dst */
  t[1].numel = 300;
  CTS_STATUS(accel_cast(s, A.t, t, 2, NULL), BAD);
  memcpy(t, B.t, sizeof t);
  t[0].dtype = (accel_dtype_t)5;
  CTS_STATUS(accel_cast(s, A.t, t, 2, NULL), BAD);
  memcpy(t, B.t, sizeof t);
  t[1].data = (char *)t[1].data + 1; /* misaligned */
  CTS_STATUS(accel_cast(s, A.t, t, 2, NULL), BAD);
  CTS_STATUS(accel_cast(s, NULL, NULL, 0, NULL), ACCEL_OK);
  CTS_STATUS(accel_cast(s, A.t, B.t, 2, &d->adam.found_inf), ACCEL_OK);
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_stream_destroy(s));
  kc_free(ctx, &A);
  kc_free(ctx, &B);
  cts_dev_free(ctx, &S.buf);
  return CTS_PASS;
}
