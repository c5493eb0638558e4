/* What cases_module_bundle.c shares with cases_module.c: the axpby kernel's check. */
#ifndef ACCEL_CTS_CASES_MODULE_H
#define ACCEL_CTS_CASES_MODULE_H

#include "accel/accel_module.h"
#include "cts.h"

/* Runs m's my_axpby (tests/cts/module_axpby.acc) over F32, F16 and BF16 x in ctx's mode and
 * compares y bit for bit with a host fp32 reference (what module_axpby_bits checks of a source
 * load). */
cts_result_t module_axpby_check(cts_ctx_t *ctx, accel_module_t *m);

#endif
