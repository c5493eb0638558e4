/*
 * kernels --state bf16|8bit (issue 39): AdamW alone with the optimizer's moments in a state
 * format, paired with the fp32-moment AdamW of the kernels scenario. The fp32 side is that
 * row's call (accel_fused_adam over the scenario's p, g, m, v); the format's side is
 * accel_adam_step_update over the same p and g with F32 gradients and nothing else (no hp, no
 * model weights, no loss scale, no clip, no flags: the update's AdamW alone) and moments of its
 * own (bf16: two bf16 buffers; 8bit: two of codes and one of block scales, from a zero state).
 * Each side has its own bound, a loop moving its bytes per parameter (bench_bound_adam, _bf16,
 * _q8: 28, 20 and 16; the 8-bit loop leaves out the scales' 1/16 byte, so that figure errs low)
 * or, on a device the host cannot reach, those bytes at the device's copy rate. The speed-up
 * is the fp32 AdamW's time over the format's, per round.
 */
#ifndef ACCEL_BENCH_KERNELS_ADAM_STATE_H
#define ACCEL_BENCH_KERNELS_ADAM_STATE_H

#include <stdio.h>

#include "accel/accel_kernels.h"
#include "bench.h"

/* The fp32 side and the format's, in that order. */
typedef struct adam_state {
  accel_dtype_t dtype; /* the format's moments: ACCEL_BF16 or ACCEL_U8 */
  size_t tensors, numel;
  int devcopy;                    /* the bounds are the device's copy rate */
  double state_bytes[2];          /* the moments per parameter (8-bit: the scales too) */
  double step_bytes[2];           /* the bound's traffic per parameter */
  bench_stats_t ms[2], bound_ms[2], pct[2];
  bench_stats_t speedup; /* fp32 ms / the format's ms, per round */
} adam_state_t;

/* The format --state names: ACCEL_BF16 for "bf16", ACCEL_U8 for "8bit", else -1. */
int bench_adam_state_parse(const char *name);

/* What the rows run on: the scenario's fp32 lists p, g, m, v (n tensors of sizes at offsets,
 * in elements) over the device buffers pgmv (host-accessible unless devcopy), the device
 * arguments, and the bound's reference (devcopy, or NULL for the host loops). */
typedef struct adam_state_in {
  accel_device_t *dev;
  accel_stream_t *s;
  const accel_tensor_t *lists[4];
  float *pgmv[4];
  size_t n;
  const size_t *sizes, *offsets;
  const accel_adam_args_t *args_dev;
  bench_dev_copy_t *devcopy;
} adam_state_in_t;

/* rounds paired rounds of both sides and their bounds; fills *out. Returns 0, or 1 after
 * reporting a failure. */
int bench_adam_state(const adam_state_in_t *in, accel_dtype_t dtype, int rounds,
                     adam_state_t *out);
void bench_adam_state_print(FILE *f, const adam_state_t *r);
void bench_adam_state_json(bench_json_t *j, const char *key, const adam_state_t *r);

#endif
