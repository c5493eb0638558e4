#include "kernels_adam_state.h"

#include <stdlib.h>
#include <string.h>

#include "bench_baseline.h"
#include "bench_tensors.h"

enum { SIDE_FP32, SIDE_FORMAT };

/* One side of the pair: its call and its bound. */
typedef struct side {
  const adam_state_in_t *in;
  accel_dtype_t dtype; /* of the moments */
  void *m, *v;         /* the moments' device buffers (the bound's streams) */
  size_t numel;        /* the bound's elements per stream */
  double bytes;        /* the bound's per parameter */
  accel_adam_step_t step; /* the format's side: its update */
} side_t;

int bench_adam_state_parse(const char *name) {
  if (!strcmp(name, "bf16")) return ACCEL_BF16;
  if (!strcmp(name, "8bit")) return ACCEL_U8;
  return -1;
}

static double sample_adam(void *ctx) {
  const side_t *sd = ctx;
  const adam_state_in_t *in = sd->in;
  uint64_t t0 = bench_now_ns();
  if (sd->dtype == ACCEL_F32)
    BENCH_TRY(accel_fused_adam(in->s, in->lists[0], in->lists[1], in->lists[2], in->lists[3],
                               in->n, in->args_dev));
  else
    BENCH_TRY(accel_adam_step_update(in->s, &sd->step));
  BENCH_TRY(accel_stream_synchronize(in->s));
  return (double)(bench_now_ns() - t0) / 1e6;
fail:
  return -1.0;
}

static void run_bound(void *ctx, int prefetch, int threads) {
  const side_t *sd = ctx;
  float *p = sd->in->pgmv[0];
  const float *g = sd->in->pgmv[1];
  if (sd->dtype == ACCEL_U8)
    bench_bound_adam_q8(p, g, sd->m, sd->v, sd->numel, prefetch, threads);
  else if (sd->dtype == ACCEL_BF16)
    bench_bound_adam_bf16(p, g, sd->m, sd->v, sd->numel, prefetch, threads);
  else
    bench_bound_adam(p, g, sd->m, sd->v, sd->numel, prefetch, threads);
}

static double sample_bound(void *ctx) {
  const side_t *sd = ctx;
  const double bytes = sd->bytes * (double)sd->numel;
  if (sd->in->devcopy) return bench_dev_copy_ms(sd->in->devcopy, bytes);
  return bench_bound_best(bytes, run_bound, ctx);
}

/* The format's moments and (8-bit) scales: device buffers in the fp32 lists' layout, zeroed,
 * and their lists in lists[0..3n) (exp_avg, exp_avg_sq, scales). bufs: m, v, scales. */
static int format_state(const adam_state_in_t *in, accel_dtype_t dt, accel_tensor_t *lists,
                        void *bufs[3]) {
  const size_t n = in->n, flat = in->offsets[n - 1] + in->sizes[n - 1];
  for (int k = 0; k < 2; k++) {
    BENCH_TRY(accel_malloc(in->dev, flat * accel_dtype_size(dt), &bufs[k]));
    BENCH_TRY(accel_memset_async(in->s, bufs[k], 0, flat * accel_dtype_size(dt)));
    bench_make_list(bufs[k], dt, in->sizes, in->offsets, n, lists + (size_t)k * n);
  }
  if (dt == ACCEL_U8 && bench_q8_scales(in->dev, in->s, in->sizes, n, &bufs[2], lists + 2 * n))
    goto fail;
  BENCH_TRY(accel_stream_synchronize(in->s));
  return 0;
fail:
  return 1;
}

int bench_adam_state(const adam_state_in_t *in, accel_dtype_t dt, int rounds,
                     adam_state_t *out) {
  const size_t n = in->n;
  accel_tensor_t *lists = calloc(3 * n, sizeof *lists);
  double *buf = calloc(5 * (size_t)rounds, sizeof *buf);
  void *bufs[3] = {NULL, NULL, NULL};
  int rc = 1;
  BENCH_ALLOCATED(lists && buf);
  memset(out, 0, sizeof *out);
  out->dtype = dt;
  out->tensors = n;
  for (size_t i = 0; i < n; i++) out->numel += in->sizes[i];
  out->devcopy = in->devcopy != NULL;
  out->state_bytes[SIDE_FP32] = 8.0;
  out->state_bytes[SIDE_FORMAT] = dt == ACCEL_U8 ? 2.0 + 8.0 / 256.0 : 4.0;
  out->step_bytes[SIDE_FP32] = BENCH_BOUND_ADAM_BYTES;
  out->step_bytes[SIDE_FORMAT] =
      dt == ACCEL_U8 ? BENCH_BOUND_ADAM_Q8_BYTES : BENCH_BOUND_ADAM_BF16_BYTES;
  if (format_state(in, dt, lists, bufs)) goto fail;
  side_t sides[2] = {
      {.in = in, .dtype = ACCEL_F32, .m = in->pgmv[2], .v = in->pgmv[3], .numel = out->numel,
       .bytes = out->step_bytes[SIDE_FP32]},
      {.in = in, .dtype = dt, .m = bufs[0], .v = bufs[1], .numel = out->numel,
       .bytes = out->step_bytes[SIDE_FORMAT]}};
  accel_adam_step_t *st = &sides[SIDE_FORMAT].step;
  *st = (accel_adam_step_t){.struct_size = sizeof *st, .n = n, .grads = in->lists[1],
                            .params = in->lists[0], .exp_avg = lists, .exp_avg_sq = lists + n,
                            .args_dev = in->args_dev, .norm_type = 2.0f};
  if (dt == ACCEL_U8) st->state_scales = lists + 2 * n;
  const bench_sample_fn fns[4] = {sample_bound, sample_adam, sample_bound, sample_adam};
  void *const ctx[4] = {&sides[0], &sides[0], &sides[1], &sides[1]};
  if (bench_rounds(rounds, 4, fns, ctx, buf)) goto fail;
  double *tmp = buf + 4 * rounds;
  for (int k = 0; k < 2; k++) {
    const double *bound = buf + 2 * k * rounds, *ms = bound + rounds;
    out->bound_ms[k] = bench_stats_copy(bound, rounds, tmp);
    out->ms[k] = bench_stats_copy(ms, rounds, tmp);
    out->pct[k] = bench_bound_pct_stats(bound, ms, rounds, tmp);
  }
  out->speedup = bench_ratio_stats(buf + rounds, buf + 3 * rounds, rounds, 1.0, tmp);
  rc = 0;
fail:
  for (int k = 0; k < 3; k++)
    if (bufs[k]) accel_free(in->dev, bufs[k]);
  free(lists);
  free(buf);
  return rc;
}

static const char *format_name(accel_dtype_t dt) { return dt == ACCEL_U8 ? "8bit" : "bf16"; }

void bench_adam_state_print(FILE *f, const adam_state_t *r) {
  fprintf(f,
          "fused AdamW alone by state format (%zu tensors, %zu params, f32 grads; fp32: "
          "accel_fused_adam, %s: accel_adam_step_update), paired rounds:\n",
          r->tensors, r->numel, format_name(r->dtype));
  fprintf(f, "%-8s %9s %7s  %-26s %-26s %-22s %s\n", "state", "state B/p", "B/p",
          "ms median [min..max]", "bound ms [min..max]", "% of bound [min..max]",
          "speedup over fp32");
  for (int k = 0; k < 2; k++) {
    fprintf(f, "%-8s %9.2f %7.2f  %7.3f [%7.3f..%7.3f]  %7.3f [%7.3f..%7.3f]  %5.1f%% "
               "[%5.1f..%5.1f]  ",
            k == SIDE_FP32 ? "fp32" : format_name(r->dtype), r->state_bytes[k], r->step_bytes[k],
            r->ms[k].median, r->ms[k].min, r->ms[k].max, r->bound_ms[k].median,
            r->bound_ms[k].min, r->bound_ms[k].max, r->pct[k].median, r->pct[k].min,
            r->pct[k].max);
    if (k == SIDE_FP32)
      fprintf(f, "1.00x\n");
    else
      fprintf(f, "%4.2fx [%4.2f..%4.2f]\n", r->speedup.median, r->speedup.min, r->speedup.max);
  }
  fprintf(f, "B/p: bytes per parameter (state: the moments; then the bound's traffic, read + "
             "written%s)\n",
          r->devcopy ? ", at the device's copy rate" : "; 8bit leaves out the scales' 1/16");
}

void bench_adam_state_json(bench_json_t *j, const char *key, const adam_state_t *r) {
  bench_json_begin_object(j, key);
  bench_json_int(j, "tensors", (long long)r->tensors);
  bench_json_int(j, "numel", (long long)r->numel);
  bench_json_begin_array(j, "states");
  for (int k = 0; k < 2; k++) {
    bench_json_begin_object(j, NULL);
    bench_json_str(j, "state", k == SIDE_FP32 ? "fp32" : format_name(r->dtype));
    bench_json_num(j, "state_bytes_per_param", r->state_bytes[k]);
    bench_json_num(j, "bound_bytes_per_param", r->step_bytes[k]);
    bench_json_stats(j, "ms", &r->ms[k]);
    bench_json_stats(j, "bound_ms", &r->bound_ms[k]);
    bench_json_stats(j, "pct_of_bound", &r->pct[k]);
    if (k == SIDE_FORMAT) bench_json_stats(j, "speedup_vs_fp32_state", &r->speedup);
    bench_json_end_object(j);
  }
  bench_json_end_array(j);
  bench_json_end_object(j);
}
