/* The norm kernels of the standalone kernel tests (test_kernels.c): the plain norms and the fused
 * step's sweep over gradients. */
#include "kt_run.h"

/* Norm of the tensor list: CPU (two splits), OpenCL (both forms, grid sizes 1, 3, all), all
 * bitwise equal (p-norms within 1e-5 on OpenCL), and against a double reference. */
static void test_norm(uint32_t dt, uint32_t kind, float p) {
  void *t[NT];
  make_tensors(t, dt, 3.0f, 1000 + dt * 7 + kind);
  size_t es[1] = {esize(dt)};
  void *const *lists[1] = {t};
  const uint32_t nc = total_chunks();
  acc_chunk_t *chunks = xalloc(nc * sizeof *chunks);
  kt_chunks(chunks, 1, lists, es, kSizes, NT);
  float *partials = xalloc(nc * sizeof(float));
  float *out = xalloc(4 * sizeof(float));
  acc_norm_partial_params_t pp = {(acc_u64)(uintptr_t)chunks, (acc_u64)(uintptr_t)partials, nc, dt, kind, p};
  acc_norm_final_params_t fp = {(acc_u64)(uintptr_t)partials, (acc_u64)(uintptr_t)out, nc, kind, p, 0};
  float res[2];
  for (int split = 0; split < 2; ++split) {
    run_cpu(ACCEL_KERNEL_NORM_PARTIAL, &pp, nc, split);
    run_cpu(ACCEL_KERNEL_NORM_FINAL, &fp, 1, split);
    res[split] = out[0];
  }
  KT_CHECK(memcmp(&res[0], &res[1], 4) == 0, "norm dt %u kind %u: split changes bits %a vs %a",
           dt, kind, res[0], res[1]);
  /* double reference */
  double acc = 0;
  for (size_t k = 0; k < NT; ++k)
    for (size_t i = 0; i < kSizes[k]; ++i) {
      const double x = fabs((double)ld(t[k], i, dt));
      if (kind == ACC_NORM_INF) acc = x > acc ? x : acc;
      else if (kind == ACC_NORM_L2) acc += x * x;
      else if (kind == ACC_NORM_L1) acc += x;
      else acc += pow(x, p);
    }
  const double ref = kind == ACC_NORM_L2 ? sqrt(acc) : kind == ACC_NORM_P ? pow(acc, 1.0 / p) : acc;
  const double rel = fabs(res[0] - ref) / ref;
  KT_CHECK(rel < 1e-5, "norm dt %u kind %u: %.9g vs ref %.9g (rel %g)", dt, kind, res[0], ref, rel);
#ifdef KT_OPENCL
  if (g_cl_ok) {
    const uint32_t grids[3] = {1, 3, nc};
    for (int f = 0; f < NFORMS; ++f)
      for (int g = 0; g < 3; ++g) {
        out[0] = -1.0f;
        run_cl(f, ACCEL_KERNEL_NORM_PARTIAL, &pp, sizeof pp, grids[g]);
        run_cl(f, ACCEL_KERNEL_NORM_FINAL, &fp, sizeof fp, 1);
        if (kind != ACC_NORM_P) /* pow differs across math libraries: not bitwise */
          KT_CHECK(memcmp(&out[0], &res[0], 4) == 0,
                   "norm dt %u kind %u form %d grid %u: OpenCL %a != CPU %a", dt, kind, f,
                   grids[g], out[0], res[0]);
        else
          KT_CHECK(fabs(out[0] - ref) / ref < 1e-5, "norm P OpenCL form %d: %g vs %g", f,
                   out[0], ref);
      }
  }
#endif
  for (size_t k = 0; k < NT; ++k) xfree(t[k]);
  xfree(chunks);
  xfree(partials);
  xfree(out);
}

/* The fused step's norm sweep over grads (dt) accumulated into hp and unscaled by 0.5, with
 * an Inf in the last tensor when `bad`, and with `skip`, has-gradient flags (make_has_grad)
 * that leave two tensors out: CPU (two splits) and OpenCL (both forms, grids 1, 3, all) bitwise
 * equal, the norm against a double reference, found_inf set exactly when a counted gradient is
 * bad. */
static void test_grad_norm(uint32_t dt, uint32_t kind, float p, int bad, int skip) {
  void *lp[NT], *hp[NT];
  make_tensors(lp, dt, 3.0f, 2000 + dt * 7 + kind);
  make_tensors(hp, ACC_DT_F32, 1.0f, 3000 + kind);
  if (bad) st(lp[NT - 1], 4321, dt, -INFINITY);
  uint32_t *has_grad = skip ? make_has_grad() : NULL;
  size_t es[2] = {esize(dt), 4};
  void *const *lists[2] = {lp, hp};
  const uint32_t nc = total_chunks();
  acc_chunk_t *chunks = xalloc(nc * sizeof *chunks);
  kt_chunks(chunks, 2, lists, es, kSizes, NT);
  float *partials = xalloc(nc * sizeof(float));
  float *sc = xalloc(4 * sizeof(float)); /* inv_scale, found_inf, norm */
  const acc_u64 a = (acc_u64)(uintptr_t)sc;
  const acc_grad_norm_params_t pp = {(acc_u64)(uintptr_t)chunks, (acc_u64)(uintptr_t)partials,
                                     a, a + 4, (acc_u64)(uintptr_t)has_grad, nc, dt, kind, p,
                                     ACC_STEP_ACCUMULATE, 0};
  const acc_norm_final_params_t fp = {(acc_u64)(uintptr_t)partials, a + 8, nc, kind, p, 0};
  float res[2][2];
  for (int split = 0; split < 2; ++split) {
    sc[0] = 0.5f;
    sc[1] = 0.0f;
    run_cpu(ACCEL_KERNEL_GRAD_NORM_PARTIAL, &pp, nc, split);
    run_cpu(ACCEL_KERNEL_NORM_FINAL, &fp, 1, split);
    res[split][0] = sc[2];
    res[split][1] = sc[1];
  }
  KT_CHECK(memcmp(res[0], res[1], sizeof res[0]) == 0,
           "grad norm dt %u kind %u: split changes bits %a vs %a", dt, kind, res[0][0], res[1][0]);
  const int counted_bad = bad && !skip;
  KT_CHECK(res[0][1] == (counted_bad ? 1.0f : 0.0f),
           "grad norm dt %u kind %u bad %d skip %d: found_inf %g", dt, kind, bad, skip, res[0][1]);
  double acc = 0;
  for (size_t k = 0; k < NT; ++k)
    for (size_t i = 0; i < kSizes[k] && (!has_grad || has_grad[k]); ++i) {
      const double x = fabs(((double)ld(hp[k], i, 0) + ld(lp[k], i, dt)) * 0.5);
      if (kind == ACC_NORM_INF) acc = x > acc ? x : acc;
      else if (kind == ACC_NORM_L2) acc += x * x;
      else acc += pow(x, p);
    }
  const double ref = kind == ACC_NORM_L2 ? sqrt(acc) : kind == ACC_NORM_P ? pow(acc, 1.0 / p) : acc;
  if (counted_bad)
    KT_CHECK(isinf(res[0][0]), "grad norm dt %u kind %u: %g with an Inf gradient", dt, kind,
             res[0][0]);
  else
    KT_CHECK(fabs(res[0][0] - ref) / ref < 1e-5, "grad norm dt %u kind %u: %.9g vs ref %.9g", dt,
             kind, res[0][0], ref);
#ifdef KT_OPENCL
  if (g_cl_ok) {
    const uint32_t grids[3] = {1, 3, nc};
    for (int f = 0; f < NFORMS; ++f)
      for (int g = 0; g < 3; ++g) {
        sc[1] = 0.0f;
        sc[2] = -1.0f;
        run_cl(f, ACCEL_KERNEL_GRAD_NORM_PARTIAL, &pp, sizeof pp, grids[g]);
        run_cl(f, ACCEL_KERNEL_NORM_FINAL, &fp, sizeof fp, 1);
        KT_CHECK(sc[1] == res[0][1], "grad norm form %d grid %u: OpenCL found_inf %g, CPU %g", f,
                 grids[g], sc[1], res[0][1]);
        if (kind != ACC_NORM_P)
          KT_CHECK(memcmp(&sc[2], &res[0][0], 4) == 0,
                   "grad norm dt %u kind %u form %d grid %u: OpenCL %a != CPU %a", dt, kind, f,
                   grids[g], sc[2], res[0][0]);
      }
  }
#endif
  for (size_t k = 0; k < NT; ++k) {
    xfree(lp[k]);
    xfree(hp[k]);
  }
  xfree(chunks);
  xfree(partials);
  xfree(sc);
  if (has_grad) xfree(has_grad);
}

void kt_test_norms(void) {
  for (uint32_t dt = 0; dt < 3; ++dt) {
    test_norm(dt, ACC_NORM_L1, 1.0f);
    test_norm(dt, ACC_NORM_L2, 2.0f);
    test_norm(dt, ACC_NORM_INF, 0.0f);
    test_norm(dt, ACC_NORM_P, 3.5f);
    test_grad_norm(dt, ACC_NORM_L2, 2.0f, 0, 0);
    test_grad_norm(dt, ACC_NORM_INF, 0.0f, 0, 0);
    test_grad_norm(dt, ACC_NORM_P, 1.5f, 0, 0);
    test_grad_norm(dt, ACC_NORM_L2, 2.0f, 1, 0);
    test_grad_norm(dt, ACC_NORM_L2, 2.0f, 1, 1);
    test_grad_norm(dt, ACC_NORM_INF, 0.0f, 0, 1);
  }
}
