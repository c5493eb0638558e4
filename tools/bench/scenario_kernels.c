/*
 * kernels: bandwidth of the multi-tensor kernels on one device, each against its own bound
 * (bench_baseline.h: a plain all-threads vectorised loop moving the same streams as the kernel,
 * on the same buffers), and norm + clip against torch.nn.utils.clip_grad_norm_ on the same
 * shapes (issue 4). Every ratio is paired: bound and kernel alternate in rounds, and the
 * median of the per-round ratios is reported with their spread (issue 23).
 *
 * Working sets (--size-mb S, default 1024): norm and clip read S MiB of fp32 in 300 tensors,
 * the bf16 norms S/2 MiB of bf16 in the same 300 shapes;
 * update_hp_grads (bf16 -> fp32: 10 bytes per element, 12 with zeroing) and AdamW (p, g, m, v:
 * 28 bytes per element) run on S/16 Mi elements in 300 tensors; all fp32 data are views into
 * one S MiB buffer. The 2000 x 1K norm+clip runs at least 20 samples (each is short).
 * GB/s counts bytes read + bytes written, by kernel and bound alike.
 *
 * On an OpenCL device each row also runs the same loop through the device itself, in the same
 * rounds (bench_cl_bound_open: a hand-written OpenCL loop on the kernel's own buffers), so the
 * kernels are also judged against the best the device's runtime achieves (PoCL: issue 30).
 * --state bf16|8bit adds AdamW alone with its moments in that format, paired with the fp32
 * moments' AdamW (kernels_adam_state.h, issue 39).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/accel_kernels.h"
#include "bench.h"
#include "bench_baseline.h"
#include "bench_tensors.h"
#include "bench_torch.h"
#include "kernels_adam_flat.h"
#include "kernels_adam_state.h"

#define BIG_TENSORS 300
#define SMALL_TENSORS 2000
#define SMALL_NUMEL 1024
/* issue 30 */
#define TARGET_NORM_PCT 95.0
#define TARGET_HP_PCT 90.0
#define TARGET_ADAM_PCT 95.0
#define TARGET_CLIP_BIG 1.5
#define TARGET_CLIP_SMALL 20.0
#define NUM_BW 7
/* Of the OpenCL loop's bound, for the rows that have one (issue 30: norm and AdamW). */
#define TARGET_CL_PCT 80.0

typedef struct kctx {
  accel_device_t *dev;
  accel_stream_t *s;
  accel_tensor_t *list; /* norm/clip list */
  size_t n;
  float norm_type; /* of the bandwidth rows' norm */
  accel_tensor_t *lp, *hp; /* 300 pairs */
  accel_tensor_t *p, *g, *m, *v; /* 300 quadruples */
  float *scalars;               /* [0] norm, [1] coef */
  accel_adam_args_t *args;
  float max_norm;
  int zero_lp;
} kctx_t;

typedef accel_status_t (*op_fn)(kctx_t *c);

static accel_status_t op_norm(kctx_t *c) {
  return accel_multi_tensor_norm(c->s, c->list, c->n, c->norm_type, &c->scalars[0]);
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

/* The bound loop of a bandwidth row (bench.h) and the host buffers it runs on: the kernel's
 * own buffers when the host can use them, else host copies of the same size; by loop kind. */
static const char *const bound_names[] = {
    "read 1 fp32 stream (sum of squares)",
    "read bf16 + fp32, write fp32 in place (hp += float(lp))",
    "read bf16 + fp32, write fp32 + bf16 in place (hp += float(lp), lp = 0)",
    "read 4 fp32 streams, write 3 in place (p, g, m, v -> p, m, v)",
    "the optimizer step's compulsory traffic",
    "read 1 bf16 stream (sum of squares of the widened values)"};

typedef struct bw_row {
  const char *name;
  op_fn op;
  kctx_t *c;
  bench_bounds_t bounds;            /* the bound on the host's views and through OpenCL */
  double bytes;                     /* per call, read + written */
  double target_pct, cl_target_pct; /* <= 0: none */
  /* pct, cl_pct: bench_bound_pct_stats of the rounds against each bound */
  bench_stats_t ms, bound_ms, pct, cl_bound_ms, cl_pct;
} bw_row_t;

/* AdamW's p, g, m, v lie in the four quarters of the fp32 buffer, the k-th starting k *
 * QUARTER_STAGGER elements (4 KiB + 128 B) into its quarter: at the same offsets their
 * addresses would agree in their low 28 bits at the default 1 GiB (quarters 256 MiB apart),
 * which cost every implementation on an AMD EPYC, the bound loops included (1.7x on the CPU,
 * 3.8x for PoCL's kernel: docs/PERFORMANCE.md, section 26). A multiple of BENCH_TENSOR_ALIGN. */
#define QUARTER_STAGGER 1056u

static float *quarter_base(float *x, size_t quarter, int k) {
  return x + (size_t)k * (quarter + QUARTER_STAGGER);
}

/* The buffers of the bandwidth rows: the fp32 buffer (AdamW: its four quarters) and the bf16
 * buffer. */
typedef struct row_bufs {
  float *x;
  uint16_t *lp;
  size_t quarter;
  bench_cl_bound_t *clb;
  bench_dev_copy_t *devcopy; /* the reference where the host cannot reach the device's memory */
  int cpu; /* the CPU backend: issue 30's targets against the host loops are its targets */
} row_bufs_t;

static bench_loop_t row_loop(bench_loop_kind_t kind, float *x, uint16_t *lp, size_t numel,
                             size_t quarter) {
  return (bench_loop_t){.kind = kind,
                        .n = numel,
                        .f32 = {x, quarter_base(x, quarter, 1), quarter_base(x, quarter, 2),
                                quarter_base(x, quarter, 3)},
                        .lp = lp};
}

static bw_row_t make_row(const char *name, op_fn op, kctx_t *c, bench_loop_kind_t kind,
                         size_t numel, const row_bufs_t *b, double target, double cl_target) {
  bw_row_t r = {.name = name,
                .op = op,
                .c = c,
                .bounds.clb = b->clb,
                .bounds.devcopy = b->devcopy,
                /* issue 30's targets are against the host loops */
                .target_pct = b->cpu && !b->devcopy ? target : 0.0,
                .cl_target_pct = cl_target};
  r.bounds.loop = row_loop(kind, b->x, b->lp, numel, b->quarter);
  r.bytes = bench_loop_bytes(&r.bounds.loop);
  return r;
}

static double sample_kernel(void *ctx) {
  bw_row_t *r = ctx;
  uint64_t t0 = bench_now_ns();
  BENCH_TRY(r->op(r->c));
  BENCH_TRY(accel_stream_synchronize(r->c->s));
  return (double)(bench_now_ns() - t0) / 1e6;
fail:
  return -1.0;
}

/* rounds paired rounds of bound, kernel and (with r->bounds.clb) the OpenCL bound; buf holds
 * 4 * rounds doubles. */
static int run_bw_row(bw_row_t *r, int rounds, double *buf) {
  const bench_sample_fn fns[3] = {bench_sample_bound, sample_kernel, bench_sample_cl_bound};
  void *const ctx[3] = {&r->bounds, r, &r->bounds};
  double *tmp = buf + 3 * rounds;
  if (bench_rounds(rounds, r->bounds.clb ? 3 : 2, fns, ctx, buf)) return 1;
  r->bound_ms = bench_stats_copy(buf, rounds, tmp);
  r->ms = bench_stats_copy(buf + rounds, rounds, tmp);
  r->pct = bench_bound_pct_stats(buf, buf + rounds, rounds, tmp);
  if (r->bounds.clb) {
    r->cl_bound_ms = bench_stats_copy(buf + 2 * rounds, rounds, tmp);
    r->cl_pct = bench_bound_pct_stats(buf + 2 * rounds, buf + rounds, rounds, tmp);
  }
  return 0;
}

/* Rounds of accel against its PyTorch peer: every round starts a peer process. */
#define PEER_ROUNDS 3

typedef struct torch_row {
  const char *name;
  accel_tensor_t *list;
  size_t tensors, numel;
  const size_t *sizes;
  int repeat;
  bench_stats_t ms;
  bench_torch_result_t torch;     /* the peer the target is judged against (last round) */
  bench_torch_result_t torch_all; /* PyTorch on every CPU, when its default is fewer */
  int torch_own_default;          /* torch ran at PyTorch's own default thread count */
  double target;
  int rounds;                     /* paired rounds completed */
  double accel_round[PEER_ROUNDS], torch_round[PEER_ROUNDS], all_round[PEER_ROUNDS];
  bench_stats_t speedup, speedup_all; /* per-round torch median / accel median */
} torch_row_t;

static double gbps(double bytes, double ms) { return bytes / (ms * 1e6); }

/* norm + clip on row->list, repeat samples. Call k (k = 0 is the warm-up) uses max_norm =
 * initial norm / 2^(k+1), so every call really scales (coef ~ 0.5 < 1; a fixed max_norm would
 * give coef ~ 1 after the first call and skip the writes). */
static int run_clip_row(kctx_t *c, double *buf, torch_row_t *row, bench_stats_t *ms) {
  float norm;
  c->list = row->list;
  c->n = row->tensors;
  BENCH_TRY(op_norm(c));
  BENCH_TRY(accel_memcpy(c->dev, &norm, &c->scalars[0], sizeof norm));
  c->max_norm = norm;
  return time_op(c, op_norm_clip, row->repeat, buf, ms);
fail:
  return 1;
}

/* A finished peer's process (over 1 GiB) is still being torn down by the kernel for a moment:
 * accel rows run in that time measured 20-30% slower, so each peer is followed by a pause. */
static void pause_after_peer(void) {
  const struct timespec ts = {0, 300 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* PEER_ROUNDS paired rounds of accel (repeat samples) and the PyTorch peer(s) (a process each,
 * repeat samples); the speedup of a round is the peer's median over accel's median of that
 * round. Without --torch-threads the target is judged against PyTorch as installed (its own
 * default thread count: one on this machine's build), and when that is fewer than the CPUs
 * accel uses, a second peer on every CPU runs in each round too. --no-torch: accel only, one
 * round. */
static int run_clip_rounds(const bench_opts_t *o, kctx_t *c, double *buf, torch_row_t *row) {
  const size_t all = (size_t)bench_online_cpus();
  double tmp[PEER_ROUNDS];
  row->torch_own_default = o->torch_threads == 0;
  if (o->torch == 0) snprintf(row->torch.reason, sizeof row->torch.reason, "--no-torch");
  for (int r = 0; r < (o->torch == 0 ? 1 : PEER_ROUNDS); r++) {
    bench_stats_t ms;
    bench_progress("kernels: %s round %d", row->name, r + 1);
    if (run_clip_row(c, buf, row, &ms)) return 1;
    row->ms = ms;
    row->accel_round[r] = ms.median;
    row->rounds = r + 1;
    if (o->torch == 0) continue;
    bench_progress("kernels: %s round %d (PyTorch)", row->name, r + 1);
    bench_torch_run(o, "clip", o->torch_threads, row->sizes, row->tensors, row->repeat,
                    &row->torch);
    pause_after_peer();
    if (!row->torch.available) return 0; /* skipped: its reason is reported */
    row->torch_round[r] = row->torch.ms.median;
    if (row->torch_own_default && (size_t)row->torch.threads < all) {
      bench_progress("kernels: %s round %d (PyTorch, %zu threads)", row->name, r + 1, all);
      bench_torch_run(o, "clip", all, row->sizes, row->tensors, row->repeat, &row->torch_all);
      pause_after_peer();
      row->all_round[r] = row->torch_all.available ? row->torch_all.ms.median : NAN;
    }
  }
  if (row->torch.available)
    row->speedup = bench_ratio_stats(row->torch_round, row->accel_round, row->rounds, 1.0, tmp);
  if (row->torch_all.available)
    row->speedup_all = bench_ratio_stats(row->all_round, row->accel_round, row->rounds, 1.0, tmp);
  return 0;
}

static void print_bw(FILE *f, const bw_row_t *r) {
  char verdict[40] = "";
  if (r->target_pct > 0)
    snprintf(verdict, sizeof verdict, ">= %.0f%%: %s", r->target_pct,
             r->pct.median >= r->target_pct ? "met" : "MISSED");
  fprintf(f, "%-26s %8.2f [%7.2f..%7.2f] %6.2f %8.2f %6.2f  %5.1f%% [%5.1f..%5.1f]  %s\n",
          r->name, r->ms.median, r->ms.min, r->ms.max, gbps(r->bytes, r->ms.median),
          r->bound_ms.median, gbps(r->bytes, r->bound_ms.median), r->pct.median, r->pct.min,
          r->pct.max, verdict);
}

static void print_cl_bw(FILE *f, const bw_row_t *r) {
  char verdict[40] = "";
  if (r->cl_target_pct > 0)
    snprintf(verdict, sizeof verdict, ">= %.0f%%: %s", r->cl_target_pct,
             r->cl_pct.median >= r->cl_target_pct ? "met" : "MISSED");
  fprintf(f, "%-26s %8.2f [%7.2f..%7.2f] %6.2f  %5.1f%% [%5.1f..%5.1f]  %s\n", r->name,
          r->cl_bound_ms.median, r->cl_bound_ms.min, r->cl_bound_ms.max,
          gbps(r->bytes, r->cl_bound_ms.median), r->cl_pct.median, r->cl_pct.min, r->cl_pct.max,
          verdict);
}

/* A bound of row r (its loop, ms and GB/s) as member key, the kernel's % of it and the target. */
static void json_bound(bench_json_t *j, const bw_row_t *r, const char *key, const bench_stats_t *ms,
                       const char *pct_key, const bench_stats_t *pct, const char *target_key,
                       const char *met_key, double target) {
  bench_json_begin_object(j, key);
  bench_json_str(j, "loop", bound_names[r->bounds.loop.kind]);
  bench_json_stats(j, "ms", ms);
  bench_json_num(j, "gbps", gbps(r->bytes, ms->median));
  bench_json_end_object(j);
  bench_json_stats(j, pct_key, pct);
  if (target > 0) {
    bench_json_num(j, target_key, target);
    bench_json_bool(j, met_key, pct->median >= target);
  }
}

static void json_bw(bench_json_t *j, const bw_row_t *r) {
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "name", r->name);
  bench_json_int(j, "numel", (long long)r->bounds.loop.n);
  bench_json_stats(j, "ms", &r->ms);
  bench_json_num(j, "bytes", r->bytes);
  bench_json_num(j, "gbps", gbps(r->bytes, r->ms.median));
  json_bound(j, r, "bound", &r->bound_ms, "pct_of_bound", &r->pct, "target_pct", "met",
             r->target_pct);
  if (r->bounds.clb)
    json_bound(j, r, "cl_bound", &r->cl_bound_ms, "pct_of_cl_bound", &r->cl_pct, "cl_target_pct",
               "cl_met", r->cl_target_pct);
  bench_json_end_object(j);
}

static void print_torch(FILE *f, const torch_row_t *r) {
  fprintf(f, "%-26s %9.3f [%8.3f..%8.3f]  ", r->name, r->ms.median, r->ms.min, r->ms.max);
  if (!r->torch.available) {
    fprintf(f, "PyTorch skipped: %s\n", r->torch.reason);
    return;
  }
  fprintf(f, "torch %9.3f [%8.3f..%8.3f] %6.1fx [%4.1f..%4.1f]  >= %gx: %s (torch %d thread%s%s)\n",
          r->torch.ms.median, r->torch.ms.min, r->torch.ms.max, r->speedup.median,
          r->speedup.min, r->speedup.max, r->target,
          r->speedup.median >= r->target ? "met" : "MISSED", r->torch.threads,
          r->torch.threads == 1 ? "" : "s", r->torch_own_default ? ", its default" : "");
  if (r->torch_all.available)
    fprintf(f, "%-26s %-29s  torch %9.3f [%8.3f..%8.3f] %6.1fx [%4.1f..%4.1f]  (torch %d threads, as accel)\n",
            "", "", r->torch_all.ms.median, r->torch_all.ms.min, r->torch_all.ms.max,
            r->speedup_all.median, r->speedup_all.min, r->speedup_all.max, r->torch_all.threads);
}

static void json_torch(bench_json_t *j, const torch_row_t *r) {
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "name", r->name);
  bench_json_int(j, "tensors", (long long)r->tensors);
  bench_json_int(j, "numel", (long long)r->numel);
  bench_json_int(j, "rounds", r->rounds);
  bench_json_stats(j, "ms", &r->ms);
  bench_torch_json(j, "torch", &r->torch);
  bench_json_bool(j, "torch_own_default", r->torch_own_default);
  bench_json_num(j, "target_speedup", r->target);
  if (r->torch.available) {
    bench_json_stats(j, "speedup", &r->speedup);
    bench_json_bool(j, "met", r->speedup.median >= r->target);
  }
  if (r->torch_all.available) {
    bench_torch_json(j, "torch_all_cpus", &r->torch_all);
    bench_json_stats(j, "speedup_all_cpus", &r->speedup_all);
  }
  bench_json_end_object(j);
}

static size_t sum_sizes(const size_t *sizes, size_t n) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += sizes[i];
  return total;
}

int bench_kernels(const bench_opts_t *o) {
  const int state = o->state ? bench_adam_state_parse(o->state) : -1;
  if (o->state && state < 0) {
    fprintf(stderr, "accel-bench: kernels --state wants bf16 or 8bit, not %s\n", o->state);
    return 2;
  }
  adam_state_t as = {.tensors = 0}; /* filled by bench_adam_state with --state */
  const int repeat = o->repeat ? o->repeat : 7;
  const double size_mb = o->size_mb > 0 ? o->size_mb : 1024.0;
  /* Elements of the fp32 buffer, a multiple of 64 so the quarter/half views stay aligned. */
  const size_t count = (size_t)(size_mb * 1048576.0 / 4.0) / 64 * 64;
  const size_t quarter = count / 4;
  /* AdamW's elements per array: its quarter less the staggering (quarter_base) */
  const size_t adam_room = quarter - 3 * QUARTER_STAGGER;
  accel_device_t *dev = NULL;
  kctx_t c = {0};
  float *x = NULL, *small = NULL;
  uint16_t *lp = NULL, *nb = NULL;
  size_t *sizes = NULL, *offs = NULL, *hsz = NULL, *hoff = NULL, *asz = NULL, *aoff = NULL;
  size_t *ssz = NULL, *soff = NULL;
  accel_tensor_t *lists = NULL;
  const int nbuf = 4 * (repeat < 20 ? 20 : repeat);
  double *buf = calloc((size_t)nbuf, sizeof *buf);
  bw_row_t bw[NUM_BW];
  row_bufs_t rb = {0};
  char cl_why[256] = "";
  torch_row_t tr[2];
  memset(bw, 0, sizeof bw);
  memset(tr, 0, sizeof tr);
  int rc = 1;
  if (count < 64 * BIG_TENSORS ||
      quarter < 3 * QUARTER_STAGGER + 2 * BIG_TENSORS * BENCH_TENSOR_ALIGN) {
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
  lists = calloc(8 * BIG_TENSORS + SMALL_TENSORS, sizeof *lists);
  if (!buf || !sizes || !offs || !hsz || !hoff || !asz || !aoff || !ssz || !soff || !lists) {
    fprintf(stderr, "accel-bench: out of host memory\n");
    goto done;
  }
  /* Sizes leave room for the 64-byte padding of each view inside its part of the buffer. */
  bench_split_sizes(count - BIG_TENSORS * BENCH_TENSOR_ALIGN, BIG_TENSORS, 11, sizes);
  bench_split_sizes(quarter - BIG_TENSORS * BENCH_TENSOR_ALIGN, BIG_TENSORS, 12, hsz);
  bench_split_sizes(adam_room - BIG_TENSORS * BENCH_TENSOR_ALIGN, BIG_TENSORS, 13, asz);
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
  BENCH_TRY(accel_malloc(dev, count * 2, (void **)&nb));
  BENCH_TRY(accel_malloc(dev, SMALL_TENSORS * SMALL_NUMEL * 4, (void **)&small));
  BENCH_TRY(accel_malloc(dev, 256, (void **)&c.scalars));
  BENCH_TRY(accel_malloc(dev, sizeof *c.args, (void **)&c.args));
  bench_progress("kernels: initialising %.0f MiB", size_mb);
  BENCH_TRY(bench_upload_random(dev, x, count, ACCEL_F32, 1.0f, 1));
  BENCH_TRY(bench_upload_random(dev, nb, count, ACCEL_BF16, 1.0f, 4));
  BENCH_TRY(bench_upload_random(dev, small, SMALL_TENSORS * SMALL_NUMEL, ACCEL_F32, 1.0f, 2));

  /* The bound loops run on the device buffers themselves when the host can use them; else
   * the reference is the device's copy rate (the loops are only counted). */
  rb = (row_bufs_t){.x = x, .lp = lp, .quarter = quarter};
  if (bench_dev_copy_for(o, dev, &info, &rb.devcopy)) goto fail;
  rb.cpu = !strcmp(info.backend, "cpu");
  if (!strcmp(info.backend, "opencl")) bench_cl_bound_open(dev, &rb.clb, cl_why, sizeof cl_why);

  accel_tensor_t *l = lists;
  c.list = l;
  c.n = BIG_TENSORS;
  bench_make_list(x, ACCEL_F32, sizes, offs, BIG_TENSORS, c.list);
  const size_t norm_numel = sum_sizes(sizes, BIG_TENSORS);
  /* The norm rows: L2 and inf over the fp32 list and over the same shapes in bf16, each with
   * a context of its own (the list, its bound's buffer and the norm type). */
  kctx_t nc[4] = {c, c, c, c};
  row_bufs_t rb16 = rb;
  rb16.lp = nb;
  const struct {
    const char *name;
    float p;
    int bf16;
  } norms[4] = {{"norm L2 (f32)", 2.0f, 0},
                {"norm inf (f32)", INFINITY, 0},
                {"norm L2 (bf16)", 2.0f, 1},
                {"norm inf (bf16)", INFINITY, 1}};
  accel_tensor_t *list16 = l + 7 * BIG_TENSORS + SMALL_TENSORS;
  bench_make_list(nb, ACCEL_BF16, sizes, offs, BIG_TENSORS, list16);
  for (int k = 0; k < 4; k++) {
    nc[k].norm_type = norms[k].p;
    if (norms[k].bf16) nc[k].list = list16;
    bench_progress("kernels: %s", norms[k].name);
    bw[k] = make_row(norms[k].name, op_norm, &nc[k],
                     norms[k].bf16 ? BENCH_LOOP_READ_BF16 : BENCH_LOOP_READ, norm_numel,
                     norms[k].bf16 ? &rb16 : &rb, TARGET_NORM_PCT, TARGET_CL_PCT);
    if (run_bw_row(&bw[k], repeat, buf)) goto fail;
  }
  c.norm_type = 2.0f;

  tr[0] = (torch_row_t){.name = "norm+clip 300 tensors", .list = l, .tensors = BIG_TENSORS,
                        .sizes = sizes, .numel = norm_numel, .repeat = repeat,
                        .target = TARGET_CLIP_BIG};
  tr[1] = (torch_row_t){.name = "norm+clip 2000 x 1K", .list = l + 6 * BIG_TENSORS,
                        .tensors = SMALL_TENSORS, .numel = SMALL_TENSORS * SMALL_NUMEL,
                        .sizes = ssz, .repeat = repeat < 20 ? 20 : repeat,
                        .target = TARGET_CLIP_SMALL};
  bench_make_list(small, ACCEL_F32, ssz, soff, SMALL_TENSORS, tr[1].list);
  for (int i = 0; i < 2; i++)
    if (run_clip_rounds(o, &c, buf, &tr[i])) goto fail;

  /* lp -> hp: hp is the first quarter of x, lp its own bf16 buffer. */
  c.lp = l + BIG_TENSORS;
  c.hp = l + 2 * BIG_TENSORS;
  bench_make_list(lp, ACCEL_BF16, hsz, hoff, BIG_TENSORS, c.lp);
  bench_make_list(x, ACCEL_F32, hsz, hoff, BIG_TENSORS, c.hp);
  BENCH_TRY(accel_fill(c.s, c.lp, BIG_TENSORS, 0.5f));
  const size_t hp_numel = sum_sizes(hsz, BIG_TENSORS);
  bench_progress("kernels: update_hp_grads");
  bw[4] = make_row("update_hp_grads bf16->f32", op_hp, &c, BENCH_LOOP_HP, hp_numel, &rb,
                   TARGET_HP_PCT, 0.0);
  if (run_bw_row(&bw[4], repeat, buf)) goto fail;
  c.zero_lp = 1;
  bw[5] = make_row("update_hp_grads + zero lp", op_hp, &c, BENCH_LOOP_HP_ZERO, hp_numel, &rb,
                   TARGET_HP_PCT, 0.0);
  if (run_bw_row(&bw[5], repeat, buf)) goto fail;

  /* AdamW: p, g, m, v in the four quarters of x, staggered (quarter_base); m and v start at
   * 0. */
  c.p = l + 2 * BIG_TENSORS;
  c.g = l + 3 * BIG_TENSORS;
  c.m = l + 4 * BIG_TENSORS;
  c.v = l + 5 * BIG_TENSORS;
  accel_tensor_t *const pgmv_lists[4] = {c.p, c.g, c.m, c.v};
  float *pgmv[4];
  for (int k = 0; k < 4; k++) {
    pgmv[k] = quarter_base(x, quarter, k);
    bench_make_list(pgmv[k], ACCEL_F32, asz, aoff, BIG_TENSORS, pgmv_lists[k]);
  }
  BENCH_TRY(accel_fill(c.s, c.m, BIG_TENSORS, 0.0f));
  BENCH_TRY(accel_fill(c.s, c.v, BIG_TENSORS, 0.0f));
  const accel_adam_args_t args = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1, 0.0f};
  BENCH_TRY(accel_memcpy_async(c.s, c.args, &args, sizeof args));
  BENCH_TRY(accel_stream_synchronize(c.s));
  const size_t adam_numel = sum_sizes(asz, BIG_TENSORS);
  bench_progress("kernels: fused AdamW");
  bw[6] = make_row("fused AdamW (f32 grads)", op_adam, &c, BENCH_LOOP_ADAM, adam_numel, &rb,
                   TARGET_ADAM_PCT, TARGET_CL_PCT);
  if (run_bw_row(&bw[6], repeat, buf)) goto fail;
  bench_progress("kernels: fused AdamW, 3000 tensors vs one");
  adam_flat_t af;
  if (bench_adam_flat(c.s, pgmv, adam_room, c.args, repeat, &af)) goto fail;
  af.judged = rb.cpu;
  if (state >= 0) {
    bench_progress("kernels: fused AdamW, fp32 vs %s moments", o->state);
    const adam_state_in_t in = {.dev = dev, .s = c.s, .lists = {c.p, c.g, c.m, c.v},
                                .pgmv = {pgmv[0], pgmv[1], pgmv[2], pgmv[3]},
                                .n = BIG_TENSORS, .sizes = asz, .offsets = aoff,
                                .args_dev = c.args, .devcopy = rb.devcopy};
    if (bench_adam_state(&in, (accel_dtype_t)state, repeat, &as)) goto fail;
  }
  bench_progress_done();

  bench_machine_t m;
  FILE *f = bench_report_begin(o, dev, &m);
  char threads[64] = "bound: the device's copy rate";
  if (!rb.devcopy) snprintf(threads, sizeof threads, "%d bound threads", bench_baseline_threads());
  fprintf(f,
          "kernels: %.0f MiB fp32 working set, %d paired rounds (bound, kernel%s), %s; ms "
          "median [min..max]; %% of bound: median [min..max] of the rounds' bound ms (fastest "
          "of the round and its neighbours) / kernel ms\n",
          size_mb, repeat, rb.clb ? ", OpenCL loop" : "", threads);
  fprintf(f, "%-26s %-25s %6s %8s %6s  %-20s  %s\n", "kernel", "ms", "GB/s", "bound ms", "GB/s",
          "% of bound", "target");
  for (int i = 0; i < NUM_BW; i++) print_bw(f, &bw[i]);
  if (rb.devcopy)
    fprintf(f, "bounds: the kernel's bytes at %s; the kernels' streams:\n", BENCH_DEV_COPY_NOTE);
  else
    fprintf(f, "bounds: a plain vectorised loop on %d threads moving the kernel's streams (in "
               "each round the fastest of %d runs each, plain and prefetching, and below 64 MiB "
               "moved also on 1 thread):\n",
            bench_baseline_threads(), BENCH_BOUND_TRIES);
  for (int i = 0; i < NUM_BW; i++)
    fprintf(f, "  %-26s %s\n", bw[i].name, bound_names[bw[i].bounds.loop.kind]);
  bench_adam_flat_print(f, &af);
  if (state >= 0) bench_adam_state_print(f, &as);
  if (rb.clb) {
    fprintf(f,
            "the same loops through the OpenCL device (tools/bench/bench_cl_bound.cl: each "
            "work-item moves contiguous spans, 16-wide vectors), in the same rounds:\n");
    fprintf(f, "%-26s %-25s %6s  %-20s  %s\n", "kernel", "OpenCL loop ms", "GB/s",
            "% of OpenCL loop", "target");
    for (int i = 0; i < NUM_BW; i++) print_cl_bw(f, &bw[i]);
  } else if (cl_why[0]) {
    fprintf(f, "OpenCL loop bound skipped: %s\n", cl_why);
  }
  fprintf(f, "%-26s %-29s  %-29s %s\n", "vs PyTorch (clip_grad_norm_)", "accel ms (last round)",
          "torch ms (last round)", "speedup: median [min..max] of the rounds, target");
  for (int i = 0; i < 2; i++) print_torch(f, &tr[i]);

  bench_json_t j;
  bench_json_begin_report(&j, o, "kernels", &m);
  bench_json_num(&j, "size_mb", size_mb);
  bench_json_int(&j, "rounds", repeat);
  bench_json_int(&j, "bound_threads", rb.devcopy ? 0 : bench_baseline_threads());
  bench_json_str(&j, "bound_kind", rb.devcopy ? "device-copy" : "host-loop");
  bench_json_begin_array(&j, "bandwidth");
  for (int i = 0; i < NUM_BW; i++) json_bw(&j, &bw[i]);
  bench_json_end_array(&j);
  bench_adam_flat_json(&j, "adam_flat", &af);
  if (state >= 0) bench_adam_state_json(&j, "adam_state", &as);
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
  if (nb) accel_free(dev, nb);
  if (small) accel_free(dev, small);
  if (c.scalars) accel_free(dev, c.scalars);
  if (c.args) accel_free(dev, c.args);
  bench_cl_bound_close(rb.clb);
  bench_dev_copy_close(rb.devcopy);
  if (dev) accel_device_close(dev);
done:
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
