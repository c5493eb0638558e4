/* See kc_lists.h. */
#include "kc_lists.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Independent F16/BF16 reference conversions
 * ------------------------------------------------------------------------------------------- */

float kc_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint32_t kc_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Magnitude of a non-negative 15-bit code (no sign); the all-ones exponent code with zero
 * mantissa stands for the first value past the largest finite one (IEEE overflow rounding). */
static double kc_code_value(uint32_t code, accel_dtype_t dt) {
  const int mbits = dt == ACCEL_F16 ? 10 : 7, bias = dt == ACCEL_F16 ? 15 : 127;
  const uint32_t e = code >> mbits, m = code & ((1u << mbits) - 1);
  if (e == 0) return ldexp((double)m, 1 - bias - mbits);
  return ldexp((double)((1u << mbits) | m), (int)e - bias - mbits);
}

/* kc_code_value of every code up to infinity's, per dtype: the reference narrowing searches
 * these instead of calling ldexp 17 times an element (it dominated the step cases' time, and
 * under valgrind pushed them past the watchdog). */
enum { KC_F16_CODES = 0x7c01, KC_BF16_CODES = 0x7f81 };
static double g_f16_values[KC_F16_CODES], g_bf16_values[KC_BF16_CODES];
static pthread_once_t g_values_once = PTHREAD_ONCE_INIT;

static void kc_fill_code_values(void) {
  for (uint32_t c = 0; c < KC_F16_CODES; ++c) g_f16_values[c] = kc_code_value(c, ACCEL_F16);
  for (uint32_t c = 0; c < KC_BF16_CODES; ++c) g_bf16_values[c] = kc_code_value(c, ACCEL_BF16);
}

static const double *kc_code_values(accel_dtype_t dt) {
  pthread_once(&g_values_once, kc_fill_code_values);
  return dt == ACCEL_F16 ? g_f16_values : g_bf16_values;
}

float kc_ref_widen(uint32_t h, accel_dtype_t dt) {
  if (dt == ACCEL_F32) return kc_f32_from_bits(h);
  const uint32_t sign = h & 0x8000u, mag = h & 0x7fffu;
  const uint32_t inf = dt == ACCEL_F16 ? 0x7c00u : 0x7f80u;
  double v;
  if (mag > inf) v = NAN;
  else if (mag == inf) v = INFINITY;
  else v = kc_code_values(dt)[mag];
  return (float)(sign ? -v : v);
}

/* A guess at the largest code whose value is <= a, from a's binary exponent. kc_ref_narrow
 * corrects it against the code values, so the guess only saves a search, and a wrong one would
 * cost time, not correctness. */
static uint32_t kc_code_guess(double a, accel_dtype_t dt, uint32_t inf) {
  const int mbits = dt == ACCEL_F16 ? 10 : 7, bias = dt == ACCEL_F16 ? 15 : 127;
  if (a == 0.0) return 0;
  int e;
  (void)frexp(a, &e); /* a in [2^(e-1), 2^e) */
  const int biased = e - 1 + bias;
  if (biased >= (int)(inf >> mbits)) return inf;
  const double c = biased <= 0 ? ldexp(a, bias - 1 + mbits) /* subnormal */
                              : (double)((uint32_t)biased << mbits) +
                                    ldexp(a, mbits - (biased - bias)) - (double)(1u << mbits);
  return c >= (double)inf ? inf : (uint32_t)c;
}

uint32_t kc_ref_narrow(float x, accel_dtype_t dt) {
  if (dt == ACCEL_F32) return kc_f32_bits(x);
  const uint32_t sign = (kc_f32_bits(x) >> 16) & 0x8000u;
  const uint32_t inf = dt == ACCEL_F16 ? 0x7c00u : 0x7f80u;
  if (isnan(x)) return dt == ACCEL_F16 ? (sign | 0x7e00u) : 0x7fc0u;
  const double a = fabs((double)x);
  if (isinf(x)) return sign | inf;
  const double *value = kc_code_values(dt);
  uint32_t lo = kc_code_guess(a, dt, inf); /* made the largest code with value <= a */
  while (lo > 0 && value[lo] > a) --lo;
  while (lo < inf && value[lo + 1] <= a) ++lo;
  if (lo == inf) return sign | inf;
  const double dl = a - value[lo], du = value[lo + 1] - a;
  const uint32_t r = dl < du ? lo : du < dl ? lo + 1 : ((lo & 1u) ? lo + 1 : lo);
  return sign | r;
}

size_t kc_esz(accel_dtype_t dt) { return dt == ACCEL_F32 ? 4 : dt == ACCEL_U8 ? 1 : 2; }
uint32_t kc_raw_get(const void *p, size_t i, accel_dtype_t dt) {
  if (dt == ACCEL_F32) {
    uint32_t u;
    memcpy(&u, (const char *)p + 4 * i, 4);
    return u;
  }
  if (dt == ACCEL_U8) return ((const uint8_t *)p)[i];
  return ((const uint16_t *)p)[i];
}
void kc_raw_set(void *p, size_t i, accel_dtype_t dt, uint32_t v) {
  if (dt == ACCEL_F32) memcpy((char *)p + 4 * i, &v, 4);
  else if (dt == ACCEL_U8) ((uint8_t *)p)[i] = (uint8_t)v;
  else ((uint16_t *)p)[i] = (uint16_t)v;
}
float kc_val(const void *p, size_t i, accel_dtype_t dt) {
  return kc_ref_widen(kc_raw_get(p, i, dt), dt);
}

/* ---------------------------------------------------------------------------------------------
 * Tensor lists on the device, each tensor with guard bytes, plus a host copy of the bits
 * ------------------------------------------------------------------------------------------- */

void kc_free(cts_ctx_t *ctx, kc_list_t *L) {
  for (size_t i = 0; i < L->n; ++i) {
    if (L->buf && L->buf[i].base) cts_dev_free(ctx, &L->buf[i]);
    if (L->host) free(L->host[i]);
  }
  free(L->t);
  free(L->buf);
  free(L->host);
  memset(L, 0, sizeof *L);
}

accel_status_t kc_make(cts_ctx_t *ctx, kc_list_t *L, size_t n, const size_t *sizes, size_t count,
                       accel_dtype_t dt, float scale, uint64_t seed) {
  memset(L, 0, sizeof *L);
  L->n = n;
  L->dtype = dt;
  L->t = calloc(n + 1, sizeof *L->t);
  L->buf = calloc(n + 1, sizeof *L->buf);
  L->host = calloc(n + 1, sizeof *L->host);
  if (!L->t || !L->buf || !L->host) return ACCEL_ERROR_OUT_OF_MEMORY;
  uint64_t s = seed;
  for (size_t i = 0; i < n; ++i) {
    const size_t numel = sizes[i % count], bytes = numel * kc_esz(dt);
    L->host[i] = malloc(bytes + 4);
    if (!L->host[i]) return ACCEL_ERROR_OUT_OF_MEMORY;
    for (size_t k = 0; k < numel; ++k)
      kc_raw_set(L->host[i], k, dt,
                 kc_ref_narrow(scale * cts_rand_uniform(&s, -1.0f, 1.0f), dt));
    accel_status_t st = cts_dev_alloc(ctx, bytes, KC_GUARD, &L->buf[i]);
    if (st == ACCEL_OK && bytes) st = cts_upload(ctx, L->buf[i].data, L->host[i], bytes);
    if (st != ACCEL_OK) return st;
    L->t[i] = (accel_tensor_t){L->buf[i].data, numel, dt};
  }
  return ACCEL_OK;
}

accel_status_t kc_push(cts_ctx_t *ctx, kc_list_t *L, size_t i) {
  return cts_upload(ctx, L->t[i].data, L->host[i], L->t[i].numel * kc_esz(L->dtype));
}

int kc_pull(cts_ctx_t *ctx, kc_list_t *L, size_t i, void *out) {
  const size_t bytes = L->t[i].numel * kc_esz(L->dtype);
  if (bytes && cts_download(ctx, out, L->t[i].data, bytes) != ACCEL_OK) return 0;
  return cts_dev_guard_ok(ctx, &L->buf[i]);
}

accel_status_t kc_scalars(cts_ctx_t *ctx, kc_scalars_t *S, const void *init, size_t bytes) {
  accel_status_t st = cts_dev_alloc(ctx, 64, KC_GUARD, &S->buf);
  if (st != ACCEL_OK) return st;
  S->dev = S->buf.data;
  unsigned char zero[64] = {0};
  if (bytes) memcpy(zero, init, bytes);
  return cts_upload(ctx, S->dev, zero, 64);
}

cts_result_t kc_expect(cts_ctx_t *ctx, kc_list_t *L, kc_expect_fn want, const void *user,
                       const char *what) {
  for (size_t t = 0; t < L->n; ++t) {
    void *got = malloc(L->t[t].numel * kc_esz(L->dtype) + 4);
    CTS_CHECK(got, "out of host memory");
    if (!kc_pull(ctx, L, t, got)) {
      free(got);
      return cts_fail(ctx, __FILE__, __LINE__, "%s: guard bytes of tensor %zu overwritten", what,
                      t);
    }
    for (size_t i = 0; i < L->t[t].numel; ++i) {
      const uint32_t g = kc_raw_get(got, i, L->dtype), w = want(L, t, i, user);
      const float gf = kc_ref_widen(g, L->dtype), wf = kc_ref_widen(w, L->dtype);
      if (g != w && !(isnan(gf) && isnan(wf))) {
        free(got);
        return cts_fail(ctx, __FILE__, __LINE__,
                        "%s %s: tensor %zu[%zu] = %08x (%g), want %08x (%g)", what,
                        accel_dtype_name(L->dtype), t, i, g, (double)gf, w, (double)wf);
      }
    }
    free(got);
  }
  return CTS_PASS;
}

float kc_powi(float b, uint32_t n) {
  float r = 1.0f;
  for (; n; n >>= 1, b = b * b)
    if (n & 1u) r = r * b;
  return r;
}

accel_status_t kc_step_scalars(cts_ctx_t *ctx, kc_scalars_t *S, const accel_adam_args_t *args,
                               kc_step_scalars_t **out) {
  const kc_step_scalars_t init = {*args, 0x1p-10f, 0.0f, 0.0f, 0.0f};
  const accel_status_t s = kc_scalars(ctx, S, &init, sizeof init);
  *out = (kc_step_scalars_t *)S->dev;
  return s;
}

accel_adam_step_t kc_step_desc(size_t n, const kc_list_t *lp, const kc_list_t *p,
                               const kc_list_t *m, const kc_list_t *v, kc_step_scalars_t *d,
                               uint32_t flags) {
  return (accel_adam_step_t){.struct_size = sizeof(accel_adam_step_t),
                             .n = n,
                             .grads = lp->t,
                             .params = p->t,
                             .exp_avg = m->t,
                             .exp_avg_sq = v->t,
                             .args_dev = &d->args,
                             .inv_scale_dev = &d->inv_scale,
                             .found_inf_dev = &d->args.found_inf,
                             .norm_type = 2.0f,
                             .norm_dev = &d->norm,
                             .max_norm = 1.0f,
                             .clip_eps = 1e-6f,
                             .coef_out_dev = &d->coef,
                             .flags = flags};
}

accel_status_t kc_step_run(accel_stream_t *s, const accel_adam_step_t *d) {
  accel_status_t r = accel_memset_async(s, d->found_inf_dev, 0, sizeof(float));
  if (r == ACCEL_OK) r = accel_adam_step_norm(s, d);
  if (r == ACCEL_OK) r = accel_adam_step_update(s, d);
  return r;
}
