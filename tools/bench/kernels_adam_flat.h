/*
 * kernels: the per-tensor cost of a multi-tensor kernel. accel_fused_adam over many-small's
 * 3000 tensors (sizes log-uniform in 1..64K) against the same parameters as one flat tensor,
 * on the same memory, in paired rounds (issue 30: the list within 3% of the flat tensor).
 */
#ifndef ACCEL_BENCH_KERNELS_ADAM_FLAT_H
#define ACCEL_BENCH_KERNELS_ADAM_FLAT_H

#include <stdio.h>

#include "accel/accel_kernels.h"
#include "bench.h"

#define ADAM_FLAT_TARGET 1.03

typedef struct adam_flat {
  size_t tensors, numel;
  bench_stats_t list_ms, flat_ms, ratio; /* ratio: list / flat per round */
  int judged; /* print the target (set by the caller: issue 30 sets it for the CPU backend) */
} adam_flat_t;

/* p, g, m, v: device buffers of at least cap elements each (fp32, contents any finite values).
 * Fills *out; returns 0, or 1 after reporting a failure. */
int bench_adam_flat(accel_stream_t *s, float *const pgmv[4], size_t cap,
                    const accel_adam_args_t *args_dev, int rounds, adam_flat_t *out);
void bench_adam_flat_print(FILE *f, const adam_flat_t *r);
void bench_adam_flat_json(bench_json_t *j, const char *key, const adam_flat_t *r);

#endif
