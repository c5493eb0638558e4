/*
 * CTS cases for BF16 master weights in the fused update (accel_adam_step_update with BF16
 * params, docs/KERNELS.md "BF16 master weights"). From master weights that are BF16 values, one
 * step gives, in every mode, the F32 master weights' step (which cases_step.c checks against the
 * separate kernels) bit for bit in the gradients, the moments and AMSGrad's maximum; its new
 * master weights are the F32 step's rounded by the contract: with a generator, (fp32 bits +
 * r) >> 16 with r the element's 16 bits of the generator's words as accel_generator_raw lays
 * them out (drawn here by a twin generator), and the generator's counter past the step's
 * blocks; without one, to nearest even (kc_ref_narrow). A second case checks what the rounding
 * is for: updates below half a bf16 step move the weights on average by the update with a
 * generator, and not at all without. Bad input is refused with a message.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_random.h"
#include "kc_lists.h"

static const size_t kSizes[] = {1, 3, 255, 256, 257, KC_CHUNK + 1, 100003};
#define NT (sizeof kSizes / sizeof kSizes[0])
#define SEED 0x5eed0001u

typedef struct mb_cfg {
  uint32_t flags;
  accel_dtype_t sdt; /* the moments */
  int sr;            /* a generator */
  accel_adam_args_t args;
} mb_cfg_t;

typedef struct mb_state {
  kc_list_t lp, p, m, v, vmax;
  kc_scalars_t S;
  kc_step_scalars_t *d;
  accel_generator_t *gen;
} mb_state_t;

typedef struct mb_job {
  const mb_cfg_t *c;
  mb_state_t *st;
} mb_job_t;

static void mb_free(cts_ctx_t *ctx, mb_state_t *st) {
  kc_free(ctx, &st->lp);
  kc_free(ctx, &st->p);
  kc_free(ctx, &st->m);
  kc_free(ctx, &st->v);
  kc_free(ctx, &st->vmax);
  if (st->S.buf.base) cts_dev_free(ctx, &st->S.buf);
  if (st->gen) (void)accel_generator_release(st->gen);
}

/* L's values become BF16 values (|x| when nonneg), whatever its dtype. */
static accel_status_t mb_bf16_values(cts_ctx_t *ctx, kc_list_t *L, int nonneg) {
  accel_status_t s = ACCEL_OK;
  for (size_t t = 0; s == ACCEL_OK && t < L->n; ++t) {
    for (size_t i = 0; i < L->t[t].numel; ++i) {
      const float x = kc_val(L->host[t], i, L->dtype);
      const float b = kc_ref_widen(kc_ref_narrow(nonneg ? fabsf(x) : x, ACCEL_BF16), ACCEL_BF16);
      kc_raw_set(L->host[t], i, L->dtype, kc_ref_narrow(b, L->dtype));
    }
    s = kc_push(ctx, L, t);
  }
  return s;
}

/* The same values for F32 and BF16 params (pdt), with the config's moments. */
static accel_status_t mb_make(cts_ctx_t *ctx, mb_state_t *st, accel_dtype_t pdt,
                              const mb_cfg_t *c) {
  memset(st, 0, sizeof *st);
  const int ams = (c->flags & ACCEL_ADAM_STEP_AMSGRAD) != 0;
  accel_status_t s = kc_make(ctx, &st->lp, NT, kSizes, NT, ACCEL_BF16, 4.0f, 61);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->p, NT, kSizes, NT, pdt, 1.0f, 63);
  if (s == ACCEL_OK) s = mb_bf16_values(ctx, &st->p, 0);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->m, NT, kSizes, NT, c->sdt, 0.01f, 64);
  if (s == ACCEL_OK) s = mb_bf16_values(ctx, &st->m, 0);
  if (s == ACCEL_OK) s = kc_make(ctx, &st->v, NT, kSizes, NT, c->sdt, 0.001f, 65);
  if (s == ACCEL_OK) s = mb_bf16_values(ctx, &st->v, 1);
  if (s == ACCEL_OK && ams) s = kc_make(ctx, &st->vmax, NT, kSizes, NT, ACCEL_F32, 0.0012f, 66);
  if (s == ACCEL_OK && ams) s = mb_bf16_values(ctx, &st->vmax, 1);
  if (s == ACCEL_OK) s = kc_step_scalars(ctx, &st->S, &c->args, &st->d);
  if (s == ACCEL_OK && pdt == ACCEL_BF16 && c->sr)
    s = accel_generator_create(ctx->dev, SEED, &st->gen);
  return s;
}

static accel_adam_step_t mb_desc(const mb_cfg_t *c, mb_state_t *st) {
  accel_adam_step_t d = kc_step_desc(NT, &st->lp, &st->p, &st->m, &st->v, st->d, c->flags);
  d.max_exp_avg_sq = st->vmax.n ? st->vmax.t : NULL;
  d.generator = st->gen;
  return d;
}

static accel_status_t mb_body(accel_stream_t *s, void *u) {
  const mb_job_t *j = u;
  const accel_adam_step_t d = mb_desc(j->c, j->st);
  return kc_step_run(s, &d);
}

/* The documented rounding of x with the 16 random bits r (the contract, written out again). */
static uint32_t mb_round(float x, uint32_t r, int sr) {
  const uint32_t u = kc_f32_bits(x);
  if (!sr || (u & 0x7f800000u) == 0x7f800000u) return kc_ref_narrow(x, ACCEL_BF16);
  return (u + r) >> 16;
}

/* Element i of chunk c: the half of raw word c * KC_CHUNK + i / 2 that i's parity names. */
static uint32_t mb_bits(const uint32_t *words, size_t c, size_t i) {
  return (words[c * KC_CHUNK + i / 2] >> (16 * (i & 1))) & 0xffffu;
}

static size_t mb_chunks(void) {
  size_t c = 0;
  for (size_t t = 0; t < NT; ++t) c += (kSizes[t] + KC_CHUNK - 1) / KC_CHUNK;
  return c;
}

/* The words of the step's chunks, in accel_generator_raw's layout: chunk c's element i is
 * word c * KC_CHUNK + i (a twin of the step's generator, drawn on the default stream). */
static uint32_t *mb_words(cts_ctx_t *ctx, size_t nwords) {
  accel_generator_t *g = NULL;
  accel_stream_t *s = NULL;
  cts_buf_t buf = {0};
  uint32_t *w = malloc(nwords * 4);
  accel_status_t st = w ? accel_generator_create(ctx->dev, SEED, &g) : ACCEL_ERROR_OUT_OF_MEMORY;
  if (st == ACCEL_OK) st = cts_dev_alloc(ctx, nwords * 4, KC_GUARD, &buf);
  if (st == ACCEL_OK) st = accel_stream_default(ctx->dev, &s);
  if (st == ACCEL_OK) st = accel_generator_raw(s, g, buf.data, nwords);
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  if (st == ACCEL_OK) st = cts_download(ctx, w, buf.data, nwords * 4);
  if (buf.base) cts_dev_free(ctx, &buf);
  if (g) (void)accel_generator_release(g);
  if (st != ACCEL_OK) {
    free(w);
    return NULL;
  }
  return w;
}

/* b's params are a's (F32) rounded by the contract; words: NULL without a generator. */
static cts_result_t mb_check_params(cts_ctx_t *ctx, mb_state_t *a, mb_state_t *b,
                                    const uint32_t *words) {
  size_t chunk = 0;
  for (size_t t = 0; t < NT; ++t) {
    const size_t n = kSizes[t];
    float *x = malloc(4 * n + 4);
    uint16_t *y = malloc(2 * n + 2);
    CTS_CHECK(x && y, "out of host memory");
    const int ok = kc_pull(ctx, &a->p, t, x) && kc_pull(ctx, &b->p, t, y);
    size_t i = 0;
    uint32_t want = 0;
    for (; ok && i < n; ++i) {
      const size_t c = chunk + i / KC_CHUNK;
      want = mb_round(x[i], words ? mb_bits(words, c, i % KC_CHUNK) : 0, words != NULL);
      if (y[i] != want) break;
    }
    const uint32_t got = ok && i < n ? y[i] : 0;
    free(x);
    free(y);
    CTS_CHECK(ok, "params: tensor %zu: download failed or guard bytes overwritten", t);
    CTS_CHECK(i == n, "params: tensor %zu[%zu]: bf16 %04x, want %04x", t, i, got, want);
    chunk += (n + KC_CHUNK - 1) / KC_CHUNK;
  }
  return CTS_PASS;
}

/* a's and b's list L hold the same bits. */
static cts_result_t mb_same(cts_ctx_t *ctx, kc_list_t *a, kc_list_t *b, const char *what) {
  for (size_t t = 0; t < a->n; ++t) {
    const size_t bytes = a->t[t].numel * kc_esz(a->dtype) + 1;
    void *x = malloc(bytes), *y = malloc(bytes);
    CTS_CHECK(x && y, "out of host memory");
    const int ok = kc_pull(ctx, a, t, x) && kc_pull(ctx, b, t, y);
    const int same = ok && memcmp(x, y, bytes - 1) == 0;
    free(x);
    free(y);
    CTS_CHECK(ok, "%s: tensor %zu: download failed or guard bytes overwritten", what, t);
    CTS_CHECK(same, "%s: tensor %zu differs from the F32 master weights' step", what, t);
  }
  return CTS_PASS;
}

/* The generator's counter after the step: one chunk's blocks per chunk of the call. */
static cts_result_t mb_check_counter(cts_ctx_t *ctx, accel_generator_t *g) {
  accel_stream_t *s = NULL;
  cts_buf_t buf = {0};
  accel_generator_state_t st = {{0}, {0}};
  CTS_OK(cts_dev_alloc(ctx, sizeof st, KC_GUARD, &buf));
  accel_status_t r = accel_stream_default(ctx->dev, &s);
  if (r == ACCEL_OK) r = accel_generator_get_state(s, g, buf.data);
  if (r == ACCEL_OK) r = accel_stream_synchronize(s);
  if (r == ACCEL_OK) r = cts_download(ctx, &st, buf.data, sizeof st);
  cts_dev_free(ctx, &buf);
  CTS_OK(r);
  const uint64_t want = (uint64_t)mb_chunks() * (KC_CHUNK / 4);
  const uint64_t got = ((uint64_t)st.counter[1] << 32) | st.counter[0];
  CTS_CHECK(got == want && st.counter[2] == 0 && st.counter[3] == 0,
            "the generator's counter is %llu after the step, want %llu", (unsigned long long)got,
            (unsigned long long)want);
  return CTS_PASS;
}

#define ADAMW {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3, 1, 0.0f}
#define ADAM_L2 {1e-2f, 0.8f, 0.99f, 1e-8f, 0.05f, 7, 0, 0.0f}

static cts_result_t mb_one(cts_ctx_t *ctx, const mb_cfg_t *c, size_t k) {
  mb_state_t f32, b16;
  uint32_t *words = NULL;
  accel_status_t s = mb_make(ctx, &f32, ACCEL_F32, c);
  if (s == ACCEL_OK) s = mb_make(ctx, &b16, ACCEL_BF16, c);
  mb_job_t jf = {c, &f32}, jb = {c, &b16};
  if (s == ACCEL_OK) s = cts_exec(ctx, mb_body, &jf, 1);
  if (s == ACCEL_OK) s = cts_exec(ctx, mb_body, &jb, 1);
  if (s == ACCEL_OK && c->sr && !(words = mb_words(ctx, mb_chunks() * KC_CHUNK)))
    s = ACCEL_ERROR_OUT_OF_MEMORY;
  cts_result_t r = s == ACCEL_OK ? mb_check_params(ctx, &f32, &b16, words)
                                 : cts_fail(ctx, __FILE__, __LINE__, "config %zu: %s: %s", k,
                                            accel_status_name(s), accel_last_error());
  if (r == CTS_PASS) r = mb_same(ctx, &f32.lp, &b16.lp, "grads");
  if (r == CTS_PASS) r = mb_same(ctx, &f32.m, &b16.m, "exp_avg");
  if (r == CTS_PASS) r = mb_same(ctx, &f32.v, &b16.v, "exp_avg_sq");
  if (r == CTS_PASS && f32.vmax.n) r = mb_same(ctx, &f32.vmax, &b16.vmax, "max_exp_avg_sq");
  if (r == CTS_PASS && c->sr) r = mb_check_counter(ctx, b16.gen);
  free(words);
  mb_free(ctx, &f32);
  mb_free(ctx, &b16);
  return r;
}

CTS_CASE(kernels_adam_step_bf16_master, CTS_TAG_KERNELS) {
  static const mb_cfg_t cfgs[] = {
      {ACCEL_ADAM_STEP_ZERO_GRADS | ACCEL_ADAM_STEP_CLIP, ACCEL_F32, 1, ADAMW},
      {ACCEL_ADAM_STEP_CLIP | ACCEL_ADAM_STEP_MAXIMIZE | ACCEL_ADAM_STEP_AMSGRAD, ACCEL_BF16, 1,
       ADAM_L2},
      {ACCEL_ADAM_STEP_CLIP, ACCEL_BF16, 0, ADAMW},
  };
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; ++k) {
    const cts_result_t r = mb_one(ctx, &cfgs[k], k);
    if (r != CTS_PASS) return r;
  }
  return CTS_PASS;
}

/* One step moving weights of 1.0 up by a quarter of their bf16 step (2^-7): with a generator
 * about a quarter of them take the next bf16 (so their mean moves by the update), without one
 * none does (nearest even stalls). */
#define UB_N 100003u
typedef struct ub_job {
  kc_list_t lp, p, m, v;
  kc_scalars_t S;
  accel_generator_t *gen;
} ub_job_t;

static accel_status_t ub_body(accel_stream_t *s, void *u) {
  ub_job_t *j = u;
  const accel_adam_step_t d = {.struct_size = sizeof d, .n = 1, .grads = j->lp.t,
                               .params = j->p.t, .exp_avg = j->m.t, .exp_avg_sq = j->v.t,
                               .args_dev = (const accel_adam_args_t *)j->S.dev,
                               .generator = j->gen};
  return accel_adam_step_update(s, &d);
}

static accel_status_t ub_fill(cts_ctx_t *ctx, kc_list_t *L, uint32_t bits) {
  for (size_t i = 0; i < UB_N; ++i) kc_raw_set(L->host[0], i, L->dtype, bits);
  return kc_push(ctx, L, 0);
}

/* The fraction of weights that moved to 1 + 2^-7 (-1: another value, or a failure). */
static double ub_run(cts_ctx_t *ctx, int sr) {
  const size_t n = UB_N;
  const accel_adam_args_t args = {0x1p-9f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, 1, 0.0f};
  ub_job_t j;
  memset(&j, 0, sizeof j);
  accel_status_t s = kc_make(ctx, &j.lp, 1, &n, 1, ACCEL_BF16, 1.0f, 81);
  if (s == ACCEL_OK) s = kc_make(ctx, &j.p, 1, &n, 1, ACCEL_BF16, 1.0f, 82);
  if (s == ACCEL_OK) s = kc_make(ctx, &j.m, 1, &n, 1, ACCEL_F32, 1.0f, 83);
  if (s == ACCEL_OK) s = kc_make(ctx, &j.v, 1, &n, 1, ACCEL_F32, 1.0f, 84);
  if (s == ACCEL_OK) s = ub_fill(ctx, &j.lp, 0xbf80u); /* -1 */
  if (s == ACCEL_OK) s = ub_fill(ctx, &j.p, 0x3f80u);  /* 1 */
  if (s == ACCEL_OK) s = ub_fill(ctx, &j.m, 0u);
  if (s == ACCEL_OK) s = ub_fill(ctx, &j.v, 0u);
  if (s == ACCEL_OK) s = kc_scalars(ctx, &j.S, &args, sizeof args);
  if (s == ACCEL_OK && sr) s = accel_generator_create(ctx->dev, 7, &j.gen);
  if (s == ACCEL_OK) s = cts_exec(ctx, ub_body, &j, 1);
  uint16_t *y = malloc(2 * n + 2);
  size_t up = 0, other = 0;
  if (s == ACCEL_OK && y && kc_pull(ctx, &j.p, 0, y)) {
    for (size_t i = 0; i < n; ++i) {
      up += y[i] == 0x3f81u;
      other += y[i] != 0x3f81u && y[i] != 0x3f80u;
    }
  } else {
    other = 1;
  }
  free(y);
  kc_free(ctx, &j.lp);
  kc_free(ctx, &j.p);
  kc_free(ctx, &j.m);
  kc_free(ctx, &j.v);
  if (j.S.buf.base) cts_dev_free(ctx, &j.S.buf);
  if (j.gen) (void)accel_generator_release(j.gen);
  return other ? -1.0 : (double)up / (double)n;
}

CTS_CASE(kernels_adam_step_bf16_master_unbiased, CTS_TAG_KERNELS) {
  const double want = 0x1p-9 / 0x1p-7; /* the update over the step: lr * 1 / (1 + eps) */
  const double sigma = sqrt(want * (1.0 - want) / UB_N);
  const double sr = ub_run(ctx, 1), nearest = ub_run(ctx, 0);
  CTS_CHECK(sr >= 0.0 && nearest >= 0.0, "a step failed or stored another value");
  CTS_CHECK(fabs(sr - want) < 6.0 * sigma,
            "stochastic rounding moved %.4f of the weights up, want %.4f +- %.4f", sr, want,
            6.0 * sigma);
  CTS_CHECK(nearest == 0.0, "nearest even moved %.4f of the weights (want none)", nearest);
  return CTS_PASS;
}

/* F16 params, BF16 params with U8 moments or with model weights, a generator with F32 params,
 * and a released generator: refused with a message, the counter unmoved, the device usable. */
CTS_CASE(kernels_adam_step_bf16_master_bad_input, CTS_TAG_KERNELS) {
  const mb_cfg_t c = {ACCEL_ADAM_STEP_CLIP, ACCEL_F32, 1, ADAMW};
  mb_state_t st, f32;
  kc_list_t h16, q8;
  accel_generator_t *dead = NULL;
  CTS_OK(mb_make(ctx, &st, ACCEL_BF16, &c));
  CTS_OK(mb_make(ctx, &f32, ACCEL_F32, &c));
  CTS_OK(kc_make(ctx, &h16, NT, kSizes, NT, ACCEL_F16, 1.0f, 90));
  CTS_OK(kc_make(ctx, &q8, NT, kSizes, NT, ACCEL_U8, 1.0f, 91));
  CTS_OK(accel_generator_create(ctx->dev, 5, &dead));
  CTS_OK(accel_generator_release(dead));
  accel_stream_t *s;
  CTS_OK(accel_stream_create(ctx->dev, &s));
  const accel_status_t BAD = ACCEL_ERROR_INVALID_ARGUMENT;
  const accel_adam_step_t good = mb_desc(&c, &st);
  accel_adam_step_t d = good;
  d.params = h16.t;
  d.generator = NULL;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "params[0] is F16: the master weights are F32 or BF16"),
            "message: %s", accel_last_error());
  d = good;
  d.exp_avg = d.exp_avg_sq = q8.t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "BF16 params (master weights) take F32 or BF16 moments"),
            "message: %s", accel_last_error());
  d = good;
  d.model_params = h16.t;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "model_params must be NULL"), "message: %s",
            accel_last_error());
  d = mb_desc(&c, &f32);
  d.generator = st.gen;
  CTS_STATUS(accel_adam_step_update(s, &d), BAD);
  CTS_CHECK(strstr(accel_last_error(), "a generator is given but params[0] is F32"),
            "message: %s", accel_last_error());
  d = good;
  d.generator = dead;
  CTS_STATUS(accel_adam_step_update(s, &d), ACCEL_ERROR_INVALID_HANDLE);
  d = good;
  d.struct_size = offsetof(accel_adam_step_t, generator); /* an older descriptor: no generator */
  CTS_OK(accel_adam_step_update(s, &d));                   /* nearest even */
  CTS_OK(accel_adam_step_update(s, &good));                /* the device still works */
  CTS_OK(accel_stream_synchronize(s));
  /* only the good step moved the counter */
  const cts_result_t r = mb_check_counter(ctx, st.gen);
  CTS_OK(accel_stream_destroy(s));
  kc_free(ctx, &h16);
  kc_free(ctx, &q8);
  mb_free(ctx, &st);
  mb_free(ctx, &f32);
  return r;
}
