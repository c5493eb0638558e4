#include "optstep_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_tensors.h"

#define MANY_SMALL_TENSORS 3000
#define MANY_SMALL_MAX 65536

/* GPT-2 small (124M): wte, wpe, 12 blocks, ln_f, as in the Hugging Face checkpoint. */
static size_t gpt2_sizes(size_t *out) {
  const size_t d = 768;
  size_t n = 0;
  out[n++] = 50257 * d; /* wte */
  out[n++] = 1024 * d;  /* wpe */
  for (int layer = 0; layer < 12; layer++) {
    const size_t block[12] = {d, d,                     /* ln_1 w, b */
                              d * 3 * d, 3 * d,         /* attn.c_attn w, b */
                              d * d, d,                 /* attn.c_proj w, b */
                              d, d,                     /* ln_2 w, b */
                              d * 4 * d, 4 * d,         /* mlp.c_fc w, b */
                              4 * d * d, d};            /* mlp.c_proj w, b */
    for (int i = 0; i < 12; i++) out[n++] = block[i];
  }
  out[n++] = d; /* ln_f w */
  out[n++] = d; /* ln_f b */
  return n;
}

/* The preset's shape at params parameters in all: every size scaled by params / numel (at least
 * 1), the largest tensor taking what rounding left over. */
static int scale_sizes(os_model_t *md, size_t params) {
  if (params < md->n) {
    fprintf(stderr, "accel-bench: --params (%zu) must be >= the preset's %zu tensors\n", params,
            md->n);
    return 0;
  }
  const double f = (double)params / (double)md->numel;
  size_t total = 0, big = 0;
  for (size_t i = 0; i < md->n; i++) {
    const size_t s = (size_t)((double)md->sizes[i] * f);
    md->sizes[i] = s < 1 ? 1 : s;
    total += md->sizes[i];
    if (md->sizes[i] > md->sizes[big]) big = i;
  }
  while (total > params) { /* the floor of each product can only fall short, but 1s add up */
    size_t k = 0;
    for (size_t i = 0; i < md->n; i++)
      if (md->sizes[i] > md->sizes[k]) k = i;
    const size_t cut = total - params < md->sizes[k] - 1 ? total - params : md->sizes[k] - 1;
    md->sizes[k] -= cut;
    total -= cut;
  }
  md->sizes[big] += params - total;
  snprintf(md->name + strlen(md->name), sizeof md->name - strlen(md->name), " x %.3g", f);
  md->numel = params;
  return 1;
}

int os_model_sizes(os_model_t *md, const char *preset, size_t tensors, size_t params) {
  static const size_t tiny[] = {1, 7, 100, 1000, 4097, 65536, 70001, 333};
  memset(md, 0, sizeof *md);
  size_t cap = preset == NULL ? tensors : !strcmp(preset, "gpt2") ? 148 : MANY_SMALL_TENSORS;
  md->sizes = calloc(cap, sizeof *md->sizes);
  md->offsets = calloc(cap, sizeof *md->offsets);
  if (!md->sizes || !md->offsets) {
    fprintf(stderr, "accel-bench: out of host memory\n");
    return 0;
  }
  if (preset == NULL) {
    if (!bench_split_sizes(params, tensors, 7, md->sizes)) {
      fprintf(stderr, "accel-bench: --params (%zu) must be >= --tensors (%zu)\n", params,
              tensors);
      return 0;
    }
    md->n = tensors;
    snprintf(md->name, sizeof md->name, "custom %zu tensors", tensors);
  } else if (!strcmp(preset, "tiny")) {
    md->n = sizeof tiny / sizeof tiny[0];
    memcpy(md->sizes, tiny, sizeof tiny);
  } else if (!strcmp(preset, "gpt2")) {
    md->n = gpt2_sizes(md->sizes);
  } else if (!strcmp(preset, "many-small")) {
    /* Log-uniform in [1, 64K]: many tiny biases/norms, some larger weights. */
    uint64_t seed = 5;
    md->n = MANY_SMALL_TENSORS;
    for (size_t i = 0; i < md->n; i++) {
      double u = 0.5 * ((double)bench_rand_sym(&seed) + 1.0);
      size_t s = (size_t)exp(u * log((double)MANY_SMALL_MAX));
      md->sizes[i] = s < 1 ? 1 : s > MANY_SMALL_MAX ? MANY_SMALL_MAX : s;
    }
  } else {
    fprintf(stderr, "accel-bench: unknown preset '%s' (tiny, many-small, gpt2)\n", preset);
    return 0;
  }
  if (preset) snprintf(md->name, sizeof md->name, "%s", preset);
  for (size_t i = 0; i < md->n; i++) md->numel += md->sizes[i];
  if (preset && params && !scale_sizes(md, params)) return 0;
  md->flat = bench_layout(md->sizes, md->n, md->offsets);
  return 1;
}

int os_model_alloc(os_model_t *md, accel_device_t *dev) {
  md->dev = dev;
  md->P = calloc(5 * md->n, sizeof *md->P);
  if (!md->P) {
    fprintf(stderr, "accel-bench: out of host memory\n");
    return 0;
  }
  md->HP = md->P + md->n;
  md->M = md->HP + md->n;
  md->V = md->M + md->n;
  md->LP = md->V + md->n;
  const size_t f4 = md->flat * 4, f2 = md->flat * 2;
  BENCH_TRY(accel_malloc(dev, f4, (void **)&md->params));
  BENCH_TRY(accel_malloc(dev, f4, (void **)&md->hp));
  BENCH_TRY(accel_malloc(dev, f4, (void **)&md->exp_avg));
  BENCH_TRY(accel_malloc(dev, f4, (void **)&md->exp_avg_sq));
  BENCH_TRY(accel_malloc(dev, f2, (void **)&md->lp));
  BENCH_TRY(accel_malloc(dev, f2, (void **)&md->pristine));
  BENCH_TRY(accel_malloc(dev, sizeof *md->scalars, (void **)&md->scalars));
  bench_make_list(md->params, ACCEL_F32, md->sizes, md->offsets, md->n, md->P);
  bench_make_list(md->hp, ACCEL_F32, md->sizes, md->offsets, md->n, md->HP);
  bench_make_list(md->exp_avg, ACCEL_F32, md->sizes, md->offsets, md->n, md->M);
  bench_make_list(md->exp_avg_sq, ACCEL_F32, md->sizes, md->offsets, md->n, md->V);
  bench_make_list(md->lp, ACCEL_BF16, md->sizes, md->offsets, md->n, md->LP);
  /* Gradients as a loss-scaled backward pass would leave them (scale 2^10). */
  BENCH_TRY(bench_upload_random(dev, md->pristine, md->flat, ACCEL_BF16, 1024.0f, 3));
  return 1;
fail:
  return 0;
}

int os_model_reset(os_model_t *md, accel_stream_t *s) {
  static const os_scalars_t zero;
  BENCH_TRY(bench_upload_random(md->dev, md->params, md->flat, ACCEL_F32, 1.0f, 2));
  BENCH_TRY(accel_memcpy(md->dev, md->scalars, &zero, sizeof zero));
  BENCH_TRY(accel_fill(s, md->M, md->n, 0.0f));
  BENCH_TRY(accel_fill(s, md->V, md->n, 0.0f));
  BENCH_TRY(accel_stream_synchronize(s));
  return 1;
fail:
  return 0;
}

static uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w;
  h *= 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

/* Hashes only the tensors' elements (padding between views is never written). */
static int digest_buffer(os_model_t *md, const void *dev_base, size_t es, unsigned char *stage,
                         size_t stage_bytes, uint64_t *h) {
  for (size_t i = 0; i < md->n; i++) {
    const unsigned char *src = (const unsigned char *)dev_base + md->offsets[i] * es;
    size_t bytes = md->sizes[i] * es;
    for (size_t done = 0; done < bytes; done += stage_bytes) {
      size_t m = bytes - done < stage_bytes ? bytes - done : stage_bytes;
      BENCH_TRY(accel_memcpy(md->dev, stage, src + done, m));
      size_t k = 0;
      for (; k + 8 <= m; k += 8) {
        uint64_t w;
        memcpy(&w, stage + k, 8);
        *h = mix(*h, w);
      }
      for (; k < m; k++) *h = mix(*h, stage[k]);
    }
  }
  return 1;
fail:
  return 0;
}

int os_model_digest(os_model_t *md, uint64_t *digest) {
  const size_t stage_bytes = 16u << 20;
  unsigned char *stage = malloc(stage_bytes);
  uint64_t h = 0xCBF29CE484222325ull;
  int ok = 0;
  os_scalars_t sc;
  if (!stage) {
    fprintf(stderr, "accel-bench: out of host memory\n");
    return 0;
  }
  if (!digest_buffer(md, md->params, 4, stage, stage_bytes, &h) ||
      !digest_buffer(md, md->exp_avg, 4, stage, stage_bytes, &h) ||
      !digest_buffer(md, md->exp_avg_sq, 4, stage, stage_bytes, &h))
    goto done;
  BENCH_TRY(accel_memcpy(md->dev, &sc, md->scalars, sizeof sc));
  sc.reserved = 0.0f;
  unsigned char bytes[sizeof sc];
  memcpy(bytes, &sc, sizeof sc);
  for (size_t k = 0; k < sizeof sc; k++) h = mix(h, bytes[k]);
  *digest = h;
  ok = 1;
  goto done;
fail:
  ok = 0;
done:
  free(stage);
  return ok;
}

void os_model_free(os_model_t *md) {
  void *bufs[] = {md->params, md->hp, md->exp_avg, md->exp_avg_sq, md->lp, md->pristine,
                  md->scalars};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i]) accel_free(md->dev, bufs[i]);
  free(md->P);
  free(md->sizes);
  free(md->offsets);
  memset(md, 0, sizeof *md);
}

accel_adam_step_t os_adam_step(os_scalars_t *sc, size_t n, const accel_tensor_t *grads,
                               const accel_tensor_t *hp, const accel_tensor_t *params,
                               const accel_tensor_t *exp_avg, const accel_tensor_t *exp_avg_sq) {
  const accel_adam_step_t step = {
      .struct_size = sizeof step, .n = n, .grads = grads, .hp_grads = hp, .params = params,
      .exp_avg = exp_avg, .exp_avg_sq = exp_avg_sq, .args_dev = &sc->args,
      .inv_scale_dev = &sc->inv_scale, .found_inf_dev = &sc->args.found_inf, .norm_type = 2.0f,
      .norm_dev = &sc->norm, .max_norm = OS_MAX_NORM, .clip_eps = OS_CLIP_EPS,
      .coef_out_dev = &sc->coef, .flags = ACCEL_ADAM_STEP_ZERO_GRADS | ACCEL_ADAM_STEP_CLIP};
  return step;
}
