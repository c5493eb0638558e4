/*
 * Conditional regions by predication, the walk the plugins without control flow between
 * commands share (OpenCL, CUDA/HIP; docs/GRAPHS.md, "Branches on a device flag"). A command
 * list with ACCEL_CMD_COND_BEGIN ... COND_END regions (nested at most ACCEL_COND_MAX_DEPTH) is
 * issued command by command: at a region's start `enter` sets the slot of its depth from the
 * enclosing one and the flag (on the device), then the body is issued at that depth, to be
 * predicated on the slot; a WHILE repeats that max_iterations times (pass k > 0 enters from
 * its own slot, so it stays 0 once the flag was 0). Depth 0 is outside every region.
 */
#ifndef ACCEL_COMMON_COND_WALK_H
#define ACCEL_COMMON_COND_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_plugin.h"

typedef struct accel_cond_walk {
  const accel_host_api_t *host; /* its set_error reports a malformed list */
  const char *who;              /* "opencl submit_batch": names the caller in messages */
  void *ctx;
  /* The slot of depth (>= 1) = (first ? the slot of depth - 1 (none at 0: true) : its own)
   * && *begin->u.cond.flag != 0, evaluated in stream order (on begin's stream slot). */
  accel_status_t (*enter)(void *ctx, const accel_cmd_t *begin, uint32_t depth, int first);
  /* One command (never COND_BEGIN / COND_END), to run iff the slot of depth is nonzero
   * (depth 0: always). */
  accel_status_t (*issue)(void *ctx, const accel_cmd_t *cmd, uint32_t depth);
} accel_cond_walk_t;

/* Issues cmds[0..n) through w; stops at the first failure and returns it. */
accel_status_t accel_cond_walk(const accel_cond_walk_t *w, const accel_cmd_t *cmds, size_t n);

/* 1 when cmds[0..n) holds a conditional region. */
int accel_cond_any(const accel_cmd_t *cmds, size_t n);

#endif
