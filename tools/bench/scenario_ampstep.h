/* optstep presets gpt2-fp16 / gpt2-bf16: the whole mixed-precision step on the device
 * (scenario_ampstep.c). */
#ifndef ACCEL_BENCH_SCENARIO_AMPSTEP_H
#define ACCEL_BENCH_SCENARIO_AMPSTEP_H

#include <stdio.h>
#include <string.h>

#include "bench.h"

/* 1 for the presets bench_optstep_amp runs. */
static inline int bench_optstep_is_amp(const char *preset) {
  return preset && (!strcmp(preset, "gpt2-fp16") || !strcmp(preset, "gpt2-bf16"));
}

/* One preset end to end: table to f, one run object to j; *agree cleared when the variants
 * disagree. Returns 0 on success. */
int bench_optstep_amp(const bench_opts_t *o, accel_device_t *dev, const char *preset,
                      bench_json_t *j, FILE *f, int *agree);

#endif
