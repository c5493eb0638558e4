/*
 * Unit test: backends and collective engines go through the one plugin loader
 * (core/plugin_loader.c), so a bad file is refused the same way whichever kind it claims to be.
 * One scenario per process (the backend search runs once per process):
 *
 *   test_plugin_files fifo
 *   test_plugin_files not_elf
 *   test_plugin_files torn_size BACKEND.so ENGINE.so
 *
 * The same defect is placed in a private directory (ACCEL_PLUGIN_PATH) twice: as the backend
 * libaccel-NAME.so and as the engine libaccelcomm-NAME.so. The backend loader's report and the
 * engine loader's error (accel_comm_create_mpi with that engine, refused before any MPI call)
 * must give the same reason, and the CPU device still works.
 *   fifo       a FIFO (opening it would block: an alarm fails the test instead)
 *   not_elf    a text file (dlopen's own message)
 *   torn_size  a valid plugin whose vtable struct_size is 4 bytes short of its struct (not a
 *              whole number of pointers: a copy would take half of a function pointer)
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/accel.h"
#include "accel/accel_comm.h"
#include "accel/accel_comm_engine.h"
#include "accel/accel_plugin.h"
#include "check.h"

static char g_dir[PATH_MAX];
static char g_backend[PATH_MAX + 64], g_engine[PATH_MAX + 64];

static void cleanup(void) {
  if (g_backend[0]) unlink(g_backend);
  if (g_engine[0]) unlink(g_engine);
  if (g_dir[0]) rmdir(g_dir);
}

static int copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
  int ok = in && out;
  char buf[65536];
  for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;) ok = fwrite(buf, 1, n, out) == n;
  if (in) ok &= !ferror(in) && fclose(in) == 0;
  if (out) ok &= fclose(out) == 0;
  if (!ok) fprintf(stderr, "copying %s to %s failed\n", from, to);
  return ok;
}

static int write_text(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return perror(path), 0;
  fputs("this is a text file, not a shared object\n", f);
  return fclose(f) == 0;
}

/* The backend loader's report on g_backend: its message, or "" (a failed check). */
static void backend_reason(char *out, size_t size) {
  out[0] = '\0';
  for (int i = 0; i < accel_plugin_report_count(); ++i) {
    accel_plugin_report_t r;
    if (accel_plugin_report_get(i, &r) != ACCEL_OK || strcmp(r.path, g_backend) != 0) continue;
    printf("backend report: %s: outcome %d: %s\n", r.path, (int)r.outcome, r.message);
    CHECK(r.outcome == ACCEL_PLUGIN_FAILED, "backend outcome %d, want FAILED", (int)r.outcome);
    snprintf(out, size, "%s", r.message);
    return;
  }
  CHECK(0, "no loader report for %s", g_backend);
}

/* The engine loader's error for engine name on the CPU device: its message. */
static void engine_reason(accel_device_t *cpu, const char *name, char *out, size_t size) {
  accel_comm_t *c = NULL;
  accel_status_t st = accel_comm_create_mpi(cpu, NULL, name, &c);
  snprintf(out, size, "%s", accel_last_error());
  printf("engine: %s: %s\n", accel_status_name(st), out);
  CHECK(st == ACCEL_ERROR_PLUGIN, "engine '%s' -> %s, want %s", name, accel_status_name(st),
        accel_status_name(ACCEL_ERROR_PLUGIN));
  CHECK(c == NULL, "output written on failure");
  CHECK(strstr(out, g_engine) != NULL, "the engine's message does not name its file: %s", out);
  accel_status_t again = accel_comm_create_mpi(cpu, NULL, name, &c);
  CHECK(again == st, "asking again: %s", accel_status_name(again));
}

/* text with every occurrence of from replaced by to. */
static void replace_all(const char *text, const char *from, const char *to, char *out,
                        size_t size) {
  size_t used = 0, nfrom = strlen(from);
  out[0] = '\0';
  for (const char *p = text; *p && used + 1 < size;) {
    const char *hit = strstr(p, from);
    size_t keep = hit ? (size_t)(hit - p) : strlen(p);
    used += (size_t)snprintf(out + used, size - used, "%.*s%s", (int)keep, p, hit ? to : "");
    if (used >= size) break;
    p = hit ? hit + nfrom : p + keep;
  }
}

int main(int argc, char **argv) {
  const char *scenario = argc > 1 ? argv[1] : "";
  int torn = strcmp(scenario, "torn_size") == 0;
  if ((!torn && strcmp(scenario, "fifo") != 0 && strcmp(scenario, "not_elf") != 0) ||
      (torn && argc != 4)) {
    fprintf(stderr, "usage: test_plugin_files fifo|not_elf|torn_size BACKEND.so ENGINE.so\n");
    return 2;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/accel-plugin-files-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) return perror("mkdtemp"), 1;
  atexit(cleanup);
  /* the engine's name is its file's; the fake engine calls itself "fakestream" */
  const char *name = torn ? "fakestream" : "bad";
  snprintf(g_backend, sizeof g_backend, "%s/libaccel-%s.so", g_dir, torn ? "fake" : name);
  snprintf(g_engine, sizeof g_engine, "%s/libaccelcomm-%s.so", g_dir, name);
  int ok = 1;
  if (torn) {
    ok = copy_file(argv[2], g_backend) && copy_file(argv[3], g_engine);
  } else if (strcmp(scenario, "fifo") == 0) {
    ok = mkfifo(g_backend, 0600) == 0 && mkfifo(g_engine, 0600) == 0;
    alarm(20); /* a loader that opens a FIFO blocks forever: fail instead */
  } else {
    ok = write_text(g_backend) && write_text(g_engine);
  }
  if (!ok) return perror(scenario), 1;
  setenv("ACCEL_PLUGIN_PATH", g_dir, 1); /* before the first accel call */
  unsetenv("ACCEL_BACKEND");
  unsetenv("ACCEL_COMM_ENGINE");

  char breason[1024], ereason[2048], expect[2048];
  backend_reason(breason, sizeof breason);
  accel_device_t *cpu = NULL;
  if (accel_device_open("cpu", &cpu) != ACCEL_OK) {
    fprintf(stderr, "cpu device: %s\n", accel_last_error());
    return 1;
  }
  engine_reason(cpu, name, ereason, sizeof ereason);
  if (torn) {
    /* each file is refused for its own size, in the same words */
    char b[128], e[128];
    snprintf(b, sizeof b, "vtable struct_size %zu is not a multiple of the pointer size %zu",
             sizeof(accel_backend_vtable_t) - 4, sizeof(void *));
    snprintf(e, sizeof e, "vtable struct_size %zu is not a multiple of the pointer size %zu",
             sizeof(accel_comm_engine_vtable_t) - 4, sizeof(void *));
    CHECK(strstr(breason, b) != NULL, "backend: '%s' not in: %s", b, breason);
    CHECK(strstr(ereason, e) != NULL, "engine: '%s' not in: %s", e, ereason);
  } else {
    /* the backend's reason word for word, its file's path replaced by the engine's */
    CHECK(breason[0] != '\0', "empty backend reason");
    replace_all(breason, g_backend, g_engine, expect, sizeof expect);
    CHECK(strstr(ereason, expect) != NULL, "the engine's reason differs from the backend's:\n"
          "  backend: %s\n  engine:  %s", expect, ereason);
    const char *key = strcmp(scenario, "fifo") == 0 ? "not a regular file (a FIFO)"
                                                    : "dlopen failed";
    CHECK(strstr(breason, key) != NULL, "backend: '%s' not in: %s", key, breason);
  }

  /* the fallback still works */
  void *p = NULL;
  float in[16] = {1, 2, 3}, out[16] = {0};
  OK(accel_malloc(cpu, sizeof in, &p));
  if (p) {
    OK(accel_memcpy(cpu, p, in, sizeof in));
    OK(accel_memcpy(cpu, out, p, sizeof out));
    CHECK(memcmp(in, out, sizeof in) == 0, "cpu round trip");
    accel_free(cpu, p);
  }
  accel_device_close(cpu);
  return CHECK_EXIT("test_plugin_files %s", scenario);
}
