/*
 * accel-bench: shared declarations of the scenarios and their helpers.
 *
 * Every scenario measures its baseline in the same run, repeats each measurement and reports
 * the median with its spread (min/max and p10/p90), because the machines this runs on are small
 * and noisy: ratios of medians taken seconds apart are what can be compared.
 */
#ifndef ACCEL_BENCH_H
#define ACCEL_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "accel/accel.h"
#include "bench_baseline.h"
#include "bench_json.h"

/* Command-line options; each scenario reads the ones it documents (bench_main.c). */
typedef struct bench_opts {
  const char *device;       /* --device (default NULL: ACCEL_BACKEND, else the probe) */
  int json;                 /* --json: JSON object on stdout, table on stderr */
  int repeat;               /* --repeat N (0: the scenario's default) */
  int steps;                /* --steps N (optstep; 0: default) */
  const char *preset;       /* --preset (optstep) */
  size_t tensors;           /* --tensors N (optstep custom) */
  size_t params;            /* --params M (optstep custom) */
  double size_mb;           /* --size-mb (kernels; 0: default 1024) */
  size_t ops;               /* --ops N (overhead; 0: default 100000) */
  int torch;                /* --torch (optstep) / --no-torch (kernels) */
  const char *python;       /* --python (default /usr/bin/python3) */
  const char *torch_script; /* --torch-script (default: the source tree's copy) */
  size_t torch_threads;     /* --torch-threads (0: not given; see each scenario) */
  int dist;                 /* --dist (optstep: the distributed step, under mpirun) */
  const char *peer;         /* --peer NAME (optstep: deepspeed, bench_deepspeed.h) */
  const char *state;        /* --state fp32|bf16|8bit (optstep: scenario_optstep_state.h) */
  int sweeps;               /* --sweeps (optstep: scenario_optstep_sweeps.h) */
  const char *bound;        /* --bound host|device-copy (NULL: bench_use_dev_copy decides) */
} bench_opts_t;

int bench_overhead(const bench_opts_t *o);
int bench_graph(const bench_opts_t *o);
int bench_memview(const bench_opts_t *o);
int bench_graph_update(const bench_opts_t *o);
int bench_graph_cond(const bench_opts_t *o);
int bench_kernels(const bench_opts_t *o);
int bench_optstep(const bench_opts_t *o);
int bench_opencl(const bench_opts_t *o); /* built with the OpenCL ICD loader only */
/* Built with MPI only; run under mpirun (scenario_comm.c, scenario_optstep_dist.c). */
int bench_comm(const bench_opts_t *o);
int bench_optstep_dist(const bench_opts_t *o);

/* The hand-written OpenCL host loop of the opencl scenario (bench_opencl_host.c): the OpenCL
 * API without accel, running accel_k_fill + accel_k_scale on one fp32 tensor. Each returns 0,
 * or nonzero with the failing call and its error code in why. */
typedef struct bench_cl_host bench_cl_host_t;
/* Context, in-order queue and kernels on the device accel calls opencl:index (name checked). */
int bench_cl_host_open(int index, const char *name, bench_cl_host_t **out, char *why,
                       size_t cap);
/* (Re)allocates the tensor (numel fp32, fine-grained SVM), its chunk table and *scale. */
int bench_cl_host_prepare(bench_cl_host_t *h, size_t numel, float scale, char *why,
                          size_t cap);
/* n times fill(values[k]) then scale, then clFinish. */
int bench_cl_host_run(bench_cl_host_t *h, const float *values, int n, char *why, size_t cap);
const float *bench_cl_host_data(const bench_cl_host_t *h);
void bench_cl_host_close(bench_cl_host_t *h);

/* A bound loop of bench_baseline.h and the buffers it runs on. */
typedef enum bench_loop_kind {
  BENCH_LOOP_READ,    /* bench_bound_read(f32[0]) */
  BENCH_LOOP_HP,      /* bench_bound_hp(lp, f32[0]) */
  BENCH_LOOP_HP_ZERO, /* the same with zero_lp */
  BENCH_LOOP_ADAM,    /* bench_bound_adam(f32[0..3] = p, g, m, v) */
  BENCH_LOOP_STEP,    /* bench_bound_step(lp, f32[0..3] = hp, p, m, v, inv_scale) */
  BENCH_LOOP_READ_BF16 /* bench_bound_read_bf16(lp) */
} bench_loop_kind_t;
typedef struct bench_loop {
  bench_loop_kind_t kind;
  size_t n; /* elements per stream */
  float *f32[4];
  uint16_t *lp;
  float inv_scale;
} bench_loop_t;
/* One run of the loop on the host (bench_baseline.h; the buffers must be host-accessible). */
void bench_loop_run(const bench_loop_t *loop, int prefetch, int threads);
/* Its bytes moved per run (read + written). */
double bench_loop_bytes(const bench_loop_t *loop);

/* The same loops through an OpenCL device (bench_cl_bound.c, bench_cl_bound.cl): built in the
 * accel device's own context and run on its SVM buffers, so a kernel can be compared with the
 * best a hand-written loop achieves through the same runtime (PoCL: the same threads). */
typedef struct bench_cl_bound bench_cl_bound_t;
/* 0, or nonzero with the reason in why (not an OpenCL device, no OpenCL in this build, a failing
 * call). */
int bench_cl_bound_open(accel_device_t *dev, bench_cl_bound_t **out, char *why, size_t cap);
/* One bound sample of the loop on the device buffers (bench_bound_best's forms: plain and
 * prefetching; a few work-items per compute unit, and one work-item, i.e. one thread, where
 * bench_bound_thread_counts adds one thread): ms, or -1 after reporting a failure. */
double bench_cl_bound_sample(bench_cl_bound_t *b, const bench_loop_t *loop);
void bench_cl_bound_close(bench_cl_bound_t *b);

/* The device-copy reference of a device whose memory the host cannot reach (bench_dev_copy.c):
 * accel_memcpy_async within the device, timed by events. */
typedef struct bench_dev_copy bench_dev_copy_t;
/* ms for moving bytes (read + written) at the copy's rate (the fastest of a few copies), or -1
 * after reporting a failure. */
double bench_dev_copy_ms(bench_dev_copy_t *c, double bytes);
void bench_dev_copy_close(bench_dev_copy_t *c);
/* The reference a scenario holds its kernels against on this device: *out the device-copy one
 * (--bound device-copy, or a device the host cannot reach), or NULL for the host loops. 0, or 1
 * after reporting why not (--bound host on a device the host cannot reach, a failed open). */
int bench_dev_copy_for(const bench_opts_t *o, accel_device_t *dev,
                       const accel_device_info_t *info, bench_dev_copy_t **out);
/* What a table says the reference of a bench_bounds_t is. */
#define BENCH_DEV_COPY_NOTE                                                                    \
  "the device's own copy rate (accel_memcpy_async within the device, the fastest of 3 copies " \
  "of 512 MiB timed by events; where the host cannot reach the device's memory, or with "      \
  "--bound device-copy): a reference rate, not a strict bound (a read-mostly kernel may pass " \
  "100%)"

/* A bound loop on the kernel's own buffers, run by the host and, with clb, through the OpenCL
 * device (clb NULL: no OpenCL bound). With devcopy the loop is only counted (its bytes): the
 * reference is the device's copy rate. */
typedef struct bench_bounds {
  bench_loop_t loop;
  bench_cl_bound_t *clb;
  bench_dev_copy_t *devcopy;
} bench_bounds_t;
/* bench_sample_fn forms over a bench_bounds_t (ms): one sample of the host bound
 * (bench_bound_best over bench_loop_run; with devcopy the device-copy reference), and of the
 * OpenCL bound (bench_cl_bound_sample). */
double bench_sample_bound(void *bounds);
double bench_sample_cl_bound(void *bounds);

/* Where tables go: stdout, or stderr when --json owns stdout. */
FILE *bench_table_out(const bench_opts_t *o);

/* Median and spread of a sample (the array is sorted in place). */
typedef struct bench_stats {
  double median, min, max, p10, p90;
  size_t n;
} bench_stats_t;
bench_stats_t bench_stats(double *samples, size_t n);
/* Writes {"median":..,"min":..,"max":..,"p10":..,"p90":..,"n":..} as member key. */
void bench_json_stats(bench_json_t *j, const char *key, const bench_stats_t *s);

/* Paired, interleaved sampling. A sample function times one run of a measurement and returns
 * its milliseconds, or a negative value after reporting a failure (bench_fail). */
typedef double (*bench_sample_fn)(void *ctx);
/* rounds rounds (after one warm-up round that is not recorded) of k measurements: in round r
 * every measurement runs once, in turn, starting with r % k, so each sees the machine in the
 * same state as the others of its round; ms[i * rounds + r] is measurement i's time in round r.
 * Returns 0, or 1 when a sample failed. */
int bench_rounds(int rounds, int k, const bench_sample_fn *fns, void *const *ctx, double *ms);
/* bench_rounds of two measurements, a then b, and the statistics of each (ms: 3 * rounds
 * doubles, the third part scratch); 1 when a sample failed or rounds < 1. */
int bench_rounds_ab(int rounds, bench_sample_fn fa, void *ca, bench_sample_fn fb, void *cb,
                    double *ms, bench_stats_t *a, bench_stats_t *b);
/* Statistics of the per-round ratios num[r] / den[r] * scale (tmp: rounds doubles). */
bench_stats_t bench_ratio_stats(const double *num, const double *den, int rounds, double scale,
                                double *tmp);
/* "% of bound" per round: 100 * bound / kernel, where a round's bound is the fastest bound
 * sample of that round and of the rounds beside it. bench_rounds rotates the order within a
 * round, so those are the bound samples nearest in time to the kernel's sample on either side:
 * the bandwidth of these VMs flips within seconds, and one bound sample next to a kernel sample
 * can miss a fast phase that the kernel caught (rounds at 104-115% of bound were seen). */
bench_stats_t bench_bound_pct_stats(const double *bound_ms, const double *kernel_ms, int rounds,
                                    double *tmp);
/* Statistics of a copy of samples (samples keep their round order). */
bench_stats_t bench_stats_copy(const double *samples, int n, double *tmp);

/* Formats a reason into why (cap bytes); returns 1 (for `return bench_why(...)`). */
int bench_why(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "what failed: STATUS: message" on stderr; returns 1 (the process exit status). */
int bench_fail(accel_status_t st, const char *what);
/* Evaluates an accel call; on failure reports it and jumps to the enclosing `fail:` label. */
#define BENCH_TRY(call)                                                                       \
  do {                                                                                        \
    accel_status_t bench_st_ = (call);                                                        \
    if (bench_st_ != ACCEL_OK) {                                                              \
      bench_fail(bench_st_, #call);                                                           \
      goto fail;                                                                              \
    }                                                                                         \
  } while (0)

/* Checks that host allocations succeeded (ok: all the pointers, &&-ed); otherwise says that
 * host memory ran out and jumps to the enclosing `fail:` label, like BENCH_TRY. */
#define BENCH_ALLOCATED(ok)                                 \
  do {                                                      \
    if (!(ok)) {                                            \
      fprintf(stderr, "accel-bench: out of host memory\n"); \
      goto fail;                                            \
    }                                                       \
  } while (0)

/* Progress line on stderr, only when stderr is a terminal; bench_progress_done clears it. */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bench_progress_done(void);

/* Online CPUs (at least 1): the machine line's count and the PyTorch peer's thread count when
 * --torch-threads is not given. */
long bench_online_cpus(void);

/* Machine description for tables and JSON. */
typedef struct bench_machine {
  char cpu_model[256];
  long nproc;
  char device_name[256];
  char device_backend[32];
} bench_machine_t;
/* Fills *m for dev, prints its "machine:" line on the table stream (bench_table_out) and
 * returns that stream: the opening of every scenario's report. */
FILE *bench_report_begin(const bench_opts_t *o, accel_device_t *dev, bench_machine_t *m);
void bench_json_machine(bench_json_t *j, const bench_machine_t *m);
/* Starts a scenario's JSON document, on stdout when o->json (else j writes nothing): the
 * top-level object with its "scenario" name and "machine". */
void bench_json_begin_report(bench_json_t *j, const bench_opts_t *o, const char *scenario,
                             const bench_machine_t *m);

/* Opens o->device (and prints nothing); reports failures like bench_fail. */
int bench_open_device(const bench_opts_t *o, accel_device_t **dev);

/* Deterministic pseudo-random numbers (splitmix64), the same on every machine. */
uint64_t bench_rand_u64(uint64_t *state);
/* Uniform in [-1, 1). */
float bench_rand_sym(uint64_t *state);

/* Round-to-nearest-even float -> bfloat16 bits (inputs here are finite). */
uint16_t bench_f32_to_bf16(float x);

#endif
