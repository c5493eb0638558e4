/*
 * The PyTorch peer: runs tools/torch_baseline.py with the same tensor shapes (passed in a
 * temporary file, one numel per line) and reads back the one JSON line it prints. A missing
 * python or torch is a skip with its reason, never a failure of the benchmark.
 */
#ifndef ACCEL_BENCH_TORCH_H
#define ACCEL_BENCH_TORCH_H

#include <stddef.h>

#include "bench.h"

typedef struct bench_torch_result {
  int available;          /* 0: skipped, see reason */
  char reason[512];
  char version[64];
  int threads;
  bench_stats_t ms;       /* ms per operation/step (min, max, p10, p90 as reported) */
} bench_torch_result_t;

/* mode: "clip" or "optstep"; threads: torch.set_num_threads, 0 for PyTorch's own default;
 * count: --repeat (clip) or --steps (optstep). */
void bench_torch_run(const bench_opts_t *o, const char *mode, size_t threads,
                     const size_t *sizes, size_t n, int count, bench_torch_result_t *r);

/* Writes {"available":..., "reason" | "version","threads","ms":{...}} as member key. */
void bench_torch_json(bench_json_t *j, const char *key, const bench_torch_result_t *r);

/* Shared by the peers (this one and bench_deepspeed.h): runs `PYTHON SCRIPT --sizes FILE ARGS`
 * (o->python; the sizes in a temporary file, one numel per line) and returns its result line:
 * the last line of its stdout that starts with '{' (malloc'ed), or NULL with the reason in why.
 * *status: its exit status (-1 when it did not exit). */
char *bench_peer_exec(const bench_opts_t *o, const char *script, const char *args,
                      const size_t *sizes, size_t n, int *status, char *why, size_t cap);
/* The number after "key": in a result line (1), or 0 when absent. */
int bench_peer_number(const char *text, const char *key, double *out);
/* The string after "key": "..." (no escapes), or "" when absent. */
void bench_peer_string(const char *text, const char *key, char *out, size_t size);

#endif
