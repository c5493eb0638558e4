/*
 * Standalone test of the shared kernels without libaccel: runs every kernel's CPU form through
 * accel_cpu_kernel_lookup on chunk tables over host memory, checks it against double-precision
 * references, checks that any split of the logical blocks (all at once, one by one in reverse)
 * gives the same bits, and, when built with OpenCL (KT_OPENCL), runs the OpenCL C form on the
 * first OpenCL platform (PoCL here, fine-grained SVM) in both of its forms (SIMT, as GPUs run
 * it, and lane loops, as CPU devices do: accel_cl_launch.h) with several grid sizes and
 * requires the same bits as the CPU form. Exit 77 from the OpenCL part when no usable device
 * exists.
 */
#include "accel_cpu_kernels.h"
#include "accel_kernel_ids.h"
#include "kt_common.h"

#ifdef KT_OPENCL
#define CL_TARGET_OPENCL_VERSION 200
#include <CL/cl.h>
#include "accel_kernels_cl.h"
#include "opencl/accel_cl_launch.h"
/* The OpenCL forms, in the order of g_prog. */
static const acc_cl_form_t kForms[2] = {ACC_CL_SIMT, ACC_CL_LANE_LOOPS};
#define NFORMS 2
#else
#define NFORMS 0
#endif

/* Sizes: empty, tiny, around the lane count and around the chunk. */
static const size_t kSizes[] = {0, 1, 3, 255, 256, 257, ACC_CHUNK - 1, ACC_CHUNK, ACC_CHUNK + 1, 200003};
#define NT (sizeof kSizes / sizeof kSizes[0])

/* split 0: one call over all blocks; 1: one block per call, last block first. */
static void run_cpu(uint32_t id, const void *params, uint32_t nblocks, int split) {
  accel_cpu_kernel_fn fn = accel_cpu_kernel_lookup(id);
  if (!split) {
    fn(params, 0, nblocks);
  } else {
    for (uint32_t b = nblocks; b-- > 0;) fn(params, b, b + 1);
  }
}

/* 1 when the OpenCL forms run (KT_OPENCL and a usable device). */
static int g_cl_ok;

#ifdef KT_OPENCL
static cl_context g_ctx;
static cl_command_queue g_q;
static cl_program g_prog[NFORMS];

static int cl_setup(void) {
  cl_platform_id plat;
  cl_device_id dev;
  cl_uint np = 0;
  if (clGetPlatformIDs(1, &plat, &np) != CL_SUCCESS || np == 0) return 0;
  if (clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) return 0;
  cl_device_svm_capabilities svm = 0;
  if (clGetDeviceInfo(dev, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL) != CL_SUCCESS ||
      !(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)) {
    fprintf(stderr, "OpenCL device has no fine-grained buffer SVM\n");
    return 0;
  }
  cl_int err;
  g_ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  if (err) return 0;
  g_q = clCreateCommandQueueWithProperties(g_ctx, dev, NULL, &err);
  if (err) return 0;
  const char *src = (const char *)accel_kernels_cl_source;
  for (int f = 0; f < NFORMS; ++f) {
    const char *options = acc_cl_build_options(kForms[f], 1);
    g_prog[f] = clCreateProgramWithSource(g_ctx, 1, &src, NULL, &err);
    if (err) return 0;
    err = clBuildProgram(g_prog[f], 1, &dev, options, NULL, NULL);
    if (err) {
      char log[16384] = "";
      clGetProgramBuildInfo(g_prog[f], dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
      fprintf(stderr, "clBuildProgram(%s): %d\n%s\n", options, err, log);
      ++kt_failures;
      return 0;
    }
  }
  return 1;
}

/* Launches kernel id in form kForms[form] with `blocks` logical blocks running at once (the
 * kernels loop grid-stride over the rest). */
static void run_cl(int form, uint32_t id, const void *params, size_t psize, uint32_t blocks) {
  cl_int err;
  cl_kernel k = clCreateKernel(g_prog[form], accel_kernel_names[id], &err);
  KT_CHECK(err == CL_SUCCESS, "clCreateKernel %s: %d", accel_kernel_names[id], err);
  if (err) return;
  err = clSetKernelArg(k, 0, psize, params);
  KT_CHECK(err == CL_SUCCESS, "clSetKernelArg: %d", err);
  size_t local, global;
  acc_cl_ndrange(kForms[form], blocks, blocks, &global, &local);
  err = clEnqueueNDRangeKernel(g_q, k, 1, NULL, &global, &local, 0, NULL, NULL);
  KT_CHECK(err == CL_SUCCESS, "clEnqueueNDRangeKernel: %d", err);
  clFinish(g_q);
  clReleaseKernel(k);
}
static void *xalloc(size_t n) {
  return clSVMAlloc(g_ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, n ? n : 4, 64);
}
static void xfree(void *p) { clSVMFree(g_ctx, p); }
#else
static void *xalloc(size_t n) { return aligned_alloc(64, ((n ? n : 4) + 63) / 64 * 64); }
static void xfree(void *p) { free(p); }
#endif

static size_t esize(uint32_t dt) { return dt == ACC_DT_F32 ? 4 : 2; }
static float ld(const void *p, size_t i, uint32_t dt) {
  uint16_t h;
  if (dt == ACC_DT_F32) return ((const float *)p)[i];
  h = ((const uint16_t *)p)[i];
  if (dt == ACC_DT_BF16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  _Float16 v;
  memcpy(&v, &h, 2);
  return (float)v;
}
static void st(void *p, size_t i, uint32_t dt, float v) {
  if (dt == ACC_DT_F32) {
    ((float *)p)[i] = v;
  } else if (dt == ACC_DT_F16) {
    _Float16 h = (_Float16)v;
    memcpy((uint16_t *)p + i, &h, 2);
  } else {
    uint32_t u;
    memcpy(&u, &v, 4);
    ((uint16_t *)p)[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
}

/* Tensors of kSizes in dtype dt with values in [-scale, scale). */
static void make_tensors(void **t, uint32_t dt, float scale, uint64_t seed) {
  uint64_t s = seed;
  for (size_t k = 0; k < NT; ++k) {
    t[k] = xalloc(kSizes[k] * esize(dt));
    for (size_t i = 0; i < kSizes[k]; ++i) st(t[k], i, dt, kt_uniform(&s) * scale);
  }
}

static uint32_t total_chunks(void) {
  uint32_t c = 0;
  for (size_t k = 0; k < NT; ++k) c += (uint32_t)((kSizes[k] + ACC_CHUNK - 1) / ACC_CHUNK);
  return c;
}

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

/* Has-gradient flags: tensors 2 and NT - 1 (which holds the Inf of `bad`) have none. */
static uint32_t *make_has_grad(void) {
  uint32_t *f = xalloc(NT * sizeof *f);
  for (size_t k = 0; k < NT; ++k) f[k] = k != 2 && k != NT - 1;
  return f;
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
static void p_adam_step(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_adam_step_params_t p = {c, sc + 8, sc, sc, sc + 4, 0, 0, nc, ACC_DT_BF16, ACC_DT_F16,
                              ACC_STEP_ZERO_GRADS | ACC_STEP_ACCUMULATE, 0.25f, 1e-6f};
  memcpy(pp, &p, sizeof p);
}
/* ... with torch.optim.AdamW's options: f16 grads accumulated into hp, f32 params, exp_avg,
 * exp_avg_sq and model weights, AMSGrad's maximum (list 6), maximize, a step per tensor, two
 * tensors without a gradient; no loss scale, no clip. */
static void p_adam_step_torch(void *pp, acc_u64 c, uint32_t nc, acc_u64 sc) {
  acc_adam_step_params_t p = {c, sc + 8, 0, 0, 0, sc + 4 * KT_STEPS, sc + 4 * KT_HAS_GRAD, nc,
                              ACC_DT_F16, 0, ACC_STEP_ACCUMULATE | ACC_STEP_MAXIMIZE, 0.0f, 0.0f};
  memcpy(pp, &p, sizeof p);
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
  /* reference on fresh data */
  void *ref[ACC_MAX_LISTS][NT];
  for (int l = 0; l < ec->nl; ++l) make_tensors(ref[l], ec->dt[l], ec->scale[l], 77 + l);
  if (ec->id == ACCEL_KERNEL_UNSCALE) st(ref[0][NT - 1], 12345, ec->dt[0], INFINITY);
  void *const *rl[ACC_MAX_LISTS];
  for (int l = 0; l < ec->nl; ++l) rl[l] = ref[l];
  ec->reference(rl, scal[0]);
  for (int l = 0; l < ec->nl; ++l) {
    double num = 0, den = 0;
    for (size_t k = 0; k < NT; ++k)
      for (size_t i = 0; i < kSizes[k]; ++i) {
        const double g = ld(t[0][l][k], i, ec->dt[l]), w = ld(ref[l][k], i, ec->dt[l]);
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
  for (int r = 0; r < NRUN; ++r) {
    for (int l = 0; l < ec->nl; ++l)
      for (size_t k = 0; k < NT; ++k) xfree(t[r][l][k]);
    xfree(scal[r]);
  }
  for (int l = 0; l < ec->nl; ++l)
    for (size_t k = 0; k < NT; ++k) xfree(ref[l][k]);
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
static void r_adam_step(void *const *const *L, const float *s) {
  acc_adam_args_t a;
  memcpy(&a, &s[2], sizeof a);
  const double bc1 = 1 - pow(a.beta1, a.step), bc2 = 1 - pow(a.beta2, a.step);
  const double factor = (double)s[0] * (0.25 / (s[0] + 1e-6)); /* inv_scale * clip */
  FOR_ALL(k, i) {
    const double g = ((double)ld(L[1][k], i, 0) + ld(L[0][k], i, ACC_DT_BF16)) * factor;
    double p = ld(L[2][k], i, 0), m = ld(L[3][k], i, 0), v = ld(L[4][k], i, 0);
    p *= 1 - (double)a.lr * a.weight_decay;
    m = a.beta1 * m + (1 - a.beta1) * g;
    v = a.beta2 * v + (1 - a.beta2) * g * g;
    p -= a.lr / bc1 * m / (sqrt(v) / sqrt(bc2) + a.eps);
    st(L[0][k], i, ACC_DT_BF16, 0.0f);
    st(L[1][k], i, 0, (float)g);
    st(L[2][k], i, 0, (float)p);
    st(L[3][k], i, 0, (float)m);
    st(L[4][k], i, 0, (float)v);
    st(L[5][k], i, ACC_DT_F16, (float)p);
  }
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

/* Run forms of a one-block launch: 0 the CPU form; 1 + 2 f + g OpenCL form f (f < NFORMS) with
 * g + 1 groups (g < 2). Whether run form `form` exists here: */
#define RUN_FORMS (1 + 2 * NFORMS)
static int form_runs(int form) { return form == 0 || g_cl_ok; }

/* Runs a one-block launch in run form `form` (form_runs). */
static void run_form(uint32_t id, const void *params, size_t psize, int form) {
  if (form == 0) run_cpu(id, params, 1, 0);
#ifdef KT_OPENCL
  else run_cl((form - 1) / 2, id, params, psize, (uint32_t)(form - 1) % 2 + 1);
#else
  (void)psize;
#endif
}

/* torch._amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu), products in double as
 * torch forms them, and the step counter / start of step, for the one-block kernels. */
typedef struct amp_state {
  acc_amp_scaler_t sc;
  float found_inf;
  acc_u32 step;
} amp_state_t;

static void ref_amp_update(acc_amp_scaler_t *s, float found_inf) {
  if (found_inf) {
    s->scale = (float)((double)s->scale * s->backoff_factor);
    s->growth_tracker = 0;
  } else if (s->growth_tracker + 1 == s->growth_interval) {
    const float grown = (float)((double)s->scale * s->growth_factor);
    if (isfinite(grown)) s->scale = grown;
    s->growth_tracker = 0;
  } else {
    s->growth_tracker += 1;
  }
}

/* Runs the three one-block kernels over a set of states (CPU form, and each OpenCL form with 1
 * and 2 blocks at once) against the reference. */
static void test_amp(void) {
  static const float founds[] = {0.0f, 1.0f, NAN, -0.0f};
  static const float scales[] = {65536.0f, 1.0f, 3.0e38f, 0.5f, 3.0f};
  static const acc_u32 trackers[] = {0, 1, 1999, 4};
  for (size_t f = 0; f < sizeof founds / sizeof founds[0]; ++f)
    for (size_t c = 0; c < sizeof scales / sizeof scales[0]; ++c)
      for (size_t g = 0; g < sizeof trackers / sizeof trackers[0]; ++g)
        for (int form = 0; form < RUN_FORMS && form_runs(form); ++form) {
          amp_state_t *d = xalloc(sizeof *d);
          const acc_amp_scaler_t init = {scales[c], -1.0f, trackers[g], 2000, 2.0f, 0.5f};
          d->sc = init;
          d->found_inf = founds[f];
          d->step = 41;
          const acc_u64 sc = (acc_u64)(uintptr_t)&d->sc, fi = (acc_u64)(uintptr_t)&d->found_inf,
                        stp = (acc_u64)(uintptr_t)&d->step;
          const acc_amp_update_params_t up = {0, sc, fi, 0, 0};
          const acc_step_count_params_t cp = {0, stp, fi, 0, 0};
          const acc_step_count_params_t cp_always = {0, stp, 0, 0, 0};
          const acc_amp_begin_params_t bp = {0, sc, fi, 0, 0};
          amp_state_t want = *d;
          ref_amp_update(&want.sc, want.found_inf);
          want.step += (want.found_inf == 0.0f) + 1u;
          want.sc.inv_scale = (float)(1.0 / (double)want.sc.scale); /* exact for 2^k */
          want.found_inf = 0.0f;
          const struct { uint32_t id; const void *p; size_t size; } launches[4] = {
              {ACCEL_KERNEL_AMP_UPDATE, &up, sizeof up},
              {ACCEL_KERNEL_STEP_COUNT, &cp, sizeof cp},
              {ACCEL_KERNEL_STEP_COUNT, &cp_always, sizeof cp_always},
              {ACCEL_KERNEL_AMP_BEGIN, &bp, sizeof bp}};
          for (int k = 0; k < 4; ++k)
            run_form(launches[k].id, launches[k].p, launches[k].size, form);
          const int inv_exact = frexpf(want.sc.scale, &(int){0}) == 0.5f;
          KT_CHECK(memcmp(&d->sc.scale, &want.sc.scale, 4) == 0 &&
                       d->sc.growth_tracker == want.sc.growth_tracker &&
                       d->step == want.step && d->found_inf == 0.0f &&
                       signbit(d->found_inf) == 0 &&
                       (!inv_exact || d->sc.inv_scale == want.sc.inv_scale),
                   "amp form %d found %g scale %g tracker %u: got scale %a tracker %u step %u "
                   "inv %a found %g; want %a %u %u %a", form, founds[f], scales[c],
                   trackers[g], d->sc.scale, d->sc.growth_tracker, d->step, d->sc.inv_scale,
                   d->found_inf, want.sc.scale, want.sc.growth_tracker, want.step,
                   want.sc.inv_scale);
          KT_CHECK(d->sc.growth_interval == 2000 && d->sc.growth_factor == 2.0f &&
                       d->sc.backoff_factor == 0.5f, "amp: settings changed");
          xfree(d);
        }
}

/* The per-tensor step counts (CPU form, OpenCL with grids of 1 and 2): +1 where a tensor has a
 * gradient (all of them without flags), nothing when skipped (a set or NaN flag). */
static void test_step_counts(void) {
  static const float skips[] = {0.0f, 1.0f, NAN, -0.0f};
  for (int flags = 0; flags < 2; ++flags)
    for (size_t k = 0; k < 5; ++k) /* the skip flag of skips[k], or none (k = 4) */
      for (int form = 0; form < RUN_FORMS && form_runs(form); ++form) {
        float *steps = xalloc((NT + 1) * sizeof(float)); /* [NT]: the skip flag */
        uint32_t *has_grad = make_has_grad();
        for (size_t t = 0; t < NT; ++t) steps[t] = (float)(3 * t);
        steps[NT] = k < 4 ? skips[k] : 0.0f;
        const acc_step_counts_params_t p = {0, (acc_u64)(uintptr_t)steps,
                                            flags ? (acc_u64)(uintptr_t)has_grad : 0u,
                                            k < 4 ? (acc_u64)(uintptr_t)&steps[NT] : 0u, 0, NT};
        run_form(ACCEL_KERNEL_STEP_COUNTS, &p, sizeof p, form);
        const int skipped = k < 4 && skips[k] != 0.0f;
        for (size_t t = 0; t < NT; ++t) {
          const float want = (float)(3 * t) + (!skipped && (!flags || has_grad[t]));
          KT_CHECK(steps[t] == want,
                   "step counts form %d flags %d skip %zu: tensor %zu %g, want %g", form, flags,
                   k, t, steps[t], want);
        }
        xfree(steps);
        xfree(has_grad);
      }
}

int main(void) {
#ifdef KT_OPENCL
  g_cl_ok = cl_setup();
  if (!g_cl_ok && !kt_failures) {
    fprintf(stderr, "test_kernels: no usable OpenCL device; skipped\n");
    return 77;
  }
#endif
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
      {ACCEL_KERNEL_ADAM_STEP, 7, {ACC_DT_F16, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 0.1f, 0.01f, 1, 0.02f},
       sizeof(acc_adam_step_params_t), p_adam_step_torch, r_adam_step_torch, 1e-7},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) test_elementwise(&cases[c]);
  test_amp();
  test_step_counts();
  if (kt_failures) {
    fprintf(stderr, "test_kernels: %d failures\n", kt_failures);
    return 1;
  }
#ifdef KT_OPENCL
  printf("test_kernels: CPU and OpenCL forms agree bitwise; references OK\n");
#else
  printf("test_kernels: CPU form OK (references, block splits)\n");
#endif
  return 0;
}
