/* The elementwise kernels of the standalone kernel tests (test_kernels.c): each against a
 * double-precision reference, CPU block splits and OpenCL forms bitwise equal. */
#include "kt_run.h"

/* Runs an elementwise kernel on copies of the same data on the CPU (both splits) and OpenCL
 * (each form with 2 blocks at once, then all); all results must be bitwise equal, and the CPU
 * result close to the case's reference. The scalars (KT_SCALARS floats): [0] a factor or norm,
 * [1] an output, [2, 10) Adam's arguments, [16, 16 + NT) a step count per tensor, [32, 32 + NT)
 * has-gradient flags (make_has_grad). */
#define KT_SCALARS 64
#define KT_STEPS 16
#define KT_HAS_GRAD 32
typedef struct ew_case {
  uint32_t id;
  int nl;                        /* lists */
  uint32_t dt[ACC_MAX_LISTS];    /* dtype per list */
  float scale[ACC_MAX_LISTS];    /* data range per list */
  size_t psize;
  void (*make_params)(void *params, acc_u64 chunks, uint32_t nc, acc_u64 scalars);
  void (*reference)(void *const *const *lists, const float *scalars); /* in-place on host copies */
  double tol;
} ew_case_t;

static void p_clip(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_clip_params_t p = {c, sc, sc + 4, nc, ACC_DT_F32, 0.25f, 1e-6f};
  memcpy(pp, &p, sizeof p);
}
static void p_update(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  (void)sc;
  acc_update_hp_params_t p = {c, nc, ACC_DT_BF16, ACC_HP_ZERO_LP, 0.0f};
  memcpy(pp, &p, sizeof p);
}
/* hp = init + float(lp), lp kept (the fill + update fold of the CPU graph planner). */
static void p_update_assign(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  (void)sc;
  acc_update_hp_params_t p = {c, nc, ACC_DT_F16, ACC_HP_ASSIGN, -0.75f};
  memcpy(pp, &p, sizeof p);
}
static void p_unscale(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_unscale_params_t p = {c, sc, sc + 4, nc, ACC_DT_F16};
  memcpy(pp, &p, sizeof p);
}
static void p_adam(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_adam_params_t p = {c, sc + 8, nc, ACC_DT_BF16};
  memcpy(pp, &p, sizeof p);
}
static void p_fill(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  (void)sc;
  acc_fill_params_t p = {c, nc, ACC_DT_BF16, 0.3f, 0};
  memcpy(pp, &p, sizeof p);
}
static void p_scale(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_scale_params_t p = {c, sc, nc, ACC_DT_F32};
  memcpy(pp, &p, sizeof p);
}

/* cast: list 0 = src (f32), list 1 = dst; skip_if = scalars[1] (0: cast) or scalars[0] (0.5:
 * skipped). */
static void p_cast_bf16(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_cast_params_t p = {c, sc + 4, nc, ACC_DT_F32, ACC_DT_BF16, 0};
  memcpy(pp, &p, sizeof p);
}
static void p_cast_f16(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  (void)sc; /* never skipped */
  acc_cast_params_t p = {c, 0, nc, ACC_DT_F32, ACC_DT_F16, 0};
  memcpy(pp, &p, sizeof p);
}
static void p_cast_widen(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_cast_params_t p = {c, sc + 4, nc, ACC_DT_BF16, ACC_DT_F32, 0};
  memcpy(pp, &p, sizeof p);
}
static void p_cast_skipped(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_cast_params_t p = {c, sc, nc, ACC_DT_F32, ACC_DT_F16, 0};
  memcpy(pp, &p, sizeof p);
}

/* The fused update: grads (bf16, zeroed), hp (f32, accumulated into), params, exp_avg,
 * exp_avg_sq, model (f16); inv_scale and the total norm are scalars[0] (0.5: max_norm 0.25
 * makes the clip factor 0.5), coef_out scalars[1]. */
static void p_adam_step_state(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc, acc_u32 sdt) {
  acc_adam_step_params_t p = {c, sc + 8, sc, sc, sc + 4, 0, 0, 0, nc, ACC_DT_BF16, ACC_DT_F16,
                              ACC_STEP_ZERO_GRADS | ACC_STEP_ACCUMULATE, 0.25f, 1e-6f, sdt,
                              ACC_DT_F32};
  memcpy(pp, &p, sizeof p);
}
static void p_adam_step(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  p_adam_step_state(pp, c, nc, sc, ACC_DT_F32);
}
/* ... with BF16 moments (the bf16 state format). */
static void p_adam_step_bf16(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  p_adam_step_state(pp, c, nc, sc, ACC_DT_BF16);
}
/* ... with torch.optim.AdamW's options: f16 grads accumulated into hp, f32 params, exp_avg,
 * exp_avg_sq and model weights, AMSGrad's maximum (list 6), maximize, a step per tensor, two
 * tensors without a gradient; no loss scale, no clip. */
static void p_adam_step_torch(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_adam_step_params_t p = {c, sc + 8, 0, 0, 0, sc + 4 * KT_STEPS, sc + 4 * KT_HAS_GRAD, 0,
                              nc, ACC_DT_F16, 0, ACC_STEP_ACCUMULATE | ACC_STEP_MAXIMIZE, 0.0f,
                              0.0f, ACC_DT_F32, ACC_DT_F32};
  memcpy(pp, &p, sizeof p);
}

/* The CPU result `got` of case ec against its reference, run on fresh copies of the same data
 * with the scalars the CPU run ended with: normalized mean squared error within the case's
 * tolerance, non-finite values equal. */
static void check_reference(const ew_case_t *ec, void *got[ACC_MAX_LISTS][NT],
                            const float *scalars) {
  void *ref[ACC_MAX_LISTS][NT];
  for (int l = 0; l < ec->nl; ++l) make_tensors(ref[l], ec->dt[l], ec->scale[l], 77 + l);
  if (ec->id == ACCEL_KERNEL_UNSCALE) st(ref[0][NT - 1], 12345, ec->dt[0], INFINITY);
  void *const *rl[ACC_MAX_LISTS];
  for (int l = 0; l < ec->nl; ++l) rl[l] = ref[l];
  ec->reference(rl, scalars);
  for (int l = 0; l < ec->nl; ++l) {
    double num = 0, den = 0;
    for (size_t k = 0; k < NT; ++k)
      for (size_t i = 0; i < kSizes[k]; ++i) {
        const double g = ld(got[l][k], i, ec->dt[l]), w = ld(ref[l][k], i, ec->dt[l]);
        if (isfinite(w)) {
          num += (g - w) * (g - w);
          den += w * w;
        } else {
          KT_CHECK(isnan(w) ? isnan(g) : g == w, "%s: non-finite mismatch", accel_kernel_names[ec->id]);
        }
      }
    const double nmse = den > 0 ? num / den : num;
    KT_CHECK(nmse <= ec->tol, "%s list %d: NMSE %g > %g", accel_kernel_names[ec->id], l, nmse, ec->tol);
  }
  for (int l = 0; l < ec->nl; ++l)
    for (size_t k = 0; k < NT; ++k) xfree(ref[l][k]);
}

static void test_elementwise(const ew_case_t *ec) {
  const uint32_t nc = total_chunks();
  enum { NRUN = 2 + 2 * NFORMS };
  void *t[NRUN][ACC_MAX_LISTS][NT];
  float *scal[NRUN];
  size_t es[ACC_MAX_LISTS];
  for (int l = 0; l < ec->nl; ++l) es[l] = esize(ec->dt[l]);
  for (int r = 0; r < NRUN; ++r) {
    for (int l = 0; l < ec->nl; ++l) make_tensors(t[r][l], ec->dt[l], ec->scale[l], 77 + l);
    scal[r] = xalloc(KT_SCALARS * sizeof(float));
    memset(scal[r], 0, KT_SCALARS * sizeof(float));
    const acc_adam_args_t args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3, 1, 0.0f};
    scal[r][0] = 0.5f; /* clip: total norm; unscale/scale: factor */
    scal[r][1] = 0.0f; /* clip coef_out / found_inf */
    memcpy(&scal[r][2], &args, sizeof args);
    uint32_t *has_grad = make_has_grad();
    for (size_t k = 0; k < NT; ++k) {
      scal[r][KT_STEPS + k] = (float)(1 + 7 * k);
      memcpy(&scal[r][KT_HAS_GRAD + k], &has_grad[k], 4);
    }
    xfree(has_grad);
  }
  /* a non-finite value for the unscale check */
  if (ec->id == ACCEL_KERNEL_UNSCALE)
    for (int r = 0; r < NRUN; ++r) st(t[r][0][NT - 1], 12345, ec->dt[0], INFINITY);
  unsigned char params[128]; /* the largest parameter struct, the fused update's, and more */
  _Static_assert(sizeof(acc_adam_step_params_t) <= sizeof params, "params buffer too small");
  for (int r = 0; r < NRUN; ++r) {
    void *const *lists[ACC_MAX_LISTS];
    for (int l = 0; l < ec->nl; ++l) lists[l] = t[r][l];
    acc_chunk_t *chunks = xalloc(nc * sizeof *chunks);
    kt_chunks(chunks, ec->nl, lists, es, kSizes, NT);
    ec->make_params(params, (acc_u64)(uintptr_t)chunks, nc, (acc_u64)(uintptr_t)scal[r]);
    if (r < 2) {
      run_cpu(ec->id, params, nc, r);
    }
#ifdef KT_OPENCL
    else if (g_cl_ok) {
      run_cl((r - 2) / 2, ec->id, params, ec->psize, r % 2 == 0 ? 2 : nc);
    } else {
      xfree(chunks);
      continue;
    }
#endif
    xfree(chunks);
    for (int l = 0; l < ec->nl && r > 0; ++l)
      for (size_t k = 0; k < NT; ++k)
        KT_CHECK(memcmp(t[r][l][k], t[0][l][k], kSizes[k] * es[l]) == 0,
                 "kernel %s run %d list %d tensor %zu differs from CPU", accel_kernel_names[ec->id], r, l, k);
    if (r > 0)
      KT_CHECK(memcmp(scal[r], scal[0], KT_SCALARS * sizeof(float)) == 0,
               "kernel %s run %d scalars differ", accel_kernel_names[ec->id], r);
  }
  check_reference(ec, t[0], scal[0]);
  for (int r = 0; r < NRUN; ++r) {
    for (int l = 0; l < ec->nl; ++l)
      for (size_t k = 0; k < NT; ++k) xfree(t[r][l][k]);
    xfree(scal[r]);
  }
}

#define FOR_ALL(k, i) \
  for (size_t k = 0; k < NT; ++k) for (size_t i = 0; i < kSizes[k]; ++i)

static void r_clip(void *const *const *L, const float *s) {
  const float coef = 0.25f / (s[0] + 1e-6f); /* total norm 0.5, max_norm 0.25 */
  FOR_ALL(k, i) st(L[0][k], i, ACC_DT_F32, (float)((double)ld(L[0][k], i, 0) * coef));
}
static void r_update(void *const *const *L, const float *s) {
  (void)s;
  FOR_ALL(k, i) {
    st(L[1][k], i, ACC_DT_F32, ld(L[1][k], i, ACC_DT_F32) + ld(L[0][k], i, ACC_DT_BF16));
    st(L[0][k], i, ACC_DT_BF16, 0.0f);
  }
}
static void r_update_assign(void *const *const *L, const float *s) {
  (void)s;
  FOR_ALL(k, i) st(L[1][k], i, ACC_DT_F32, -0.75f + ld(L[0][k], i, ACC_DT_F16));
}
static void r_unscale(void *const *const *L, const float *s) {
  FOR_ALL(k, i) st(L[0][k], i, ACC_DT_F16, (float)((double)ld(L[0][k], i, ACC_DT_F16) * s[0]));
}
static void r_adam(void *const *const *L, const float *s) {
  acc_adam_args_t a;
  memcpy(&a, &s[2], sizeof a);
  const double bc1 = 1 - pow(a.beta1, a.step), bc2 = 1 - pow(a.beta2, a.step);
  FOR_ALL(k, i) {
    double p = ld(L[0][k], i, 0), g = ld(L[1][k], i, ACC_DT_BF16), m = ld(L[2][k], i, 0),
           v = ld(L[3][k], i, 0);
    p *= 1 - (double)a.lr * a.weight_decay;
    m = a.beta1 * m + (1 - a.beta1) * g;
    v = a.beta2 * v + (1 - a.beta2) * g * g;
    p -= a.lr / bc1 * m / (sqrt(v) / sqrt(bc2) + a.eps);
    st(L[0][k], i, 0, (float)p);
    st(L[2][k], i, 0, (float)m);
    st(L[3][k], i, 0, (float)v);
  }
}
/* The moments of dtype sdt: read exactly, computed in double, stored rounded to nearest even. */
static void r_adam_step_state(void *const *const *L, const float *s, acc_u32 sdt) {
  acc_adam_args_t a;
  memcpy(&a, &s[2], sizeof a);
  const double bc1 = 1 - pow(a.beta1, a.step), bc2 = 1 - pow(a.beta2, a.step);
  const double factor = (double)s[0] * (0.25 / (s[0] + 1e-6)); /* inv_scale * clip */
  FOR_ALL(k, i) {
    const double g = ((double)ld(L[1][k], i, 0) + ld(L[0][k], i, ACC_DT_BF16)) * factor;
    double p = ld(L[2][k], i, 0), m = ld(L[3][k], i, sdt), v = ld(L[4][k], i, sdt);
    p *= 1 - (double)a.lr * a.weight_decay;
    m = a.beta1 * m + (1 - a.beta1) * g;
    v = a.beta2 * v + (1 - a.beta2) * g * g;
    p -= a.lr / bc1 * m / (sqrt(v) / sqrt(bc2) + a.eps);
    st(L[0][k], i, ACC_DT_BF16, 0.0f);
    st(L[1][k], i, 0, (float)g);
    st(L[2][k], i, 0, (float)p);
    st(L[3][k], i, sdt, (float)m);
    st(L[4][k], i, sdt, (float)v);
    st(L[5][k], i, ACC_DT_F16, (float)p);
  }
}
static void r_adam_step(void *const *const *L, const float *s) {
  r_adam_step_state(L, s, ACC_DT_F32);
}
static void r_adam_step_bf16(void *const *const *L, const float *s) {
  r_adam_step_state(L, s, ACC_DT_BF16);
}
static void r_adam_step_torch(void *const *const *L, const float *s) {
  acc_adam_args_t a;
  memcpy(&a, &s[2], sizeof a);
  uint32_t has_grad[NT];
  memcpy(has_grad, &s[KT_HAS_GRAD], sizeof has_grad);
  FOR_ALL(k, i) {
    if (!has_grad[k]) continue;
    const double step = s[KT_STEPS + k];
    const double bc1 = 1 - pow(a.beta1, step), bc2 = 1 - pow(a.beta2, step);
    const double g = (double)ld(L[1][k], i, 0) + ld(L[0][k], i, ACC_DT_F16);
    double p = ld(L[2][k], i, 0), m = ld(L[3][k], i, 0), v = ld(L[4][k], i, 0);
    double vmax = ld(L[6][k], i, 0);
    p *= 1 - (double)a.lr * a.weight_decay;
    m = a.beta1 * m + (1 - a.beta1) * -g;
    v = a.beta2 * v + (1 - a.beta2) * g * g;
    vmax = isnan(vmax) || vmax > v ? vmax : v;
    p -= a.lr / bc1 * m / (sqrt(vmax) / sqrt(bc2) + a.eps);
    st(L[1][k], i, 0, (float)g); /* hp keeps g: maximize negates only Adam's copy */
    st(L[2][k], i, 0, (float)p);
    st(L[3][k], i, 0, (float)m);
    st(L[4][k], i, 0, (float)v);
    st(L[5][k], i, 0, (float)p); /* f32 model weights */
    st(L[6][k], i, 0, (float)vmax);
  }
}
static void r_fill(void *const *const *L, const float *s) {
  (void)s;
  FOR_ALL(k, i) st(L[0][k], i, ACC_DT_BF16, 0.3f);
}
static void r_scale(void *const *const *L, const float *s) {
  FOR_ALL(k, i) st(L[0][k], i, ACC_DT_F32, (float)((double)ld(L[0][k], i, 0) * s[0]));
}
/* st() narrows with the compiler's _Float16 conversion / an integer bf16 rounding. */
static void r_cast_bf16(void *const *const *L, const float *s) {
  (void)s;
  FOR_ALL(k, i) st(L[1][k], i, ACC_DT_BF16, ld(L[0][k], i, ACC_DT_F32));
}
static void r_cast_f16(void *const *const *L, const float *s) {
  (void)s;
  FOR_ALL(k, i) st(L[1][k], i, ACC_DT_F16, ld(L[0][k], i, ACC_DT_F32));
}
static void r_cast_widen(void *const *const *L, const float *s) {
  (void)s;
  FOR_ALL(k, i) st(L[1][k], i, ACC_DT_F32, ld(L[0][k], i, ACC_DT_BF16));
}
static void r_nothing(void *const *const *L, const float *s) {
  (void)L;
  (void)s;
}

void kt_test_elementwise(void) {
  const ew_case_t cases[] = {
      {ACCEL_KERNEL_CLIP, 1, {0}, {1}, sizeof(acc_clip_params_t), p_clip, r_clip, 1e-14},
      {ACCEL_KERNEL_UPDATE_HP, 2, {ACC_DT_BF16, 0}, {1, 1}, sizeof(acc_update_hp_params_t), p_update, r_update, 1e-14},
      {ACCEL_KERNEL_UPDATE_HP, 2, {ACC_DT_F16, 0}, {1, 1}, sizeof(acc_update_hp_params_t), p_update_assign, r_update_assign, 1e-14},
      {ACCEL_KERNEL_UNSCALE, 1, {ACC_DT_F16}, {100}, sizeof(acc_unscale_params_t), p_unscale, r_unscale, 1e-12},
      {ACCEL_KERNEL_ADAM, 4, {0, ACC_DT_BF16, 0, 0}, {1, 1, 0.1f, 0.01f}, sizeof(acc_adam_params_t), p_adam, r_adam, 1e-10},
      {ACCEL_KERNEL_FILL, 1, {ACC_DT_BF16}, {1}, sizeof(acc_fill_params_t), p_fill, r_fill, 0},
      {ACCEL_KERNEL_SCALE, 1, {0}, {1}, sizeof(acc_scale_params_t), p_scale, r_scale, 0},
      {ACCEL_KERNEL_CAST, 2, {0, ACC_DT_BF16}, {3e4f, 1}, sizeof(acc_cast_params_t), p_cast_bf16, r_cast_bf16, 0},
      {ACCEL_KERNEL_CAST, 2, {0, ACC_DT_F16}, {7e4f, 1}, sizeof(acc_cast_params_t), p_cast_f16, r_cast_f16, 0},
      {ACCEL_KERNEL_CAST, 2, {ACC_DT_BF16, 0}, {1e3f, 1}, sizeof(acc_cast_params_t), p_cast_widen, r_cast_widen, 0},
      {ACCEL_KERNEL_CAST, 2, {0, ACC_DT_F16}, {1, 1}, sizeof(acc_cast_params_t), p_cast_skipped, r_nothing, 0},
      {ACCEL_KERNEL_ADAM_STEP, 6, {ACC_DT_BF16, 0, 0, 0, 0, ACC_DT_F16}, {1, 1, 1, 0.1f, 0.01f, 1},
       sizeof(acc_adam_step_params_t), p_adam_step, r_adam_step, 1e-7},
      {ACCEL_KERNEL_ADAM_STEP, 6, {ACC_DT_BF16, 0, 0, ACC_DT_BF16, ACC_DT_BF16, ACC_DT_F16},
       {1, 1, 1, 0.1f, 0.01f, 1}, sizeof(acc_adam_step_params_t), p_adam_step_bf16,
       r_adam_step_bf16, 1e-7},
      {ACCEL_KERNEL_ADAM_STEP, 7, {ACC_DT_F16, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 0.1f, 0.01f, 1, 0.02f},
       sizeof(acc_adam_step_params_t), p_adam_step_torch, r_adam_step_torch, 1e-7},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) test_elementwise(&cases[c]);
}
