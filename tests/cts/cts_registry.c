/*
 * accel CTS: the case registry. CTS_CASE registers cases from constructors (before main), in
 * link order; the harness runs them sorted by name so that output is stable.
 */
#include <stdlib.h>
#include <string.h>

#include "cts_internal.h"

static cts_case_t *g_cases;
static size_t g_count;
static size_t g_capacity;
static int g_sorted;
static const char *g_error;

void cts_register(const char *name, unsigned tags, cts_case_fn fn) {
  if (g_error) return;
  if (g_count == g_capacity) {
    size_t cap = g_capacity ? g_capacity * 2 : 64;
    cts_case_t *grown = realloc(g_cases, cap * sizeof(*grown));
    if (!grown) {
      /* Constructors cannot report errors; main() asks cts_registry_error(). */
      g_error = "out of memory while registering cases";
      return;
    }
    g_cases = grown;
    g_capacity = cap;
  }
  g_cases[g_count].name = name;
  g_cases[g_count].tags = tags;
  g_cases[g_count].fn = fn;
  g_count++;
  g_sorted = 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const cts_case_t *)a)->name, ((const cts_case_t *)b)->name);
}

const cts_case_t *cts_registry_cases(size_t *count) {
  if (g_error) {
    *count = 0;
    return NULL;
  }
  if (!g_sorted && g_count > 1) qsort(g_cases, g_count, sizeof(*g_cases), by_name);
  g_sorted = 1;
  *count = g_count;
  return g_cases;
}

const char *cts_registry_error(void) { return g_error; }
