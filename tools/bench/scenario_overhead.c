/*
 * overhead: eager host cost per operation on one stream (tiny memsets and host functions
 * enqueued N times, then one synchronize; per-op = total / N) against the same work done
 * directly, and the caching allocator's accel_malloc + accel_free pair against malloc + free.
 * Targets (issue 2): <= 1 us per enqueued op, <= 100 ns median per alloc+free pair.
 * A user kernel's launch (accel_module.h) against the built-in kernel it restates (accel_scale
 * over one 64-float tensor), both enqueued N times then synchronized in the same round (issue
 * 35: a user kernel's launch costs what a built-in one costs); without a C compiler that row is
 * left out, and said so.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_kernels.h"
#include "accel/accel_module.h"
#include "bench.h"

#define ALLOC_PAIRS 10000
#define TARGET_OP_NS 1000.0
#define TARGET_ALLOC_NS 100.0

typedef struct row {
  const char *name;
  bench_stats_t accel, base; /* ns per op */
  double target_ns;          /* <= 0: no target */
  bench_stats_t ratio;       /* per round: accel / baseline (both ran in the same round) */
} row_t;

/* A row from the rounds' samples a (accel) and b (baseline), n of each (sorted here). */
static row_t make_row(const char *name, double *a, double *b, size_t n, double target_ns) {
  row_t r = {.name = name, .target_ns = target_ns, .ratio = {NAN, NAN, NAN, NAN, NAN, 0}};
  double *tmp = malloc(n * sizeof *tmp);
  if (tmp) r.ratio = bench_ratio_stats(a, b, (int)n, 1.0, tmp);
  free(tmp);
  r.accel = bench_stats(a, n);
  r.base = bench_stats(b, n);
  return r;
}

static void count_call(void *user) { (*(size_t *)user)++; }
/* Volatile function pointers keep the baselines from being folded away by the compiler. */
static void (*volatile host_fn)(void *) = count_call;
static void *(*volatile memset_fn)(void *, int, size_t) = memset;

static int bench_memsets(accel_stream_t *s, void *dev_buf, size_t n, int repeat, row_t *enq,
                         row_t *total) {
  double *a = calloc(2 * (size_t)repeat, sizeof *a), *t = calloc((size_t)repeat, sizeof *t);
  double *b = calloc((size_t)repeat, sizeof *b);
  unsigned char host_buf[64];
  int rc = 1;
  BENCH_ALLOCATED(a && t && b);
  for (int r = -1; r < repeat; r++) { /* r = -1: warm-up, not recorded */
    bench_progress("overhead: memset %d/%d", r + 1, repeat);
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) BENCH_TRY(accel_memset_async(s, dev_buf, (int)(i & 255), 4));
    uint64_t t1 = bench_now_ns();
    BENCH_TRY(accel_stream_synchronize(s));
    uint64_t t2 = bench_now_ns();
    for (size_t i = 0; i < n; i++) memset_fn(host_buf, (int)(i & 255), 4);
    uint64_t t3 = bench_now_ns();
    if (r < 0) continue;
    a[r] = (double)(t1 - t0) / (double)n;
    t[r] = (double)(t2 - t0) / (double)n;
    b[r] = (double)(t3 - t2) / (double)n;
  }
  memcpy(a + repeat, b, (size_t)repeat * sizeof *b); /* the baseline again, for the 2nd row */
  *total = make_row("memset 4 B: enqueue+sync", t, a + repeat, (size_t)repeat, TARGET_OP_NS);
  *enq = make_row("memset 4 B: enqueue only", a, b, (size_t)repeat, 0);
  rc = 0;
fail:
  free(a);
  free(t);
  free(b);
  return rc;
}

static int bench_host_funcs(accel_stream_t *s, size_t n, int repeat, row_t *row) {
  double *a = calloc((size_t)repeat, sizeof *a), *b = calloc((size_t)repeat, sizeof *b);
  size_t calls = 0, direct = 0;
  int rc = 1;
  BENCH_ALLOCATED(a && b);
  for (int r = -1; r < repeat; r++) {
    bench_progress("overhead: host func %d/%d", r + 1, repeat);
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) BENCH_TRY(accel_launch_host_func(s, count_call, &calls));
    BENCH_TRY(accel_stream_synchronize(s));
    uint64_t t1 = bench_now_ns();
    for (size_t i = 0; i < n; i++) host_fn(&direct);
    uint64_t t2 = bench_now_ns();
    if (r < 0) continue;
    a[r] = (double)(t1 - t0) / (double)n;
    b[r] = (double)(t2 - t1) / (double)n;
  }
  if (calls != direct) {
    fprintf(stderr, "accel-bench: host funcs ran %zu times, expected %zu\n", calls, direct);
    goto fail;
  }
  *row = make_row("host func: enqueue+sync", a, b, (size_t)repeat, TARGET_OP_NS);
  rc = 0;
fail:
  free(a);
  free(b);
  return rc;
}

static const size_t alloc_sizes[] = {256, 1024, 4096, 16384, 65536, 262144, 1048576};
#define NUM_ALLOC_SIZES (sizeof alloc_sizes / sizeof alloc_sizes[0])

/* accel_scale restated as a user kernel: t *= s[0] over one list of F32 tensors. */
static const char kUserScale[] =
    "ACC_INLINE void ub_elem(acc_idx i, ACC_GPTR(acc_f32) t, acc_f32 s) { t[i] = t[i] * s; }\n"
    "ACC_KERNEL(ub_k_scale, ub_params_t, P) {\n"
    "  const acc_f32 s = ACC_PTR(const acc_f32, P.s)[0];\n"
    "  ACC_GPTR(const acc_chunk_t) c = ACC_PTR(const acc_chunk_t, P.chunks);\n"
    "  ACC_FOR_BLOCKS(b, P.num_chunks)\n"
    "  ACC_ELEM_MAP(c[b].count, ub_elem, ACC_PTR(acc_f32, c[b].ptr[0]), s);\n"
    "}\n"
    "ACCEL_KERNEL(UB_SCALE, ub_k_scale, ub_params_t, ACC_OP(\"ub_scale\", ACC_TABLE_SHARED),\n"
    "             (ACC_LIST(\"t\", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS)),\n"
    "             (ACC_SCALAR(\"s_dev\", ACC_FIELD(s), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS)))\n";

/* Per round: n launches of the user kernel k then a sync (a), n of accel_scale then a sync (b),
 * on the same tensor t (64 floats at buf) with the scale 1.0 at buf + 64 floats. */
static int bench_user_kernel(accel_stream_t *s, const accel_kernel_t *k, float *buf, size_t n,
                             int repeat, row_t *row) {
  double *a = calloc((size_t)repeat, sizeof *a), *b = calloc((size_t)repeat, sizeof *b);
  const accel_tensor_t t = {buf, 64, ACCEL_F32};
  const accel_tensor_t *lists[1] = {&t};
  const void *scalars[1] = {buf + 64};
  int rc = 1;
  BENCH_ALLOCATED(a && b);
  for (int r = -1; r < repeat; r++) {
    bench_progress("overhead: user kernel %d/%d", r + 1, repeat);
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) BENCH_TRY(accel_launch(s, k, lists, 1, 1, scalars, 1));
    BENCH_TRY(accel_stream_synchronize(s));
    uint64_t t1 = bench_now_ns();
    for (size_t i = 0; i < n; i++) BENCH_TRY(accel_scale(s, &t, 1, buf + 64));
    BENCH_TRY(accel_stream_synchronize(s));
    uint64_t t2 = bench_now_ns();
    if (r < 0) continue;
    a[r] = (double)(t1 - t0) / (double)n;
    b[r] = (double)(t2 - t1) / (double)n;
  }
  *row = make_row("user kernel vs built-in", a, b, (size_t)repeat, 0);
  rc = 0;
fail:
  free(a);
  free(b);
  return rc;
}

/* The user-kernel row into *row when a module loads here: 1, else 0 (why printed). */
static int user_kernel_row(accel_device_t *dev, accel_stream_t *s, float *buf, size_t n,
                           int repeat, row_t *row) {
  accel_module_t *m = NULL;
  accel_kernel_t *k = NULL;
  float init[65] = {0}; /* t = 0, the scale 1 */
  init[64] = 1.0f;
  accel_status_t st = accel_module_load_source(dev, kUserScale, NULL, &m);
  if (st == ACCEL_OK) st = accel_module_get_kernel(m, "ub_scale", &k);
  if (st == ACCEL_OK) st = accel_memcpy(dev, buf, init, sizeof init);
  const int ran = st == ACCEL_OK && bench_user_kernel(s, k, buf, n, repeat, row) == 0;
  if (st != ACCEL_OK)
    fprintf(stderr, "accel-bench: overhead: no user-kernel row: %s\n", accel_last_error());
  if (m) accel_module_release(m);
  return ran;
}

/* Per size: median over repeats of the mean pair cost over ALLOC_PAIRS pairs. all_a/all_b
 * collect every (size, repeat) sample for the overall median. */
static int bench_alloc(accel_device_t *dev, int repeat, row_t *rows, char names[][48],
                       double *all_a, double *all_b) {
  double *a = calloc((size_t)repeat, sizeof *a), *b = calloc((size_t)repeat, sizeof *b);
  int rc = 1;
  BENCH_ALLOCATED(a && b);
  for (size_t k = 0; k < NUM_ALLOC_SIZES; k++) {
    size_t size = alloc_sizes[k];
    for (int r = -1; r < repeat; r++) {
      bench_progress("overhead: alloc %zu B %d/%d", size, r + 1, repeat);
      uint64_t t0 = bench_now_ns();
      for (int i = 0; i < ALLOC_PAIRS; i++) {
        void *p;
        BENCH_TRY(accel_malloc(dev, size, &p));
        BENCH_TRY(accel_free(dev, p));
      }
      uint64_t t1 = bench_now_ns();
      for (int i = 0; i < ALLOC_PAIRS; i++) {
        void *volatile p = malloc(size);
        free(p);
      }
      uint64_t t2 = bench_now_ns();
      if (r < 0) continue;
      a[r] = all_a[k * (size_t)repeat + (size_t)r] = (double)(t1 - t0) / ALLOC_PAIRS;
      b[r] = all_b[k * (size_t)repeat + (size_t)r] = (double)(t2 - t1) / ALLOC_PAIRS;
    }
    snprintf(names[k], 48, "alloc+free %zu B", size);
    rows[k] = make_row(names[k], a, b, (size_t)repeat, 0);
  }
  rc = 0;
fail:
  free(a);
  free(b);
  return rc;
}

static void print_row(FILE *f, const row_t *r) {
  char verdict[32] = "";
  if (r->target_ns > 0)
    snprintf(verdict, sizeof verdict, "<= %.0f: %s", r->target_ns,
             r->accel.median <= r->target_ns ? "met" : "MISSED");
  fprintf(f, "%-26s %9.1f [%8.1f..%8.1f] %9.1f [%8.1f..%8.1f] %7.2fx [%6.2f..%6.2f]  %s\n",
          r->name, r->accel.median, r->accel.min, r->accel.max, r->base.median, r->base.min,
          r->base.max, r->ratio.median, r->ratio.min, r->ratio.max, verdict);
}

static void json_row(bench_json_t *j, const row_t *r) {
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "name", r->name);
  bench_json_stats(j, "accel_ns", &r->accel);
  bench_json_stats(j, "baseline_ns", &r->base);
  bench_json_stats(j, "ratio", &r->ratio);
  if (r->target_ns > 0) {
    bench_json_num(j, "target_ns", r->target_ns);
    bench_json_bool(j, "met", r->accel.median <= r->target_ns);
  }
  bench_json_end_object(j);
}

int bench_overhead(const bench_opts_t *o) {
  const size_t n = o->ops ? o->ops : 100000;
  const int repeat = o->repeat ? o->repeat : 5;
  accel_device_t *dev = NULL;
  accel_stream_t *s = NULL;
  void *buf = NULL;
  double *all_a = NULL, *all_b = NULL;
  row_t rows[3 + NUM_ALLOC_SIZES + 2];
  char names[NUM_ALLOC_SIZES][48];
  int rc = 1;
  if (bench_open_device(o, &dev)) return 1;
  BENCH_TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s));
  BENCH_TRY(accel_malloc(dev, 65 * sizeof(float), &buf));
  all_a = calloc(NUM_ALLOC_SIZES * (size_t)repeat, sizeof *all_a);
  all_b = calloc(NUM_ALLOC_SIZES * (size_t)repeat, sizeof *all_b);
  BENCH_ALLOCATED(all_a && all_b);
  if (bench_memsets(s, buf, n, repeat, &rows[0], &rows[1])) goto fail;
  if (bench_host_funcs(s, n, repeat, &rows[2])) goto fail;
  if (bench_alloc(dev, repeat, &rows[3], names, all_a, all_b)) goto fail;
  const size_t nall = NUM_ALLOC_SIZES * (size_t)repeat;
  row_t *overall = &rows[3 + NUM_ALLOC_SIZES];
  *overall = make_row("alloc+free, all sizes", all_a, all_b, nall, TARGET_ALLOC_NS);
  const size_t nrows = 3 + NUM_ALLOC_SIZES + 1 + (size_t)user_kernel_row(dev, s, (float *)buf, n, repeat,
                                                                          overall + 1);
  bench_progress_done();

  bench_machine_t m;
  FILE *f = bench_report_begin(o, dev, &m);
  fprintf(f, "overhead: %zu ops per sample, %d rounds (accel, then the baseline); ns per op, "
             "median [min..max]; ratio: median [min..max] of the rounds' accel / baseline\n",
          n, repeat);
  fprintf(f, "%-26s %-31s %-31s %-24s %s\n", "operation", "accel ns/op", "baseline ns/op",
          "ratio", "target");
  for (size_t i = 0; i < nrows; i++) print_row(f, &rows[i]);
  fprintf(f, "baselines: memset(4 B) / a plain function call in a loop; malloc+free (glibc); "
             "accel_scale (1 tensor, 64 floats) for the same kernel as a user kernel\n");

  bench_json_t j;
  bench_json_begin_report(&j, o, "overhead", &m);
  bench_json_int(&j, "ops", (long long)n);
  bench_json_int(&j, "repeat", repeat);
  bench_json_begin_array(&j, "rows");
  for (size_t i = 0; i < nrows; i++) json_row(&j, &rows[i]);
  bench_json_end_array(&j);
  bench_json_end_object(&j);
  rc = 0;
fail:
  bench_progress_done();
  free(all_a);
  free(all_b);
  if (buf) accel_free(dev, buf);
  if (s) accel_stream_destroy(s);
  accel_device_close(dev);
  return rc;
}
