/*
 * A recorded command list: the software graph of a capture and the queue of a lazy stream.
 * Kernel parameters are copied into a chunked arena (stable addresses); keepalive objects of
 * recorded commands are retained until the list is cleared.
 */
#ifndef ACCEL_CORE_CMDLIST_H
#define ACCEL_CORE_CMDLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/accel_plugin.h"
#include "kernel_support.h"

typedef struct accel_cmd_arena accel_cmd_arena_t;

typedef struct accel_cmdlist {
  accel_cmd_t *cmds;
  size_t count, cap;
  accel_cmd_arena_t *arena;
  accel_keepalive_t **keeps;
  size_t nkeeps, capkeeps;
} accel_cmdlist_t;

void accel_cmdlist_init(accel_cmdlist_t *l);
/* Drops commands and keepalives, keeps capacity. */
void accel_cmdlist_clear(accel_cmdlist_t *l);
void accel_cmdlist_free(accel_cmdlist_t *l);
/* Appends a copy of cmd (kernel params copied); keep (may be NULL) is retained. */
accel_status_t accel_cmdlist_append(accel_cmdlist_t *l, const accel_cmd_t *cmd,
                                    accel_keepalive_t *keep);
/* Retains keep for the lifetime of the list's commands. */
accel_status_t accel_cmdlist_keep(accel_cmdlist_t *l, accel_keepalive_t *keep);
/* Flags of accel_cmdlist_copy (0, false: everything). */
#define ACCEL_CMDLIST_SKIP_EVENTS 1u /* without EVENT_* commands (true means this flag) */
/* dst = deep copy of src, less what flags leave out. */
accel_status_t accel_cmdlist_copy(accel_cmdlist_t *dst, const accel_cmdlist_t *src,
                                  unsigned flags);
/* Content hash and equality (types, pointers, sizes, params bytes, host fn/user). */
uint64_t accel_cmdlist_hash(const accel_cmdlist_t *l);
bool accel_cmdlist_equal(const accel_cmdlist_t *a, const accel_cmdlist_t *b);

#endif
