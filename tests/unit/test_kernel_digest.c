/*
 * Bitwise digests of every tensor operation (issue 17): each operation of accel_kernels.h runs on
 * fixed pseudo-random inputs (every dtype it takes; lists of one tensor of 0, 1, 255, 256, 257,
 * ACC_CHUNK-1, ACC_CHUNK, ACC_CHUNK+1 elements, a multi-tensor list and n = 0), every byte of
 * its inputs, outputs and device scalars afterwards is hashed (FNV-1a 64), and the digest of
 * each (operation, dtype) must equal the one recorded below. The digests were recorded from the
 * code before the kernel table refactor (those of accel_cast and the mixed-precision
 * bookkeeping when they were added), so any change of bits (CPU or PoCL) shows here.
 * Where docs/KERNELS.md promises bitwise identity across backends (everything but norms with
 * p other than 1, 2, inf) the OpenCL digest must also equal the CPU one.
 *
 *   test_kernel_digest [--print] [--require] [SELECTOR...]
 *       default selectors: cpu opencl; an absent backend is skipped, as long as cpu ran;
 *       --require: every named backend must open (the device check: cpu cuda).
 * Any backend other than cpu (cuda, hip, level_zero too) must give the CPU's digest where the
 * contract promises the same bits; cpu and opencl must also give the recorded ones.
 * --print writes the table of digests in the form used below (to record new ones).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_kernels.h"
#include "accel/accel_random.h"

#define CHUNK 65536u
#define MAX_LISTS 6
#define MAX_TENSORS 8

/* Recorded digests: name, CPU, OpenCL (0: not checked on that backend). */
typedef struct recorded {
  const char *name;
  uint64_t cpu, opencl;
} recorded_t;

static const recorded_t recorded[] = {
    {"norm_p1/F32", 0x8fa1164799a28f82ull, 0x8fa1164799a28f82ull},
    {"norm_p1/F16", 0xfa49b978d3af2ea4ull, 0xfa49b978d3af2ea4ull},
    {"norm_p1/BF16", 0xa7717f683ba65cb9ull, 0xa7717f683ba65cb9ull},
    {"norm_p2/F32", 0x1baae4775b7c2050ull, 0x1baae4775b7c2050ull},
    {"norm_p2/F16", 0x215ddc69f3d6f7b0ull, 0x215ddc69f3d6f7b0ull},
    {"norm_p2/BF16", 0x6fd244d02f80b169ull, 0x6fd244d02f80b169ull},
    {"norm_pinf/F32", 0x8f2e48c6c4ec38eeull, 0x8f2e48c6c4ec38eeull},
    {"norm_pinf/F16", 0xd7eb6f33ddce7dabull, 0xd7eb6f33ddce7dabull},
    {"norm_pinf/BF16", 0x730ee142cfe69cbfull, 0x730ee142cfe69cbfull},
    {"norm_p3/F32", 0x62e93ee3b3aee1e6ull, 0x7bac03e40e9943f7ull},
    {"norm_p3/F16", 0x1148084f9364f891ull, 0x1148084f9364f891ull},
    {"norm_p3/BF16", 0x17efa21d7e68fb83ull, 0xb8ebe81f6bbee6ddull},
    {"clip/F32", 0xfee21fb91c16083bull, 0xfee21fb91c16083bull},
    {"clip/F16", 0x71f8cda2a0f3f7d3ull, 0x71f8cda2a0f3f7d3ull},
    {"clip/BF16", 0xc8297eb7b195cde8ull, 0xc8297eb7b195cde8ull},
    {"update_hp/F32", 0xa1eec6eaa87a1a1cull, 0xa1eec6eaa87a1a1cull},
    {"update_hp/F16", 0x563e5850396c06dbull, 0x563e5850396c06dbull},
    {"update_hp/BF16", 0xddcf7bf22fbf29f1ull, 0xddcf7bf22fbf29f1ull},
    {"update_hp_zero/F32", 0x22dfdd8b67f7f5ecull, 0x22dfdd8b67f7f5ecull},
    {"update_hp_zero/F16", 0x8db5f0f6d7413ed3ull, 0x8db5f0f6d7413ed3ull},
    {"update_hp_zero/BF16", 0xf567f2b441362193ull, 0xf567f2b441362193ull},
    {"unscale/F32", 0xc4b8516034d36d26ull, 0xc4b8516034d36d26ull},
    {"unscale/F16", 0x56bda6a2139ecf57ull, 0x56bda6a2139ecf57ull},
    {"unscale/BF16", 0xcbe98be214c1d771ull, 0xcbe98be214c1d771ull},
    {"unscale_overflow/F32", 0x2b32708a1e17e3b2ull, 0x2b32708a1e17e3b2ull},
    {"unscale_overflow/F16", 0x11dfaacff86827bdull, 0x11dfaacff86827bdull},
    {"unscale_overflow/BF16", 0x42bfe95f80930998ull, 0x42bfe95f80930998ull},
    {"adam/F32", 0x977b1bd3759fb1ddull, 0x977b1bd3759fb1ddull},
    {"adam/F16", 0x4b5a0021fd900015ull, 0x4b5a0021fd900015ull},
    {"adam/BF16", 0x88869299c55078e0ull, 0x88869299c55078e0ull},
    {"adamw/F32", 0x5e8fe5a9a9302d7aull, 0x5e8fe5a9a9302d7aull},
    {"adamw/F16", 0xd6576826003b106bull, 0xd6576826003b106bull},
    {"adamw/BF16", 0x3d9f1022f9d37951ull, 0x3d9f1022f9d37951ull},
    {"fill/F32", 0x0dd389a8bc374a6dull, 0x0dd389a8bc374a6dull},
    {"fill/F16", 0xa7bc3ebcb3e9be91ull, 0xa7bc3ebcb3e9be91ull},
    {"fill/BF16", 0x057f0cac9ffe2cd1ull, 0x057f0cac9ffe2cd1ull},
    {"scale/F32", 0xd0a26573d06fdb56ull, 0xd0a26573d06fdb56ull},
    {"scale/F16", 0x5190624b7cb03aaeull, 0x5190624b7cb03aaeull},
    {"scale/BF16", 0x0094911f217b8680ull, 0x0094911f217b8680ull},
    /* issue 22: recorded from the code that added them (cast, the amp bookkeeping) */
    {"cast_down/F32", 0x1c4cd9fa9c2ce2f5ull, 0x1c4cd9fa9c2ce2f5ull},
    {"cast_down/F16", 0xa65c3aaa358625d8ull, 0xa65c3aaa358625d8ull},
    {"cast_down/BF16", 0x8db9b9f5ef33b098ull, 0x8db9b9f5ef33b098ull},
    {"cast_up/F32", 0x2b724124556134bdull, 0x2b724124556134bdull},
    {"cast_up/F16", 0xf6b9218eec5eb8bdull, 0xf6b9218eec5eb8bdull},
    {"cast_up/BF16", 0x392a0b5740d31b1dull, 0x392a0b5740d31b1dull},
    {"cast_skipped/F32", 0x9b03e363eb95dbfeull, 0x9b03e363eb95dbfeull},
    {"cast_skipped/F16", 0xb02bf5ff6f834211ull, 0xb02bf5ff6f834211ull},
    {"cast_skipped/BF16", 0xd4301ab2ed72d4a6ull, 0xd4301ab2ed72d4a6ull},
    {"amp_step/F32", 0xe2d5989d1a40f7f9ull, 0xe2d5989d1a40f7f9ull},
    {"amp_step/F16", 0x8a5f3da329918a2dull, 0x8a5f3da329918a2dull},
    {"amp_step/BF16", 0x6ac000a980da43f2ull, 0x6ac000a980da43f2ull},
    /* issue 30: recorded from the code that added the fused step */
    {"adam_step/F32", 0x18a4c03bbc163be4ull, 0x18a4c03bbc163be4ull},
    {"adam_step/F16", 0x3011c36b6747a0a9ull, 0x3011c36b6747a0a9ull},
    {"adam_step/BF16", 0x3c5d05ca72c34609ull, 0x3c5d05ca72c34609ull},
    {"adam_step_bf16_master/F32", 0xcf25a23588a2f254ull, 0xcf25a23588a2f254ull},
    {"adam_step_bf16_master/F16", 0x45811074b0a39ceaull, 0x45811074b0a39ceaull},
    {"adam_step_bf16_master/BF16", 0x8310aa146a5ea38bull, 0x8310aa146a5ea38bull},
};

typedef enum op {
  OP_NORM1, OP_NORM2, OP_NORMINF, OP_NORM3, OP_CLIP, OP_HP, OP_HP_ZERO, OP_UNSCALE,
  OP_UNSCALE_INF, OP_ADAM, OP_ADAMW, OP_FILL, OP_SCALE,
  /* issue 22 (recorded when they were added) */
  OP_CAST_DOWN, OP_CAST_UP, OP_CAST_SKIPPED, OP_AMP_STEP,
  /* issue 30: the fused step (recorded when it was added; the CTS checks that its bits are
   * those of the separate kernels) */
  OP_ADAM_STEP,
  /* issue 39: BF16 master weights rounded stochastically (the CTS checks the rounding rule) */
  OP_ADAM_STEP_B16P, OP_COUNT
} op_t;

static const char *const op_names[OP_COUNT] = {
    "norm_p1", "norm_p2", "norm_pinf", "norm_p3", "clip", "update_hp", "update_hp_zero",
    "unscale", "unscale_overflow", "adam", "adamw", "fill", "scale",
    "cast_down", "cast_up", "cast_skipped", "amp_step", "adam_step", "adam_step_bf16_master"};

/* Lists per operation, and which of them take the dtype under test (1; 2: always BF16; the
 * others are F32). */
static int op_lists(op_t op, int *varies) {
  switch (op) {
  case OP_HP:
  case OP_HP_ZERO: varies[0] = 1; varies[1] = 0; return 2;
  case OP_ADAM:
  case OP_ADAMW: varies[0] = 0; varies[1] = 1; varies[2] = 0; varies[3] = 0; return 4;
  case OP_CAST_DOWN:
  case OP_CAST_SKIPPED: varies[0] = 0; varies[1] = 1; return 2;
  case OP_CAST_UP: varies[0] = 1; varies[1] = 0; return 2;
  case OP_ADAM_STEP: /* grads and model weights in the dtype; hp, params, moments F32 */
    for (int l = 0; l < 6; ++l) varies[l] = l == 0 || l == 5;
    return 6;
  case OP_ADAM_STEP_B16P: /* grads in the dtype; hp F32; BF16 params; F32 moments */
    for (int l = 0; l < 5; ++l) varies[l] = l == 0 ? 1 : l == 2 ? 2 : 0;
    return 5;
  default: varies[0] = 1; return 1;
  }
}

/* Norms with p other than 1, 2, inf use powf: not bitwise across math libraries. */
static int cross_backend(op_t op) { return op != OP_NORM3; }

static uint64_t rng_state;
static uint64_t rng(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Finite values of magnitude 2^-7 .. 2^3 (nonnegative when positive is set), as raw bits. */
static void random_fill(void *dst, size_t numel, accel_dtype_t dt, int positive) {
  for (size_t i = 0; i < numel; ++i) {
    const uint64_t r = rng();
    const uint32_t sign = positive ? 0u : (uint32_t)(r >> 63);
    const uint32_t e = (uint32_t)((r >> 40) % 11u); /* 0..10 -> 2^-7 .. 2^3 */
    if (dt == ACCEL_F32) {
      const uint32_t bits = sign << 31 | (120u + e) << 23 | (uint32_t)(r & 0x7FFFFFu);
      memcpy((char *)dst + 4 * i, &bits, 4);
    } else if (dt == ACCEL_F16) {
      const uint16_t bits = (uint16_t)(sign << 15 | (8u + e) << 10 | (uint32_t)(r & 0x3FFu));
      memcpy((char *)dst + 2 * i, &bits, 2);
    } else {
      const uint16_t bits = (uint16_t)(sign << 15 | (120u + e) << 7 | (uint32_t)(r & 0x7Fu));
      memcpy((char *)dst + 2 * i, &bits, 2);
    }
  }
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001B3ull;
  return h;
}

static int failures;
#define FAIL(...)                                                                            \
  do {                                                                                       \
    fprintf(stderr, "test_kernel_digest: " __VA_ARGS__);                                     \
    fprintf(stderr, "\n");                                                                   \
    ++failures;                                                                              \
  } while (0)

static size_t dsize(accel_dtype_t dt) { return dt == ACCEL_F32 ? 4 : 2; }

static accel_dtype_t list_dtype(int varies, accel_dtype_t dt) {
  return varies == 2 ? ACCEL_BF16 : varies ? dt : ACCEL_F32;
}

/* Runs op over one list configuration (n tensors of numel[i] elements) and folds every byte it
 * can have touched into h. Returns 0 when the call failed. */
static int run_case(accel_device_t *dev, accel_stream_t *s, op_t op, accel_dtype_t dt,
                    size_t n, const size_t *numel, uint64_t *h) {
  int varies[MAX_LISTS];
  const int nl = op_lists(op, varies);
  accel_tensor_t lists[MAX_LISTS][MAX_TENSORS];
  size_t off[MAX_LISTS][MAX_TENSORS], total = 0;
  for (int l = 0; l < nl; ++l)
    for (size_t i = 0; i < n; ++i) {
      off[l][i] = total;
      total += (numel[i] * dsize(list_dtype(varies[l], dt)) + 255u) / 256u * 256u;
    }
  const size_t scal_bytes = 256;
  char *host = malloc(total + scal_bytes);
  void *dmem = NULL;
  if (!host || accel_malloc(dev, total + scal_bytes, &dmem) != ACCEL_OK) {
    FAIL("%s: allocation of %zu bytes failed: %s", op_names[op], total, accel_last_error());
    free(host);
    return 0;
  }
  memset(host, 0xA5, total + scal_bytes);
  for (int l = 0; l < nl; ++l)
    for (size_t i = 0; i < n; ++i) {
      const accel_dtype_t ldt = list_dtype(varies[l], dt);
      /* exp_avg_sq (list 3 of Adam, 4 of the fused step) is a running mean of squares */
      random_fill(host + off[l][i], numel[i], ldt, l == (op >= OP_ADAM_STEP ? 4 : 3));
      lists[l][i] = (accel_tensor_t){(char *)dmem + off[l][i], numel[i], ldt};
    }
  /* device scalars: [0] out/total norm, [1] coef_out/found_inf, [2] scale, [8..] Adam args */
  float *sc = (float *)(host + total);
  sc[0] = op == OP_CLIP ? 37.5f : 0.0f;
  sc[1] = 0.0f;
  sc[2] = op == OP_UNSCALE_INF ? 3e38f : 0.75f;
  const accel_adam_args_t args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3u,
                                  op == OP_ADAMW ? 1u : 0u, 0.0f};
  memcpy(&sc[8], &args, sizeof args);
  /* [16..21] the loss scaler of amp_step (only there: the other digests hash these bytes as
   * they were recorded): 1/scale = 2^120 overflows F16 (found_inf), not F32 */
  const accel_loss_scaler_t scaler = {ldexpf(1.0f, -120), 0.0f, 0, 1, 2.0f, 0.5f};
  if (op == OP_AMP_STEP) memcpy(&sc[16], &scaler, sizeof scaler);
  accel_status_t st = accel_memcpy(dev, dmem, host, total + scal_bytes);
  float *dsc = (float *)((char *)dmem + total);
  accel_generator_t *gen = NULL;
  const accel_tensor_t *t0 = n ? lists[0] : NULL, *t1 = n ? lists[1] : NULL;
  if (st == ACCEL_OK) {
    switch (op) {
    case OP_NORM1: st = accel_multi_tensor_norm(s, t0, n, 1.0f, dsc); break;
    case OP_NORM2: st = accel_multi_tensor_norm(s, t0, n, 2.0f, dsc); break;
    case OP_NORMINF: st = accel_multi_tensor_norm(s, t0, n, INFINITY, dsc); break;
    case OP_NORM3: st = accel_multi_tensor_norm(s, t0, n, 3.0f, dsc); break;
    case OP_CLIP: st = accel_clip_by_global_norm(s, t0, n, 1.0f, dsc, 1e-6f, dsc + 1); break;
    case OP_HP: st = accel_update_hp_grads(s, t0, t1, n, 0); break;
    case OP_HP_ZERO: st = accel_update_hp_grads(s, t0, t1, n, 1); break;
    case OP_UNSCALE:
    case OP_UNSCALE_INF: st = accel_unscale_and_check(s, t0, n, dsc + 2, dsc + 1); break;
    case OP_ADAM:
    case OP_ADAMW:
      st = accel_fused_adam(s, t0, t1, n ? lists[2] : NULL, n ? lists[3] : NULL, n,
                            (const accel_adam_args_t *)(dsc + 8));
      break;
    case OP_FILL: st = accel_fill(s, t0, n, 1.2345678f); break;
    case OP_SCALE: st = accel_scale(s, t0, n, dsc + 2); break;
    case OP_CAST_DOWN:
    case OP_CAST_UP: st = accel_cast(s, t0, t1, n, dsc + 1); break;
    case OP_CAST_SKIPPED: st = accel_cast(s, t0, t1, n, dsc + 2); break;
    case OP_AMP_STEP: {
      accel_loss_scaler_t *dscaler = (accel_loss_scaler_t *)(void *)(dsc + 16);
      accel_adam_args_t *dargs = (accel_adam_args_t *)(void *)(dsc + 8);
      st = accel_amp_begin_step(s, dscaler, dsc + 1);
      if (st == ACCEL_OK) st = accel_unscale_and_check(s, t0, n, &dscaler->inv_scale, dsc + 1);
      if (st == ACCEL_OK) st = accel_step_count(s, &dargs->step, dsc + 1);
      if (st == ACCEL_OK) st = accel_amp_update_scale(s, dscaler, dsc + 1);
      break;
    }
    case OP_ADAM_STEP:
    case OP_ADAM_STEP_B16P: {
      const int b16p = op == OP_ADAM_STEP_B16P;
      if (b16p) st = accel_generator_create(dev, 0x5eed + n, &gen);
      const accel_adam_step_t d = {
          .struct_size = sizeof d, .n = n, .grads = t0, .hp_grads = t1,
          .params = n ? lists[2] : NULL, .exp_avg = n ? lists[3] : NULL,
          .exp_avg_sq = n ? lists[4] : NULL, .model_params = n && !b16p ? lists[5] : NULL,
          .generator = gen,
          .args_dev = (const accel_adam_args_t *)(dsc + 8), .inv_scale_dev = dsc + 2,
          .found_inf_dev = dsc + 1, .norm_type = 2.0f, .norm_dev = dsc, .max_norm = 1.0f,
          .clip_eps = 1e-6f, .coef_out_dev = dsc + 3,
          .flags = ACCEL_ADAM_STEP_ZERO_GRADS | ACCEL_ADAM_STEP_CLIP};
      if (st == ACCEL_OK) st = accel_adam_step_norm(s, &d);
      if (st == ACCEL_OK) st = accel_adam_step_update(s, &d);
      break;
    }
    case OP_COUNT: break;
    }
  }
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  if (st == ACCEL_OK) st = accel_memcpy(dev, host, dmem, total + scal_bytes);
  if (st != ACCEL_OK) FAIL("%s %s: %s", op_names[op], accel_dtype_name(dt), accel_last_error());
  else *h = fnv1a(*h, host, total + scal_bytes);
  if (gen) accel_generator_release(gen);
  accel_free(dev, dmem);
  free(host);
  return st == ACCEL_OK;
}

static const size_t single_sizes[] = {0, 1, 255, 256, 257, CHUNK - 1, CHUNK, CHUNK + 1};
static const size_t multi_sizes[] = {3, 0, 70000, 1, 257, CHUNK};

/* The digest of op on dt over every list configuration. */
static uint64_t digest(accel_device_t *dev, accel_stream_t *s, op_t op, accel_dtype_t dt) {
  uint64_t h = 0xCBF29CE484222325ull;
  rng_state = 0x1234u + (uint64_t)op * 131u + (uint64_t)dt;
  for (size_t k = 0; k < sizeof single_sizes / sizeof *single_sizes; ++k)
    run_case(dev, s, op, dt, 1, &single_sizes[k], &h);
  run_case(dev, s, op, dt, sizeof multi_sizes / sizeof *multi_sizes, multi_sizes, &h);
  run_case(dev, s, op, dt, 0, NULL, &h);
  return h;
}

static const recorded_t *find_recorded(const char *name) {
  for (size_t i = 0; i < sizeof recorded / sizeof *recorded; ++i)
    if (recorded[i].name && strcmp(recorded[i].name, name) == 0) return &recorded[i];
  return NULL;
}

int main(int argc, char **argv) {
  int print = 0, require = 0, nsel = 0;
  const char *sel[8];
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--print") == 0) print = 1;
    else if (strcmp(argv[i], "--require") == 0) require = 1;
    else if (nsel < 8) sel[nsel++] = argv[i];
  }
  if (nsel == 0) {
    sel[nsel++] = "cpu";
    sel[nsel++] = "opencl";
  }
  /* digests[backend][op][dtype] (0: not run) */
  static uint64_t got[8][OP_COUNT][3];
  int ran_cpu = 0;
  for (int b = 0; b < nsel; ++b) {
    accel_device_t *dev = NULL;
    accel_stream_t *s = NULL;
    if (accel_device_open(sel[b], &dev) != ACCEL_OK) {
      if (strcmp(sel[b], "cpu") == 0 || require) FAIL("%s: %s", sel[b], accel_last_error());
      else printf("%s: skipped (%s)\n", sel[b], accel_last_error());
      continue;
    }
    if (accel_stream_default(dev, &s) != ACCEL_OK) {
      FAIL("%s: no default stream: %s", sel[b], accel_last_error());
      accel_device_close(dev);
      continue;
    }
    const int is_cpu = strcmp(sel[b], "cpu") == 0, is_cl = strcmp(sel[b], "opencl") == 0;
    ran_cpu |= is_cpu;
    for (int op = 0; op < OP_COUNT; ++op)
      for (int dt = 0; dt < 3; ++dt) {
        const uint64_t d = digest(dev, s, (op_t)op, (accel_dtype_t)dt);
        got[b][op][dt] = d;
        char name[64];
        snprintf(name, sizeof name, "%s/%s", op_names[op], accel_dtype_name((accel_dtype_t)dt));
        const recorded_t *r = find_recorded(name);
        const uint64_t want = !r ? 0 : is_cpu ? r->cpu : is_cl ? r->opencl : 0;
        if (!print && (is_cpu || is_cl) && d != want)
          FAIL("%s on %s: digest 0x%016llxull, recorded 0x%016llxull", name, sel[b],
               (unsigned long long)d, (unsigned long long)want);
      }
    accel_device_close(dev);
  }
  if (!ran_cpu) FAIL("the cpu backend did not run");
  /* CPU vs every other backend where the contract promises the same bits */
  int compared = 0;
  for (int b = 0; b < nsel; ++b)
    for (int c = 0; c < nsel; ++c)
      if (strcmp(sel[b], "cpu") == 0 && strcmp(sel[c], "cpu") != 0)
        for (int op = 0; op < OP_COUNT; ++op)
          for (int dt = 0; dt < 3; ++dt) {
            if (!cross_backend((op_t)op) || !got[c][op][dt]) continue;
            compared++;
            if (got[b][op][dt] != got[c][op][dt])
              FAIL("%s/%s: cpu 0x%016llx != %s 0x%016llx", op_names[op],
                   accel_dtype_name((accel_dtype_t)dt), (unsigned long long)got[b][op][dt],
                   sel[c], (unsigned long long)got[c][op][dt]);
          }
  if (compared) printf("test_kernel_digest: %d digests compared with the CPU's\n", compared);
  if (print)
    for (int op = 0; op < OP_COUNT; ++op)
      for (int dt = 0; dt < 3; ++dt) {
        uint64_t cpu = 0, cl = 0;
        for (int b = 0; b < nsel; ++b) {
          if (strcmp(sel[b], "cpu") == 0) cpu = got[b][op][dt];
          if (strcmp(sel[b], "opencl") == 0) cl = got[b][op][dt];
        }
        printf("{\"%s/%s\", 0x%016llxull, 0x%016llxull},\n", op_names[op],
               accel_dtype_name((accel_dtype_t)dt), (unsigned long long)cpu,
               (unsigned long long)cl);
      }
  if (failures) {
    fprintf(stderr, "test_kernel_digest: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_kernel_digest: all digests match\n");
  return 0;
}
