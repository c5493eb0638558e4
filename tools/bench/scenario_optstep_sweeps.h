/*
 * optstep --sweeps (scenario_optstep_sweeps.c): the fused step's norm and update sweeps timed
 * apart, with variants of the update and the separate AdamW kernel beside them.
 */
#ifndef ACCEL_BENCH_SCENARIO_OPTSTEP_SWEEPS_H
#define ACCEL_BENCH_SCENARIO_OPTSTEP_SWEEPS_H

#include <stdio.h>

#include "bench.h"

/* One preset (or o's custom sizes): a table on f, a run object in j. 0, or 1 after reporting a
 * failure. */
int bench_optstep_sweeps(const bench_opts_t *o, accel_device_t *dev, const char *preset,
                         bench_json_t *j, FILE *f);

#endif
