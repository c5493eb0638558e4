/*
 * accel-bench <scenario> [options]: host overhead, graph replay, kernel bandwidth and the
 * mixed-precision optimizer step, each against a baseline measured in the same run.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifndef ACCEL_BENCH_TORCH_SCRIPT
#define ACCEL_BENCH_TORCH_SCRIPT "tools/torch_baseline.py"
#endif

static const struct {
  const char *name;
  int (*run)(const bench_opts_t *);
  const char *help;
} scenarios[] = {
    {"overhead", bench_overhead,
     "eager per-op enqueue cost (memset, host func) and caching-allocator alloc+free\n"
     "                  [--ops N (100000)] [--repeat N (5)]"},
    {"memview", bench_memview,
     "cost of memory you can see: alloc+free tagged vs not (paired), a snapshot of\n"
     "                  --ops N blocks (10000), accel_memory_stats_ex [--repeat N (15)]"},
    {"graph", bench_graph,
     "eager vs captured+replayed chains of 1..1000 tiny nodes, paired rounds\n"
     "                  [--repeat N (30)]"},
    {"graph-update", bench_graph_update,
     "new arguments for a captured chain of 10..1000 fills: reset + re-capture vs capture +\n"
     "                  accel_graph_update vs update alone, each + replay, paired rounds\n"
     "                  [--repeat N (30)]"},
    {"graph-cond", bench_graph_cond,
     "a conditional region's cost: chains of 10..1000 fills replayed plain vs inside an IF\n"
     "                  taken / skipped, paired rounds, per node [--repeat N (30)]"},
    {"kernels", bench_kernels,
     "norm / lp->hp grads / AdamW vs their bounds, norm+clip vs PyTorch, paired\n"
     "                  rounds [--size-mb MB (1024)] [--repeat N (7)] [--no-torch];\n"
     "                  --state bf16|8bit: also AdamW alone with moments in that format,\n"
     "                  paired with the fp32-moment AdamW, each against its own bound"},
    {"optstep", bench_optstep,
     "mixed-precision optimizer step, 4 variants (per-tensor / multi-tensor, eager / graph)\n"
     "                  [--preset tiny|many-small|gpt2[-fp16|-bf16]] [--tensors N --params M]\n"
     "                  [--steps N] [--torch]; default: many-small then gpt2; --steps N:\n"
     "                  N - 1 paired rounds of the bound and the 4 variants; --preset P\n"
     "                  --params M: P's shape scaled to M params; --peer deepspeed: also\n"
     "                  DeepSpeed's CPU Adam, paired with accel in one process (--python);\n"
     "                  --state fp32|bf16|8bit|bf16-master|bf16-master-sr: the multi-tensor\n"
     "                  graph step with that optimizer state (bf16-master*: bf16 moments on\n"
     "                  bf16 master weights, rounded to nearest / stochastically), paired\n"
     "                  with the fp32-state step, each against its own bound;\n"
     "                  --sweeps: the fused step's norm and update sweeps timed apart"},
#ifdef ACCEL_BENCH_HAVE_MPI
    {"comm", bench_comm,
     "under mpirun: accel_all_reduce vs a bare MPI_Allreduce loop, 4 KB and 64 MB\n"
     "                  [--repeat N (15)]; optstep --dist: the ZeRO-2 step (docs/DISTRIBUTED.md)"},
#endif
#ifdef ACCEL_BENCH_HAVE_OPENCL
    {"opencl", bench_opencl,
     "on the opencl device: list vs per-tensor norm, eager vs graph optimizer step, accel\n"
     "                  vs a hand-written OpenCL host loop [--repeat N (100)]"},
#endif
};
#define NUM_SCENARIOS (sizeof scenarios / sizeof scenarios[0])

static void usage(FILE *f) {
  fprintf(f,
          "usage: accel-bench <scenario> [--device SEL] [--json] [--repeat N] [options]\n"
          "scenarios:\n");
  for (size_t i = 0; i < NUM_SCENARIOS; i++)
    fprintf(f, "  %-14s  %s\n", scenarios[i].name, scenarios[i].help);
  fprintf(f,
          "common: --device SEL (default: ACCEL_BACKEND, else the probe order),\n"
          "        --json (JSON on stdout, table on stderr),\n"
          "        --python PATH (/usr/bin/python3), --torch-script PATH,\n"
          "        --torch-threads N (PyTorch and DeepSpeed peer threads; default: kernels\n"
          "        judges PyTorch at its own default and also runs it on every CPU, optstep\n"
          "        runs every CPU),\n"
          "        --bound host|device-copy (kernels, optstep: what the kernels are held\n"
          "        against; default: host loops where the host reaches the device's memory,\n"
          "        else the device's own copy rate)\n");
}

/* Parses a positive integer option value; 0 on error. */
static int parse_size(const char *opt, const char *v, size_t *out) {
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  if (*v == '-' || end == v || *end != '\0' || x == 0) {
    fprintf(stderr, "accel-bench: %s wants a positive integer, got '%s'\n", opt, v);
    return 0;
  }
  *out = (size_t)x;
  return 1;
}

/* The options without a value; 0 when a is none of them. */
static int parse_flag(const char *a, bench_opts_t *o) {
  if (!strcmp(a, "--json")) o->json = 1;
  else if (!strcmp(a, "--torch")) o->torch = 1;
  else if (!strcmp(a, "--dist")) o->dist = 1;
  else if (!strcmp(a, "--no-torch")) o->torch = 0;
  else if (!strcmp(a, "--sweeps")) o->sweeps = 1;
  else return 0;
  return 1;
}

/* The options whose value is kept as given; 0 when a is none of them. */
static int parse_string(const char *a, const char *v, bench_opts_t *o) {
  const struct {
    const char *name;
    const char **value;
  } opts[] = {{"--device", &o->device}, {"--preset", &o->preset},
              {"--peer", &o->peer},     {"--state", &o->state},
              {"--python", &o->python}, {"--torch-script", &o->torch_script},
              {"--bound", &o->bound}};
  for (size_t k = 0; k < sizeof opts / sizeof *opts; k++) {
    if (!strcmp(a, opts[k].name)) {
      *opts[k].value = v;
      return 1;
    }
  }
  return 0;
}

static int parse_args(int argc, char **argv, bench_opts_t *o) {
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    size_t n;
    if (parse_flag(a, o)) continue;
    if (!v) {
      fprintf(stderr, "accel-bench: unknown option or missing value: %s\n", a);
      return 0;
    }
    i++;
    if (parse_string(a, v, o)) continue;
    if (!strcmp(a, "--size-mb")) {
      char *end;
      o->size_mb = strtod(v, &end);
      if (end == v || *end != '\0' || !(o->size_mb > 0)) {
        fprintf(stderr, "accel-bench: --size-mb wants a positive number, got '%s'\n", v);
        return 0;
      }
    } else if (!strcmp(a, "--repeat") || !strcmp(a, "--steps")) {
      if (!parse_size(a, v, &n) || n > 1000000) return 0;
      *(a[2] == 'r' ? &o->repeat : &o->steps) = (int)n;
    } else if (!strcmp(a, "--tensors")) {
      if (!parse_size(a, v, &o->tensors)) return 0;
    } else if (!strcmp(a, "--params")) {
      if (!parse_size(a, v, &o->params)) return 0;
    } else if (!strcmp(a, "--torch-threads")) {
      if (!parse_size(a, v, &o->torch_threads) || o->torch_threads == 0 ||
          o->torch_threads > 4096) {
        fprintf(stderr, "accel-bench: --torch-threads wants 1..4096, got '%s'\n", v);
        return 0;
      }
    } else if (!strcmp(a, "--ops")) {
      if (!parse_size(a, v, &o->ops)) return 0;
    } else {
      fprintf(stderr, "accel-bench: unknown option %s\n", a);
      return 0;
    }
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char *script = getenv("ACCEL_BENCH_TORCH_SCRIPT");
  bench_opts_t o = {
      .device = NULL, /* accel_device_open(NULL): ACCEL_BACKEND, else the probe order */
      .torch = -1, /* scenario default */
      .python = "/usr/bin/python3",
      .torch_script = script ? script : ACCEL_BENCH_TORCH_SCRIPT,
  };
  for (size_t i = 0; i < NUM_SCENARIOS; i++) {
    if (strcmp(argv[1], scenarios[i].name) != 0) continue;
    if (!parse_args(argc, argv, &o)) {
      usage(stderr);
      return 2;
    }
#ifdef ACCEL_BENCH_HAVE_MPI
    if (o.dist && scenarios[i].run == bench_optstep) return bench_optstep_dist(&o);
#endif
    if (o.dist) {
      fprintf(stderr, "accel-bench: --dist is for optstep in a build with MPI\n");
      return 2;
    }
    if (o.bound && strcmp(o.bound, "host") && strcmp(o.bound, "device-copy")) {
      fprintf(stderr, "accel-bench: --bound takes host or device-copy, not '%s'\n", o.bound);
      return 2;
    }
    return scenarios[i].run(&o);
  }
  fprintf(stderr, "accel-bench: unknown scenario '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
