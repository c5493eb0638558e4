#include "bench_torch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Finds "key": in a flat JSON text and parses the number after it. */
static int json_number(const char *text, const char *key, double *out) {
  char pat[80];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(text, pat);
  if (!p) return 0;
  char *end;
  double v = strtod(p + strlen(pat), &end);
  if (end == p + strlen(pat)) return 0;
  *out = v;
  return 1;
}

static void json_string(const char *text, const char *key, char *out, size_t size) {
  char pat[80];
  snprintf(pat, sizeof pat, "\"%s\": \"", key);
  out[0] = '\0';
  const char *p = strstr(text, pat);
  if (!p) return;
  p += strlen(pat);
  size_t i = 0;
  while (p[i] && p[i] != '"' && i + 1 < size) {
    out[i] = p[i];
    i++;
  }
  out[i] = '\0';
}

static int write_sizes(const size_t *sizes, size_t n, char *path, size_t path_size,
                       bench_torch_result_t *r) {
  snprintf(path, path_size, "/tmp/accel-bench-sizes-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) {
    snprintf(r->reason, sizeof r->reason, "mkstemp(%s) failed", path);
    return 0;
  }
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(path);
    snprintf(r->reason, sizeof r->reason, "fdopen of the sizes file failed");
    return 0;
  }
  for (size_t i = 0; i < n; i++) fprintf(f, "%zu\n", sizes[i]);
  if (fclose(f) != 0) {
    unlink(path);
    snprintf(r->reason, sizeof r->reason, "writing the sizes file %s failed", path);
    return 0;
  }
  return 1;
}

void bench_torch_run(const bench_opts_t *o, const char *mode, size_t threads,
                     const size_t *sizes, size_t n, int count, bench_torch_result_t *r) {
  memset(r, 0, sizeof *r);
  r->ms = (bench_stats_t){NAN, NAN, NAN, NAN, NAN, 0};
  if (strchr(o->python, '\'') || strchr(o->torch_script, '\'')) {
    snprintf(r->reason, sizeof r->reason, "python or script path contains a quote");
    return;
  }
  if (access(o->torch_script, R_OK) != 0) {
    snprintf(r->reason, sizeof r->reason, "%s not readable", o->torch_script);
    return;
  }
  char sizes_path[64];
  if (!write_sizes(sizes, n, sizes_path, sizeof sizes_path, r)) return;
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' '%s' %s --sizes '%s' --count %d --threads %zu", o->python,
           o->torch_script, mode, sizes_path, count, threads);
  FILE *p = popen(cmd, "r");
  if (!p) {
    unlink(sizes_path);
    snprintf(r->reason, sizeof r->reason, "popen failed: %.400s", cmd);
    return;
  }
  /* The script prints one JSON line last; keep the last line read. */
  char line[4096] = "", last[4096] = "";
  while (fgets(line, sizeof line, p)) snprintf(last, sizeof last, "%s", line);
  int status = pclose(p);
  unlink(sizes_path);
  if (strstr(last, "\"available\": false")) {
    json_string(last, "reason", r->reason, sizeof r->reason);
    return;
  }
  double med, mn, mx, p10, p90, ran_threads;
  if (status != 0 || !json_number(last, "median", &med) || !json_number(last, "min", &mn) ||
      !json_number(last, "max", &mx) || !json_number(last, "p10", &p10) ||
      !json_number(last, "p90", &p90) || !json_number(last, "threads", &ran_threads)) {
    snprintf(r->reason, sizeof r->reason, "%s exited with status %d without a result line",
             o->python, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return;
  }
  r->available = 1;
  r->threads = (int)ran_threads;
  json_string(last, "torch_version", r->version, sizeof r->version);
  r->ms = (bench_stats_t){med, mn, mx, p10, p90, (size_t)count};
}

void bench_torch_json(bench_json_t *j, const char *key, const bench_torch_result_t *r) {
  bench_json_begin_object(j, key);
  bench_json_bool(j, "available", r->available);
  if (!r->available) {
    bench_json_str(j, "reason", r->reason);
  } else {
    bench_json_str(j, "version", r->version);
    bench_json_int(j, "threads", r->threads);
    bench_json_stats(j, "ms", &r->ms);
  }
  bench_json_end_object(j);
}
