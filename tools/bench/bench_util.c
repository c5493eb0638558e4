/* Timing, statistics, progress, error reporting and machine description for accel-bench. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_baseline.h"

FILE *bench_table_out(const bench_opts_t *o) { return o->json ? stderr : stdout; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Linear interpolation between order statistics (numpy's default percentile). */
static double percentile(const double *sorted, size_t n, double q) {
  double pos = q * (double)(n - 1);
  size_t lo = (size_t)pos;
  if (lo + 1 >= n) return sorted[n - 1];
  double frac = pos - (double)lo;
  return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}

bench_stats_t bench_stats(double *samples, size_t n) {
  bench_stats_t s = {NAN, NAN, NAN, NAN, NAN, n};
  if (n == 0) return s;
  qsort(samples, n, sizeof *samples, cmp_double);
  s.min = samples[0];
  s.max = samples[n - 1];
  s.median = percentile(samples, n, 0.5);
  s.p10 = percentile(samples, n, 0.1);
  s.p90 = percentile(samples, n, 0.9);
  return s;
}

bench_stats_t bench_stats_copy(const double *samples, int n, double *tmp) {
  memcpy(tmp, samples, (size_t)n * sizeof *tmp);
  return bench_stats(tmp, (size_t)n);
}

bench_stats_t bench_ratio_stats(const double *num, const double *den, int rounds, double scale,
                                double *tmp) {
  for (int r = 0; r < rounds; r++) tmp[r] = num[r] / den[r] * scale;
  return bench_stats(tmp, (size_t)rounds);
}

void bench_loop_run(const bench_loop_t *l, int prefetch, int threads) {
  static volatile double sink;
  switch (l->kind) {
    case BENCH_LOOP_READ: sink += bench_bound_read(l->f32[0], l->n, prefetch, threads); break;
    case BENCH_LOOP_HP: bench_bound_hp(l->lp, l->f32[0], l->n, 0, prefetch, threads); break;
    case BENCH_LOOP_HP_ZERO: bench_bound_hp(l->lp, l->f32[0], l->n, 1, prefetch, threads); break;
    case BENCH_LOOP_ADAM:
      bench_bound_adam(l->f32[0], l->f32[1], l->f32[2], l->f32[3], l->n, prefetch, threads);
      break;
    case BENCH_LOOP_READ_BF16: sink += bench_bound_read_bf16(l->lp, l->n, prefetch, threads); break;
    case BENCH_LOOP_STEP:
      bench_bound_step(l->lp, l->f32[0], l->f32[1], l->f32[2], l->f32[3], l->n, l->inv_scale,
                       prefetch, threads);
      break;
  }
}

double bench_loop_bytes(const bench_loop_t *l) {
  static const double per_elem[] = {BENCH_BOUND_READ_BYTES, BENCH_BOUND_HP_BYTES(0),
                                    BENCH_BOUND_HP_BYTES(1), BENCH_BOUND_ADAM_BYTES,
                                    BENCH_BOUND_STEP_BYTES, BENCH_BOUND_READ_BF16_BYTES};
  return per_elem[l->kind] * (double)l->n;
}

static void run_loop(void *ctx, int prefetch, int threads) {
  bench_loop_run(ctx, prefetch, threads);
}

double bench_sample_bound(void *bounds) {
  bench_bounds_t *b = bounds;
  if (b->devcopy) return bench_dev_copy_ms(b->devcopy, bench_loop_bytes(&b->loop));
  return bench_bound_best(bench_loop_bytes(&b->loop), run_loop, &b->loop);
}

double bench_sample_cl_bound(void *bounds) {
  bench_bounds_t *b = bounds;
  return bench_cl_bound_sample(b->clb, &b->loop);
}

bench_stats_t bench_bound_pct_stats(const double *bound_ms, const double *kernel_ms, int rounds,
                                    double *tmp) {
  for (int r = 0; r < rounds; r++) {
    double b = bound_ms[r];
    if (r > 0 && bound_ms[r - 1] < b) b = bound_ms[r - 1];
    if (r + 1 < rounds && bound_ms[r + 1] < b) b = bound_ms[r + 1];
    tmp[r] = 100.0 * b / kernel_ms[r];
  }
  return bench_stats(tmp, (size_t)rounds);
}

int bench_rounds(int rounds, int k, const bench_sample_fn *fns, void *const *ctx, double *ms) {
  for (int r = -1; r < rounds; r++) {
    for (int step = 0; step < k; step++) {
      const int i = ((r < 0 ? 0 : r) + step) % k;
      const double t = fns[i](ctx[i]);
      if (t < 0) return 1;
      if (r >= 0) ms[i * rounds + r] = t;
    }
  }
  return 0;
}

int bench_rounds_ab(int rounds, bench_sample_fn fa, void *ca, bench_sample_fn fb, void *cb,
                    double *ms, bench_stats_t *a, bench_stats_t *b) {
  const bench_sample_fn fns[2] = {fa, fb};
  void *const ctx[2] = {ca, cb};
  if (rounds < 1 || bench_rounds(rounds, 2, fns, ctx, ms)) return 1;
  *a = bench_stats_copy(ms, rounds, ms + 2 * rounds);
  *b = bench_stats_copy(ms + rounds, rounds, ms + 2 * rounds);
  return 0;
}

void bench_json_stats(bench_json_t *j, const char *key, const bench_stats_t *s) {
  bench_json_begin_object(j, key);
  bench_json_num(j, "median", s->median);
  bench_json_num(j, "min", s->min);
  bench_json_num(j, "max", s->max);
  bench_json_num(j, "p10", s->p10);
  bench_json_num(j, "p90", s->p90);
  bench_json_int(j, "n", (long long)s->n);
  bench_json_end_object(j);
}

int bench_why(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  return 1;
}

int bench_fail(accel_status_t st, const char *what) {
  bench_progress_done();
  fprintf(stderr, "accel-bench: %s failed: %s: %s\n", what, accel_status_name(st),
          accel_last_error());
  return 1;
}

static int progress_shown;

void bench_progress(const char *fmt, ...) {
  if (!isatty(STDERR_FILENO)) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("\r\033[K", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
  progress_shown = 1;
}

void bench_progress_done(void) {
  if (!progress_shown) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  progress_shown = 0;
}

static void read_cpu_model(char *buf, size_t size) {
  snprintf(buf, size, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *v = strchr(line, ':');
    if (!v) break;
    v++;
    while (*v == ' ' || *v == '\t') v++;
    snprintf(buf, size, "%s", v);
    buf[strcspn(buf, "\n")] = '\0';
    break;
  }
  fclose(f);
}

long bench_online_cpus(void) {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

static void machine_get(accel_device_t *dev, bench_machine_t *m) {
  memset(m, 0, sizeof *m);
  read_cpu_model(m->cpu_model, sizeof m->cpu_model);
  m->nproc = bench_online_cpus();
  accel_device_info_t info;
  if (dev && accel_device_get_info(dev, &info) == ACCEL_OK) {
    snprintf(m->device_name, sizeof m->device_name, "%s", info.name);
    snprintf(m->device_backend, sizeof m->device_backend, "%s", info.backend);
  }
}

FILE *bench_report_begin(const bench_opts_t *o, accel_device_t *dev, bench_machine_t *m) {
  machine_get(dev, m);
  FILE *f = bench_table_out(o);
  fprintf(f, "machine: %s, %ld online CPUs; device: %s (%s)\n", m->cpu_model, m->nproc,
          m->device_name, m->device_backend);
  return f;
}

void bench_json_machine(bench_json_t *j, const bench_machine_t *m) {
  bench_json_begin_object(j, "machine");
  bench_json_str(j, "cpu_model", m->cpu_model);
  bench_json_int(j, "nproc", m->nproc);
  bench_json_str(j, "device", m->device_name);
  bench_json_str(j, "backend", m->device_backend);
  bench_json_end_object(j);
}

void bench_json_begin_report(bench_json_t *j, const bench_opts_t *o, const char *scenario,
                             const bench_machine_t *m) {
  bench_json_init(j, o->json ? stdout : NULL);
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "scenario", scenario);
  bench_json_machine(j, m);
}

int bench_open_device(const bench_opts_t *o, accel_device_t **dev) {
  accel_status_t st = accel_device_open(o->device, dev);
  if (st != ACCEL_OK) {
    char what[300];
    snprintf(what, sizeof what, "accel_device_open(\"%s\")", o->device ? o->device : "default");
    return bench_fail(st, what);
  }
  return 0;
}

uint64_t bench_rand_u64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float bench_rand_sym(uint64_t *state) {
  /* 24 random bits -> [0, 1) exactly, then to [-1, 1). */
  return (float)(bench_rand_u64(state) >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
}

uint16_t bench_f32_to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
