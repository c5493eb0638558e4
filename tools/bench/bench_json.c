#include "bench_json.h"

#include <math.h>

void bench_json_init(bench_json_t *j, FILE *f) {
  j->f = f;
  j->depth = 0;
  j->first[0] = 1;
}

static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

/* Separator, indentation and "key": for the next value at the current level. */
static void prefix(bench_json_t *j, const char *key) {
  if (!j->first[j->depth]) fputc(',', j->f);
  if (j->depth > 0) {
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
  }
  j->first[j->depth] = 0;
  if (key) {
    put_string(j->f, key);
    fputs(": ", j->f);
  }
}

static void open_level(bench_json_t *j, const char *key, char c) {
  if (!j->f) return;
  prefix(j, key);
  fputc(c, j->f);
  if (j->depth + 1 < BENCH_JSON_MAX_DEPTH) j->depth++;
  j->first[j->depth] = 1;
}

static void close_level(bench_json_t *j, char c) {
  if (!j->f) return;
  int empty = j->first[j->depth];
  if (j->depth > 0) j->depth--;
  if (!empty) {
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
  }
  fputc(c, j->f);
  if (j->depth == 0) fputc('\n', j->f);
}

void bench_json_begin_object(bench_json_t *j, const char *key) { open_level(j, key, '{'); }
void bench_json_end_object(bench_json_t *j) { close_level(j, '}'); }
void bench_json_begin_array(bench_json_t *j, const char *key) { open_level(j, key, '['); }

void bench_json_begin_run(bench_json_t *j, const char *preset, size_t params, int rounds,
                          const char *rows) {
  bench_json_begin_object(j, NULL);
  bench_json_str(j, "preset", preset);
  bench_json_int(j, "params", (long long)params);
  bench_json_int(j, "rounds", rounds);
  bench_json_begin_array(j, rows);
}
void bench_json_end_array(bench_json_t *j) { close_level(j, ']'); }

void bench_json_num(bench_json_t *j, const char *key, double v) {
  if (!j->f) return;
  prefix(j, key);
  if (isfinite(v))
    fprintf(j->f, "%.6g", v);
  else
    fputs("null", j->f);
}

void bench_json_int(bench_json_t *j, const char *key, long long v) {
  if (!j->f) return;
  prefix(j, key);
  fprintf(j->f, "%lld", v);
}

void bench_json_str(bench_json_t *j, const char *key, const char *v) {
  if (!j->f) return;
  prefix(j, key);
  put_string(j->f, v);
}

void bench_json_bool(bench_json_t *j, const char *key, int v) {
  if (!j->f) return;
  prefix(j, key);
  fputs(v ? "true" : "false", j->f);
}

void bench_json_null(bench_json_t *j, const char *key) {
  if (!j->f) return;
  prefix(j, key);
  fputs("null", j->f);
}
