/*
 * Branches on a device flag put to use (issue 34, docs/GRAPHS.md "Branches on a device flag"),
 * in every mode through cts_exec, with the fixture and refusal of cases_graph_cond.c
 * (cts_cond.h): on a device whose ACCEL_ATTR_CONDITIONALS is NONE each case checks instead that
 * the calls are UNSUPPORTED.
 *
 * graph_cond_overflow_skip: the mixed-precision step's skip on overflow (docs/KERNELS.md, "The
 * mixed-precision step on the device") written as an IF around an ordinary copy and kernels
 * called without their own skip, against the kernels' built-in skip on other buffers from the
 * same start, bit for bit, for a gradient with an Inf and a finite one. The flag is computed on
 * the device in stream order: accel_step_count adds 1 to a zeroed flag unless found_inf is set.
 *
 * graph_cond_while_halves: a WHILE that halves a value until it is below a threshold, the flag
 * written in the body by a user kernel (accel_module_load_source), against a host loop in fp32:
 * 0 passes, 1, exactly max_iterations, and one that stops at the bound. Where the device
 * compiles no user kernels the case skips, saying why.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "accel/accel_module.h"
#include "cts.h"
#include "cts_cond.h"

/* ---- graph_cond_overflow_skip ------------------------------------------------------------ */

#define SK_N 3                  /* tensors per list */
#define SK_TOTAL (37 + 300 + 5) /* their elements */
#define SK_REPLAYS 2            /* steps per run: the flag is computed again at each */
#define SK_STEP0 3u             /* adam.step before the run */

static const size_t sk_numel[SK_N] = {37, 300, 5};

enum { SK_P, SK_G, SK_M, SK_V, SK_COPY, SK_LISTS }; /* the F32 lists; then the F16 model */

/* One path's memory, on the device and as the host writes and reads it. */
typedef struct sk_image {
  accel_adam_args_t adam; /* built-in path: adam.found_inf is the overflow flag */
  float found_inf;        /* IF path: the overflow flag (its adam.found_inf stays 0) */
  float inv_scale;
  float pad[2];
  float f32[SK_LISTS][SK_TOTAL]; /* params | grads | exp_avg | exp_avg_sq | copy of params */
  uint16_t model[SK_TOTAL];      /* F16 model weights */
} sk_image_t;

typedef struct sk_path {
  sk_image_t *dev;
  accel_tensor_t t[SK_LISTS + 1][SK_N]; /* the F32 lists, then the model */
  int32_t *flag;                        /* IF path: the region's flag (the fixture's) */
} sk_path_t;

static accel_status_t sk_path_make(cts_ctx_t *ctx, sk_path_t *p) {
  accel_status_t st = accel_malloc(ctx->dev, sizeof *p->dev, (void **)&p->dev);
  for (int l = 0; l <= SK_LISTS && st == ACCEL_OK; ++l)
    for (size_t i = 0, o = 0; i < SK_N; o += sk_numel[i], ++i)
      p->t[l][i] = l < SK_LISTS ? (accel_tensor_t){&p->dev->f32[l][o], sk_numel[i], ACCEL_F32}
                                : (accel_tensor_t){&p->dev->model[o], sk_numel[i], ACCEL_F16};
  return st;
}

/* The start: AdamW at step SK_STEP0, gradients scaled by 1024 (one Inf when overflow), no copy
 * and no model yet (zeros). */
static void sk_image_fill(sk_image_t *h, int overflow) {
  memset(h, 0, sizeof *h);
  h->adam = (accel_adam_args_t){.lr = 1e-2f,
                                .beta1 = 0.9f,
                                .beta2 = 0.999f,
                                .eps = 1e-8f,
                                .weight_decay = 0.01f,
                                .step = SK_STEP0,
                                .adamw = 1};
  h->inv_scale = 1.0f / 1024.0f;
  uint64_t seed = 34;
  for (size_t i = 0; i < SK_TOTAL; ++i) {
    h->f32[SK_P][i] = cts_rand_uniform(&seed, -1.0f, 1.0f);
    h->f32[SK_G][i] = 1024.0f * cts_rand_normal(&seed);
    h->f32[SK_M][i] = 0.1f * cts_rand_normal(&seed);
    h->f32[SK_V][i] = cts_rand_uniform(&seed, 0.0f, 0.01f);
  }
  if (overflow) h->f32[SK_G][SK_TOTAL - 7] = INFINITY; /* in the second tensor */
}

/* found_inf = 0; unscale (sets found_inf); flag = 0; flag += 1 unless found_inf;
 * if (flag) { step += 1; Adam; copy = params; model = params } with no kernel skipping itself
 * (adam.found_inf stays 0). */
static accel_status_t sk_body_if(accel_stream_t *s, void *user) {
  sk_path_t *p = user;
  sk_image_t *d = p->dev;
  accel_status_t st = accel_memset_async(s, &d->found_inf, 0, sizeof(float));
  if (st == ACCEL_OK)
    st = accel_unscale_and_check(s, p->t[SK_G], SK_N, &d->inv_scale, &d->found_inf);
  if (st == ACCEL_OK) st = accel_memset_async(s, p->flag, 0, sizeof(int32_t));
  if (st == ACCEL_OK) st = accel_step_count(s, (uint32_t *)(void *)p->flag, &d->found_inf);
  if (st == ACCEL_OK) st = accel_graph_capture_if(s, p->flag);
  if (st == ACCEL_OK) st = accel_step_count(s, &d->adam.step, NULL);
  if (st == ACCEL_OK)
    st = accel_fused_adam(s, p->t[SK_P], p->t[SK_G], p->t[SK_M], p->t[SK_V], SK_N, &d->adam);
  if (st == ACCEL_OK)
    st = accel_memcpy_async(s, d->f32[SK_COPY], d->f32[SK_P], sizeof d->f32[SK_P]);
  if (st == ACCEL_OK) st = accel_cast(s, p->t[SK_P], p->t[SK_LISTS], SK_N, NULL);
  accel_status_t end = st == ACCEL_OK ? accel_graph_capture_end_if(s) : st;
  return st != ACCEL_OK ? st : end;
}

/* The same step with the kernels' own skip on adam.found_inf (the copy is a cast F32 -> F32,
 * which skips too). */
static accel_status_t sk_body_builtin(accel_stream_t *s, void *user) {
  sk_path_t *p = user;
  sk_image_t *d = p->dev;
  float *found_inf = &d->adam.found_inf;
  accel_status_t st = accel_memset_async(s, found_inf, 0, sizeof(float));
  if (st == ACCEL_OK) st = accel_unscale_and_check(s, p->t[SK_G], SK_N, &d->inv_scale, found_inf);
  if (st == ACCEL_OK) st = accel_step_count(s, &d->adam.step, found_inf);
  if (st == ACCEL_OK)
    st = accel_fused_adam(s, p->t[SK_P], p->t[SK_G], p->t[SK_M], p->t[SK_V], SK_N, &d->adam);
  if (st == ACCEL_OK) st = accel_cast(s, p->t[SK_P], p->t[SK_COPY], SK_N, found_inf);
  if (st == ACCEL_OK) st = accel_cast(s, p->t[SK_P], p->t[SK_LISTS], SK_N, found_inf);
  return st;
}

/* h[0] the start, h[1] the IF path's end, h[2] the built-in path's; taken the IF's flag. */
static const char *sk_compare(const sk_image_t *h, int overflow, int32_t taken) {
  static const char *const names[] = {"params", "grads", "exp_avg", "exp_avg_sq", "copy"};
  static char why[200];
  const sk_image_t *a = &h[1], *b = &h[2];
  for (int l = 0; l < SK_LISTS; ++l)
    for (size_t i = 0; i < SK_TOTAL; ++i)
      if (memcmp(&a->f32[l][i], &b->f32[l][i], sizeof(float))) {
        snprintf(why, sizeof why, "%s[%zu] = %a with the IF, %a with the kernels' skip", names[l],
                 i, (double)a->f32[l][i], (double)b->f32[l][i]);
        return why;
      }
  for (size_t i = 0; i < SK_TOTAL; ++i)
    if (a->model[i] != b->model[i]) {
      snprintf(why, sizeof why, "model[%zu] = 0x%04x with the IF, 0x%04x with the kernels' skip", i,
               (unsigned)a->model[i], (unsigned)b->model[i]);
      return why;
    }
  if (a->adam.step != b->adam.step || memcmp(&a->found_inf, &b->adam.found_inf, sizeof(float))) {
    snprintf(why, sizeof why, "step %u, found_inf %g with the IF; %u, %g with the kernels' skip",
             a->adam.step, (double)a->found_inf, b->adam.step, (double)b->adam.found_inf);
    return why;
  }
  /* and the comparison is not vacuous: the step was skipped, or taken, as it should be */
  const int same_params = !memcmp(b->f32[SK_P], h[0].f32[SK_P], sizeof b->f32[SK_P]);
  if (b->adam.step != SK_STEP0 + (overflow ? 0u : SK_REPLAYS) || same_params != overflow ||
      b->adam.found_inf != (overflow ? 1.0f : 0.0f) || taken != !overflow) {
    snprintf(why, sizeof why, "step %u, found_inf %g, params %s, the IF's flag %d", b->adam.step,
             (double)b->adam.found_inf, same_params ? "kept" : "updated", (int)taken);
    return why;
  }
  return NULL;
}

static const char *skip_run(cts_ctx_t *ctx, cond_fix_t *f, accel_status_t *st) {
  static char why[256];
  sk_path_t p[2] = {{0}};
  sk_image_t h[3];
  for (int i = 0; i < 2 && *st == ACCEL_OK; ++i) *st = sk_path_make(ctx, &p[i]);
  p[0].flag = f->flag;
  const char *bad = NULL;
  for (int overflow = 0; overflow < 2 && *st == ACCEL_OK && !bad; ++overflow) {
    sk_image_fill(&h[0], overflow);
    for (int i = 0; i < 2 && *st == ACCEL_OK; ++i)
      *st = cts_upload(ctx, p[i].dev, &h[0], sizeof h[0]);
    if (*st == ACCEL_OK) *st = cts_exec(ctx, sk_body_if, &p[0], SK_REPLAYS);
    if (*st == ACCEL_OK) *st = cts_exec(ctx, sk_body_builtin, &p[1], SK_REPLAYS);
    for (int i = 0; i < 2 && *st == ACCEL_OK; ++i)
      *st = cts_download(ctx, &h[1 + i], p[i].dev, sizeof h[0]);
    int32_t taken = -1;
    if (*st == ACCEL_OK) *st = cts_download(ctx, &taken, f->flag, sizeof taken);
    if (*st == ACCEL_OK) bad = sk_compare(h, overflow, taken);
    if (bad)
      snprintf(why, sizeof why, "%s gradient: %s", overflow ? "an overflowing" : "a finite", bad);
  }
  for (int i = 0; i < 2; ++i)
    if (p[i].dev) accel_free(ctx->dev, p[i].dev);
  return bad ? why : NULL;
}

CTS_CASE(graph_cond_overflow_skip, CTS_TAG_KERNELS) { return cond_case(ctx, skip_run, NULL); }

/* ---- graph_cond_while_halves ------------------------------------------------------------- */

#define HALVE_THRESHOLD 1.0f
#define HALVE_REPLAYS 2

/* x *= factor over the list, then flag = x[0] >= threshold (of the first chunk's first
 * element): lane 0 of each block does its chunk, so a tensor of one element is one lane's. */
static const char kHalve[] =
    "ACC_KERNEL(my_k_halve, my_halve_params_t, P) {\n"
    "  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);\n"
    "  const acc_f32 factor = ACC_PTR(const acc_f32, P.factor)[0];\n"
    "  const acc_f32 threshold = ACC_PTR(const acc_f32, P.threshold)[0];\n"
    "  ACC_FOR_BLOCKS(b, P.num_chunks) {\n"
    "    ACC_LANE0(ACC_GPTR(acc_f32) x = ACC_PTR(acc_f32, chunks[b].ptr[0]);\n"
    "              for (acc_u32 i = 0u; i < chunks[b].count; ++i) x[i] = x[i] * factor;\n"
    "              if (b == 0u) ACC_PTR(acc_u32, P.flag)[0] = x[0] >= threshold ? 1u : 0u;)\n"
    "  }\n"
    "}\n"
    "ACCEL_KERNEL(MY_HALVE, my_k_halve, my_halve_params_t,\n"
    "             ACC_OP(\"my_halve\", ACC_TABLE_SHARED),\n"
    "             (ACC_LIST(\"x\", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS)),\n"
    "             (ACC_SCALAR(\"factor_dev\", ACC_FIELD(factor), 4, R, ACC_REQUIRED,\n"
    "                         ACC_ALL_BLOCKS),\n"
    "              ACC_SCALAR(\"threshold_dev\", ACC_FIELD(threshold), 4, R, ACC_REQUIRED,\n"
    "                         ACC_ALL_BLOCKS),\n"
    "              ACC_SCALAR(\"flag_dev\", ACC_FIELD(flag), 4, W, ACC_REQUIRED, ACC_BLOCK0)))\n";

typedef struct halve_job {
  cond_fix_t *f; /* value[0] the value, flag the WHILE's, flag2 counts passes */
  const accel_kernel_t *k;
  const float *scalars; /* device: 1, 0.5, the threshold */
  float start;
} halve_job_t;

/* value[0] *= scalars[factor]; flag = value[0] >= threshold */
static accel_status_t halve_launch(accel_stream_t *s, const halve_job_t *j, int factor) {
  const accel_tensor_t x = {j->f->value, 1, ACCEL_F32};
  const accel_tensor_t *lists[] = {&x};
  const void *scalars[] = {j->scalars + factor, j->scalars + 2, j->f->flag};
  return accel_launch(s, j->k, lists, 1, 1, scalars, 3);
}

/* value = start; passes = 0; flag = value >= threshold;
 * while (flag, max) { value *= 0.5; flag = value >= threshold; passes += 1 } */
static accel_status_t halve_body(accel_stream_t *s, void *user) {
  const halve_job_t *j = user;
  const accel_tensor_t t = {j->f->value, 1, ACCEL_F32};
  accel_status_t st = accel_fill(s, &t, 1, j->start);
  if (st == ACCEL_OK) st = accel_memset_async(s, j->f->flag2, 0, sizeof(int32_t));
  if (st == ACCEL_OK) st = halve_launch(s, j, 0);
  if (st == ACCEL_OK) st = accel_graph_capture_while(s, j->f->flag, j->f->max);
  if (st == ACCEL_OK) st = halve_launch(s, j, 1);
  if (st == ACCEL_OK) st = accel_step_count(s, (uint32_t *)(void *)j->f->flag2, NULL);
  accel_status_t end = st == ACCEL_OK ? accel_graph_capture_end_while(s) : st;
  return st != ACCEL_OK ? st : end;
}

/* One start against the host loop: the value's bits, the flag and the passes. */
static const char *halve_one(cts_ctx_t *ctx, const halve_job_t *j, accel_status_t *st) {
  static char why[160];
  float want = j->start;
  int32_t want_flag = want >= HALVE_THRESHOLD, passes = 0;
  while (want_flag && (uint32_t)passes < j->f->max) {
    want *= 0.5f;
    want_flag = want >= HALVE_THRESHOLD;
    ++passes;
  }
  float got = 0.0f;
  int32_t flag = -1, got_passes = -1;
  *st = cts_exec(ctx, halve_body, (void *)j, HALVE_REPLAYS);
  if (*st == ACCEL_OK) *st = cts_download(ctx, &got, j->f->value, sizeof got);
  if (*st == ACCEL_OK) *st = cts_download(ctx, &flag, j->f->flag, sizeof flag);
  if (*st == ACCEL_OK) *st = cts_download(ctx, &got_passes, j->f->flag2, sizeof got_passes);
  if (*st != ACCEL_OK) return NULL;
  if (memcmp(&got, &want, sizeof got) || flag != want_flag || got_passes != passes) {
    snprintf(why, sizeof why, "value %a after %d passes, flag %d; the host loop: %a, %d, %d",
             (double)got, (int)got_passes, (int)flag, (double)want, (int)passes, (int)want_flag);
    return why;
  }
  return NULL;
}

static const char *halves_run(cts_ctx_t *ctx, cond_fix_t *f, accel_status_t *st) {
  /* passes: 0; 1 (from the threshold itself, and from above it); 4 = max; 10 > max (stops at
   * the bound with the flag set); 10 within a larger bound */
  static const struct {
    float start;
    uint32_t max;
  } runs[] = {{0.3f, 4}, {1.0f, 4}, {1.7f, 4}, {13.1f, 4}, {1000.0f, 4}, {1000.0f, 16}};
  static const float scalars[3] = {1.0f, 0.5f, HALVE_THRESHOLD};
  static char why[256];
  float *dev = NULL;
  *st = accel_malloc(ctx->dev, sizeof scalars, (void **)&dev);
  if (*st == ACCEL_OK) *st = cts_upload(ctx, dev, scalars, sizeof scalars);
  halve_job_t j = {f, f->user, dev, 0.0f};
  const char *bad = NULL;
  for (size_t i = 0; i < sizeof runs / sizeof *runs && *st == ACCEL_OK && !bad; ++i) {
    f->max = runs[i].max;
    j.start = runs[i].start;
    bad = halve_one(ctx, &j, st);
    if (bad)
      snprintf(why, sizeof why, "start %g, max_iterations %u: %s", (double)runs[i].start,
               runs[i].max, bad);
  }
  if (dev) accel_free(ctx->dev, dev);
  return bad ? why : NULL;
}

CTS_CASE(graph_cond_while_halves, CTS_TAG_KERNELS) {
  int yes = 0;
  CTS_OK(cond_supported(ctx, &yes));
  if (!yes) return cond_refused(ctx);
  accel_module_t *m = NULL;
  accel_kernel_t *k = NULL;
  accel_status_t st = accel_module_load_source(ctx->dev, kHalve, NULL, &m);
  if (st == ACCEL_ERROR_UNSUPPORTED)
    return cts_skip(ctx, "the WHILE's flag needs a user kernel, and the device compiles none: %s",
                    accel_last_error());
  CTS_CHECK(st == ACCEL_OK, "load: %s: %s", accel_status_name(st), accel_last_error());
  st = accel_module_get_kernel(m, "my_halve", &k);
  cts_result_t res = st == ACCEL_OK ? cond_case(ctx, halves_run, k)
                                    : cts_fail(ctx, __FILE__, __LINE__, "my_halve: %s: %s",
                                               accel_status_name(st), accel_last_error());
  accel_module_release(m);
  return res;
}
