/*
 * CTS cases for the random-number generators (accel_random.h), in every mode: Random123's
 * Philox4x32-10 known-answer vectors through accel_generator_raw, the counter mapping and its
 * advance (also across a carry, and over replays), uniform / normal / dropout against a host
 * reference built on an independent Philox, a Kolmogorov-Smirnov test of 10^7 uniforms and
 * normals, 1000 replays of a captured dropout against the eager sequence, state save and
 * restore, forked generators on two streams, and bad input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_random.h"
#include "kc_lists.h"

#define BLOCKS_PER_CHUNK (KC_CHUNK / 4u)

/* ---------------------------------------------------------------------------------------------
 * The reference: Philox4x32-10 as Random123's philox.h states it (key bumped before rounds
 * 2..10), written here from the published algorithm, not from the kernels.
 * ------------------------------------------------------------------------------------------- */

typedef struct ref_ctr {
  uint32_t v[4];
} ref_ctr_t;

static ref_ctr_t ref_philox(ref_ctr_t c, const uint32_t key_in[2]) {
  uint32_t key[2] = {key_in[0], key_in[1]};
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += 0x9E3779B9u;
      key[1] += 0xBB67AE85u;
    }
    const uint64_t p0 = (uint64_t)0xD2511F53u * c.v[0], p1 = (uint64_t)0xCD9E8D57u * c.v[2];
    const ref_ctr_t n = {{(uint32_t)(p1 >> 32) ^ c.v[1] ^ key[0], (uint32_t)p1,
                          (uint32_t)(p0 >> 32) ^ c.v[3] ^ key[1], (uint32_t)p0}};
    c = n;
  }
  return c;
}

/* counter + d (128-bit, little-endian words). */
static ref_ctr_t ref_add(const uint32_t ctr[4], uint64_t d) {
  ref_ctr_t r;
  uint64_t carry = d;
  for (int k = 0; k < 4; ++k) {
    const uint64_t s = (uint64_t)ctr[k] + (carry & 0xffffffffu);
    r.v[k] = (uint32_t)s;
    carry = (carry >> 32) + (s >> 32);
  }
  return r;
}

/* Word w of the block at counter st.counter + d. */
static uint32_t ref_word(const accel_generator_state_t *st, uint64_t d, unsigned w) {
  return ref_philox(ref_add(st->counter, d), st->key).v[w];
}

static float ref_u01(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }

/* Element i of global chunk c of a call: its word. */
static uint32_t ref_elem_word(const accel_generator_state_t *st, uint64_t c, size_t i) {
  return ref_word(st, c * BLOCKS_PER_CHUNK + i / 4, (unsigned)(i % 4));
}

/* The standard normal the contract names for element i (double precision). */
static double ref_normal(const accel_generator_state_t *st, uint64_t c, size_t i) {
  const ref_ctr_t b = ref_philox(ref_add(st->counter, c * BLOCKS_PER_CHUNK + i / 4), st->key);
  const unsigned pair = (unsigned)(i % 4) / 2u;
  const double u1 = ((b.v[2 * pair] >> 8) + 1u) * 0x1p-24, u2 = (b.v[2 * pair + 1] >> 8) * 0x1p-24;
  const double r = sqrt(-2.0 * log(u1)), t = 2.0 * M_PI * u2;
  return i % 2 ? r * sin(t) : r * cos(t);
}

static accel_generator_state_t state_at(const accel_generator_state_t *st, uint64_t blocks) {
  accel_generator_state_t r = *st;
  const ref_ctr_t c = ref_add(st->counter, blocks);
  memcpy(r.counter, c.v, sizeof r.counter);
  return r;
}

/* ---------------------------------------------------------------------------------------------
 * Shared pieces
 * ------------------------------------------------------------------------------------------- */

/* A generator, a guarded state block (device) and a guarded word buffer (device). */
typedef struct rng_fix {
  accel_generator_t *gen;
  cts_buf_t state, words;
  size_t nwords;
} rng_fix_t;

static void fix_free(cts_ctx_t *ctx, rng_fix_t *f) {
  if (f->gen) (void)accel_generator_release(f->gen);
  if (f->state.base) cts_dev_free(ctx, &f->state);
  if (f->words.base) cts_dev_free(ctx, &f->words);
}

static accel_status_t fix_make(cts_ctx_t *ctx, rng_fix_t *f, uint64_t seed, size_t nwords) {
  memset(f, 0, sizeof *f);
  f->nwords = nwords;
  accel_status_t s = accel_generator_create(ctx->dev, seed, &f->gen);
  if (s == ACCEL_OK) s = cts_dev_alloc(ctx, sizeof(accel_generator_state_t), KC_GUARD, &f->state);
  if (s == ACCEL_OK) s = cts_dev_alloc(ctx, nwords * 4 + 4, KC_GUARD, &f->words);
  return s;
}

/* The generator's state now (through get_state on the default stream). */
static accel_status_t fix_state(cts_ctx_t *ctx, rng_fix_t *f, accel_generator_state_t *out) {
  accel_stream_t *s = NULL;
  accel_status_t st = accel_stream_default(ctx->dev, &s);
  if (st == ACCEL_OK) st = accel_generator_get_state(s, f->gen, f->state.data);
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  if (st == ACCEL_OK) st = cts_download(ctx, out, f->state.data, sizeof *out);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Known answers and the raw stream
 * ------------------------------------------------------------------------------------------- */

/* Random123 (github.com/DEShawResearch/random123, tests/kat_vectors, the three philox4x32 10
 * lines): counter, key, the block. */
static const struct {
  uint32_t ctr[4], key[2], out[4];
} kKat[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}};

typedef struct kat_job {
  rng_fix_t *f;
  int set; /* set the state from f->state first */
} kat_job_t;

static accel_status_t kat_body(accel_stream_t *s, void *user) {
  kat_job_t *j = user;
  accel_status_t st = ACCEL_OK;
  if (j->set) st = accel_generator_set_state(s, j->f->gen, j->f->state.data);
  if (st == ACCEL_OK) st = accel_generator_raw(s, j->f->gen, j->f->words.data, 4);
  return st;
}

CTS_CASE(random_philox_known_answers, CTS_TAG_KERNELS) {
  /* the reference itself first: a wrong reference would excuse a wrong kernel */
  for (size_t k = 0; k < sizeof kKat / sizeof kKat[0]; ++k) {
    ref_ctr_t c;
    memcpy(c.v, kKat[k].ctr, sizeof c.v);
    CTS_CHECK(memcmp(ref_philox(c, kKat[k].key).v, kKat[k].out, 16) == 0,
              "host Philox misses known answer %zu", k);
  }
  for (size_t k = 0; k < sizeof kKat / sizeof kKat[0]; ++k) {
    rng_fix_t f;
    accel_status_t s = fix_make(ctx, &f, 0, 4);
    kat_job_t j = {&f, k > 0};
    accel_generator_state_t st = {{kKat[k].key[0], kKat[k].key[1]},
                                  {kKat[k].ctr[0], kKat[k].ctr[1], kKat[k].ctr[2], kKat[k].ctr[3]}};
    uint32_t got[4] = {0};
    if (s == ACCEL_OK) s = cts_upload(ctx, f.state.data, &st, sizeof st);
    if (s == ACCEL_OK) s = cts_exec(ctx, kat_body, &j, 1);
    if (s == ACCEL_OK) s = cts_download(ctx, got, f.words.data, sizeof got);
    const int guards = f.words.base && cts_dev_guard_ok(ctx, &f.words);
    fix_free(ctx, &f);
    CTS_OK(s);
    CTS_CHECK(guards, "guard bytes around the words were overwritten");
    CTS_CHECK(memcmp(got, kKat[k].out, sizeof got) == 0,
              "known answer %zu: got %08x %08x %08x %08x", k, got[0], got[1], got[2], got[3]);
  }
  return CTS_PASS;
}

/* Two raw calls of n1 and n2 words per run of the body (out1, out2: the words buffer split). */
typedef struct raw_job {
  rng_fix_t *f;
  size_t n1, n2;
} raw_job_t;

static accel_status_t raw_body(accel_stream_t *s, void *user) {
  raw_job_t *j = user;
  uint32_t *w = j->f->words.data;
  accel_status_t st = accel_generator_raw(s, j->f->gen, w, j->n1);
  if (st == ACCEL_OK) st = accel_generator_raw(s, j->f->gen, w + j->n1, j->n2);
  return st;
}

/* n1 words then n2 words, the body run `runs` times (replayed in graph mode), from `start`:
 * the last run's words are the blocks after the earlier runs', and the counter ends past all. */
static cts_result_t raw_check(cts_ctx_t *ctx, const accel_generator_state_t *start, size_t n1,
                              size_t n2, int runs) {
  rng_fix_t f;
  raw_job_t j = {&f, n1, n2};
  accel_status_t s = fix_make(ctx, &f, 0, n1 + n2);
  uint32_t *got = malloc((n1 + n2) * 4 + 4);
  accel_generator_state_t end = {{0}, {0}};
  if (s == ACCEL_OK && !got) s = ACCEL_ERROR_OUT_OF_MEMORY;
  if (s == ACCEL_OK) s = cts_upload(ctx, f.state.data, start, sizeof *start);
  accel_stream_t *def = NULL;
  if (s == ACCEL_OK) s = accel_stream_default(ctx->dev, &def);
  if (s == ACCEL_OK) s = accel_generator_set_state(def, f.gen, f.state.data);
  if (s == ACCEL_OK) s = accel_stream_synchronize(def);
  if (s == ACCEL_OK) s = cts_exec(ctx, raw_body, &j, runs);
  if (s == ACCEL_OK) s = cts_download(ctx, got, f.words.data, (n1 + n2) * 4);
  if (s == ACCEL_OK) s = fix_state(ctx, &f, &end);
  const int guards = s == ACCEL_OK && cts_dev_guard_ok(ctx, &f.words);
  fix_free(ctx, &f);
  if (s != ACCEL_OK) free(got);
  CTS_OK(s);
  CTS_CHECK(guards, "guard bytes around the words were overwritten");
  const uint64_t b1 = (n1 + 3) / 4, b2 = (n2 + 3) / 4, per_run = b1 + b2;
  const uint64_t base = per_run * (uint64_t)(runs - 1);
  for (size_t i = 0; i < n1 + n2; ++i) {
    const uint64_t d = i < n1 ? base + i / 4 : base + b1 + (i - n1) / 4;
    const uint32_t want = ref_word(start, d, (unsigned)((i < n1 ? i : i - n1) % 4));
    if (got[i] != want) {
      const uint32_t g = got[i];
      free(got);
      return cts_fail(ctx, __FILE__, __LINE__, "word %zu of run %d: %08x, want %08x", i, runs, g,
                      want);
    }
  }
  free(got);
  const accel_generator_state_t want_end = state_at(start, per_run * (uint64_t)runs);
  CTS_CHECK(memcmp(&end, &want_end, sizeof end) == 0,
            "counter after %d runs: %08x %08x %08x %08x, want %08x %08x %08x %08x", runs,
            end.counter[0], end.counter[1], end.counter[2], end.counter[3],
            want_end.counter[0], want_end.counter[1], want_end.counter[2], want_end.counter[3]);
  return CTS_PASS;
}

CTS_CASE(random_raw_stream_and_advance, CTS_TAG_KERNELS) {
  const accel_generator_state_t seeded = {{0x89abcdefu, 0x01234567u}, {0, 0, 0, 0}};
  /* one chunk and a bit, odd lengths: the last block's unused words are not written */
  cts_result_t r = raw_check(ctx, &seeded, KC_CHUNK + 7, 5, 1);
  /* replays: each run draws after the previous one */
  if (r == CTS_PASS) r = raw_check(ctx, &seeded, 1001, 3, 3);
  /* the carry from word 1 into word 2 and from word 2 into word 3 */
  const accel_generator_state_t carry1 = {{1, 2}, {0xfffffffeu, 0xffffffffu, 7, 9}};
  if (r == CTS_PASS) r = raw_check(ctx, &carry1, 16, 9, 2);
  const accel_generator_state_t carry2 = {{3, 4}, {0xfffffffdu, 0xffffffffu, 0xffffffffu, 9}};
  if (r == CTS_PASS) r = raw_check(ctx, &carry2, 20, 0, 1);
  return r;
}

/* ---------------------------------------------------------------------------------------------
 * Uniform, normal, dropout
 * ------------------------------------------------------------------------------------------- */

static const size_t kRandSizes[] = {1, 3, 0, 255, 257, KC_CHUNK + 1, 4099};
#define NRAND (sizeof kRandSizes / sizeof kRandSizes[0])

/* Global chunk index of element i of tensor t in a call over L's tensors. */
static uint64_t chunk_of(const kc_list_t *L, size_t t, size_t i) {
  uint64_t c = 0;
  for (size_t k = 0; k < t; ++k) c += (L->t[k].numel + KC_CHUNK - 1) / KC_CHUNK;
  return c + i / KC_CHUNK;
}

static uint64_t total_chunks(const kc_list_t *L) { return chunk_of(L, L->n, 0); }

typedef struct dist_job {
  rng_fix_t *f;
  kc_list_t *L, *dst;
  int normal; /* 0 uniform, 1 normal, 2 dropout (L -> dst) */
  float a, b;
} dist_job_t;

static accel_status_t dist_body(accel_stream_t *s, void *user) {
  dist_job_t *j = user;
  if (j->normal == 2) return accel_dropout(s, j->f->gen, j->L->t, j->dst->t, j->L->n, j->a);
  return j->normal ? accel_rand_normal(s, j->f->gen, j->L->t, j->L->n, j->a, j->b)
                   : accel_rand_uniform(s, j->f->gen, j->L->t, j->L->n, j->a, j->b);
}

typedef struct dist_want {
  accel_generator_state_t st;
  float a, b;
  const kc_list_t *src; /* dropout: the input (host copies hold it) */
} dist_want_t;

static uint32_t want_uniform(const kc_list_t *L, size_t t, size_t i, const void *user) {
  const dist_want_t *w = user;
  const float u = ref_u01(ref_elem_word(&w->st, chunk_of(L, t, i), i % KC_CHUNK));
  return kc_ref_narrow(w->a + w->b * u, L->dtype);
}

static uint32_t want_dropout(const kc_list_t *L, size_t t, size_t i, const void *user) {
  const dist_want_t *w = user;
  const float u = ref_u01(ref_elem_word(&w->st, chunk_of(L, t, i), i % KC_CHUNK));
  const float x = kc_val(w->src->host[t], i, L->dtype);
  return kc_ref_narrow(u >= w->a ? x * w->b : 0.0f, L->dtype);
}

/* Normal: each element within a few fp32 rounding errors of mean + std * z (z in double). */
static cts_result_t check_normal(cts_ctx_t *ctx, kc_list_t *L, const dist_want_t *w) {
  for (size_t t = 0; t < L->n; ++t) {
    const size_t numel = L->t[t].numel;
    void *got = malloc(numel * kc_esz(L->dtype) + 4);
    CTS_CHECK(got && kc_pull(ctx, L, t, got), "tensor %zu: download or guard bytes", t);
    for (size_t i = 0; i < numel; ++i) {
      const double z = ref_normal(&w->st, chunk_of(L, t, i), i % KC_CHUNK);
      const double want = (double)w->a + (double)w->b * z, g = kc_val(got, i, L->dtype);
      const double rel = L->dtype == ACCEL_F32 ? 4e-6 : L->dtype == ACCEL_F16 ? 2e-3 : 1.6e-2;
      if (!(fabs(g - want) <= rel * (1.0 + fabs(want)))) {
        free(got);
        return cts_fail(ctx, __FILE__, __LINE__, "%s tensor %zu element %zu: %.9g, want %.9g",
                        accel_dtype_name(L->dtype), t, i, g, want);
      }
    }
    free(got);
  }
  return CTS_PASS;
}

/* One distribution over a list of every size in dtype dt, checked and the counter's advance. */
static cts_result_t dist_case(cts_ctx_t *ctx, int kind, accel_dtype_t dt, float a, float b) {
  rng_fix_t f;
  kc_list_t L = {0}, D = {0};
  accel_status_t s = fix_make(ctx, &f, 0x5eed0000u + (uint64_t)kind * 16 + dt, 4);
  if (s == ACCEL_OK) s = kc_make(ctx, &L, NRAND, kRandSizes, NRAND, dt, 8.0f, 71);
  if (s == ACCEL_OK && kind == 2) s = kc_make(ctx, &D, NRAND, kRandSizes, NRAND, dt, 1.0f, 72);
  dist_want_t w = {{{0}, {0}}, a, kind == 2 ? (a < 1.0f ? 1.0f / (1.0f - a) : 0.0f)
                                            : kind == 0 ? b - a : b, &L};
  accel_generator_state_t end = {{0}, {0}};
  if (s == ACCEL_OK) s = fix_state(ctx, &f, &w.st);
  dist_job_t j = {&f, &L, &D, kind, a, b};
  if (s == ACCEL_OK) s = cts_exec(ctx, dist_body, &j, 1);
  if (s == ACCEL_OK) s = fix_state(ctx, &f, &end);
  cts_result_t r = CTS_PASS;
  if (s == ACCEL_OK) {
    if (kind == 0) r = kc_expect(ctx, &L, want_uniform, &w, "rand_uniform");
    else if (kind == 1) r = check_normal(ctx, &L, &w);
    else r = kc_expect(ctx, &D, want_dropout, &w, "dropout");
  }
  const accel_generator_state_t want_end = state_at(&w.st, total_chunks(&L) * BLOCKS_PER_CHUNK);
  kc_free(ctx, &L);
  kc_free(ctx, &D);
  fix_free(ctx, &f);
  CTS_OK(s);
  if (r != CTS_PASS) return r;
  CTS_CHECK(memcmp(&end, &want_end, sizeof end) == 0,
            "the counter advanced to %08x %08x, want %08x %08x (a block range per chunk)",
            end.counter[0], end.counter[1], want_end.counter[0], want_end.counter[1]);
  return CTS_PASS;
}

CTS_CASE(random_uniform_normal_dropout, CTS_TAG_KERNELS) {
  static const accel_dtype_t dts[] = {ACCEL_F32, ACCEL_F16, ACCEL_BF16};
  for (size_t d = 0; d < 3; ++d) {
    cts_result_t r = dist_case(ctx, 0, dts[d], -2.0f, 3.0f);
    if (r == CTS_PASS) r = dist_case(ctx, 1, dts[d], 0.5f, 2.0f);
    if (r == CTS_PASS) r = dist_case(ctx, 2, dts[d], 0.25f, 0.0f);
    if (r == CTS_PASS) r = dist_case(ctx, 2, dts[d], 0.0f, 0.0f); /* keeps everything */
    if (r == CTS_PASS) r = dist_case(ctx, 2, dts[d], 1.0f, 0.0f); /* drops everything */
    if (r != CTS_PASS) return r;
  }
  return CTS_PASS;
}

/* ---------------------------------------------------------------------------------------------
 * Kolmogorov-Smirnov over 10^7 samples
 * ------------------------------------------------------------------------------------------- */

/* Sorts v[0..n) ascending (no NaN): an LSD radix sort of the order-preserving keys of the
 * float bits, 8 bits a pass (qsort took seconds for 10^7 floats under valgrind and load). */
static int sort_floats(float *v, size_t n) {
  uint32_t *a = malloc(n * 4), *b = malloc(n * 4);
  if (!a || !b) {
    free(a);
    free(b);
    return 0;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = kc_f32_bits(v[i]);
    a[i] = u ^ ((u >> 31) ? 0xffffffffu : 0x80000000u);
  }
  for (unsigned shift = 0; shift < 32; shift += 8) {
    size_t count[257] = {0};
    for (size_t i = 0; i < n; ++i) ++count[((a[i] >> shift) & 0xffu) + 1];
    for (unsigned k = 0; k < 256; ++k) count[k + 1] += count[k];
    for (size_t i = 0; i < n; ++i) b[count[(a[i] >> shift) & 0xffu]++] = a[i];
    uint32_t *t = a;
    a = b;
    b = t;
  }
  for (size_t i = 0; i < n; ++i)
    v[i] = kc_f32_from_bits(a[i] ^ ((a[i] >> 31) ? 0x80000000u : 0xffffffffu));
  free(a);
  free(b);
  return 1;
}

static double cdf_uniform(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }
static double cdf_normal(double x) { return 0.5 * erfc(-x / M_SQRT2); }

/* The KS statistic D of sorted v against cdf. */
static double ks_stat(const float *v, size_t n, double (*cdf)(double)) {
  double d = 0;
  for (size_t i = 0; i < n; ++i) {
    const double c = cdf(v[i]);
    const double lo = c - (double)i / n, hi = (double)(i + 1) / n - c;
    if (lo > d) d = lo;
    if (hi > d) d = hi;
  }
  return d;
}

typedef struct ks_job {
  rng_fix_t *f;
  accel_tensor_t t;
  int normal;
} ks_job_t;

static accel_status_t ks_body(accel_stream_t *s, void *user) {
  ks_job_t *j = user;
  return j->normal ? accel_rand_normal(s, j->f->gen, &j->t, 1, 0.0f, 1.0f)
                   : accel_rand_uniform(s, j->f->gen, &j->t, 1, 0.0f, 1.0f);
}

CTS_CASE(random_kolmogorov_smirnov, CTS_TAG_KERNELS) {
  const size_t n = 10000000;
  /* the 0.1% critical value of D is 1.949 / sqrt(n) */
  const double crit = 1.949 / sqrt((double)n);
  for (int normal = 0; normal < 2; ++normal) {
    rng_fix_t f;
    cts_buf_t buf;
    memset(&buf, 0, sizeof buf);
    accel_status_t s = fix_make(ctx, &f, 20261127u + (uint64_t)normal, 4);
    if (s == ACCEL_OK) s = cts_dev_alloc(ctx, n * sizeof(float), KC_GUARD, &buf);
    ks_job_t j = {&f, {buf.data, n, ACCEL_F32}, normal};
    if (s == ACCEL_OK) s = cts_exec(ctx, ks_body, &j, 1);
    float *v = malloc(n * sizeof *v);
    if (s == ACCEL_OK && !v) s = ACCEL_ERROR_OUT_OF_MEMORY;
    if (s == ACCEL_OK) s = cts_download(ctx, v, buf.data, n * sizeof *v);
    const int guards = s == ACCEL_OK && cts_dev_guard_ok(ctx, &buf);
    if (buf.base) cts_dev_free(ctx, &buf);
    fix_free(ctx, &f);
    if (s != ACCEL_OK) free(v);
    CTS_OK(s);
    const int sorted = sort_floats(v, n);
    const double d = ks_stat(v, n, normal ? cdf_normal : cdf_uniform);
    free(v);
    CTS_CHECK(sorted, "out of host memory");
    CTS_CHECK(guards, "guard bytes around the samples were overwritten");
    CTS_CHECK(d < crit, "%s: KS statistic %.3g over %zu samples exceeds %.3g (p < 0.001)",
              normal ? "normal" : "uniform", d, n, crit);
    if (ctx->verbose)
      printf("  %s: D = %.3g (critical %.3g)\n", normal ? "normal" : "uniform", d, crit);
  }
  return CTS_PASS;
}

/* ---------------------------------------------------------------------------------------------
 * 1000 runs of a dropout: captured and replayed 1000 times in graph mode, 1000 eager calls in
 * eager mode, queued in lazy mode; each must equal the reference sequence. Every run folds its
 * output into h = -h + dropout(x) (exact: x holds small integers, p = 1/2 scales by 2), so the
 * final h depends on every run's mask, and the counter on every run's advance.
 * ------------------------------------------------------------------------------------------- */

#define REPLAYS 1000
#define DROP_N 4099

typedef struct replay_job {
  rng_fix_t *f;
  kc_list_t *x, *y, *h;
  kc_scalars_t *minus_one;
} replay_job_t;

static accel_status_t replay_body(accel_stream_t *s, void *user) {
  replay_job_t *j = user;
  accel_status_t st = accel_dropout(s, j->f->gen, j->x->t, j->y->t, 1, 0.5f);
  if (st == ACCEL_OK) st = accel_scale(s, j->h->t, 1, j->minus_one->dev);
  if (st == ACCEL_OK) st = accel_update_hp_grads(s, j->y->t, j->h->t, 1, 0);
  return st;
}

CTS_CASE(random_dropout_replays_equal_eager, CTS_TAG_KERNELS) {
  rng_fix_t f;
  kc_list_t x = {0}, y = {0}, h = {0};
  kc_scalars_t m1 = {0};
  const size_t sizes[1] = {DROP_N};
  const float minus_one = -1.0f;
  accel_status_t s = fix_make(ctx, &f, 0xd20f00du, 4);
  if (s == ACCEL_OK) s = kc_make(ctx, &x, 1, sizes, 1, ACCEL_F32, 8.0f, 81);
  if (s == ACCEL_OK) s = kc_make(ctx, &y, 1, sizes, 1, ACCEL_F32, 1.0f, 82);
  if (s == ACCEL_OK) s = kc_make(ctx, &h, 1, sizes, 1, ACCEL_F32, 0.0f, 83);
  if (s == ACCEL_OK) s = kc_scalars(ctx, &m1, &minus_one, sizeof minus_one);
  float *xv = x.host ? x.host[0] : NULL;
  for (size_t i = 0; s == ACCEL_OK && i < DROP_N; ++i) xv[i] = rintf(xv[i]); /* integers */
  if (s == ACCEL_OK) s = kc_push(ctx, &x, 0);
  accel_generator_state_t st0 = {{0}, {0}}, end = {{0}, {0}};
  if (s == ACCEL_OK) s = fix_state(ctx, &f, &st0);
  replay_job_t j = {&f, &x, &y, &h, &m1};
  if (s == ACCEL_OK) s = cts_exec(ctx, replay_body, &j, REPLAYS);
  if (s == ACCEL_OK) s = fix_state(ctx, &f, &end);
  float *got = malloc(DROP_N * 4 + 4), *want = calloc(DROP_N, 4);
  if (s == ACCEL_OK && (!got || !want || !kc_pull(ctx, &h, 0, got))) s = ACCEL_ERROR_STATE;
  for (uint64_t k = 0; s == ACCEL_OK && k < REPLAYS; ++k)
    for (size_t i = 0; i < DROP_N; ++i) {
      const float u = ref_u01(ref_elem_word(&st0, k, i)); /* run k: its one chunk */
      want[i] = -want[i] + (u >= 0.5f ? xv[i] * 2.0f : 0.0f);
    }
  const int same = s == ACCEL_OK && memcmp(got, want, DROP_N * 4) == 0;
  size_t bad = 0;
  while (s == ACCEL_OK && !same && bad < DROP_N && got[bad] == want[bad]) ++bad;
  const float gb = got && bad < DROP_N ? got[bad] : 0.0f, wb = want ? want[bad % DROP_N] : 0.0f;
  free(got);
  free(want);
  kc_free(ctx, &x);
  kc_free(ctx, &y);
  kc_free(ctx, &h);
  if (m1.buf.base) cts_dev_free(ctx, &m1.buf);
  fix_free(ctx, &f);
  CTS_OK(s);
  CTS_CHECK(same, "after %d runs element %zu folds to %g, the reference sequence to %g", REPLAYS,
            bad, (double)gb, (double)wb);
  const accel_generator_state_t want_end = state_at(&st0, (uint64_t)REPLAYS * BLOCKS_PER_CHUNK);
  CTS_CHECK(memcmp(&end, &want_end, sizeof end) == 0, "the counter did not advance %d times",
            REPLAYS);
  return CTS_PASS;
}

/* ---------------------------------------------------------------------------------------------
 * Save and restore (stream-ordered, captured in graph mode)
 * ------------------------------------------------------------------------------------------- */

typedef struct save_job {
  rng_fix_t *f;
  kc_list_t *a, *b, *c;
} save_job_t;

static accel_status_t save_body(accel_stream_t *s, void *user) {
  save_job_t *j = user;
  accel_status_t st = accel_generator_get_state(s, j->f->gen, j->f->state.data);
  if (st == ACCEL_OK) st = accel_rand_normal(s, j->f->gen, j->a->t, j->a->n, 0.0f, 1.0f);
  if (st == ACCEL_OK) st = accel_generator_set_state(s, j->f->gen, j->f->state.data);
  if (st == ACCEL_OK) st = accel_rand_normal(s, j->f->gen, j->b->t, j->b->n, 0.0f, 1.0f);
  if (st == ACCEL_OK) st = accel_rand_normal(s, j->f->gen, j->c->t, j->c->n, 0.0f, 1.0f);
  return st;
}

/* 1 when tensors t of A and B hold the same bits. */
static int same_bits(cts_ctx_t *ctx, kc_list_t *A, kc_list_t *B, size_t t) {
  const size_t bytes = A->t[t].numel * kc_esz(A->dtype);
  void *a = malloc(bytes + 4), *b = malloc(bytes + 4);
  const int same = a && b && kc_pull(ctx, A, t, a) && kc_pull(ctx, B, t, b) &&
                   memcmp(a, b, bytes) == 0;
  free(a);
  free(b);
  return same;
}

CTS_CASE(random_state_save_restore, CTS_TAG_KERNELS) {
  rng_fix_t f;
  kc_list_t a = {0}, b = {0}, c = {0};
  const size_t sizes[2] = {1000, KC_CHUNK + 3};
  accel_status_t s = fix_make(ctx, &f, 7, 4);
  if (s == ACCEL_OK) s = kc_make(ctx, &a, 2, sizes, 2, ACCEL_BF16, 1.0f, 91);
  if (s == ACCEL_OK) s = kc_make(ctx, &b, 2, sizes, 2, ACCEL_BF16, 1.0f, 92);
  if (s == ACCEL_OK) s = kc_make(ctx, &c, 2, sizes, 2, ACCEL_BF16, 1.0f, 93);
  save_job_t j = {&f, &a, &b, &c};
  if (s == ACCEL_OK) s = cts_exec(ctx, save_body, &j, 2);
  const int ab = s == ACCEL_OK && same_bits(ctx, &a, &b, 0) && same_bits(ctx, &a, &b, 1);
  const int ac = s == ACCEL_OK && same_bits(ctx, &a, &c, 1);
  kc_free(ctx, &a);
  kc_free(ctx, &b);
  kc_free(ctx, &c);
  fix_free(ctx, &f);
  CTS_OK(s);
  CTS_CHECK(ab, "a draw after restoring the saved state differs from the first draw");
  CTS_CHECK(!ac, "the draw after the restored one repeated it (the counter did not advance)");
  return CTS_PASS;
}

/* ---------------------------------------------------------------------------------------------
 * Forks on two streams
 * ------------------------------------------------------------------------------------------- */

#define FORK_WORDS 4096

static int cmp_block(const void *a, const void *b) { return memcmp(a, b, 16); }

/* Forks two children of a root whose key was set in stream order just before, draws from all
 * three at once (the children on two streams of their own), and checks each against the
 * reference at its own counter, with no Philox block in common. Eager in every mode (a fork
 * allocates: not legal in a capture). */
CTS_CASE(random_fork_streams_do_not_overlap, CTS_TAG_KERNELS) {
  rng_fix_t root;
  accel_generator_t *kid[2] = {NULL, NULL};
  accel_stream_t *sa = NULL, *sb = NULL, *def = NULL;
  cts_buf_t out[2];
  memset(out, 0, sizeof out);
  const accel_generator_state_t set = {{0xabcdef01u, 0x2345678u}, {5, 0, 0, 0}};
  accel_status_t s = fix_make(ctx, &root, 1, FORK_WORDS);
  if (s == ACCEL_OK) s = accel_stream_default(ctx->dev, &def);
  if (s == ACCEL_OK) s = accel_stream_create(ctx->dev, &sa);
  if (s == ACCEL_OK) s = accel_stream_create(ctx->dev, &sb);
  for (int k = 0; k < 2 && s == ACCEL_OK; ++k)
    s = cts_dev_alloc(ctx, FORK_WORDS * 4, KC_GUARD, &out[k]);
  if (s == ACCEL_OK) s = cts_upload(ctx, root.state.data, &set, sizeof set);
  if (s == ACCEL_OK) s = accel_generator_set_state(def, root.gen, root.state.data);
  if (s == ACCEL_OK) s = accel_generator_fork(def, root.gen, &kid[0]);
  if (s == ACCEL_OK) s = accel_generator_fork(def, kid[0], &kid[1]); /* a grandchild */
  if (s == ACCEL_OK) s = accel_stream_synchronize(def);
  if (s == ACCEL_OK) s = accel_generator_raw(sa, kid[0], out[0].data, FORK_WORDS);
  if (s == ACCEL_OK) s = accel_generator_raw(sb, kid[1], out[1].data, FORK_WORDS);
  if (s == ACCEL_OK) s = accel_generator_raw(def, root.gen, root.words.data, FORK_WORDS);
  if (s == ACCEL_OK) s = accel_stream_synchronize(sa);
  if (s == ACCEL_OK) s = accel_stream_synchronize(sb);
  if (s == ACCEL_OK) s = accel_stream_synchronize(def);
  uint32_t *w = malloc(3 * FORK_WORDS * 4);
  if (s == ACCEL_OK && !w) s = ACCEL_ERROR_OUT_OF_MEMORY;
  if (s == ACCEL_OK) s = cts_download(ctx, w, root.words.data, FORK_WORDS * 4);
  for (int k = 0; k < 2 && s == ACCEL_OK; ++k)
    s = cts_download(ctx, w + (k + 1) * FORK_WORDS, out[k].data, FORK_WORDS * 4);
  const int guards =
      s == ACCEL_OK && cts_dev_guard_ok(ctx, &out[0]) && cts_dev_guard_ok(ctx, &out[1]);
  for (int k = 0; k < 2; ++k) {
    if (kid[k]) (void)accel_generator_release(kid[k]);
    if (out[k].base) cts_dev_free(ctx, &out[k]);
  }
  if (sa) (void)accel_stream_destroy(sa);
  if (sb) (void)accel_stream_destroy(sb);
  fix_free(ctx, &root);
  if (s != ACCEL_OK) free(w);
  CTS_OK(s);
  CTS_CHECK(guards, "guard bytes around a child's words were overwritten");
  /* root at its set counter; the children at streams 1 and 2 of the root's key */
  const accel_generator_state_t starts[3] = {
      set, {{set.key[0], set.key[1]}, {0, 0, 0, 1}}, {{set.key[0], set.key[1]}, {0, 0, 0, 2}}};
  for (int g = 0; g < 3; ++g)
    for (size_t i = 0; i < FORK_WORDS; ++i)
      if (w[g * FORK_WORDS + i] != ref_word(&starts[g], i / 4, (unsigned)(i % 4))) {
        free(w);
        return cts_fail(ctx, __FILE__, __LINE__, "generator %d word %zu is not its stream's", g,
                        i);
      }
  qsort(w, 3 * FORK_WORDS / 4, 16, cmp_block);
  int overlap = 0;
  for (size_t b = 1; b < 3 * FORK_WORDS / 4; ++b)
    overlap |= memcmp(w + 4 * b - 4, w + 4 * b, 16) == 0;
  free(w);
  CTS_CHECK(!overlap, "two generators drew the same Philox block");
  return CTS_PASS;
}

/* ---------------------------------------------------------------------------------------------
 * Bad input
 * ------------------------------------------------------------------------------------------- */

CTS_CASE(random_bad_input, CTS_TAG_KERNELS) {
  rng_fix_t f;
  accel_stream_t *s = NULL;
  accel_generator_t *dead = NULL, *g2 = NULL;
  CTS_OK(fix_make(ctx, &f, 3, 64));
  CTS_OK(accel_stream_default(ctx->dev, &s));
  CTS_OK(accel_generator_create(ctx->dev, 4, &dead));
  CTS_OK(accel_generator_release(dead));
  const accel_tensor_t t = {f.words.data, 16, ACCEL_F32};
  const accel_tensor_t bad_dt = {f.words.data, 16, (accel_dtype_t)7};
  const accel_tensor_t half = {f.words.data, 16, ACCEL_F16};
  uint32_t *w = f.words.data;
  const accel_status_t INV = ACCEL_ERROR_INVALID_ARGUMENT, HND = ACCEL_ERROR_INVALID_HANDLE;
  CTS_STATUS(accel_generator_create(NULL, 1, &g2), HND);
  CTS_STATUS(accel_generator_create(ctx->dev, 1, NULL), INV);
  CTS_STATUS(accel_generator_release(NULL), HND);
  CTS_STATUS(accel_generator_release(dead), HND); /* a second release */
  CTS_STATUS(accel_generator_raw(NULL, f.gen, w, 4), HND);
  CTS_STATUS(accel_generator_raw(s, NULL, w, 4), HND);
  CTS_STATUS(accel_generator_raw(s, dead, w, 4), HND);
  CTS_STATUS(accel_generator_raw(s, f.gen, NULL, 4), INV);
  CTS_STATUS(accel_generator_raw(s, f.gen, w, SIZE_MAX / 2), INV); /* n * 4 overflows */
  CTS_STATUS(accel_generator_raw(s, f.gen, w, 1u << 20), INV);     /* past the buffer */
  CTS_STATUS(accel_generator_raw(s, f.gen, (uint32_t *)((char *)w + 2), 4), INV);
  CTS_STATUS(accel_rand_uniform(s, dead, &t, 1, 0.0f, 1.0f), HND);
  CTS_STATUS(accel_rand_uniform(s, f.gen, &bad_dt, 1, 0.0f, 1.0f), INV);
  CTS_STATUS(accel_rand_uniform(s, f.gen, NULL, 1, 0.0f, 1.0f), INV);
  CTS_STATUS(accel_rand_uniform(s, f.gen, &t, 1, 1.0f, 0.0f), INV);
  CTS_STATUS(accel_rand_uniform(s, f.gen, &t, 1, NAN, 1.0f), INV);
  CTS_STATUS(accel_rand_uniform(s, f.gen, &t, 1, -3e38f, 3e38f), INV); /* high - low = Inf */
  CTS_STATUS(accel_rand_normal(s, f.gen, &t, 1, 0.0f, -1.0f), INV);
  CTS_STATUS(accel_rand_normal(s, f.gen, &t, 1, INFINITY, 1.0f), INV);
  CTS_STATUS(accel_rand_normal(s, f.gen, &bad_dt, 1, 0.0f, 1.0f), INV);
  CTS_STATUS(accel_dropout(s, f.gen, &t, &t, 1, 1.5f), INV);
  CTS_STATUS(accel_dropout(s, f.gen, &t, &t, 1, NAN), INV);
  CTS_STATUS(accel_dropout(s, f.gen, &t, &half, 1, 0.5f), INV); /* dst dtype is not src's */
  CTS_STATUS(accel_dropout(s, dead, &t, &t, 1, 0.5f), HND);
  CTS_STATUS(accel_generator_get_state(s, f.gen, NULL), INV);
  CTS_STATUS(accel_generator_set_state(s, f.gen, NULL), INV);
  CTS_STATUS(accel_generator_get_state(s, dead, f.state.data), HND);
  CTS_STATUS(accel_generator_set_state(NULL, f.gen, f.state.data), HND);
  CTS_STATUS(accel_generator_fork(s, f.gen, NULL), INV);
  CTS_STATUS(accel_generator_fork(s, dead, &g2), HND);
  /* nothing refused moved the counter */
  accel_generator_state_t st;
  CTS_OK(fix_state(ctx, &f, &st));
  fix_free(ctx, &f);
  CTS_CHECK(st.counter[0] == 0 && st.counter[1] == 0 && st.key[0] == 3,
            "a refused call changed the state (counter %08x, key %08x)", st.counter[0], st.key[0]);
  return CTS_PASS;
}
