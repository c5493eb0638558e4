/* optstep presets <model>-fp16 / <model>-bf16 (model: gpt2, many-small, tiny): the whole
 * mixed-precision step on the device (scenario_ampstep.c). */
#ifndef ACCEL_BENCH_SCENARIO_AMPSTEP_H
#define ACCEL_BENCH_SCENARIO_AMPSTEP_H

#include <stdio.h>
#include <string.h>

#include "bench.h"

/* 1 for the presets bench_optstep_amp runs: a model preset with -fp16 or -bf16 appended. */
static inline int bench_optstep_is_amp(const char *preset) {
  const size_t n = preset ? strlen(preset) : 0;
  return n > 5 && (!strcmp(preset + n - 5, "-fp16") || !strcmp(preset + n - 5, "-bf16"));
}

/* One preset end to end: table to f, one run object to j; *agree cleared when the variants
 * disagree. Returns 0 on success. */
int bench_optstep_amp(const bench_opts_t *o, accel_device_t *dev, const char *preset,
                      bench_json_t *j, FILE *f, int *agree);

#endif
