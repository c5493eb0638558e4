/*
 * optstep --state (scenario_optstep_state.c): the multi-tensor graph step per optimizer state
 * format, paired with the fp32-state step, each against a bound moving its own bytes.
 */
#ifndef ACCEL_BENCH_SCENARIO_OPTSTEP_STATE_H
#define ACCEL_BENCH_SCENARIO_OPTSTEP_STATE_H

#include <stdio.h>

#include "bench.h"

/* The format's index for bench_optstep_state ("fp32", "bf16", "8bit"), or -1. */
int bench_optstep_state_parse(const char *name);
/* One preset (or o's custom sizes) with the given format's step and the fp32 one, in paired
 * rounds: a table on f, a run object in j. 0, or 1 after reporting a failure. */
int bench_optstep_state(const bench_opts_t *o, accel_device_t *dev, const char *preset,
                        int state, bench_json_t *j, FILE *f);

#endif
