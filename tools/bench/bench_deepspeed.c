#include "bench_deepspeed.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_torch.h"

#ifndef ACCEL_BENCH_DEEPSPEED_SCRIPT
#define ACCEL_BENCH_DEEPSPEED_SCRIPT "tools/deepspeed_peer.py"
#endif
#ifndef ACCEL_BENCH_BOUND_MODULE
#define ACCEL_BENCH_BOUND_MODULE "accel_bench_bound.so"
#endif
#ifndef ACCEL_BENCH_PYTHON_DIR
#define ACCEL_BENCH_PYTHON_DIR "python"
#endif

/* A variant of the peer: its key in the result line (ms_<phase>_<key>) and its name;
 * other_bytes: it moves fewer bytes than the phase's bound loop, so no % of that bound. */
typedef struct ds_variant {
  const char *key, *name;
  int other_bytes;
} ds_variant_t;

static const ds_variant_t adamw_variants[] = {
    {"accel_list", "accel, the tensors", 0},
    {"accel_flat", "accel, one flat buffer", 0},
    {"ds_per_tensor", "DeepSpeed, per tensor", 0},
    {"ds_flat", "DeepSpeed, one flat buffer", 0},
};
static const ds_variant_t state_variants[] = {
    {"accel_list", "accel, fp32 moments", 0},
    {"accel_list_bf16", "accel, bf16 moments", 1},
    {"accel_list_8bit", "accel, 8-bit moments", 1},
    {"ds_flat", "DeepSpeed flat, fp32 moments", 0},
};
static const ds_variant_t step_variants[] = {
    {"accel_step", "accel, captured step", 0},
    {"ds_step", "DeepSpeed ZeRO-Offload, all on CPU", 0},
    {"ds_step_host", "DeepSpeed, step()'s host part", 0},
};
#define NV(a) (sizeof a / sizeof a[0])
_Static_assert(NV(state_variants) <= NV(adamw_variants) && NV(step_variants) <= NV(adamw_variants),
               "bench_deepspeed_run's ms holds the largest phase: adamw's");

/* Ratios of two variants' times within each round (num / den). */
static const struct {
  const char *phase, *num, *den, *key, *label;
} ratios[] = {
    {"adamw", "ds_per_tensor", "accel_list", "deepspeed_per_tensor_over_accel",
     "DeepSpeed per tensor / accel"},
    {"adamw", "ds_flat", "accel_flat", "deepspeed_flat_over_accel_flat",
     "DeepSpeed flat / accel flat"},
    {"adamw", "ds_flat", "accel_list", "deepspeed_flat_over_accel",
     "DeepSpeed flat / accel over the tensors (ZeRO-Offload's call against accel's)"},
    {"adamw", "accel_list", "accel_flat", "accel_over_accel_flat",
     "accel over the tensors / accel flat"},
    {"state", "accel_list", "accel_list_bf16", "fp32_over_bf16_state",
     "accel fp32 moments / bf16 moments"},
    {"state", "accel_list", "accel_list_8bit", "fp32_over_8bit_state",
     "accel fp32 moments / 8-bit moments"},
    {"state", "ds_flat", "accel_list_bf16", "deepspeed_flat_over_accel_bf16_state",
     "DeepSpeed flat (fp32 moments) / accel bf16 moments"},
    {"state", "ds_flat", "accel_list_8bit", "deepspeed_flat_over_accel_8bit_state",
     "DeepSpeed flat (fp32 moments) / accel 8-bit moments"},
    {"step", "ds_step", "accel_step", "deepspeed_over_accel", "DeepSpeed all on CPU / accel"},
    {"step", "ds_step_host", "accel_step", "deepspeed_host_over_accel",
     "DeepSpeed step()'s host part / accel"},
};

/* The agreement figures of the result line (tools/deepspeed_peer.py, agreement()). */
static const char *const agree_numbers[] = {
    "agree_steps", "agree_tensors", "agree_params", "tol_p",
    "adamw_ds_per_tensor_max_dp", "adamw_ds_per_tensor_max_dm_rel",
    "adamw_ds_per_tensor_max_dv_rel", "adamw_ds_flat_max_dp", "adamw_ds_flat_max_dm_rel",
    "adamw_ds_flat_max_dv_rel", "step_norm_rel", "step_max_dp", "step_max_dm_rel",
    "step_max_dv_rel", "step_model_differs"};
static const char *const agree_bools[] = {"accel_flat_equals_list", "step_model_is_rounded_p",
                                          "step_clipped", "agreement"};

static int peer_bool(const char *text, const char *key) {
  char pat[96];
  snprintf(pat, sizeof pat, "\"%s\": true", key);
  return strstr(text, pat) != NULL;
}

/* The array after "key": [ in text: its values into out (exactly n wanted); 1 when found. */
static int peer_array(const char *text, const char *key, double *out, int n) {
  char pat[96];
  snprintf(pat, sizeof pat, "\"%s\": [", key);
  const char *p = strstr(text, pat);
  if (!p) return 0;
  p += strlen(pat);
  for (int i = 0; i < n; i++) {
    char *end;
    out[i] = strtod(p, &end);
    if (end == p || !(out[i] > 0)) return 0;
    p = end;
    while (*p == ' ' || *p == ',') p++;
  }
  return *p == ']';
}

static double agree_value(const char *text, const char *key) {
  double v = 0;
  bench_peer_number(text, key, &v);
  return v;
}

/* One phase: the bound and its variants' per-round times, their statistics in JSON member
 * phase and on f. ms: (1 + nv) * rounds doubles, tmp: rounds. */
static int report_phase(const char *text, const char *phase, const char *title,
                        const ds_variant_t *v, size_t nv, int rounds, size_t tensors,
                        double params, double *ms, double *tmp, bench_json_t *j, FILE *f) {
  char key[80];
  for (size_t i = 0; i <= nv; i++) {
    snprintf(key, sizeof key, "ms_%s_%s", phase, i ? v[i - 1].key : "bound");
    if (!peer_array(text, key, ms + i * (size_t)rounds, rounds)) {
      fprintf(stderr, "accel-bench: the DeepSpeed peer's result has no %d positive %s\n", rounds,
              key);
      return 1;
    }
  }
  const double bytes = BENCH_BOUND_ADAM_BYTES * params;
  const bench_stats_t bound = bench_stats_copy(ms, rounds, tmp);
  fprintf(f, "%s; bound %.3f ms [%.3f..%.3f], %.2f GB/s\n", title, bound.median, bound.min,
          bound.max, bytes / (bound.median * 1e6));
  fprintf(f, "  %-36s %-30s %-22s\n", "variant", "ms median [min..max]", "% of bound");
  bench_json_begin_object(j, phase);
  bench_json_num(j, "bytes_per_step", bytes);
  bench_json_begin_object(j, "bound");
  bench_json_str(j, "loop", "bench_bound_adam: reads p, g, m, v, writes p, m, v (fp32)");
  bench_json_stats(j, "ms", &bound);
  bench_json_num(j, "gbps", bytes / (bound.median * 1e6));
  bench_json_end_object(j);
  bench_json_begin_array(j, "variants");
  for (size_t i = 0; i < nv; i++) {
    const double *row = ms + (i + 1) * (size_t)rounds;
    const bench_stats_t s = bench_stats_copy(row, rounds, tmp);
    const bench_stats_t pct = bench_bound_pct_stats(ms, row, rounds, tmp);
    char name[80];
    snprintf(name, sizeof name, "%s", v[i].name);
    if (!strncmp(v[i].key, "accel_list", 10) || !strcmp(v[i].key, "ds_per_tensor") ||
        !strcmp(v[i].key, "accel_step"))
      snprintf(name + strlen(name), sizeof name - strlen(name), " (%zu)", tensors);
    if (v[i].other_bytes)
      fprintf(f, "  %-36s %9.3f [%8.3f..%8.3f] (fewer bytes than the bound)\n", name, s.median,
              s.min, s.max);
    else
      fprintf(f, "  %-36s %9.3f [%8.3f..%8.3f] %6.1f%% [%5.1f..%5.1f]\n", name, s.median, s.min,
              s.max, pct.median, pct.min, pct.max);
    bench_json_begin_object(j, NULL);
    bench_json_str(j, "name", name);
    bench_json_str(j, "key", v[i].key);
    bench_json_stats(j, "ms", &s);
    if (!v[i].other_bytes) {
      bench_json_num(j, "gbps", bytes / (s.median * 1e6));
      bench_json_stats(j, "pct_of_bound", &pct);
    }
    bench_json_end_object(j);
  }
  bench_json_end_array(j);
  for (size_t r = 0; r < NV(ratios); r++) {
    if (strcmp(ratios[r].phase, phase) != 0) continue;
    const double *num = NULL, *den = NULL;
    for (size_t i = 0; i < nv; i++) {
      if (!strcmp(v[i].key, ratios[r].num)) num = ms + (i + 1) * (size_t)rounds;
      if (!strcmp(v[i].key, ratios[r].den)) den = ms + (i + 1) * (size_t)rounds;
    }
    const bench_stats_t s = bench_ratio_stats(num, den, rounds, 1.0, tmp);
    fprintf(f, "  %s: %.2fx [%.2f..%.2f]\n", ratios[r].label, s.median, s.min, s.max);
    bench_json_stats(j, ratios[r].key, &s);
  }
  bench_json_end_object(j);
  return 0;
}

static void report_agreement(const char *text, bench_json_t *j, FILE *f) {
  bench_json_begin_object(j, "agreement");
  for (size_t i = 0; i < NV(agree_numbers); i++)
    bench_json_num(j, agree_numbers[i], agree_value(text, agree_numbers[i]));
  for (size_t i = 0; i < NV(agree_bools); i++)
    bench_json_bool(j, agree_bools[i], peer_bool(text, agree_bools[i]));
  bench_json_end_object(j);
  fprintf(f,
          "agreement after %.0f steps from one state, %.0f tensors (%.0f params): accel flat %s "
          "accel over the tensors; DeepSpeed - accel: max |dp| %.3g per tensor, %.3g flat "
          "(tolerance %.3g), m %.2g, v %.2g of their largest; whole step: norm %.2g relative, "
          "max |dp| %.3g, m %.2g, v %.2g, bf16 weights = each side's p rounded: %s (%.0f differ "
          "between the sides), clipped: %s: %s\n",
          agree_value(text, "agree_steps"), agree_value(text, "agree_tensors"),
          agree_value(text, "agree_params"),
          peer_bool(text, "accel_flat_equals_list") ? "==" : "!=",
          agree_value(text, "adamw_ds_per_tensor_max_dp"),
          agree_value(text, "adamw_ds_flat_max_dp"), agree_value(text, "tol_p"),
          agree_value(text, "adamw_ds_per_tensor_max_dm_rel"),
          agree_value(text, "adamw_ds_per_tensor_max_dv_rel"), agree_value(text, "step_norm_rel"),
          agree_value(text, "step_max_dp"), agree_value(text, "step_max_dm_rel"),
          agree_value(text, "step_max_dv_rel"),
          peer_bool(text, "step_model_is_rounded_p") ? "yes" : "NO",
          agree_value(text, "step_model_differs"), peer_bool(text, "step_clipped") ? "yes" : "NO",
          peer_bool(text, "agreement") ? "within tolerance" : "ACCEL AND DEEPSPEED DISAGREE");
}

int bench_deepspeed_run(const bench_opts_t *o, const size_t *sizes, size_t n, int rounds,
                        bench_json_t *j, FILE *f, int *agree) {
  const char *env = getenv("ACCEL_BENCH_DEEPSPEED_SCRIPT");
  const char *script = env ? env : ACCEL_BENCH_DEEPSPEED_SCRIPT;
  const size_t threads = o->torch_threads ? o->torch_threads : (size_t)bench_online_cpus();
  char args[2048], why[512];
  int len = snprintf(args, sizeof args, "--rounds %d --threads %zu --bound-lib '%s'", rounds,
                     threads, ACCEL_BENCH_BOUND_MODULE);
  if (access(ACCEL_BENCH_PYTHON_DIR "/accel", R_OK) == 0)
    snprintf(args + len, sizeof args - (size_t)len, " --accel-path '%s'", ACCEL_BENCH_PYTHON_DIR);
  double params = 0;
  for (size_t i = 0; i < n; i++) params += (double)sizes[i];
  bench_progress("DeepSpeed peer: %d paired rounds (tools/deepspeed_peer.py)", rounds);
  int status;
  char *text = bench_peer_exec(o, script, args, sizes, n, &status, why, sizeof why);
  bench_progress_done();
  bench_json_begin_object(j, "deepspeed");
  if (text && strstr(text, "\"available\": false")) bench_peer_string(text, "reason", why,
                                                                      sizeof why);
  if (!text || !peer_bool(text, "available")) {
    bench_json_bool(j, "available", 0);
    bench_json_str(j, "reason", why);
    bench_json_end_object(j);
    fprintf(f, "DeepSpeed peer skipped: %s\n", why);
    free(text);
    return 0;
  }
  double *ms = calloc((NV(adamw_variants) + 2) * (size_t)rounds, sizeof *ms);
  int rc = 1;
  if (!ms) goto done;
  char version[64], torch_version[64], accel_version[64], simd[32];
  bench_peer_string(text, "deepspeed_version", version, sizeof version);
  bench_peer_string(text, "torch_version", torch_version, sizeof torch_version);
  bench_peer_string(text, "accel_version", accel_version, sizeof accel_version);
  bench_peer_string(text, "simd", simd, sizeof simd);
  const int ok = peer_bool(text, "agreement");
  bench_json_bool(j, "available", 1);
  bench_json_str(j, "version", version);
  bench_json_str(j, "torch_version", torch_version);
  bench_json_str(j, "simd", simd);
  bench_json_int(j, "threads", (long long)agree_value(text, "threads"));
  bench_json_int(j, "rounds", rounds);
  fprintf(f, "DeepSpeed %s CPU Adam (%s) and accel %s in one process on the same buffers "
             "(tools/deepspeed_peer.py, torch %s), %.0f threads each, %d paired rounds after a "
             "warm-up round:\n", version, simd, accel_version, torch_version,
          agree_value(text, "threads"), rounds);
  double *tmp = ms + (NV(adamw_variants) + 1) * (size_t)rounds;
  if (report_phase(text, "adamw", "AdamW alone, fp32 p, g, m, v (28 B/param)", adamw_variants,
                   NV(adamw_variants), rounds, n, params, ms, tmp, j, f) ||
      report_phase(text, "state",
                   "AdamW alone, fp32 p, g; the moments in fp32, bf16 or 8 bits (28, 20 or 16 "
                   "B/param; the bound moves 28)",
                   state_variants, NV(state_variants), rounds, n, params, ms, tmp, j, f) ||
      report_phase(text, "step",
                   "whole step, bf16 grads -> L2 norm + overflow check, clip, AdamW, bf16 "
                   "weights (28 B/param, % of the AdamW bound)",
                   step_variants, NV(step_variants), rounds, n, params, ms, tmp, j, f))
    goto done;
  report_agreement(text, j, f);
  if (!ok) *agree = 0;
  rc = 0;
done:
  bench_json_end_object(j);
  free(ms);
  free(text);
  return rc;
}
