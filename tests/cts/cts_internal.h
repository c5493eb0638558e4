/*
 * accel CTS: pieces shared by the harness (main.c) and the case files that are not part of the
 * public case API in cts.h: the case registry walk, deferred cleanup of cts_exec resources, the
 * expectation files (unsupported / xfail cases), and small helpers used by several case files.
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

/* --- expectation files (cts_expect.c) ------------------------------------------------------- */

typedef enum cts_expect_kind {
  CTS_EXPECT_NONE = 0,
  CTS_EXPECT_UNSUPPORTED = 1, /* not run: SKIP with the reason */
  CTS_EXPECT_XFAIL = 2        /* run: a failure is XFAIL, a pass is XPASS (fails the run) */
} cts_expect_kind_t;

/* Appends the lines of an expectation file; 0 with err set when it is unreadable or malformed. */
int cts_expect_load(const char *path, char *err, size_t errlen);
/* Marks the lines that match at least one of the cases. */
void cts_expect_mark_cases(const cts_case_t *cases, size_t ncases);
/* "file:line" of the first line that matches no case, or NULL. */
const char *cts_expect_unmatched(void);
/* The expectation for case_name in mode (a cts_mode_t), with its reason. */
cts_expect_kind_t cts_expect_find(const char *case_name, int mode, const char **reason);
size_t cts_expect_count(void);
void cts_expect_free(void);

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
/* The gate's host function was released by cts_gate_open, not by its safety timeout. */
#define CTS_CHECK_GATE_RELEASED(gate) \
  CTS_CHECK(!atomic_load(&(gate)->timed_out), "the host function was not released in time")

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
