/*
 * A minimal streaming JSON writer for accel-bench results: objects, arrays, numbers, strings
 * and booleans, with commas and nesting tracked for the caller. Non-finite numbers are written
 * as null (JSON has no NaN/Inf).
 */
#ifndef ACCEL_BENCH_JSON_H
#define ACCEL_BENCH_JSON_H

#include <stdio.h>

#define BENCH_JSON_MAX_DEPTH 16

typedef struct bench_json {
  FILE *f;           /* NULL: every call is a no-op (JSON output not requested) */
  int depth;
  int first[BENCH_JSON_MAX_DEPTH]; /* 1 until the first member of each open level */
} bench_json_t;

void bench_json_init(bench_json_t *j, FILE *f);
/* key is NULL inside arrays and for the top-level value. */
void bench_json_begin_object(bench_json_t *j, const char *key);
void bench_json_end_object(bench_json_t *j);
void bench_json_begin_array(bench_json_t *j, const char *key);
/* An optstep run's object (no key: an element of "runs"): preset, params and rounds, then the
 * array `rows` opened for its rows; end both with bench_json_end_array + bench_json_end_object. */
void bench_json_begin_run(bench_json_t *j, const char *preset, size_t params, int rounds,
                          const char *rows);
void bench_json_end_array(bench_json_t *j);
void bench_json_num(bench_json_t *j, const char *key, double v);
void bench_json_int(bench_json_t *j, const char *key, long long v);
void bench_json_str(bench_json_t *j, const char *key, const char *v);
void bench_json_bool(bench_json_t *j, const char *key, int v);
void bench_json_null(bench_json_t *j, const char *key);

#endif
