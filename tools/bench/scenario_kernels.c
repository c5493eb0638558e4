/*
 * kernels: bandwidth of the multi-tensor kernels on one device against host baselines measured
 * in the same run (bench_baseline.c: all-core vectorised fp32 sum of squares, all-core copy),
 * and norm + clip against torch.nn.utils.clip_grad_norm_ on the same shapes (issue 4).
 *
 * Working sets (--size-mb S, default 1024): norm and clip read S MiB of fp32 in 300 tensors;
 * update_hp_grads (bf16 -> fp32: 10 bytes per element, 12 with zeroing) and AdamW (p, g, m, v:
 * 28 bytes per element) run on S/16 Mi elements in 300 tensors; all fp32 data are views into
 * one S MiB buffer. The 2000 x 1K norm+clip runs at least 20 samples (each is short).
 * GB/s counts bytes read + bytes written; so does the copy baseline (2 x the bytes copied).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_kernels.h"
#include "bench.h"
#include "bench_baseline.h"
#include "bench_tensors.h"
#include "bench_torch.h"

#define BIG_TENSORS 300
#define SMALL_TENSORS 2000
#define SMALL_NUMEL 1024
#define TARGET_NORM_PCT 90.0
#define TARGET_HP_PCT 80.0
#define TARGET_ADAM_PCT 70.0
#define TARGET_CLIP_BIG 2.0
#define TARGET_CLIP_SMALL 20.0

typedef struct kctx {
  accel_device_t *dev;
  accel_stream_t *s;
  accel_tensor_t *list; /* norm/clip list */
  size_t n;
  accel_tensor_t *lp, *hp; /* 300 pairs */
  accel_tensor_t *p, *g, *m, *v; /* 300 quadruples */
  float *scalars;               /* [0] norm, [1] coef */
  accel_adam_args_t *args;
  float max_norm;
  int zero_lp;
} kctx_t;

typedef accel_status_t (*op_fn)(kctx_t *c);

static accel_status_t op_norm(kctx_t *c) {
  return accel_multi_tensor_norm(c->s, c->list, c->n, 2.0f, &c->scalars[0]);
}
static accel_status_t op_norm_clip(kctx_t *c) {
  c->max_norm *= 0.5f;
  accel_status_t st = accel_multi_tensor_norm(c->s, c->list, c->n, 2.0f, &c->scalars[0]);
  if (st != ACCEL_OK) return st;
  return accel_clip_by_global_norm(c->s, c->list, c->n, c->max_norm, &c->scalars[0], 1e-6f,
                                   &c->scalars[1]);
}
static accel_status_t op_hp(kctx_t *c) {
  return accel_update_hp_grads(c->s, c->lp, c->hp, BIG_TENSORS, c->zero_lp);
}
static accel_status_t op_adam(kctx_t *c) {
  return accel_fused_adam(c->s, c->p, c->g, c->m, c->v, BIG_TENSORS, c->args);
}

/* One warm-up, then repeat samples of enqueue + synchronize, in ms. */
static int time_op(kctx_t *c, op_fn fn, int repeat, double *buf, bench_stats_t *out) {
  for (int r = -1; r < repeat; r++) {
    uint64_t t0 = bench_now_ns();
    BENCH_TRY(fn(c));
    BENCH_TRY(accel_stream_synchronize(c->s));
    if (r >= 0) buf[r] = (double)(bench_now_ns() - t0) / 1e6;
  }
  *out = bench_stats(buf, (size_t)repeat);
  return 0;
fail:
  return 1;
}

typedef struct bw_row {
  const char *name;
  bench_stats_t ms;
  double bytes;       /* per call */
  const char *vs;     /* baseline name */
  double base_gbps;
  double target_pct;  /* <= 0: none */
} bw_row_t;

typedef struct torch_row {
  const char *name;
  size_t tensors, numel;
  const size_t *sizes;
  int repeat;
  bench_stats_t ms;
  bench_torch_result_t torch;     /* the peer the target is judged against */
  bench_torch_result_t torch_all; /* PyTorch on every CPU, when its default is fewer */
  int torch_own_default;          /* torch ran at PyTorch's own default thread count */
  double target;
} torch_row_t;

static bw_row_t bw_row(const char *name, double bytes, const char *vs, double base_gbps,
                       double target_pct) {
  bw_row_t r = {.name = name, .bytes = bytes, .vs = vs, .base_gbps = base_gbps,
                .target_pct = target_pct};
  return r;
}

static double gbps(double bytes, double ms) { return bytes / (ms * 1e6); }

/* Runs the host baselines on host-visible memory of 4 * count bytes. */
static void time_baselines(float *x, size_t count, int repeat, double *buf, bench_stats_t *rd,
                           bench_stats_t *cp, volatile double *sink) {
  for (int r = -1; r < repeat; r++) {
    uint64_t t0 = bench_now_ns();
    *sink += bench_baseline_sumsq(x, count);
    if (r >= 0) buf[r] = (double)(bench_now_ns() - t0) / 1e6;
  }
  *rd = bench_stats(buf, (size_t)repeat);
  for (int r = -1; r < repeat; r++) {
    uint64_t t0 = bench_now_ns();
    bench_baseline_copy(x + count / 2, x, count / 2);
    if (r >= 0) buf[r] = (double)(bench_now_ns() - t0) / 1e6;
  }
  *cp = bench_stats(buf, (size_t)repeat);
}

/* norm + clip on c->list (its PyTorch peer runs later: run_torch_peers). Call k (k = 0 is the
 * warm-up) uses max_norm = initial norm / 2^(k+1), so every call really scales (coef ~ 0.5 < 1;
 * a fixed max_norm would give coef ~ 1 after the first call and skip the writes). */
static int run_clip_row(kctx_t *c, double *buf, torch_row_t *row) {
  float norm;
  BENCH_TRY(op_norm(c));
  BENCH_TRY(accel_memcpy(c->dev, &norm, &c->scalars[0], sizeof norm));
  c->max_norm = norm;
  return time_op(c, op_norm_clip, row->repeat, buf, &row->ms);
fail:
  return 1;
}

/* The PyTorch peers run after every accel measurement: the kernel was still tearing down a
 * finished peer's process (over 1 GiB) while the next accel row ran, which made the 2000 x 1K
 * row 20-30% slower than in runs without the peer. Without --torch-threads the target is
 * judged against PyTorch as installed (its own default thread count: one on this machine's
 * build), and when that is fewer than the CPUs accel uses, a second peer on every CPU is
 * reported beside it. */
static void run_torch_peers(const bench_opts_t *o, torch_row_t *rows, int n) {
  for (int i = 0; i < n; i++) {
    torch_row_t *row = &rows[i];
    if (o->torch == 0) {
      snprintf(row->torch.reason, sizeof row->torch.reason, "--no-torch");
      continue;
    }
    bench_progress("kernels: %s (PyTorch)", row->name);
    row->torch_own_default = o->torch_threads == 0;
    bench_torch_run(o, "clip", o->torch_threads, row->sizes, row->tensors, row->repeat,
                    &row->torch);
    const size_t all = (size_t)bench_online_cpus();
    if (row->torch_own_default && row->torch.available && (size_t)row->torch.threads < all) {
      bench_progress("kernels: %s (PyTorch, %zu threads)", row->name, all);
      bench_torch_run(o, "clip", all, row->sizes, row->tensors, row->repeat, &row->torch_all);
    }
  }
}

static void print_bw(FILE *f, const bw_row_t *r) {
  double g = gbps(r->bytes, r->ms.median), pct = 100.0 * g / r->base_gbps;
  char verdict[40] = "";
  if (r->target_pct > 0)
    snprintf(verdict, sizeof verdict, ">= %.0f%%: %s", r->target_pct,
             pct >= r->target_pct ? "met" : "MISSED");
  fprintf(f, "%-28s %9.2f [%8.2f..%8.2f] %7.2f  %-6s %7.2f %6.1f%%  %s\n", r->name, r->ms.median,
          r->ms.min, r->ms.max, g, r->vs, r->base_gbps, pct, verdict);
}

static void json_bw(bench_json_t *j, const bw_row_t *r) {
  double g = gbps(r->bytes, r->ms.median), pct = 100.0 * g / r->base_gbps;
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "name", r->name);
  bench_json_stats(j, "ms", &r->ms);
  bench_json_num(j, "bytes", r->bytes);
  bench_json_num(j, "gbps", g);
  bench_json_str(j, "baseline", r->vs);
  bench_json_num(j, "baseline_gbps", r->base_gbps);
  bench_json_num(j, "pct_of_baseline", pct);
  if (r->target_pct > 0) {
    bench_json_num(j, "target_pct", r->target_pct);
    bench_json_bool(j, "met", pct >= r->target_pct);
  }
  bench_json_end_object(j);
}

static void print_torch(FILE *f, const torch_row_t *r) {
  fprintf(f, "%-28s %9.3f [%8.3f..%8.3f]  ", r->name, r->ms.median, r->ms.min, r->ms.max);
  if (!r->torch.available) {
    fprintf(f, "PyTorch skipped: %s\n", r->torch.reason);
    return;
  }
  double speedup = r->torch.ms.median / r->ms.median;
  fprintf(f, "torch %9.3f [%8.3f..%8.3f] %7.1fx  >= %.0fx: %s (torch %d thread%s%s)\n",
          r->torch.ms.median, r->torch.ms.min, r->torch.ms.max, speedup, r->target,
          speedup >= r->target ? "met" : "MISSED", r->torch.threads,
          r->torch.threads == 1 ? "" : "s", r->torch_own_default ? ", its default" : "");
  if (r->torch_all.available)
    fprintf(f, "%-28s %-29s  torch %9.3f [%8.3f..%8.3f] %7.1fx  (torch %d threads, as accel)\n",
            "", "", r->torch_all.ms.median, r->torch_all.ms.min, r->torch_all.ms.max,
            r->torch_all.ms.median / r->ms.median, r->torch_all.threads);
}

static void json_torch(bench_json_t *j, const torch_row_t *r) {
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "name", r->name);
  bench_json_int(j, "tensors", (long long)r->tensors);
  bench_json_int(j, "numel", (long long)r->numel);
  bench_json_stats(j, "ms", &r->ms);
  bench_torch_json(j, "torch", &r->torch);
  bench_json_bool(j, "torch_own_default", r->torch_own_default);
  bench_json_num(j, "target_speedup", r->target);
  if (r->torch.available) {
    double speedup = r->torch.ms.median / r->ms.median;
    bench_json_num(j, "speedup", speedup);
    bench_json_bool(j, "met", speedup >= r->target);
  }
  if (r->torch_all.available) {
    bench_torch_json(j, "torch_all_cpus", &r->torch_all);
    bench_json_num(j, "speedup_all_cpus", r->torch_all.ms.median / r->ms.median);
  }
  bench_json_end_object(j);
}

int bench_kernels(const bench_opts_t *o) {
  const int repeat = o->repeat ? o->repeat : 5;
  const double size_mb = o->size_mb > 0 ? o->size_mb : 1024.0;
  /* Elements of the fp32 buffer, a multiple of 64 so the quarter/half views stay aligned. */
  const size_t count = (size_t)(size_mb * 1048576.0 / 4.0) / 64 * 64;
  const size_t half = count / 2, quarter = count / 4;
  accel_device_t *dev = NULL;
  kctx_t c = {0};
  float *x = NULL, *small = NULL, *host_copy = NULL;
  uint16_t *lp = NULL;
  size_t *sizes = NULL, *offs = NULL, *hsz = NULL, *hoff = NULL, *asz = NULL, *aoff = NULL;
  size_t *ssz = NULL, *soff = NULL;
  accel_tensor_t *lists = NULL;
  double *buf = calloc((size_t)(repeat < 20 ? 20 : repeat), sizeof *buf);
  bw_row_t bw[4];
  torch_row_t tr[2];
  memset(tr, 0, sizeof tr);
  int rc = 1;
  if (count < 64 * BIG_TENSORS) {
    fprintf(stderr, "accel-bench: --size-mb %.3f is too small\n", size_mb);
    goto done;
  }
  sizes = calloc(BIG_TENSORS, sizeof *sizes);
  offs = calloc(BIG_TENSORS, sizeof *offs);
  hsz = calloc(BIG_TENSORS, sizeof *hsz);
  hoff = calloc(BIG_TENSORS, sizeof *hoff);
  asz = calloc(BIG_TENSORS, sizeof *asz);
  aoff = calloc(BIG_TENSORS, sizeof *aoff);
  ssz = calloc(SMALL_TENSORS, sizeof *ssz);
  soff = calloc(SMALL_TENSORS, sizeof *soff);
  lists = calloc(7 * BIG_TENSORS + SMALL_TENSORS, sizeof *lists);
  if (!buf || !sizes || !offs || !hsz || !hoff || !asz || !aoff || !ssz || !soff || !lists) {
    fprintf(stderr, "accel-bench: out of host memory\n");
    goto done;
  }
  /* Sizes leave room for the 64-byte padding of each view inside its part of the buffer. */
  bench_split_sizes(count - BIG_TENSORS * BENCH_TENSOR_ALIGN, BIG_TENSORS, 11, sizes);
  bench_split_sizes(quarter - BIG_TENSORS * BENCH_TENSOR_ALIGN, BIG_TENSORS, 12, hsz);
  bench_split_sizes(quarter - BIG_TENSORS * BENCH_TENSOR_ALIGN, BIG_TENSORS, 13, asz);
  bench_layout(sizes, BIG_TENSORS, offs);
  bench_layout(hsz, BIG_TENSORS, hoff);
  bench_layout(asz, BIG_TENSORS, aoff);
  for (size_t i = 0; i < SMALL_TENSORS; i++) ssz[i] = SMALL_NUMEL;
  bench_layout(ssz, SMALL_TENSORS, soff);

  if (bench_open_device(o, &dev)) goto done;
  c.dev = dev;
  accel_device_info_t info;
  BENCH_TRY(accel_device_get_info(dev, &info));
  BENCH_TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &c.s));
  BENCH_TRY(accel_malloc(dev, count * 4, (void **)&x));
  BENCH_TRY(accel_malloc(dev, quarter * 2, (void **)&lp));
  BENCH_TRY(accel_malloc(dev, SMALL_TENSORS * SMALL_NUMEL * 4, (void **)&small));
  BENCH_TRY(accel_malloc(dev, 256, (void **)&c.scalars));
  BENCH_TRY(accel_malloc(dev, sizeof *c.args, (void **)&c.args));
  bench_progress("kernels: initialising %.0f MiB", size_mb);
  BENCH_TRY(bench_upload_random(dev, x, count, ACCEL_F32, 1.0f, 1));
  BENCH_TRY(bench_upload_random(dev, small, SMALL_TENSORS * SMALL_NUMEL, ACCEL_F32, 1.0f, 2));

  /* Baselines on host memory: the device buffer itself when the host can use it. */
  bench_stats_t rd, cp;
  volatile double sink = 0;
  float *host_x = x;
  if (!info.host_accessible) {
    host_copy = malloc(count * 4);
    if (!host_copy) {
      fprintf(stderr, "accel-bench: out of host memory for the baselines\n");
      goto fail;
    }
    memset(host_copy, 0, count * 4);
    host_x = host_copy;
  }
  bench_progress("kernels: baselines");
  time_baselines(host_x, count, repeat, buf, &rd, &cp, &sink);
  const double read_gbps = gbps(count * 4.0, rd.median);
  const double copy_gbps = gbps(half * 8.0, cp.median);

  accel_tensor_t *l = lists;
  c.list = l;
  c.n = BIG_TENSORS;
  bench_make_list(x, ACCEL_F32, sizes, offs, BIG_TENSORS, c.list);
  bench_progress("kernels: norm");
  bw[0] = bw_row("norm L2 (f32)", count * 4.0, "read", read_gbps, TARGET_NORM_PCT);
  if (time_op(&c, op_norm, repeat, buf, &bw[0].ms)) goto fail;

  tr[0] = (torch_row_t){.name = "norm+clip 300 tensors", .tensors = BIG_TENSORS,
                        .sizes = sizes, .repeat = repeat, .target = TARGET_CLIP_BIG};
  for (size_t i = 0; i < BIG_TENSORS; i++) tr[0].numel += sizes[i];
  bench_progress("kernels: norm+clip");
  if (run_clip_row(&c, buf, &tr[0])) goto fail;

  c.list = l + 6 * BIG_TENSORS;
  c.n = SMALL_TENSORS;
  bench_make_list(small, ACCEL_F32, ssz, soff, SMALL_TENSORS, c.list);
  tr[1] = (torch_row_t){.name = "norm+clip 2000 x 1K", .tensors = SMALL_TENSORS,
                        .numel = SMALL_TENSORS * SMALL_NUMEL, .sizes = ssz,
                        .repeat = repeat < 20 ? 20 : repeat, .target = TARGET_CLIP_SMALL};
  bench_progress("kernels: norm+clip small");
  if (run_clip_row(&c, buf, &tr[1])) goto fail;

  /* lp -> hp: hp is the first quarter of x, lp its own bf16 buffer. */
  c.lp = l + BIG_TENSORS;
  c.hp = l + 2 * BIG_TENSORS;
  bench_make_list(lp, ACCEL_BF16, hsz, hoff, BIG_TENSORS, c.lp);
  bench_make_list(x, ACCEL_F32, hsz, hoff, BIG_TENSORS, c.hp);
  BENCH_TRY(accel_fill(c.s, c.lp, BIG_TENSORS, 0.5f));
  bench_progress("kernels: update_hp_grads");
  bw[1] = bw_row("update_hp_grads bf16->f32", quarter * 10.0, "copy", copy_gbps,
                     TARGET_HP_PCT);
  if (time_op(&c, op_hp, repeat, buf, &bw[1].ms)) goto fail;
  c.zero_lp = 1;
  bw[2] = bw_row("update_hp_grads + zero lp", quarter * 12.0, "copy", copy_gbps,
                     TARGET_HP_PCT);
  if (time_op(&c, op_hp, repeat, buf, &bw[2].ms)) goto fail;

  /* AdamW: p, g, m, v are the four quarters of x; m and v start at 0. */
  c.p = l + 2 * BIG_TENSORS;
  c.g = l + 3 * BIG_TENSORS;
  c.m = l + 4 * BIG_TENSORS;
  c.v = l + 5 * BIG_TENSORS;
  bench_make_list(x, ACCEL_F32, asz, aoff, BIG_TENSORS, c.p);
  bench_make_list(x + quarter, ACCEL_F32, asz, aoff, BIG_TENSORS, c.g);
  bench_make_list(x + 2 * quarter, ACCEL_F32, asz, aoff, BIG_TENSORS, c.m);
  bench_make_list(x + 3 * quarter, ACCEL_F32, asz, aoff, BIG_TENSORS, c.v);
  BENCH_TRY(accel_fill(c.s, c.m, BIG_TENSORS, 0.0f));
  BENCH_TRY(accel_fill(c.s, c.v, BIG_TENSORS, 0.0f));
  const accel_adam_args_t args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1, 0.0f};
  BENCH_TRY(accel_memcpy_async(c.s, c.args, &args, sizeof args));
  bench_progress("kernels: fused AdamW");
  bw[3] = bw_row("fused AdamW (f32 grads)", quarter * 28.0, "copy", copy_gbps,
                     TARGET_ADAM_PCT);
  if (time_op(&c, op_adam, repeat, buf, &bw[3].ms)) goto fail;
  run_torch_peers(o, tr, 2);
  bench_progress_done();

  bench_machine_t m;
  FILE *f = bench_report_begin(o, dev, &m);
  fprintf(f, "kernels: %.0f MiB fp32 working set, %d samples, %d baseline threads; "
             "ms median [min..max]\n", size_mb, repeat, bench_baseline_threads());
  fprintf(f, "baselines: read (sum of squares) %.2f GB/s [%.2f ms], copy %.2f GB/s "
             "(read+write) [%.2f ms]\n", read_gbps, rd.median, copy_gbps, cp.median);
  fprintf(f, "%-28s %-29s %7s  %-6s %7s %7s  %s\n", "kernel", "ms", "GB/s", "vs", "GB/s",
          "%", "target");
  for (int i = 0; i < 4; i++) print_bw(f, &bw[i]);
  fprintf(f, "%-28s %-29s  %-29s %8s  %s\n", "vs PyTorch (clip_grad_norm_)", "accel ms",
          "torch ms", "speedup", "target");
  for (int i = 0; i < 2; i++) print_torch(f, &tr[i]);

  bench_json_t j;
  bench_json_init(&j, o->json ? stdout : NULL);
  bench_json_begin_object(&j, NULL);
  bench_json_str(&j, "scenario", "kernels");
  bench_json_machine(&j, &m);
  bench_json_num(&j, "size_mb", size_mb);
  bench_json_int(&j, "repeat", repeat);
  bench_json_begin_object(&j, "baselines");
  bench_json_int(&j, "threads", bench_baseline_threads());
  bench_json_stats(&j, "read_ms", &rd);
  bench_json_num(&j, "read_gbps", read_gbps);
  bench_json_stats(&j, "copy_ms", &cp);
  bench_json_num(&j, "copy_gbps", copy_gbps);
  bench_json_end_object(&j);
  bench_json_begin_array(&j, "bandwidth");
  for (int i = 0; i < 4; i++) json_bw(&j, &bw[i]);
  bench_json_end_array(&j);
  bench_json_begin_array(&j, "vs_torch");
  for (int i = 0; i < 2; i++) json_torch(&j, &tr[i]);
  bench_json_end_array(&j);
  bench_json_end_object(&j);
  rc = 0;
fail:
  bench_progress_done();
  if (c.s) accel_stream_destroy(c.s);
  if (x) accel_free(dev, x);
  if (lp) accel_free(dev, lp);
  if (small) accel_free(dev, small);
  if (c.scalars) accel_free(dev, c.scalars);
  if (c.args) accel_free(dev, c.args);
  if (dev) accel_device_close(dev);
done:
  free(host_copy);
  free(buf);
  free(sizes);
  free(offs);
  free(hsz);
  free(hoff);
  free(asz);
  free(aoff);
  free(ssz);
  free(soff);
  free(lists);
  return rc;
}
