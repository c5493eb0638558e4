/*
 * CTS cases for user kernels loaded at run time (accel_module.h), in every mode: a kernel in
 * the dialect over two tensor lists and two device scalars, checked bit for bit against a host
 * fp32 reference after three runs (eager, replays of a captured graph, a lazy queue); a second
 * load of a source compiles nothing (the compiler counted through ACCEL_CC); a source that does
 * not compile reports the compiler's one error at the user's line; rows the run-time reader
 * cannot state, a missing compiler, and bad launches are refused as for built-in kernels. On a
 * backend that does not compile user kernels every case checks that refusal (UNSUPPORTED).
 * The CPU and OpenCL backends both compile them: the same reference bit for bit on both is the
 * "bitwise equal across the two" of docs/KERNELS.md. The compiler counts and the missing
 * compiler are the CPU backend's (ACCEL_CC); elsewhere the count case skips.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "accel/accel_module.h"
#include "cases_module.h"
#include "kc_lists.h"

#define MOD_RUNS 3

/* y = alpha * x + beta * y, x of any float dtype, y F32 (the products rounded to fp32): the
 * source tests/cts/module_axpby.acc, embedded (accel-kc makes the bundle cases_module_bundle.c
 * loads of the same file). Line 6 is the element's statement (module_bad_source_one_error). */
#include "cts_module_axpby.h"
#define kAxpby ((const char *)cts_module_axpby)
#define kAxpbySize (sizeof cts_module_axpby)

/* Loads source; *unsupported = 1 when the backend compiles no user kernels (then the refusal
 * was checked and the case has nothing else to test). */
static accel_status_t mod_load(cts_ctx_t *ctx, const char *source, accel_module_t **m,
                               int *unsupported) {
  accel_status_t st = accel_module_load_source(ctx->dev, source, NULL, m);
  *unsupported = st == ACCEL_ERROR_UNSUPPORTED &&
                 strstr(accel_last_error(), "does not compile user kernels") != NULL;
  return st;
}

#define MOD_LOAD(src, m)                                                          \
  do {                                                                            \
    int unsupported_;                                                             \
    accel_status_t st_ = mod_load(ctx, (src), (m), &unsupported_);                \
    if (unsupported_) return CTS_PASS;                                            \
    CTS_CHECK(st_ == ACCEL_OK, "load: %s: %s", accel_status_name(st_), accel_last_error()); \
  } while (0)

/* The source with a comment no earlier run had (so its first load compiles). */
static char *fresh_source(const char *source) {
  static unsigned serial;
  const size_t len = strlen(source) + 96;
  char *s = malloc(len);
  if (s)
    snprintf(s, len, "/* run %ld.%ld.%u */\n%s", (long)getpid(), (long)time(NULL), ++serial,
             source);
  return s;
}

typedef struct axpby_job {
  const accel_kernel_t *k;
  kc_list_t *x, *y;
  const float *alpha, *beta;
} axpby_job_t;

static accel_status_t body_axpby(accel_stream_t *s, void *user) {
  const axpby_job_t *j = user;
  const accel_tensor_t *lists[] = {j->x->t, j->y->t};
  const void *scalars[] = {j->alpha, j->beta};
  return accel_launch(s, j->k, lists, 2, j->x->n, scalars, 2);
}

typedef struct axpby_ref {
  const kc_list_t *x;
  float alpha, beta;
} axpby_ref_t;

static uint32_t want_axpby(const kc_list_t *L, size_t t, size_t i, const void *user) {
  const axpby_ref_t *r = user;
  volatile float y = kc_val(L->host[t], i, ACCEL_F32); /* fp32 steps, as the kernel's */
  const float x = kc_val(r->x->host[t], i, r->x->dtype);
  for (int k = 0; k < MOD_RUNS; ++k) {
    volatile float ax = r->alpha * x, by = r->beta * y;
    y = ax + by;
  }
  return kc_f32_bits(y);
}

cts_result_t module_axpby_check(cts_ctx_t *ctx, accel_module_t *m) {
  accel_kernel_t *k = NULL;
  CTS_OK(accel_module_get_kernel(m, "my_axpby", &k));
  static const size_t sizes[] = {70000, 1, 4099};
  static const float ab[2] = {0.75f, -1.5f};
  const accel_dtype_t dts[] = {ACCEL_F32, ACCEL_F16, ACCEL_BF16};
  cts_result_t res = CTS_PASS;
  for (size_t d = 0; d < 3 && res == CTS_PASS; ++d) {
    kc_list_t x = {0}, y = {0};
    kc_scalars_t S = {0};
    accel_status_t st = kc_make(ctx, &x, 3, sizes, 3, dts[d], 2.0f, 11 + d);
    if (st == ACCEL_OK) st = kc_make(ctx, &y, 3, sizes, 3, ACCEL_F32, 1.0f, 21 + d);
    if (st == ACCEL_OK) st = kc_scalars(ctx, &S, ab, sizeof ab);
    axpby_job_t j = {k, &x, &y, S.dev, S.dev + 1};
    if (st == ACCEL_OK) st = cts_exec(ctx, body_axpby, &j, MOD_RUNS);
    const axpby_ref_t ref = {&x, ab[0], ab[1]};
    if (st != ACCEL_OK)
      res = cts_fail(ctx, __FILE__, __LINE__, "%s: %s", accel_status_name(st), accel_last_error());
    else
      res = kc_expect(ctx, &y, want_axpby, &ref, accel_dtype_name(dts[d]));
    kc_free(ctx, &x);
    kc_free(ctx, &y);
    if (S.buf.base) cts_dev_free(ctx, &S.buf);
  }
  return res;
}

/* The user kernel over F32, F16 and BF16 x (sizes crossing a chunk), bit for bit. */
CTS_CASE(module_axpby_bits, CTS_TAG_KERNELS) {
  accel_module_t *m = NULL;
  MOD_LOAD(kAxpby, &m);
  const cts_result_t res = module_axpby_check(ctx, m);
  CTS_OK(accel_module_release(m));
  return res;
}

/* A host value (ACC_VALUE): y = 2 * y + value, value passed by pointer after the device
 * scalars (none here) and stored by value in the launch: replays keep the captured value. */
static const char kShift[] =
    "ACC_INLINE void my_shift_elem(acc_idx i, ACC_GPTR(acc_f32) y, acc_f32 v) {\n"
    "  y[i] = 2.0f * y[i] + v;\n"
    "}\n"
    "ACC_KERNEL(my_k_shift, my_shift_params_t, P) {\n"
    "  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);\n"
    "  ACC_FOR_BLOCKS(b, P.num_chunks)\n"
    "  ACC_ELEM_MAP(chunks[b].count, my_shift_elem, ACC_PTR(acc_f32, chunks[b].ptr[0]), "
    "P.value);\n"
    "}\n"
    "ACCEL_KERNEL(MY_SHIFT, my_k_shift, my_shift_params_t, ACC_OP(\"my_shift\", "
    "ACC_TABLE_SHARED),\n"
    "             (ACC_LIST(\"y\", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS)),\n"
    "             (ACC_VALUE(\"value\", ACC_FIELD(value))))\n";

typedef struct shift_job {
  const accel_kernel_t *k;
  kc_list_t *y;
  float value;
} shift_job_t;

static accel_status_t body_shift(accel_stream_t *s, void *user) {
  const shift_job_t *j = user;
  const accel_tensor_t *lists[] = {j->y->t};
  const void *values[] = {&j->value};
  return accel_launch(s, j->k, lists, 1, j->y->n, values, 1);
}

static uint32_t want_shift(const kc_list_t *L, size_t t, size_t i, const void *user) {
  volatile float y = kc_val(L->host[t], i, ACCEL_F32);
  for (int k = 0; k < MOD_RUNS; ++k) y = 2.0f * y + *(const float *)user;
  return kc_f32_bits(y);
}

/* kShift with its ACC_VALUE written as `to`: refused with a message saying `why`. */
static cts_result_t shift_row_refused(cts_ctx_t *ctx, const char *to, const char *why) {
  static const char from[] = "ACC_VALUE(\"value\", ACC_FIELD(value))";
  const char *at = strstr(kShift, from);
  char src[sizeof kShift + 128];
  snprintf(src, sizeof src, "%.*s%s%s", (int)(at - kShift), kShift, to, at + strlen(from));
  accel_module_t *m = NULL;
  CTS_STATUS(accel_module_load_source(ctx->dev, src, NULL, &m), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_CHECK(m == NULL && strstr(accel_last_error(), why), "'%s': %s", to, accel_last_error());
  return CTS_PASS;
}

CTS_CASE(module_host_value, CTS_TAG_KERNELS) {
  accel_module_t *m = NULL;
  MOD_LOAD(kShift, &m);
  cts_result_t bad = shift_row_refused(ctx, "ACC_VALUE(\"value\")", "want ACC_VALUE");
  if (bad == CTS_PASS)
    bad = shift_row_refused(ctx, "ACC_VALUE(\"value\", ACC_FIELD(value)), ACC_SCALAR(\"s\", "
                            "ACC_FIELD(s), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS)",
                            "come after every ACC_SCALAR");
  if (bad != CTS_PASS) {
    accel_module_release(m);
    return bad;
  }
  accel_kernel_t *k = NULL;
  CTS_OK(accel_module_get_kernel(m, "my_shift", &k));
  static const size_t sizes[] = {70000, 3};
  kc_list_t y = {0};
  accel_status_t st = kc_make(ctx, &y, 2, sizes, 2, ACCEL_F32, 1.0f, 41);
  shift_job_t j = {k, &y, 0.3f};
  const accel_tensor_t *lists[] = {y.t};
  const void *none[] = {NULL};
  accel_stream_t *s = NULL;
  if (st == ACCEL_OK) st = accel_stream_default(ctx->dev, &s);
  /* the value is a pointer the call reads: counted, never NULL; nothing launched */
  const int refused = st != ACCEL_OK ||
      (accel_launch(s, k, lists, 1, y.n, none, 0) == ACCEL_ERROR_INVALID_ARGUMENT &&
       strstr(accel_last_error(), "1 values") &&
       accel_launch(s, k, lists, 1, y.n, none, 1) == ACCEL_ERROR_INVALID_ARGUMENT &&
       strstr(accel_last_error(), "is NULL"));
  const char *why = refused ? NULL : accel_last_error();
  if (st == ACCEL_OK && refused) st = cts_exec(ctx, body_shift, &j, MOD_RUNS);
  cts_result_t res = !refused ? cts_fail(ctx, __FILE__, __LINE__, "a bad value accepted: %s", why)
                     : st == ACCEL_OK ? kc_expect(ctx, &y, want_shift, &j.value, "value")
                                      : cts_fail(ctx, __FILE__, __LINE__, "%s: %s",
                                                 accel_status_name(st), accel_last_error());
  kc_free(ctx, &y);
  CTS_OK(accel_module_release(m));
  return res;
}

/* Lines of path (0 when it does not exist): the compiles the wrapper counted. */
static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  int n = 0;
  for (int c; f && (c = fgetc(f)) != EOF;) n += c == '\n';
  if (f) fclose(f);
  return n;
}

/* ACCEL_CC set to a wrapper of cc that counts its runs in dir/count (restore with
 * cc_restore). */
typedef struct cc_wrap {
  char dir[32], script[64], count[64];
  char *saved;
} cc_wrap_t;

static int cc_wrap(cc_wrap_t *w) {
  memset(w, 0, sizeof *w);
  snprintf(w->dir, sizeof w->dir, "/tmp/accel-cts-cc-XXXXXX");
  if (!mkdtemp(w->dir)) return 0;
  snprintf(w->script, sizeof w->script, "%s/cc", w->dir);
  snprintf(w->count, sizeof w->count, "%s/count", w->dir);
  FILE *f = fopen(w->script, "w");
  if (!f) return 0;
  fprintf(f, "#!/bin/sh\necho x >> '%s'\nexec cc \"$@\"\n", w->count);
  if (fclose(f) != 0 || chmod(w->script, 0700) != 0) return 0;
  const char *old = getenv("ACCEL_CC");
  w->saved = old ? strdup(old) : NULL;
  setenv("ACCEL_CC", w->script, 1);
  return 1;
}

static void cc_restore(cc_wrap_t *w) {
  if (w->saved) setenv("ACCEL_CC", w->saved, 1);
  else unsetenv("ACCEL_CC");
  free(w->saved);
  unlink(w->script);
  unlink(w->count);
  rmdir(w->dir);
}

/* 1 on the CPU backend, whose compiler is ACCEL_CC (what the cases below count and remove). */
static int runs_cc(const cts_ctx_t *ctx) { return strcmp(ctx->info.backend, "cpu") == 0; }

/* The first load of a new source compiles once; a second load (another module of the same
 * source) compiles nothing and its kernel runs. */
CTS_CASE(module_second_load_compiles_nothing, CTS_TAG_NONE) {
  accel_module_t *probe = NULL;
  int unsupported = 0;
  if (mod_load(ctx, kAxpby, &probe, &unsupported) == ACCEL_OK) (void)accel_module_release(probe);
  if (unsupported) return CTS_PASS;
  if (!runs_cc(ctx))
    return cts_skip(ctx, "compiles are counted through ACCEL_CC, the CPU backend's compiler");
  cc_wrap_t w;
  CTS_CHECK(cc_wrap(&w), "cannot make the compiler wrapper");
  char *src = fresh_source(kAxpby);
  accel_module_t *m1 = NULL, *m2 = NULL;
  accel_status_t st = src ? accel_module_load_source(ctx->dev, src, NULL, &m1)
                          : ACCEL_ERROR_OUT_OF_MEMORY;
  const int first = count_lines(w.count);
  if (st == ACCEL_OK) st = accel_module_load_source(ctx->dev, src, NULL, &m2);
  const int second = count_lines(w.count);
  cc_restore(&w);
  free(src);
  accel_kernel_t *k = NULL;
  if (st == ACCEL_OK) st = accel_module_get_kernel(m2, "my_axpby", &k);
  if (m1) (void)accel_module_release(m1);
  if (m2) (void)accel_module_release(m2);
  CTS_CHECK(st == ACCEL_OK, "load: %s: %s", accel_status_name(st), accel_last_error());
  CTS_CHECK(first == 1 && second == 1, "compiles: %d after the first load, %d after the second "
            "(want 1 and 1)", first, second);
  return CTS_PASS;
}

/* A one-character typo in a body: ACCEL_ERROR_BACKEND, and the log names one error, at the
 * source's line (6). The module was not made. */
CTS_CASE(module_bad_source_one_error, CTS_TAG_NONE) {
  char *src = malloc(kAxpbySize);
  CTS_CHECK(src, "no memory");
  memcpy(src, kAxpby, kAxpbySize);
  char *at = strstr(src, "y[i] = ax + beta");
  at[8] = 'z'; /* ax -> az */
  accel_module_t *m = NULL;
  int unsupported = 0;
  const accel_status_t st = mod_load(ctx, src, &m, &unsupported);
  free(src);
  if (unsupported) return CTS_PASS;
  CTS_CHECK(st == ACCEL_ERROR_BACKEND && m == NULL, "load -> %s, want ACCEL_ERROR_BACKEND",
            accel_status_name(st));
  const char *log = accel_last_error();
  int errors = 0;
  for (const char *p = log; (p = strstr(p, "error:")); ++p) ++errors;
  /* gcc, clang: "<module>:6:COL: error:"; NVRTC: "<module>(6): error:" */
  CTS_CHECK(errors == 1 && (strstr(log, "<module>:6:") || strstr(log, "<module>(6): error")),
            "want one error at <module>:6, got %d: %s", errors, log);
  return CTS_PASS;
}

/* Rows the run-time reader cannot state, a source without rows, no compiler (CPU: ACCEL_CC). */
CTS_CASE(module_bad_rows_refused, CTS_TAG_NONE) {
  static const struct {
    const char *from, *to, *why;
  } kEdits[] = {
      {"ACC_LIST(\"x\"", "ACC_OPT_LIST(\"x\"", "ACC_OPT_LIST"},
      {"ACC_FIELD(alpha), 4,", "ACC_FIELD(alpha), sizeof(float),", "bytes must be"},
      {"ACC_TABLE_SHARED", "ACC_TABLE_PER_STREAM", "ACC_TABLE_SHARED"},
      {"ACC_NO_ALIAS),\n              ACC_LIST", "ACC_ALIAS(3)),\n              ACC_LIST",
       "aliasing must be"},
      {"ACCEL_KERNEL(MY_AXPBY", "ACCEL_KERNELS(MY_AXPBY", "no ACCEL_KERNEL(...) row"},
  };
  accel_module_t *m = NULL;
  int unsupported = 0;
  (void)mod_load(ctx, "", &m, &unsupported);
  if (unsupported) return CTS_PASS;
  for (size_t e = 0; e < sizeof kEdits / sizeof kEdits[0]; ++e) {
    const char *at = strstr(kAxpby, kEdits[e].from);
    CTS_CHECK(at, "edit %zu does not apply", e);
    char src[kAxpbySize + 64];
    snprintf(src, sizeof src, "%.*s%s%s", (int)(at - kAxpby), kAxpby, kEdits[e].to,
             at + strlen(kEdits[e].from));
    m = NULL;
    CTS_STATUS(accel_module_load_source(ctx->dev, src, NULL, &m), ACCEL_ERROR_INVALID_ARGUMENT);
    CTS_CHECK(m == NULL && strstr(accel_last_error(), kEdits[e].why),
              "edit %zu: the message does not say '%s': %s", e, kEdits[e].why,
              accel_last_error());
    CTS_CHECK(strstr(kEdits[e].to, "KERNELS") || strstr(accel_last_error(), "(line 21)"),
              "edit %zu: the message does not name the row's line 21: %s", e, accel_last_error());
  }
  CTS_STATUS(accel_module_load_source(NULL, kAxpby, NULL, &m), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_module_load_source(ctx->dev, NULL, NULL, &m), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_module_load_source(ctx->dev, kAxpby, NULL, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  if (!runs_cc(ctx)) return CTS_PASS;
  /* no compiler: a new source (a cached one would load without it) */
  char *src = fresh_source(kAxpby);
  const char *old = getenv("ACCEL_CC");
  char *saved = old ? strdup(old) : NULL;
  setenv("ACCEL_CC", "/nonexistent/accel-cts-cc", 1);
  const accel_status_t st = src ? accel_module_load_source(ctx->dev, src, NULL, &m)
                                : ACCEL_ERROR_OUT_OF_MEMORY;
  if (saved) setenv("ACCEL_CC", saved, 1);
  else unsetenv("ACCEL_CC");
  free(saved);
  free(src);
  CTS_CHECK(st == ACCEL_ERROR_UNSUPPORTED && strstr(accel_last_error(), "no C compiler"),
            "no compiler -> %s: %s", accel_status_name(st), accel_last_error());
  return CTS_PASS;
}

/* Bad launches are refused as a built-in kernel's (the row's validation), and released handles
 * are INVALID_HANDLE. */
CTS_CASE(module_bad_launch_refused, CTS_TAG_NONE) {
  accel_module_t *m = NULL;
  MOD_LOAD(kAxpby, &m);
  accel_kernel_t *k = NULL;
  CTS_STATUS(accel_module_get_kernel(m, "my_axpbyy", &k), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_module_get_kernel(m, NULL, &k), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_OK(accel_module_get_kernel(m, "my_axpby", &k));
  static const size_t sizes[] = {100};
  static const float ab[2] = {1.0f, 2.0f};
  kc_list_t x = {0}, y = {0}, h = {0};
  kc_scalars_t S = {0};
  accel_stream_t *s = NULL;
  accel_status_t st = kc_make(ctx, &x, 2, sizes, 1, ACCEL_F32, 1.0f, 1);
  if (st == ACCEL_OK) st = kc_make(ctx, &y, 2, sizes, 1, ACCEL_F32, 1.0f, 2);
  if (st == ACCEL_OK) st = kc_make(ctx, &h, 2, sizes, 1, ACCEL_F16, 1.0f, 3);
  if (st == ACCEL_OK) st = kc_scalars(ctx, &S, ab, sizeof ab);
  if (st == ACCEL_OK) st = accel_stream_default(ctx->dev, &s);
  CTS_OK(st);
  const void *sc[] = {S.dev, S.dev + 1}, *sc_null[] = {S.dev, NULL};
  const accel_tensor_t *ok[] = {x.t, y.t}, *f16_y[] = {x.t, h.t}, *same[] = {y.t, y.t},
                       *null_x[] = {NULL, y.t};
  CTS_STATUS(accel_launch(s, k, ok, 1, 2, sc, 2), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_launch(s, k, ok, 2, 2, sc, 1), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_launch(s, k, NULL, 2, 2, sc, 2), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_launch(s, k, f16_y, 2, 2, sc, 2), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_CHECK(strstr(accel_last_error(), "my_axpby: y[0] must be F32"), "%s", accel_last_error());
  CTS_STATUS(accel_launch(s, k, same, 2, 2, sc, 2), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_CHECK(strstr(accel_last_error(), "overlaps"), "%s", accel_last_error());
  CTS_STATUS(accel_launch(s, k, null_x, 2, 2, sc, 2), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_launch(s, k, ok, 2, 2, sc_null, 2), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_CHECK(strstr(accel_last_error(), "beta_dev is NULL"), "%s", accel_last_error());
  CTS_STATUS(accel_launch(NULL, k, ok, 2, 2, sc, 2), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_launch(s, NULL, ok, 2, 2, sc, 2), ACCEL_ERROR_INVALID_HANDLE);
  CTS_OK(accel_launch(s, k, ok, 2, 2, sc, 2));
  CTS_OK(accel_stream_synchronize(s));
  CTS_OK(accel_module_release(m));
  CTS_STATUS(accel_launch(s, k, ok, 2, 2, sc, 2), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_module_get_kernel(m, "my_axpby", &k), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_module_release(m), ACCEL_ERROR_INVALID_HANDLE);
  kc_free(ctx, &x);
  kc_free(ctx, &y);
  kc_free(ctx, &h);
  cts_dev_free(ctx, &S.buf);
  return CTS_PASS;
}

/* A graph that captured a user kernel keeps replaying after its module's release (the code
 * stays loaded, the kernel's name stays valid): y = 2 x + 0 y twice, then once more. */
CTS_CASE(module_graph_outlives_module, CTS_TAG_NONE) {
  accel_module_t *m = NULL;
  MOD_LOAD(kAxpby, &m);
  accel_kernel_t *k = NULL;
  CTS_OK(accel_module_get_kernel(m, "my_axpby", &k));
  static const size_t sizes[] = {300};
  static const float ab[2] = {2.0f, 0.0f};
  kc_list_t x = {0}, y = {0};
  kc_scalars_t S = {0};
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL;
  accel_status_t st = kc_make(ctx, &x, 1, sizes, 1, ACCEL_F32, 1.0f, 5);
  if (st == ACCEL_OK) st = kc_make(ctx, &y, 1, sizes, 1, ACCEL_F32, 1.0f, 6);
  if (st == ACCEL_OK) st = kc_scalars(ctx, &S, ab, sizeof ab);
  if (st == ACCEL_OK) st = accel_stream_create(ctx->dev, &s);
  if (st == ACCEL_OK) st = accel_graph_create(ctx->dev, &g);
  if (st == ACCEL_OK) st = accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  axpby_job_t j = {k, &x, &y, S.dev, S.dev + 1};
  if (st == ACCEL_OK) st = body_axpby(s, &j);
  if (st == ACCEL_OK) st = accel_graph_capture_end(g);
  if (st == ACCEL_OK) st = accel_module_release(m);
  for (int r = 0; r < 2 && st == ACCEL_OK; ++r) st = accel_graph_replay(g, s);
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  float got[300];
  const int pulled = st == ACCEL_OK && kc_pull(ctx, &y, 0, got);
  int bad = -1;
  for (int i = 0; pulled && i < 300 && bad < 0; ++i)
    if (kc_f32_bits(got[i]) != kc_f32_bits(2.0f * kc_val(x.host[0], (size_t)i, ACCEL_F32)))
      bad = i;
  if (g) (void)accel_graph_release(g);
  if (s) (void)accel_stream_release(s);
  kc_free(ctx, &x);
  kc_free(ctx, &y);
  if (S.buf.base) cts_dev_free(ctx, &S.buf);
  CTS_CHECK(st == ACCEL_OK, "%s: %s", accel_status_name(st), accel_last_error());
  CTS_CHECK(pulled && bad < 0, "y[%d] is not 2 x after the replays (pulled %d)", bad, pulled);
  return CTS_PASS;
}
