/* The predication walk over a command list with conditional regions (cond_walk.h). */
#include "cond_walk.h"

/* The index of the COND_END closing the region cmds[0] opens; n when none does. */
static size_t region_end(const accel_cmd_t *cmds, size_t n) {
  size_t open = 0;
  for (size_t i = 0; i < n; i++) {
    if (cmds[i].type == ACCEL_CMD_COND_BEGIN) open++;
    if (cmds[i].type == ACCEL_CMD_COND_END && --open == 0) return i;
  }
  return n;
}

static accel_status_t walk_at(const accel_cond_walk_t *w, const accel_cmd_t *cmds, size_t n,
                              uint32_t depth);

/* The region cmds[0] opens, at depth; *end: the index of its COND_END. */
static accel_status_t walk_region(const accel_cond_walk_t *w, const accel_cmd_t *cmds,
                                  size_t n, uint32_t depth, size_t *end) {
  *end = region_end(cmds, n);
  if (*end == n)
    return w->host->set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: a conditional region is not "
                              "closed", w->who);
  if (depth >= ACCEL_COND_MAX_DEPTH)
    return w->host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: conditional regions nest %u deep "
                              "at most", w->who, ACCEL_COND_MAX_DEPTH);
  const uint32_t passes =
      cmds[0].u.cond.kind == ACCEL_COND_WHILE ? cmds[0].u.cond.max_iterations : 1u;
  accel_status_t st = ACCEL_OK;
  for (uint32_t p = 0; p < passes && st == ACCEL_OK; p++) {
    st = w->enter(w->ctx, &cmds[0], depth + 1, p == 0);
    if (st == ACCEL_OK) st = walk_at(w, cmds + 1, *end - 1, depth + 1);
  }
  return st;
}

static accel_status_t walk_at(const accel_cond_walk_t *w, const accel_cmd_t *cmds, size_t n,
                              uint32_t depth) {
  accel_status_t st = ACCEL_OK;
  for (size_t i = 0; i < n && st == ACCEL_OK; i++) {
    if (cmds[i].type == ACCEL_CMD_COND_BEGIN) {
      size_t end = 0;
      st = walk_region(w, cmds + i, n - i, depth, &end);
      i += end;
    } else if (cmds[i].type == ACCEL_CMD_COND_END) {
      st = w->host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                              "%s: command %zu ends a region that was not opened", w->who, i);
    } else {
      st = w->issue(w->ctx, &cmds[i], depth);
    }
  }
  return st;
}

accel_status_t accel_cond_walk(const accel_cond_walk_t *w, const accel_cmd_t *cmds, size_t n) {
  return walk_at(w, cmds, n, 0);
}

int accel_cond_any(const accel_cmd_t *cmds, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (cmds[i].type == ACCEL_CMD_COND_BEGIN) return 1;
  return 0;
}
