/*
 * accel CTS expectation files: what a backend declares about cases it does not pass, with the
 * reason, kept outside the binary so that an out-of-tree plugin can ship its own (oneAPI UR's
 * per-adapter match files, IREE's per-driver lists). See docs/CTS.md.
 *
 *   # comment
 *   CASE[@MODE]  unsupported|xfail  REASON
 *
 * CASE is a case name or a glob (fnmatch: *, ?, [...]); @MODE (eager, graph or lazy) limits the
 * line to one mode. unsupported: the case is not run, reported SKIP with the reason. xfail: the
 * case runs; a failure is reported XFAIL (not a failure of the run), a pass is XPASS, which
 * fails the run: a fixed case must have its line removed. The first matching line wins. A line
 * that matches no case at all is an error (a renamed case must not silently lose its line).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts_internal.h"

typedef struct cts_expect_rule {
  char pattern[128];
  int mode; /* -1: every mode */
  cts_expect_kind_t kind;
  char reason[256];
  char origin[320]; /* file:line, for messages */
  int matched;
} cts_expect_rule_t;

static cts_expect_rule_t *g_rules;
static size_t g_nrules, g_caprules;

static const char *const k_modes[] = {"eager", "graph", "lazy"};

static int add_rule(const cts_expect_rule_t *r) {
  if (g_nrules == g_caprules) {
    size_t cap = g_caprules ? 2 * g_caprules : 16;
    cts_expect_rule_t *grown = realloc(g_rules, cap * sizeof(*grown));
    if (!grown) return 0;
    g_rules = grown;
    g_caprules = cap;
  }
  g_rules[g_nrules++] = *r;
  return 1;
}

/* Parses one non-empty, non-comment line into r; 0 with err set when malformed. */
static int parse_line(char *line, cts_expect_rule_t *r, char *err, size_t errlen) {
  char *save = NULL;
  char *pattern = strtok_r(line, " \t", &save);
  char *kind = strtok_r(NULL, " \t", &save);
  char *reason = strtok_r(NULL, "", &save);
  while (reason && (*reason == ' ' || *reason == '\t')) reason++;
  if (!pattern || !kind || !reason || !reason[0]) {
    snprintf(err, errlen, "expected 'CASE[@MODE] unsupported|xfail REASON'");
    return 0;
  }
  if (strcmp(kind, "unsupported") == 0) r->kind = CTS_EXPECT_UNSUPPORTED;
  else if (strcmp(kind, "xfail") == 0) r->kind = CTS_EXPECT_XFAIL;
  else {
    snprintf(err, errlen, "unknown expectation '%.40s' (unsupported or xfail)", kind);
    return 0;
  }
  r->mode = -1;
  char *at = strchr(pattern, '@');
  if (at) {
    *at = '\0';
    for (int m = 0; m < 3; m++)
      if (strcmp(at + 1, k_modes[m]) == 0) r->mode = m;
    if (r->mode < 0) {
      snprintf(err, errlen, "unknown mode '%.40s' (eager, graph or lazy)", at + 1);
      return 0;
    }
  }
  if (!pattern[0] || strlen(pattern) >= sizeof(r->pattern)) {
    snprintf(err, errlen, "case pattern empty or longer than %zu bytes", sizeof(r->pattern) - 1);
    return 0;
  }
  snprintf(r->pattern, sizeof(r->pattern), "%s", pattern);
  snprintf(r->reason, sizeof(r->reason), "%s", reason);
  return 1;
}

int cts_expect_load(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return 0;
  }
  char line[1024];
  int lineno = 0, ok = 1;
  while (ok && fgets(line, sizeof(line), f)) {
    lineno++;
    line[strcspn(line, "\r\n")] = '\0';
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p || *p == '#') continue;
    cts_expect_rule_t r;
    memset(&r, 0, sizeof(r));
    char why[256];
    if (!parse_line(p, &r, why, sizeof(why))) {
      snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
      ok = 0;
    } else {
      snprintf(r.origin, sizeof(r.origin), "%.300s:%d", path, lineno);
      if (!add_rule(&r)) {
        snprintf(err, errlen, "%s:%d: out of memory", path, lineno);
        ok = 0;
      }
    }
  }
  fclose(f);
  return ok;
}

void cts_expect_mark_cases(const cts_case_t *cases, size_t ncases) {
  for (size_t i = 0; i < g_nrules; i++)
    for (size_t c = 0; c < ncases && !g_rules[i].matched; c++)
      g_rules[i].matched = fnmatch(g_rules[i].pattern, cases[c].name, 0) == 0;
}

const char *cts_expect_unmatched(void) {
  for (size_t i = 0; i < g_nrules; i++)
    if (!g_rules[i].matched) return g_rules[i].origin;
  return NULL;
}

cts_expect_kind_t cts_expect_find(const char *case_name, int mode, const char **reason) {
  for (size_t i = 0; i < g_nrules; i++) {
    const cts_expect_rule_t *r = &g_rules[i];
    if ((r->mode < 0 || r->mode == mode) && fnmatch(r->pattern, case_name, 0) == 0) {
      *reason = r->reason;
      return r->kind;
    }
  }
  *reason = NULL;
  return CTS_EXPECT_NONE;
}

size_t cts_expect_count(void) { return g_nrules; }

void cts_expect_free(void) {
  free(g_rules);
  g_rules = NULL;
  g_nrules = g_caprules = 0;
}
