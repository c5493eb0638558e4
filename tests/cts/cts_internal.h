/*
 * accel CTS: pieces shared by the harness (main.c) and the case files that are not part of the
 * public case API in cts.h: the case registry walk, deferred cleanup of cts_exec resources, the
 * per-backend unsupported-case table, and small helpers used by several case files.
 */
#ifndef ACCEL_CTS_INTERNAL_H
#define ACCEL_CTS_INTERNAL_H

#include <stdatomic.h>

#include "cts.h"

/* --- registry (cts_registry.c) ------------------------------------------------------------ */

typedef struct cts_case {
  const char *name;
  unsigned tags;
  cts_case_fn fn;
} cts_case_t;

/* Registered cases sorted by name (sorted on first call). NULL with *count = 0 when none, or
 * when registration ran out of memory (then cts_registry_error() says so). */
const cts_case_t *cts_registry_cases(size_t *count);
const char *cts_registry_error(void);

/* --- cts_exec (cts_exec.c) ----------------------------------------------------------------- */

/* Stream creation flags for the context's mode (EAGER / DEFAULT / LAZY). */
unsigned cts_stream_flags(const cts_ctx_t *ctx);

/* When cts_exec fails it keeps its stream and graph alive, so that accel_last_error() still
 * describes the failure when the case reads it; the harness releases them after the case. */
void cts_exec_cleanup(void);

/* --- unsupported cases (cts_unsupported.c) -------------------------------------------------- */

/* Reason why backend cannot run case_name, or NULL when it should run. */
const char *cts_unsupported_reason(const char *backend, const char *case_name);

/* --- helpers for cases (cts_support.c) ----------------------------------------------------- */

void cts_sleep_ms(unsigned ms);

/* A host function that blocks its stream until the test opens the gate (or a 10 s safety
 * timeout passes, so that a failing test cannot hang the suite). */
typedef struct cts_gate {
  atomic_int open;
  atomic_int entered;   /* set when the host function started waiting */
  atomic_int timed_out; /* set when the safety timeout fired */
} cts_gate_t;

void cts_gate_init(cts_gate_t *gate);
void cts_gate_host_fn(void *gate);
void cts_gate_open(cts_gate_t *gate);

/* A host function that sleeps for (uintptr_t)user milliseconds. */
void cts_sleep_host_fn(void *ms);

/* A host function that sets an atomic_int flag to 1. */
void cts_flag_host_fn(void *flag);

/* An append-only log of integers written by host functions. */
typedef struct cts_seq_log {
  int *values;
  size_t capacity;
  atomic_size_t count;
} cts_seq_log_t;

/* A log entry: the host function appends `value` to `log`. */
typedef struct cts_seq_item {
  cts_seq_log_t *log;
  int value;
} cts_seq_item_t;

void cts_seq_host_fn(void *item);

/* Fills host memory with a position-dependent byte pattern derived from seed. */
void cts_fill_pattern(void *dst, size_t size, uint32_t seed);
/* Offset of the first byte that differs from the pattern, or size when all match. */
size_t cts_check_pattern(const void *src, size_t size, uint32_t seed);

/* Offset of the first byte of p[0..size) that is not value, or size when all match. */
size_t cts_find_not_byte(const void *p, size_t size, unsigned char value);

#endif
