/*
 * accel-cts: the conformance suite driver.
 *
 *   accel-cts --device SELECTOR --mode eager|graph|lazy [--filter SUBSTR] [--exclude SUBSTR]
 *             [--list] [-v] [--case-timeout SECONDS] [--expect FILE]...
 *
 * Opens one device and runs every registered case (sorted by name) in one mode. Prints one line
 * per case and finally "N passed, N failed, N skipped" (plus ", N xfail, N xpass" when an
 * expectation file declared xfail cases). Expectations come from every --expect FILE and from
 * the device's plugin: libaccel-NAME.cts-expect beside libaccel-NAME.so (cts_expect.c). Exit
 * status: 0 all good, 1 a case failed or passed unexpectedly (XPASS), 77 the device is absent
 * (meson reports SKIP), 2 usage error (a malformed expectation file or a line matching no case).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cts_internal.h"

enum { CTS_EXIT_FAIL = 1, CTS_EXIT_USAGE = 2, CTS_EXIT_SKIP = 77 };
/* Per-case watchdog: a hung case is reported and ends the run instead of waiting for the meson
 * timeout without saying which case hung. Raise it for slow runs (valgrind, sanitizers). */
enum { CTS_DEFAULT_CASE_TIMEOUT_S = 120 };

typedef struct cts_options {
  const char *selector;
  cts_mode_t mode;
  const char *filter;
  const char *exclude;
  int list;
  int verbose;
  unsigned case_timeout_s;
  const char *expect_files[16];
  int nexpect;
} cts_options_t;

static const char *const k_mode_names[] = {"eager", "graph", "lazy"};
/* Backend names the library knows; a selector naming one of these whose plugin is not built or
 * not loadable is "absent" (SKIP), any other unknown name is a usage error (FAIL). */
static const char *const k_known_backends[] = {"cpu", "opencl", "cuda", "hip", "level_zero"};

static const char *volatile g_running_case;

static void write_str(const char *s) {
  ssize_t ignored = write(STDOUT_FILENO, s, strlen(s));
  (void)ignored;
}

static void on_timeout(int sig) {
  (void)sig;
  write_str("FAIL  ");
  write_str(g_running_case ? g_running_case : "(harness)");
  write_str(": timed out (watchdog); aborting the run\n");
  _exit(CTS_EXIT_FAIL);
}

static void on_crash(int sig) {
  write_str("FAIL  ");
  write_str(g_running_case ? g_running_case : "(harness)");
  write_str(": crashed (fatal signal); aborting the run\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install_signal_handlers(void) {
  signal(SIGALRM, on_timeout);
  signal(SIGSEGV, on_crash);
  signal(SIGBUS, on_crash);
  signal(SIGFPE, on_crash);
  signal(SIGILL, on_crash);
  signal(SIGABRT, on_crash);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: accel-cts --device SELECTOR --mode eager|graph|lazy [--filter SUBSTR] "
          "[--exclude SUBSTR] [--list] [-v]\n"
          "  --device   device selector (\"cpu\", \"opencl:0\", ...); omitted: automatic\n"
          "  --mode     how cases submit work: directly, captured and replayed, or lazily\n"
          "  --filter   run only cases whose name contains SUBSTR\n"
          "  --exclude  leave out the cases whose name contains SUBSTR\n"
          "  --list     list the cases and their tags, run nothing\n"
          "  -v         print timings and details\n"
          "  --case-timeout SECONDS  watchdog per case (default %d, 0: none)\n"
          "  --expect FILE  expectation file: lines 'CASE[@MODE] unsupported|xfail REASON'\n"
          "             (repeatable; the plugin's libaccel-NAME.cts-expect is read too)\n",
          CTS_DEFAULT_CASE_TIMEOUT_S);
}

static int parse_args(int argc, char **argv, cts_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->mode = CTS_MODE_EAGER;
  o->case_timeout_s = CTS_DEFAULT_CASE_TIMEOUT_S;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has_value = i + 1 < argc;
    if (strcmp(a, "--device") == 0 && has_value) {
      o->selector = argv[++i];
    } else if (strcmp(a, "--mode") == 0 && has_value) {
      const char *m = argv[++i];
      int found = 0;
      for (int k = 0; k < 3; k++)
        if (strcmp(m, k_mode_names[k]) == 0) {
          o->mode = (cts_mode_t)k;
          found = 1;
        }
      if (!found) {
        fprintf(stderr, "accel-cts: unknown mode '%s'\n", m);
        return 0;
      }
    } else if (strcmp(a, "--filter") == 0 && has_value) {
      o->filter = argv[++i];
    } else if (strcmp(a, "--exclude") == 0 && has_value) {
      o->exclude = argv[++i];
    } else if (strcmp(a, "--case-timeout") == 0 && has_value) {
      char *end = NULL;
      unsigned long v = strtoul(argv[++i], &end, 10);
      if (!end || *end || v > 86400) {
        fprintf(stderr, "accel-cts: bad --case-timeout '%s'\n", argv[i]);
        return 0;
      }
      o->case_timeout_s = (unsigned)v;
    } else if (strcmp(a, "--expect") == 0 && has_value) {
      if (o->nexpect == (int)(sizeof(o->expect_files) / sizeof(o->expect_files[0]))) {
        fprintf(stderr, "accel-cts: too many --expect files\n");
        return 0;
      }
      o->expect_files[o->nexpect++] = argv[++i];
    } else if (strcmp(a, "--list") == 0) {
      o->list = 1;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      o->verbose = 1;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "accel-cts: unknown or incomplete argument '%s'\n", a);
      return 0;
    }
  }
  return 1;
}

static int is_known_backend(const char *selector) {
  size_t len = strcspn(selector, ":");
  for (size_t i = 0; i < sizeof(k_known_backends) / sizeof(k_known_backends[0]); i++)
    if (strlen(k_known_backends[i]) == len && strncmp(selector, k_known_backends[i], len) == 0)
      return 1;
  return 0;
}

static void tags_string(unsigned tags, char *out, size_t size) {
  snprintf(out, size, "%s%s%s%s", tags & CTS_TAG_KERNELS ? " kernels" : "",
           tags & CTS_TAG_TIMING ? " timing" : "", tags & CTS_TAG_STRESS ? " stress" : "",
           tags & CTS_TAG_HOST_ACCESS ? " host_access" : "");
}

static int selected(const cts_options_t *o, const cts_case_t *c) {
  return (!o->filter || strstr(c->name, o->filter) != NULL) &&
         (!o->exclude || strstr(c->name, o->exclude) == NULL);
}

/* Whether the device runs tensor kernels: a one-element fill. Only UNSUPPORTED/UNAVAILABLE
 * make kernel cases SKIP; any other failure is left for the cases to report. */
static int kernels_available(cts_ctx_t *ctx, char *reason, size_t size) {
  accel_stream_t *s = NULL;
  void *p = NULL;
  accel_status_t st = accel_stream_create(ctx->dev, &s);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, sizeof(float), &p);
  if (st == ACCEL_OK) {
    accel_tensor_t t = {p, 1, ACCEL_F32};
    st = accel_fill(s, &t, 1, 1.0f);
    if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  }
  if (st == ACCEL_ERROR_UNSUPPORTED || st == ACCEL_ERROR_UNAVAILABLE)
    snprintf(reason, size, "tensor kernels not available: %s: %s", accel_status_name(st),
             accel_last_error());
  if (p) accel_free(ctx->dev, p);
  if (s) accel_stream_destroy(s);
  return !(st == ACCEL_ERROR_UNSUPPORTED || st == ACCEL_ERROR_UNAVAILABLE);
}

/* After every case: no leaked bytes (when check_leak), and the device still runs a memset + copy
 * round trip. */
static cts_result_t check_device_after(cts_ctx_t *ctx, uint64_t allocated_before,
                                       int check_leak) {
  accel_memory_stats_t stats;
  CTS_OK(accel_device_synchronize(ctx->dev));
  CTS_OK(accel_memory_stats(ctx->dev, &stats));
  CTS_CHECK(!check_leak || stats.allocated_bytes == allocated_before,
            "leak: allocated_bytes %llu after the case, %llu before",
            (unsigned long long)stats.allocated_bytes, (unsigned long long)allocated_before);
  enum { N = 512 };
  unsigned char host[N];
  memset(host, 0, sizeof(host));
  accel_stream_t *def = NULL;
  void *p = NULL;
  CTS_OK(accel_stream_default(ctx->dev, &def));
  CTS_OK(accel_malloc(ctx->dev, N, &p));
  accel_status_t st = accel_memset_async(def, p, 0x5D, N);
  if (st == ACCEL_OK) st = accel_memcpy(ctx->dev, host, p, N);
  if (st != ACCEL_OK) {
    cts_result_t r = cts_fail(ctx, __FILE__, __LINE__, "device unusable after the case: %s: %s",
                              accel_status_name(st), accel_last_error());
    accel_free(ctx->dev, p);
    return r;
  }
  CTS_OK(accel_free(ctx->dev, p));
  size_t bad = cts_find_not_byte(host, N, 0x5D);
  CTS_CHECK(bad == N, "device unusable after the case: round trip byte %zu is 0x%02x", bad,
            host[bad]);
  return CTS_PASS;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static cts_result_t run_case(cts_ctx_t *ctx, const cts_case_t *c, int *kernels_probe,
                             char *kernels_reason, size_t kernels_reason_size) {
  ctx->message[0] = '\0';
  const char *reason = NULL;
  if (cts_expect_find(c->name, ctx->mode, &reason) == CTS_EXPECT_UNSUPPORTED)
    return cts_skip(ctx, "unsupported on %s: %s", ctx->info.backend, reason);
  if ((c->tags & CTS_TAG_HOST_ACCESS) && !ctx->info.host_accessible)
    return cts_skip(ctx, "device memory is not host accessible");
  if (c->tags & CTS_TAG_KERNELS) {
    if (*kernels_probe < 0) *kernels_probe = kernels_available(ctx, kernels_reason, kernels_reason_size);
    if (!*kernels_probe) return cts_skip(ctx, "%s", kernels_reason);
  }

  accel_memory_stats_t before;
  accel_status_t st = accel_memory_stats(ctx->dev, &before);
  if (st != ACCEL_OK)
    return cts_fail(ctx, __FILE__, __LINE__, "accel_memory_stats before the case: %s: %s",
                    accel_status_name(st), accel_last_error());

  accel_clear_error();
  cts_result_t r = c->fn(ctx);
  cts_exec_cleanup();
  char case_message[sizeof(ctx->message)];
  memcpy(case_message, ctx->message, sizeof(case_message));
  /* A case that failed early leaks what it allocated, so only its device health is checked. */
  cts_result_t after = check_device_after(ctx, before.allocated_bytes, r != CTS_FAIL);
  if (after == CTS_FAIL && r == CTS_FAIL) {
    char after_message[sizeof(ctx->message)];
    memcpy(after_message, ctx->message, sizeof(after_message));
    snprintf(ctx->message, sizeof(ctx->message), "%.600s [then: %.400s]", case_message,
             after_message);
    return CTS_FAIL;
  }
  if (after == CTS_FAIL) return CTS_FAIL;
  memcpy(ctx->message, case_message, sizeof(case_message));
  return r;
}

static int open_device(cts_ctx_t *ctx) {
  accel_status_t st = accel_device_open(ctx->selector, &ctx->dev);
  if (st != ACCEL_OK) {
    /* Copy the message before any other accel call replaces it. */
    char reason[1024];
    snprintf(reason, sizeof(reason), "%s", accel_last_error());
    int absent = st == ACCEL_ERROR_UNAVAILABLE || st == ACCEL_ERROR_PLUGIN ||
                 (ctx->selector && is_known_backend(ctx->selector) &&
                  st == ACCEL_ERROR_INVALID_ARGUMENT);
    if (absent) {
      printf("SKIPPED: %s (%s)\n", reason[0] ? reason : "device not available",
             accel_status_name(st));
      return CTS_EXIT_SKIP;
    }
    printf("FAILED to open device '%s': %s: %s\n", ctx->selector ? ctx->selector : "(auto)",
           accel_status_name(st), reason);
    return CTS_EXIT_FAIL;
  }
  st = accel_device_get_info(ctx->dev, &ctx->info);
  if (st != ACCEL_OK) {
    printf("FAILED: accel_device_get_info: %s: %s\n", accel_status_name(st), accel_last_error());
    return CTS_EXIT_FAIL;
  }
  return 0;
}

/* The expectation file a plugin installs beside itself: libaccel-NAME.cts-expect. */
static void plugin_expect_file(const char *backend, char *out, size_t size) {
  out[0] = '\0';
  int n = accel_plugin_report_count();
  for (int i = 0; i < n; i++) {
    accel_plugin_report_t r;
    if (accel_plugin_report_get(i, &r) != ACCEL_OK || r.outcome != ACCEL_PLUGIN_LOADED ||
        strcmp(r.backend, backend) != 0)
      continue;
    size_t len = strlen(r.path);
    if (len > 3 && strcmp(r.path + len - 3, ".so") == 0 && len - 3 + 12 < size) {
      snprintf(out, size, "%.*s.cts-expect", (int)(len - 3), r.path);
      if (access(out, R_OK) != 0) out[0] = '\0';
    }
    return;
  }
}

/* Reads every expectation file; 0 after printing why not. */
static int load_expectations(const cts_options_t *o, const char *plugin_file,
                             const cts_case_t *cases, size_t ncases) {
  char err[1024];
  for (int i = 0; i <= o->nexpect; i++) {
    const char *path = i < o->nexpect ? o->expect_files[i] : plugin_file;
    if (!path || !path[0]) continue;
    if (!cts_expect_load(path, err, sizeof(err))) {
      fprintf(stderr, "accel-cts: expectation file %s\n", err);
      return 0;
    }
    printf("expectations: %s\n", path);
  }
  cts_expect_mark_cases(cases, ncases);
  const char *stale = cts_expect_unmatched();
  if (stale) {
    fprintf(stderr, "accel-cts: %s: matches no case (renamed or removed? see --list)\n", stale);
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  cts_options_t opt;
  if (!parse_args(argc, argv, &opt)) {
    usage(stderr);
    return CTS_EXIT_USAGE;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t ncases = 0;
  const cts_case_t *cases = cts_registry_cases(&ncases);
  if (cts_registry_error()) {
    fprintf(stderr, "accel-cts: %s\n", cts_registry_error());
    return CTS_EXIT_FAIL;
  }
  size_t nselected = 0;
  for (size_t i = 0; i < ncases; i++) nselected += (size_t)selected(&opt, &cases[i]);

  if (opt.list) {
    for (size_t i = 0; i < ncases; i++) {
      if (!selected(&opt, &cases[i])) continue;
      char tags[64];
      tags_string(cases[i].tags, tags, sizeof(tags));
      if (tags[0])
        printf("%s  [%s]\n", cases[i].name, tags + 1);
      else
        printf("%s\n", cases[i].name);
    }
    return 0;
  }
  if (nselected == 0) {
    fprintf(stderr, "accel-cts: no case matches filter '%s' (excluding '%s')\n",
            opt.filter ? opt.filter : "", opt.exclude ? opt.exclude : "");
    return CTS_EXIT_FAIL;
  }

  /* Lazy mode is switched on through the environment before the device exists, so that every
   * stream (the default stream included) is lazy, not only the ones cts_exec creates. */
  if (opt.mode == CTS_MODE_LAZY && setenv("ACCEL_LAZY", "1", 1) != 0) {
    perror("accel-cts: setenv ACCEL_LAZY");
    return CTS_EXIT_FAIL;
  }

  static cts_ctx_t ctx;
  ctx.mode = opt.mode;
  ctx.selector = opt.selector;
  ctx.verbose = opt.verbose;
  int rc = open_device(&ctx);
  if (rc) return rc;
  char plugin_file[1100];
  plugin_expect_file(ctx.info.backend, plugin_file, sizeof(plugin_file));
  if (!load_expectations(&opt, plugin_file, cases, ncases)) {
    accel_device_close(ctx.dev);
    cts_expect_free();
    return CTS_EXIT_USAGE;
  }
  printf("accel-cts %s: device '%s' (%s:%d), mode %s, %zu of %zu cases\n", accel_version_string(),
         ctx.info.name, ctx.info.backend, ctx.info.index, k_mode_names[opt.mode], nselected,
         ncases);

  install_signal_handlers();
  int passed = 0, failed = 0, skipped = 0, xfailed = 0, xpassed = 0;
  int kernels_probe = -1;
  char kernels_reason[1024] = "";
  for (size_t i = 0; i < ncases; i++) {
    const cts_case_t *c = &cases[i];
    if (!selected(&opt, c)) continue;
    g_running_case = c->name;
    alarm(opt.case_timeout_s);
    double t0 = now_ms();
    cts_result_t r = run_case(&ctx, c, &kernels_probe, kernels_reason, sizeof(kernels_reason));
    double ms = now_ms() - t0;
    alarm(0);
    g_running_case = NULL;
    static const char *const labels[] = {"PASS", "FAIL", "SKIP"};
    const char *xfail_reason = NULL;
    int xfail = cts_expect_find(c->name, ctx.mode, &xfail_reason) == CTS_EXPECT_XFAIL;
    if (xfail && r == CTS_PASS) {
      printf("XPASS  %s: passed, but expected to fail (%s): remove its expectation line", c->name,
             xfail_reason);
      xpassed++;
    } else if (xfail && r == CTS_FAIL) {
      printf("XFAIL  %s: %s [expected: %s]", c->name, ctx.message, xfail_reason);
      xfailed++;
    } else {
      printf("%s  %s", labels[r], c->name);
      if (ctx.message[0] && r != CTS_PASS) printf(": %s", ctx.message);
      passed += r == CTS_PASS;
      failed += r == CTS_FAIL;
      skipped += r == CTS_SKIP;
    }
    if (opt.verbose) printf("  (%.1f ms)", ms);
    printf("\n");
  }
  if (xfailed || xpassed)
    printf("%d passed, %d failed, %d skipped, %d xfail, %d xpass\n", passed, failed, skipped,
           xfailed, xpassed);
  else
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  accel_device_close(ctx.dev);
  cts_expect_free();
  return failed || xpassed ? CTS_EXIT_FAIL : 0;
}
