#include "bench_torch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int bench_peer_number(const char *text, const char *key, double *out) {
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

void bench_peer_string(const char *text, const char *key, char *out, size_t size) {
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

static int write_sizes(const size_t *sizes, size_t n, char *path, size_t path_size, char *why,
                       size_t cap) {
  snprintf(path, path_size, "/tmp/accel-bench-sizes-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) return !bench_why(why, cap, "mkstemp(%s) failed", path);
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(path);
    return !bench_why(why, cap, "fdopen of the sizes file failed");
  }
  for (size_t i = 0; i < n; i++) fprintf(f, "%zu\n", sizes[i]);
  if (fclose(f) != 0) {
    unlink(path);
    return !bench_why(why, cap, "writing the sizes file %s failed", path);
  }
  return 1;
}

char *bench_peer_exec(const bench_opts_t *o, const char *script, const char *args,
                      const size_t *sizes, size_t n, int *status, char *why, size_t cap) {
  *status = -1;
  if (strchr(o->python, '\'') || strchr(script, '\''))
    return bench_why(why, cap, "python or script path contains a quote"), NULL;
  if (access(script, R_OK) != 0) return bench_why(why, cap, "%s not readable", script), NULL;
  char sizes_path[64];
  if (!write_sizes(sizes, n, sizes_path, sizeof sizes_path, why, cap)) return NULL;
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' '%s' --sizes '%s' %s", o->python, script, sizes_path, args);
  FILE *p = popen(cmd, "r");
  if (!p) {
    unlink(sizes_path);
    return bench_why(why, cap, "popen failed: %.400s", cmd), NULL;
  }
  char *line = NULL, *result = NULL;
  size_t line_cap = 0;
  while (getline(&line, &line_cap, p) >= 0) {
    if (line[0] != '{') continue;
    free(result);
    result = strdup(line);
  }
  free(line);
  const int st = pclose(p);
  unlink(sizes_path);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (!result) bench_why(why, cap, "%s exited with status %d without a result line", o->python,
                         *status);
  return result;
}

void bench_torch_run(const bench_opts_t *o, const char *mode, size_t threads,
                     const size_t *sizes, size_t n, int count, bench_torch_result_t *r) {
  memset(r, 0, sizeof *r);
  r->ms = (bench_stats_t){NAN, NAN, NAN, NAN, NAN, 0};
  char args[256];
  snprintf(args, sizeof args, "%s --count %d --threads %zu", mode, count, threads);
  int status;
  char *last = bench_peer_exec(o, o->torch_script, args, sizes, n, &status, r->reason,
                               sizeof r->reason);
  if (!last) return;
  if (strstr(last, "\"available\": false")) {
    bench_peer_string(last, "reason", r->reason, sizeof r->reason);
    free(last);
    return;
  }
  double med, mn, mx, p10, p90, ran_threads;
  if (status != 0 || !bench_peer_number(last, "median", &med) ||
      !bench_peer_number(last, "min", &mn) || !bench_peer_number(last, "max", &mx) ||
      !bench_peer_number(last, "p10", &p10) || !bench_peer_number(last, "p90", &p90) ||
      !bench_peer_number(last, "threads", &ran_threads)) {
    snprintf(r->reason, sizeof r->reason, "%s exited with status %d without a result line",
             o->python, status);
    free(last);
    return;
  }
  r->available = 1;
  r->threads = (int)ran_threads;
  bench_peer_string(last, "torch_version", r->version, sizeof r->version);
  r->ms = (bench_stats_t){med, mn, mx, p10, p90, (size_t)count};
  free(last);
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
