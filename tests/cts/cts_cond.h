/*
 * What the cases on branches on a device flag share (docs/GRAPHS.md, "Branches on a device
 * flag"): the fixture of cases_graph_cond.c, the attribute check, the refusal a device whose
 * ACCEL_ATTR_CONDITIONALS is NONE must give, and the runner that checks that refusal instead of
 * the case there. Defined in cases_graph_cond.c; cases_graph_cond_use.c uses them too.
 */
#ifndef ACCEL_CTS_COND_H
#define ACCEL_CTS_COND_H

#include "cts.h"

#define COND_N 64

typedef struct cond_fix {
  int32_t *flag, *flag2;
  float *value, *dst, *two; /* value, dst: COND_N floats (dst zeroed); two: 2.0f */
  int byte;                 /* IF: the flag's bytes (0: not taken) */
  uint32_t max;             /* WHILE: max_iterations */
  int host_calls;           /* WHILE: the passes the body's host function saw (atomic) */
  void *user;               /* what cond_case was given for the case */
} cond_fix_t;

/* *yes = the device runs regions (ACCEL_CONDITIONALS_NATIVE or _PREDICATED). */
accel_status_t cond_supported(cts_ctx_t *ctx, int *yes);

/* ACCEL_ATTR_CONDITIONALS NONE: checks that the calls are refused with UNSUPPORTED and a
 * message naming the attribute, and that nothing was left open. */
cts_result_t cond_refused(cts_ctx_t *ctx);

/* What a case checks on a fixture: NULL when it holds, else why (or *st set). */
typedef const char *(*cond_run_fn)(cts_ctx_t *ctx, cond_fix_t *f, accel_status_t *st);

/* Checks the refusal where the device has no regions; else runs `run` on a fresh fixture whose
 * user field is `user`. */
cts_result_t cond_case(cts_ctx_t *ctx, cond_run_fn run, void *user);

#endif
