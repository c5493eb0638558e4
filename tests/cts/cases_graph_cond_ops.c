/*
 * graph_cond_skips_every_op (docs/GRAPHS.md, "Branches on a device flag"): every public
 * operation that launches a kernel or copies, put in an IF, in every mode through cts_exec.
 *
 * Two worlds A and B are made alike: tensor lists of three tensors of 70000, 37 and 131075
 * elements (not multiples of 256, two and three chunks: multi-block launches), guarded on both
 * sides (kc_lists.h), device scalar blocks, and a generator of the same seed. Pure outputs start
 * as a sentinel (0x7f bytes), the rest from seeded random data. Each operation writes its own
 * buffers, so a difference names the operation.
 *  1. A runs the operations in an IF whose flag (memset in the body) is 0: every byte of every
 *     buffer and guard of A, and its generator's state (accel_generator_get_state), must equal
 *     B's, which nothing touched yet (B is A's twin).
 *  2. A runs them in an IF whose flag is 1, B without a region: every byte must be equal, the
 *     generators' states too; and B's run must have changed every output, so that step 1 could
 *     not pass by the operations doing nothing.
 * On a device whose ACCEL_ATTR_CONDITIONALS is NONE the case checks the refusal instead
 * (cond_case, cts_cond.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"
#include "cts_cond.h"
#include "cts_internal.h"
#include "kc_lists.h"

#define OPS_NT 3      /* tensors per list */
#define OPS_REPLAYS 2 /* runs of the body per cts_exec */
#define OPS_SEED 0x5eedc0deull
#define OPS_SENTINEL 0x7f

static const size_t ops_sizes[OPS_NT] = {70000, 37, 131075};

/* How a list starts: seeded random data times its scale, with the sign cleared (second
 * moments), with one Inf (the overflow check), or the sentinel. */
enum { INIT_RAND, INIT_NONNEG, INIT_INF, INIT_SENT };

enum {
  L_X, /* the read-only input of cast, norm, fused Adam, dropout and the copies */
  L_FILL,
  L_SCALE,
  L_CAST,
  L_CLIP,
  L_HP_LP,
  L_HP_HP,
  L_UNS,
  L_ADAM_P,
  L_ADAM_M,
  L_ADAM_V,
  L_STEP_LP,
  L_STEP_HP,
  L_STEP_P,
  L_STEP_M,
  L_STEP_V,
  L_RAW,
  L_UNI,
  L_NORMAL,
  L_DROP,
  L_COPY,
  L_SET,
  L_COUNT
};

static const struct {
  const char *op;
  accel_dtype_t dt;
  int init;
  float scale;
} ops_lists[L_COUNT] = {
    [L_X] = {"the read-only input", ACCEL_F32, INIT_RAND, 2.0f},
    [L_FILL] = {"accel_fill", ACCEL_F16, INIT_SENT, 0},
    [L_SCALE] = {"accel_scale", ACCEL_BF16, INIT_RAND, 4.0f},
    [L_CAST] = {"accel_cast", ACCEL_BF16, INIT_SENT, 0},
    [L_CLIP] = {"accel_clip_by_global_norm", ACCEL_F32, INIT_RAND, 1.0f},
    [L_HP_LP] = {"accel_update_hp_grads (lp_grads)", ACCEL_F16, INIT_RAND, 1.0f},
    [L_HP_HP] = {"accel_update_hp_grads (hp_grads)", ACCEL_F32, INIT_RAND, 1.0f},
    [L_UNS] = {"accel_unscale_and_check", ACCEL_F32, INIT_INF, 1000.0f},
    [L_ADAM_P] = {"accel_fused_adam (params)", ACCEL_F32, INIT_RAND, 1.0f},
    [L_ADAM_M] = {"accel_fused_adam (exp_avg)", ACCEL_F32, INIT_RAND, 0.1f},
    [L_ADAM_V] = {"accel_fused_adam (exp_avg_sq)", ACCEL_F32, INIT_NONNEG, 0.01f},
    [L_STEP_LP] = {"accel_adam_step_* (grads)", ACCEL_F16, INIT_RAND, 100.0f},
    [L_STEP_HP] = {"accel_adam_step_* (hp_grads)", ACCEL_F32, INIT_SENT, 0},
    [L_STEP_P] = {"accel_adam_step_* (bf16 params)", ACCEL_BF16, INIT_RAND, 1.0f},
    [L_STEP_M] = {"accel_adam_step_* (exp_avg)", ACCEL_F32, INIT_RAND, 0.1f},
    [L_STEP_V] = {"accel_adam_step_* (exp_avg_sq)", ACCEL_F32, INIT_NONNEG, 0.01f},
    [L_RAW] = {"accel_generator_raw", ACCEL_F32, INIT_SENT, 0},
    [L_UNI] = {"accel_rand_uniform", ACCEL_BF16, INIT_SENT, 0},
    [L_NORMAL] = {"accel_rand_normal", ACCEL_F32, INIT_SENT, 0},
    [L_DROP] = {"accel_dropout", ACCEL_F32, INIT_SENT, 0},
    [L_COPY] = {"accel_memcpy_async", ACCEL_F32, INIT_SENT, 0},
    [L_SET] = {"accel_memset_async", ACCEL_F32, INIT_SENT, 0},
};

/* Device scalar blocks (64 bytes each, guarded); what is not set below starts as the sentinel. */
enum {
  S_IN,     /* read only: scale 0.75, clip's total norm 50, unscale's inv_scale 0.5, zero */
  S_NORM,   /* accel_multi_tensor_norm's out */
  S_CLIP,   /* accel_clip_by_global_norm's coef_out */
  S_UNS,    /* accel_unscale_and_check's found_inf */
  S_ADAM,   /* read only: accel_fused_adam's accel_adam_args_t */
  S_BEGIN,  /* accel_amp_begin_step: a scaler, found_inf at byte 32 */
  S_UPDATE, /* accel_amp_update_scale: a scaler about to grow */
  S_COUNT,  /* accel_step_count: the step */
  S_COUNTS, /* accel_step_counts: steps float[3], has_grad uint32[3] at byte 16 */
  S_STEP,   /* accel_adam_step_*: kc_step_scalars_t */
  S_GEN,    /* accel_generator_get_state's out; set_state's source at byte 32 */
  S_COUNT_ALL
};

static const char *const ops_scalar_op[S_COUNT_ALL] = {"the read-only scalars",
                                                       "accel_multi_tensor_norm",
                                                       "accel_clip_by_global_norm (coef_out)",
                                                       "accel_unscale_and_check (found_inf)",
                                                       "accel_fused_adam (args)",
                                                       "accel_amp_begin_step",
                                                       "accel_amp_update_scale",
                                                       "accel_step_count",
                                                       "accel_step_counts",
                                                       "accel_adam_step_* (scalars)",
                                                       "accel_generator_get_state / set_state"};
static const int ops_scalar_read_only[S_COUNT_ALL] = {[S_IN] = 1, [S_ADAM] = 1};

typedef struct ops_world {
  kc_list_t l[L_COUNT];
  kc_scalars_t s[S_COUNT_ALL];
  accel_generator_t *gen;
  accel_adam_step_t step;
} ops_world_t;

/* What a world holds, on the host. */
typedef struct ops_image {
  unsigned char *t[L_COUNT][OPS_NT];
  unsigned char s[S_COUNT_ALL][64];
  accel_generator_state_t gen;
} ops_image_t;

/* ---- the worlds ---------------------------------------------------------------------------- */

static void ops_scalar_init(unsigned char b[S_COUNT_ALL][64]) {
  memset(b, OPS_SENTINEL, (size_t)S_COUNT_ALL * 64);
  const float in[4] = {0.75f, 50.0f, 0.5f, 0.0f};
  const accel_adam_args_t adam = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, 3, 1, 0.0f};
  const accel_loss_scaler_t begin = {1024.0f, 3.0f, 0, 2000, 2.0f, 0.5f};
  const accel_loss_scaler_t grow = {65536.0f, 0x1p-16f, 1, 2, 2.0f, 0.5f};
  const uint32_t step = 41, has_grad[3] = {1, 0, 1};
  const float steps[3] = {1.0f, 2.0f, 3.0f};
  const kc_step_scalars_t fused = {
      {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 5, 1, 0.0f}, 0x1p-10f, 0.0f, 0.0f, 0.0f};
  const accel_generator_state_t set = {{0x1234u, 0x5678u}, {1000u, 7u, 0u, 0u}};
  memcpy(b[S_IN], in, sizeof in);
  memcpy(b[S_ADAM], &adam, sizeof adam);
  memcpy(b[S_BEGIN], &begin, sizeof begin);
  memcpy(b[S_UPDATE], &grow, sizeof grow);
  memcpy(b[S_COUNT], &step, sizeof step);
  memcpy(b[S_COUNTS], steps, sizeof steps);
  memcpy(b[S_COUNTS] + 16, has_grad, sizeof has_grad);
  memcpy(b[S_STEP], &fused, sizeof fused);
  memcpy(b[S_GEN] + 32, &set, sizeof set);
}

/* Sets the host copy of L as `kind` says, and uploads it again. */
static accel_status_t ops_list_init(cts_ctx_t *ctx, kc_list_t *L, int kind) {
  accel_status_t st = ACCEL_OK;
  for (size_t t = 0; t < L->n && st == ACCEL_OK && kind != INIT_RAND; ++t) {
    const size_t numel = L->t[t].numel, esz = kc_esz(L->dtype);
    if (kind == INIT_SENT) memset(L->host[t], OPS_SENTINEL, numel * esz);
    for (size_t i = 0; i < numel && kind == INIT_NONNEG; ++i) /* clear the sign bit */
      kc_raw_set(L->host[t], i, L->dtype,
                 kc_raw_get(L->host[t], i, L->dtype) & ~(1u << (8 * esz - 1)));
    if (kind == INIT_INF && t == L->n - 1) /* the last element of the last chunk */
      kc_raw_set(L->host[t], numel - 1, L->dtype, kc_f32_bits(INFINITY));
    st = kc_push(ctx, L, t);
  }
  return st;
}

static void ops_world_free(cts_ctx_t *ctx, ops_world_t *w) {
  for (int l = 0; l < L_COUNT; ++l) kc_free(ctx, &w->l[l]);
  for (int s = 0; s < S_COUNT_ALL; ++s) cts_dev_free(ctx, &w->s[s].buf);
  if (w->gen) accel_generator_release(w->gen);
  memset(w, 0, sizeof *w);
}

static accel_status_t ops_world_make(cts_ctx_t *ctx, ops_world_t *w) {
  memset(w, 0, sizeof *w);
  unsigned char init[S_COUNT_ALL][64];
  ops_scalar_init(init);
  accel_status_t st = ACCEL_OK;
  for (int l = 0; l < L_COUNT && st == ACCEL_OK; ++l) {
    st = kc_make(ctx, &w->l[l], OPS_NT, ops_sizes, OPS_NT, ops_lists[l].dt, ops_lists[l].scale,
                 OPS_SEED + (uint64_t)l);
    if (st == ACCEL_OK) st = ops_list_init(ctx, &w->l[l], ops_lists[l].init);
  }
  for (int s = 0; s < S_COUNT_ALL && st == ACCEL_OK; ++s)
    st = kc_scalars(ctx, &w->s[s], init[s], 64);
  if (st == ACCEL_OK) st = accel_generator_create(ctx->dev, OPS_SEED, &w->gen);
  if (st != ACCEL_OK) return st;
  /* the fused step: loss scale 2^10, clip to norm 1, grads zeroed once read, fp32 gradients
   * out, BF16 master weights rounded stochastically by the generator (its second launch) */
  w->step = kc_step_desc(OPS_NT, &w->l[L_STEP_LP], &w->l[L_STEP_P], &w->l[L_STEP_M],
                         &w->l[L_STEP_V], (kc_step_scalars_t *)(void *)w->s[S_STEP].dev,
                         ACCEL_ADAM_STEP_CLIP | ACCEL_ADAM_STEP_ZERO_GRADS);
  w->step.hp_grads = w->l[L_STEP_HP].t;
  w->step.generator = w->gen;
  return ACCEL_OK;
}

/* ---- the operations ------------------------------------------------------------------------ */

static accel_status_t ops_kernels(accel_stream_t *s, ops_world_t *w) {
  const kc_list_t *L = w->l;
  float *S[S_COUNT_ALL];
  for (int i = 0; i < S_COUNT_ALL; ++i) S[i] = w->s[i].dev;
  accel_status_t st = accel_fill(s, L[L_FILL].t, OPS_NT, 0.333f);
  if (st == ACCEL_OK) st = accel_scale(s, L[L_SCALE].t, OPS_NT, &S[S_IN][0]);
  if (st == ACCEL_OK) st = accel_cast(s, L[L_X].t, L[L_CAST].t, OPS_NT, NULL);
  if (st == ACCEL_OK) st = accel_multi_tensor_norm(s, L[L_X].t, OPS_NT, 2.0f, S[S_NORM]);
  if (st == ACCEL_OK)
    st = accel_clip_by_global_norm(s, L[L_CLIP].t, OPS_NT, 1.0f, &S[S_IN][1], 1e-6f, S[S_CLIP]);
  if (st == ACCEL_OK) st = accel_update_hp_grads(s, L[L_HP_LP].t, L[L_HP_HP].t, OPS_NT, 1);
  if (st == ACCEL_OK) st = accel_unscale_and_check(s, L[L_UNS].t, OPS_NT, &S[S_IN][2], S[S_UNS]);
  if (st == ACCEL_OK)
    st = accel_fused_adam(s, L[L_ADAM_P].t, L[L_X].t, L[L_ADAM_M].t, L[L_ADAM_V].t, OPS_NT,
                          (const accel_adam_args_t *)(void *)S[S_ADAM]);
  if (st == ACCEL_OK)
    st = accel_amp_begin_step(s, (accel_loss_scaler_t *)(void *)S[S_BEGIN], S[S_BEGIN] + 8);
  if (st == ACCEL_OK)
    st = accel_amp_update_scale(s, (accel_loss_scaler_t *)(void *)S[S_UPDATE], &S[S_IN][3]);
  if (st == ACCEL_OK) st = accel_step_count(s, (uint32_t *)(void *)S[S_COUNT], &S[S_IN][3]);
  if (st == ACCEL_OK)
    st = accel_step_counts(s, S[S_COUNTS], (const uint32_t *)(void *)(S[S_COUNTS] + 4), 3, NULL);
  if (st == ACCEL_OK) st = kc_step_run(s, &w->step); /* memset, norm sweep, update */
  return st;
}

static accel_status_t ops_random_and_copies(accel_stream_t *s, ops_world_t *w) {
  const kc_list_t *L = w->l;
  accel_generator_state_t *gst = (accel_generator_state_t *)(void *)w->s[S_GEN].dev;
  const accel_generator_state_t *src = (const void *)((const char *)w->s[S_GEN].dev + 32);
  char *copy[OPS_NT], *set[OPS_NT];
  const char *x[OPS_NT];
  for (int t = 0; t < OPS_NT; ++t) {
    copy[t] = L[L_COPY].t[t].data;
    set[t] = L[L_SET].t[t].data;
    x[t] = L[L_X].t[t].data;
  }
  accel_status_t st = accel_generator_get_state(s, w->gen, gst);
  if (st == ACCEL_OK) st = accel_generator_set_state(s, w->gen, src);
  if (st == ACCEL_OK)
    st = accel_generator_raw(s, w->gen, L[L_RAW].t[0].data, L[L_RAW].t[0].numel - 1);
  if (st == ACCEL_OK) st = accel_rand_uniform(s, w->gen, L[L_UNI].t, OPS_NT, -2.0f, 3.0f);
  if (st == ACCEL_OK) st = accel_rand_normal(s, w->gen, L[L_NORMAL].t, OPS_NT, 1.0f, 2.0f);
  if (st == ACCEL_OK) st = accel_dropout(s, w->gen, L[L_X].t, L[L_DROP].t, OPS_NT, 0.3f);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, copy[0], x[0], ops_sizes[0] * sizeof(float));
  if (st == ACCEL_OK) st = accel_memcpy_async(s, copy[2] + 1, x[2] + 3, 100001);
  if (st == ACCEL_OK) st = accel_memset_async(s, set[0], 0x5a, ops_sizes[0] * sizeof(float));
  if (st == ACCEL_OK) st = accel_memset_async(s, set[1] + 1, 0x00, 9);
  if (st == ACCEL_OK) st = accel_memset_async(s, set[2] + 5, 0xa5, 77777);
  return st;
}

typedef struct ops_job {
  ops_world_t *w;
  int32_t *flag; /* NULL: no region */
  int byte;      /* the flag's bytes */
  char err[512]; /* the message of an operation that failed in the region */
} ops_job_t;

/* [flag = byte; if (flag) {] every operation [}]. The region is closed even when an operation
 * failed (its message kept in err): a region opened outside a capture is a capture of its own,
 * and a stream left capturing cannot be destroyed (cts_exec_cleanup ends graph captures only). */
static accel_status_t ops_body(accel_stream_t *s, void *user) {
  ops_job_t *j = user;
  accel_status_t st = ACCEL_OK;
  int open = 0;
  if (j->flag) st = accel_memset_async(s, j->flag, j->byte, sizeof(int32_t));
  if (st == ACCEL_OK && j->flag) open = (st = accel_graph_capture_if(s, j->flag)) == ACCEL_OK;
  if (st == ACCEL_OK) st = ops_kernels(s, j->w);
  if (st == ACCEL_OK) st = ops_random_and_copies(s, j->w);
  if (st != ACCEL_OK)
    snprintf(j->err, sizeof j->err, "%s: %s", accel_status_name(st), accel_last_error());
  accel_status_t end = open ? accel_graph_capture_end_if(s) : ACCEL_OK;
  return st != ACCEL_OK ? st : end;
}

/* Runs j; NULL when it ran, else why not (*st is then ACCEL_OK: the message is in why). */
static const char *ops_exec(cts_ctx_t *ctx, ops_job_t *j, const char *what, accel_status_t *st) {
  static char why[640];
  j->err[0] = 0;
  *st = cts_exec(ctx, ops_body, j, OPS_REPLAYS);
  if (*st == ACCEL_OK) return NULL;
  if (j->err[0]) snprintf(why, sizeof why, "%s: %s", what, j->err);
  else snprintf(why, sizeof why, "%s: %s: %s", what, accel_status_name(*st), accel_last_error());
  *st = ACCEL_OK;
  return why;
}

/* ---- images and their comparison ----------------------------------------------------------- */

static void ops_image_free(ops_image_t *img) {
  for (int l = 0; l < L_COUNT; ++l)
    for (int t = 0; t < OPS_NT; ++t) free(img->t[l][t]);
  memset(img, 0, sizeof *img);
}

/* Downloads w into img (allocating it on first use), checking every guard. */
static const char *ops_pull(cts_ctx_t *ctx, ops_world_t *w, ops_image_t *img, accel_status_t *st) {
  static char why[200];
  for (int l = 0; l < L_COUNT && *st == ACCEL_OK; ++l)
    for (size_t t = 0; t < OPS_NT; ++t) {
      if (!img->t[l][t]) img->t[l][t] = malloc(ops_sizes[t] * kc_esz(w->l[l].dtype) + 4);
      if (!img->t[l][t]) *st = ACCEL_ERROR_OUT_OF_MEMORY;
      if (*st != ACCEL_OK) return NULL;
      if (kc_pull(ctx, &w->l[l], t, img->t[l][t])) continue;
      snprintf(why, sizeof why, "%s: a guard of tensor %zu was overwritten", ops_lists[l].op, t);
      return why;
    }
  for (int s = 0; s < S_COUNT_ALL && *st == ACCEL_OK; ++s) {
    *st = cts_download(ctx, img->s[s], w->s[s].dev, 64);
    if (*st == ACCEL_OK && !cts_dev_guard_ok(ctx, &w->s[s].buf)) {
      snprintf(why, sizeof why, "%s: a guard of its scalars was overwritten", ops_scalar_op[s]);
      return why;
    }
  }
  accel_stream_t *s = NULL;
  if (*st == ACCEL_OK) *st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s);
  if (*st == ACCEL_OK) *st = accel_generator_get_state(s, w->gen, &img->gen);
  if (*st == ACCEL_OK) *st = accel_stream_synchronize(s);
  if (s) accel_stream_destroy(s);
  return NULL;
}

/* The first element of list l where a and b differ: 1 and *t, *i set, or 0. */
static int ops_list_diff(const ops_image_t *a, const ops_image_t *b, int l, size_t *t, size_t *i) {
  const accel_dtype_t dt = ops_lists[l].dt;
  for (*t = 0; *t < OPS_NT; ++*t) {
    if (!memcmp(a->t[l][*t], b->t[l][*t], ops_sizes[*t] * kc_esz(dt))) continue;
    for (*i = 0; kc_raw_get(a->t[l][*t], *i, dt) == kc_raw_get(b->t[l][*t], *i, dt); ++*i) {
    }
    return 1;
  }
  return 0;
}

/* NULL when a and b hold the same bytes, else the operation and the first differing index;
 * `what` says how a and b were made. */
static const char *ops_compare(const ops_image_t *a, const ops_image_t *b, const char *what) {
  static char why[320];
  size_t t, i;
  for (int l = 0; l < L_COUNT; ++l)
    if (ops_list_diff(a, b, l, &t, &i)) {
      const accel_dtype_t dt = ops_lists[l].dt;
      snprintf(why, sizeof why,
               "%s: %s: %s tensor %zu (of %zu elements) first differs at [%zu]: "
               "0x%x, want 0x%x",
               what, ops_lists[l].op, accel_dtype_name(dt), t, ops_sizes[t], i,
               kc_raw_get(a->t[l][t], i, dt), kc_raw_get(b->t[l][t], i, dt));
      return why;
    }
  for (int s = 0; s < S_COUNT_ALL; ++s)
    for (size_t k = 0; k < 16; ++k) {
      if (!memcmp(a->s[s] + 4 * k, b->s[s] + 4 * k, 4)) continue;
      snprintf(why, sizeof why, "%s: %s: scalar word %zu first differs: 0x%08x, want 0x%08x", what,
               ops_scalar_op[s], k, kc_raw_get(a->s[s], k, ACCEL_F32),
               kc_raw_get(b->s[s], k, ACCEL_F32));
      return why;
    }
  if (memcmp(&a->gen, &b->gen, sizeof a->gen)) {
    snprintf(why, sizeof why,
             "%s: the random operations: the generator's counter is "
             "%u %u %u %u, want %u %u %u %u (key %x %x, want %x %x)",
             what, a->gen.counter[0], a->gen.counter[1], a->gen.counter[2], a->gen.counter[3],
             b->gen.counter[0], b->gen.counter[1], b->gen.counter[2], b->gen.counter[3],
             a->gen.key[0], a->gen.key[1], b->gen.key[0], b->gen.key[1]);
    return why;
  }
  return NULL;
}

/* The run without a region changed every output and the generator, and no input. */
static const char *ops_not_vacuous(const ops_image_t *ran, const ops_image_t *start) {
  static char why[200];
  size_t t, i;
  for (int l = 0; l < L_COUNT; ++l)
    if (ops_list_diff(ran, start, l, &t, &i) == (l == L_X)) {
      snprintf(why, sizeof why, "without a region, %s %s", ops_lists[l].op,
               l == L_X ? "changed" : "changed nothing: the case cannot see it skipped");
      return why;
    }
  for (int s = 0; s < S_COUNT_ALL; ++s)
    if ((memcmp(ran->s[s], start->s[s], 64) != 0) == ops_scalar_read_only[s]) {
      snprintf(why, sizeof why, "without a region, %s %s", ops_scalar_op[s],
               ops_scalar_read_only[s] ? "changed"
                                       : "changed nothing: the case cannot see it "
                                         "skipped");
      return why;
    }
  if (!memcmp(&ran->gen, &start->gen, sizeof ran->gen))
    return "without a region, the random operations left the generator's counter as it was";
  return NULL;
}

/* ---- the case ------------------------------------------------------------------------------ */

/* A: skipped then taken; B: A's twin, untouched, then run without a region. */
static const char *ops_steps(cts_ctx_t *ctx, cond_fix_t *f, ops_world_t *w, ops_image_t *img,
                             accel_status_t *st) {
  ops_job_t a = {.w = &w[0], .flag = f->flag, .byte = 0x00}, b = {.w = &w[1]};
  const char *why = ops_pull(ctx, &w[1], &img[0], st); /* the start */
  if (*st == ACCEL_OK && !why) why = ops_exec(ctx, &a, "IF not taken", st);
  if (*st == ACCEL_OK && !why) why = ops_pull(ctx, &w[0], &img[1], st);
  if (*st == ACCEL_OK && !why) why = ops_compare(&img[1], &img[0], "IF not taken, changed");
  a.byte = 0x01;
  if (*st == ACCEL_OK && !why) why = ops_exec(ctx, &a, "IF taken", st);
  if (*st == ACCEL_OK && !why) why = ops_exec(ctx, &b, "no region", st);
  if (*st == ACCEL_OK && !why) why = ops_pull(ctx, &w[0], &img[1], st);
  if (*st == ACCEL_OK && !why) why = ops_pull(ctx, &w[1], &img[2], st);
  if (*st == ACCEL_OK && !why) why = ops_compare(&img[1], &img[2], "IF taken, against no region");
  if (*st == ACCEL_OK && !why) why = ops_not_vacuous(&img[2], &img[0]);
  return why;
}

static const char *ops_run(cts_ctx_t *ctx, cond_fix_t *f, accel_status_t *st) {
  ops_world_t w[2];
  ops_image_t img[3];
  memset(img, 0, sizeof img);
  *st = ops_world_make(ctx, &w[0]);
  if (*st == ACCEL_OK) *st = ops_world_make(ctx, &w[1]);
  else memset(&w[1], 0, sizeof w[1]);
  const char *why = *st == ACCEL_OK ? ops_steps(ctx, f, w, img, st) : NULL;
  for (int i = 0; i < 3; ++i) ops_image_free(&img[i]);
  for (int i = 0; i < 2; ++i) ops_world_free(ctx, &w[i]);
  return why;
}

CTS_CASE(graph_cond_skips_every_op, CTS_TAG_KERNELS) { return cond_case(ctx, ops_run, NULL); }
