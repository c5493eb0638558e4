/*
 * Unit test: the plugin loader, one scenario per process (the plugin search runs once per
 * process and depends on the environment).
 *
 *   test_loader SCENARIO [PLUGIN.so]
 *
 * The test copies the given plugin (built by tests/meson.build under a name the loader would
 * never pick up by itself) into a fresh temporary directory as libaccel-<name>.so, points
 * ACCEL_PLUGIN_PATH there, and checks the loader's report, device selection by name, and that
 * the CPU device still opens whatever happened to the plugin.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "accel/accel.h"
#include "accel/accel_kernel_abi.h"
#include "accel/accel_kernels.h"
#include "check.h"
#include "accel/accel_plugin.h"


/* Files created by the test, removed at exit (a loaded plugin stays mapped after unlink). */
static char g_tmpdir[PATH_MAX];
#define MAX_CREATED 512
static char g_created[MAX_CREATED][PATH_MAX + 64];
static int g_ncreated;

static void remember(const char *path) {
  if (g_ncreated < MAX_CREATED)
    snprintf(g_created[g_ncreated++], sizeof(g_created[0]), "%s", path);
}

static void cleanup(void) {
  for (int i = g_ncreated - 1; i >= 0; i--) {
    if (unlink(g_created[i]) != 0) rmdir(g_created[i]);
  }
  if (g_tmpdir[0]) rmdir(g_tmpdir);
}

static int copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb");
  if (!in) {
    perror(from);
    return 0;
  }
  FILE *out = fopen(to, "wb");
  if (!out) {
    perror(to);
    fclose(in);
    return 0;
  }
  remember(to);
  char buf[65536];
  size_t n;
  int ok = 1;
  while ((n = fread(buf, 1, sizeof(buf), in)) > 0) ok &= fwrite(buf, 1, n, out) == n;
  ok &= !ferror(in);
  fclose(in);
  ok &= fclose(out) == 0;
  return ok;
}

static int make_dir(const char *path) {
  if (mkdir(path, 0700) != 0) {
    perror(path);
    return 0;
  }
  remember(path);
  return 1;
}

/* The report entry for a file whose path contains `needle`, or NULL. */
static int find_report(const char *needle, accel_plugin_report_t *out) {
  int n = accel_plugin_report_count();
  for (int i = 0; i < n; i++) {
    if (accel_plugin_report_get(i, out) != ACCEL_OK) continue;
    if (out->path[0] && strstr(out->path, needle)) return 1;
  }
  return 0;
}

static const char *outcome_name(accel_plugin_outcome_t o) {
  switch (o) {
    case ACCEL_PLUGIN_LOADED: return "LOADED";
    case ACCEL_PLUGIN_NOT_FOUND: return "NOT_FOUND";
    case ACCEL_PLUGIN_FAILED: return "FAILED";
    case ACCEL_PLUGIN_DUPLICATE: return "DUPLICATE";
  }
  return "?";
}

static void expect_report(const char *path, accel_plugin_outcome_t want, accel_plugin_report_t *r) {
  int found = find_report(path, r);
  CHECK(found, "no loader report for %s", path);
  if (!found) {
    memset(r, 0, sizeof(*r));
    return;
  }
  CHECK(r->outcome == want, "%s: outcome %s, want %s (%s)", path, outcome_name(r->outcome),
        outcome_name(want), r->message);
  CHECK(r->message[0] != '\0', "%s: empty report message", path);
  printf("report: %s: %s: %s\n", r->path, outcome_name(r->outcome), r->message);
}

/* Whatever happened to the plugins, the CPU device opens and works. */
static void expect_cpu_fallback(void) {
  accel_device_t *auto_dev = NULL, *cpu = NULL;
  accel_status_t st = accel_device_open(NULL, &auto_dev);
  CHECK(st == ACCEL_OK, "accel_device_open(NULL) -> %s: %s", accel_status_name(st),
        accel_last_error());
  if (st == ACCEL_OK) accel_device_close(auto_dev);
  st = accel_device_open("cpu", &cpu);
  CHECK(st == ACCEL_OK, "accel_device_open(\"cpu\") -> %s: %s", accel_status_name(st),
        accel_last_error());
  if (st != ACCEL_OK) return;
  accel_device_info_t info;
  CHECK(accel_device_get_info(cpu, &info) == ACCEL_OK && strcmp(info.backend, "cpu") == 0,
        "the cpu device reports backend '%s'", info.backend);
  void *p = NULL;
  unsigned char in[64], out[64];
  memset(in, 0x3A, sizeof(in));
  memset(out, 0, sizeof(out));
  st = accel_malloc(cpu, sizeof(in), &p);
  if (st == ACCEL_OK) st = accel_memcpy(cpu, p, in, sizeof(in));
  if (st == ACCEL_OK) st = accel_memcpy(cpu, out, p, sizeof(out));
  CHECK(st == ACCEL_OK && memcmp(in, out, sizeof(in)) == 0, "cpu round trip failed: %s",
        accel_last_error());
  if (p) accel_free(cpu, p);
  accel_device_close(cpu);
}

/* Opening a refused plugin's backend by name is ACCEL_ERROR_PLUGIN with the loader's reason in
 * the message (not "unknown backend"). */
static void expect_open_refused(const char *name, const char *reason) {
  accel_device_t *d = NULL;
  accel_status_t st = accel_device_open(name, &d);
  const char *msg = accel_last_error();
  printf("accel_device_open(\"%s\"): %s: %s\n", name, accel_status_name(st), msg);
  CHECK(st == ACCEL_ERROR_PLUGIN, "opening refused backend '%s' -> %s, want %s", name,
        accel_status_name(st), accel_status_name(ACCEL_ERROR_PLUGIN));
  CHECK(d == NULL, "output written on failure");
  CHECK(reason[0] && strstr(msg, reason) != NULL,
        "opening '%s': the message lacks the loader's reason '%s': %s", name, reason, msg);
}

/* dlerror() text for dlopen(path) (and dlsym(symbol) when symbol is not NULL). */
static void dl_error_text(const char *path, const char *symbol, char *out, size_t size) {
  out[0] = '\0';
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(out, size, "%s", dlerror());
    return;
  }
  dlerror();
  if (symbol && !dlsym(h, symbol)) snprintf(out, size, "%s", dlerror());
  dlclose(h);
}

static int has_number(const char *s, unsigned v) {
  char num[16];
  snprintf(num, sizeof(num), "%u", v);
  for (const char *p = strstr(s, num); p; p = strstr(p + 1, num)) {
    int left_ok = p == s || p[-1] < '0' || p[-1] > '9';
    char after = p[strlen(num)];
    if (left_ok && (after < '0' || after > '9')) return 1;
  }
  return 0;
}

static void scenario_valid(const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_LOADED, &r);
  CHECK(strcmp(r.backend, "fake") == 0, "report names backend '%s'", r.backend);
  accel_backend_t *b = NULL;
  CHECK(accel_backend_find("fake", &b) == ACCEL_OK, "backend 'fake' not registered: %s",
        accel_last_error());
  accel_device_t *d = NULL;
  accel_status_t st = accel_device_open("fake", &d);
  CHECK(st == ACCEL_OK, "accel_device_open(\"fake\") -> %s: %s", accel_status_name(st),
        accel_last_error());
  if (st == ACCEL_OK) {
    accel_device_info_t info;
    CHECK(accel_device_get_info(d, &info) == ACCEL_OK, "get_info: %s", accel_last_error());
    CHECK(strcmp(info.backend, "fake") == 0, "device backend '%s'", info.backend);
    void *p = NULL;
    unsigned char in[300], out[300];
    for (size_t i = 0; i < sizeof(in); i++) in[i] = (unsigned char)(i * 7);
    memset(out, 0, sizeof(out));
    accel_stream_t *s = NULL;
    st = accel_malloc(d, sizeof(in), &p);
    if (st == ACCEL_OK) st = accel_stream_create(d, &s);
    if (st == ACCEL_OK) st = accel_memcpy_async(s, p, in, sizeof(in));
    if (st == ACCEL_OK) st = accel_memset_async(s, (char *)p + 10, 0xEE, 5);
    if (st == ACCEL_OK) st = accel_memcpy_async(s, out, p, sizeof(out));
    if (st == ACCEL_OK) st = accel_stream_synchronize(s);
    CHECK(st == ACCEL_OK, "work on the fake device: %s: %s", accel_status_name(st),
          accel_last_error());
    memset(in + 10, 0xEE, 5);
    CHECK(memcmp(in, out, sizeof(in)) == 0, "wrong data through the fake device");
    if (s) accel_stream_destroy(s);
    if (p) accel_free(d, p);
    accel_device_close(d);
  }
}

static void scenario_wrong_abi(const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_FAILED, &r);
  CHECK(has_number(r.message, 4242), "message does not name the plugin's ABI 4242: %s",
        r.message);
  CHECK(has_number(r.message, ACCEL_PLUGIN_ABI_VERSION),
        "message does not name the host ABI %u: %s", ACCEL_PLUGIN_ABI_VERSION, r.message);
  expect_open_refused("fake", r.message);
}

static void scenario_no_entry(const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_FAILED, &r);
  char dlerr[1024];
  dl_error_text(plugin, ACCEL_PLUGIN_QUERY_SYMBOL, dlerr, sizeof(dlerr));
  CHECK(dlerr[0] != '\0', "dlsym unexpectedly found %s", ACCEL_PLUGIN_QUERY_SYMBOL);
  CHECK(strstr(r.message, ACCEL_PLUGIN_QUERY_SYMBOL) != NULL, "message does not name %s: %s",
        ACCEL_PLUGIN_QUERY_SYMBOL, r.message);
  CHECK(strstr(r.message, dlerr) != NULL, "message lacks the dlerror text '%s': %s", dlerr,
        r.message);
  expect_open_refused("fake", r.message); /* named by its file: libaccel-fake.so */
}

static void scenario_not_elf(const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_FAILED, &r);
  char dlerr[1024];
  dl_error_text(plugin, NULL, dlerr, sizeof(dlerr));
  CHECK(dlerr[0] != '\0', "a text file dlopen'ed");
  CHECK(strstr(r.message, dlerr) != NULL, "message lacks the dlerror text '%s': %s", dlerr,
        r.message);
  expect_open_refused("bogus", r.message); /* libaccel-bogus.so */
}

static void scenario_query_fails(const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_FAILED, &r);
  CHECK(strstr(r.message, "refusing to load") != NULL,
        "message lacks the plugin's own error message: %s", r.message);
  CHECK(strstr(r.message, accel_status_name(ACCEL_ERROR_PLUGIN)) != NULL,
        "message lacks the status the query returned: %s", r.message);
  expect_open_refused("fake", r.message);
}

static void scenario_null_slots(const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_FAILED, &r);
  CHECK(strstr(r.message, "mem_alloc") || strstr(r.message, "stream_create"),
        "message does not name a missing slot: %s", r.message);
  expect_open_refused("fake", r.message);
}

static void scenario_duplicate(const char *first, const char *second) {
  accel_plugin_report_t r;
  expect_report(first, ACCEL_PLUGIN_LOADED, &r);
  expect_report(second, ACCEL_PLUGIN_DUPLICATE, &r);
  CHECK(strcmp(r.backend, "fake") == 0, "duplicate report names backend '%s'", r.backend);
  accel_device_t *d = NULL;
  CHECK(accel_device_open("fake", &d) == ACCEL_OK, "the first 'fake' plugin does not open: %s",
        accel_last_error());
  if (d) accel_device_close(d);
}

static void scenario_duplicate_builtin(const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_DUPLICATE, &r);
  CHECK(strcmp(r.backend, "cpu") == 0, "report names backend '%s'", r.backend);
}

/* struct_size 4 bytes short of the vtable: not a whole number of slots (issue 16). */
static void scenario_odd_struct_size(const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_FAILED, &r);
  CHECK(strstr(r.message, "struct_size") != NULL, "message does not name struct_size: %s",
        r.message);
  CHECK(has_number(r.message, (unsigned)(sizeof(accel_backend_vtable_t) - 4)),
        "message does not give the plugin's struct_size %zu: %s",
        sizeof(accel_backend_vtable_t) - 4, r.message);
  accel_backend_t *b = NULL;
  accel_status_t st = accel_backend_find("fake", &b);
  CHECK(st != ACCEL_OK, "a vtable with struct_size %zu was registered",
        sizeof(accel_backend_vtable_t) - 4);
  expect_open_refused("fake", r.message);
}

/* The plugin loads, but backend_init reports an impossible device count (issue 16). */
static void scenario_bad_count(const char *plugin, int reported) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_LOADED, &r);
  accel_backend_t *b = NULL;
  accel_status_t st = accel_backend_find("fake", &b);
  CHECK(st == ACCEL_OK, "backend 'fake' not registered: %s", accel_last_error());
  if (st != ACCEL_OK) return;
  int n = 12345;
  st = accel_device_count(b, &n);
  const char *msg = accel_last_error();
  printf("accel_device_count: %s: %s\n", accel_status_name(st), msg);
  CHECK(st == ACCEL_ERROR_PLUGIN, "accel_device_count -> %s, want PLUGIN_ERROR (%s)",
        accel_status_name(st), msg);
  CHECK(n == 0, "device count %d, want 0", n);
  CHECK(strstr(msg, "device count") != NULL, "message does not say 'device count': %s", msg);
  char num[16];
  snprintf(num, sizeof(num), "%d", reported);
  CHECK(strstr(msg, num) != NULL, "message does not give the reported count %s: %s", num, msg);
  const char *reason = NULL;
  st = accel_backend_status(b, &reason);
  CHECK(st == ACCEL_ERROR_PLUGIN && reason && strstr(reason, "device count"),
        "accel_backend_status -> %s (%s)", accel_status_name(st), reason ? reason : "(null)");
  expect_open_refused("fake", "device count");
}

/* Creates `path` holding text ("junk" for the loader); 0 on failure. */
static int make_text_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 0;
  }
  remember(path);
  fputs(text, f);
  return fclose(f) == 0;
}

/* A FIFO named like a plugin ahead of a real one: skipped without blocking (issue 16). */
static void scenario_fifo(const char *fifo, const char *plugin) {
  accel_plugin_report_t r;
  expect_report(fifo, ACCEL_PLUGIN_FAILED, &r);
  CHECK(strstr(r.message, "not a regular file") != NULL, "FIFO report: %s", r.message);
  expect_report(plugin, ACCEL_PLUGIN_LOADED, &r);
  accel_device_t *d = NULL;
  CHECK(accel_device_open("fake", &d) == ACCEL_OK, "the plugin after the FIFO: %s",
        accel_last_error());
  if (d) accel_device_close(d);
}

#define NJUNK 300

/* NJUNK junk files in the first directory, the plugin in the second: every junk file is
 * reported as failed and the plugin still loads (issue 16: a 64-entry table hid it). */
static void scenario_many_junk(const char *dir, const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_LOADED, &r);
  int junk_reports = 0;
  for (int i = 0; i < accel_plugin_report_count(); i++)
    if (accel_plugin_report_get(i, &r) == ACCEL_OK && strstr(r.path, dir) &&
        strstr(r.path, "libaccel-junk") && r.outcome == ACCEL_PLUGIN_FAILED && r.message[0])
      junk_reports++;
  CHECK(junk_reports == NJUNK, "%d junk files reported as failed, want %d", junk_reports, NJUNK);
  accel_device_t *d = NULL;
  CHECK(accel_device_open("fake", &d) == ACCEL_OK, "the plugin after %d junk files: %s", NJUNK,
        accel_last_error());
  if (d) accel_device_close(d);
}

/* The vendor variables ACCEL_VISIBLE_DEVICES maps to (each plugin names its own). */
static const char *const k_vendor_vars[] = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                            "ZE_AFFINITY_MASK"};

/* ACCEL_VISIBLE_DEVICES=1 with a plugin registered as 'cuda' (the fake one): core sets
 * CUDA_VISIBLE_DEVICES once, while loading the registry, before any backend_init; an explicit
 * HIP_VISIBLE_DEVICES is left alone. */
static void scenario_visible_map(void) {
  setenv("ACCEL_VISIBLE_DEVICES", "1", 1);
  unsetenv("CUDA_VISIBLE_DEVICES");
  setenv("HIP_VISIBLE_DEVICES", "0", 1);
  CHECK(accel_backend_count() >= 2, "fewer than two backends registered");
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  CHECK(v && strcmp(v, "1") == 0, "after loading the registry CUDA_VISIBLE_DEVICES=%s, want 1",
        v ? v : "(unset)");
  v = getenv("HIP_VISIBLE_DEVICES");
  CHECK(v && strcmp(v, "0") == 0, "HIP_VISIBLE_DEVICES=%s, the explicit 0 must win",
        v ? v : "(unset)");
  accel_backend_t *b = NULL;
  int n = 0;
  CHECK(accel_backend_find("cuda", &b) == ACCEL_OK && accel_device_count(b, &n) == ACCEL_OK &&
            n == 1,
        "the fake 'cuda' backend: %s", accel_last_error());
}

/* ACCEL_VISIBLE_DEVICES="" means unset, as every other accel variable: no vendor variable is
 * set, so no GPU is hidden. Every backend is initialised (a real GPU plugin without its runtime
 * reports UNAVAILABLE) before the environment is checked. */
static void scenario_visible_empty(void) {
  setenv("ACCEL_VISIBLE_DEVICES", "", 1);
  for (size_t i = 0; i < sizeof(k_vendor_vars) / sizeof(k_vendor_vars[0]); i++)
    unsetenv(k_vendor_vars[i]);
  int nb = accel_backend_count();
  for (int i = 0; i < nb; i++) {
    accel_backend_t *b = NULL;
    int n = -1;
    if (accel_backend_get(i, &b) != ACCEL_OK) continue;
    accel_status_t st = accel_device_count(b, &n);
    printf("backend %s: %s, %d device(s)%s%s\n", accel_backend_name(b), accel_status_name(st), n,
           st == ACCEL_OK ? "" : ": ", st == ACCEL_OK ? "" : accel_last_error());
    CHECK(st == ACCEL_OK || st == ACCEL_ERROR_UNAVAILABLE, "backend %s: %s: %s",
          accel_backend_name(b), accel_status_name(st), accel_last_error());
  }
  for (size_t i = 0; i < sizeof(k_vendor_vars) / sizeof(k_vendor_vars[0]); i++) {
    const char *v = getenv(k_vendor_vars[i]);
    CHECK(v == NULL, "ACCEL_VISIBLE_DEVICES=\"\" set %s=\"%s\" (hides every device)",
          k_vendor_vars[i], v);
  }
}

/* Ranking: a GPU-type plugin device is chosen by accel_device_open(NULL) ahead of the built-in
 * CPU backend; a CPU-type one is ranked after it and not chosen. */
static void scenario_rank(int gpu) {
  accel_device_t *d = NULL;
  accel_status_t st = accel_device_open(NULL, &d);
  CHECK(st == ACCEL_OK, "accel_device_open(NULL) -> %s: %s", accel_status_name(st),
        accel_last_error());
  if (st == ACCEL_OK) {
    accel_device_info_t info;
    CHECK(accel_device_get_info(d, &info) == ACCEL_OK, "get_info: %s", accel_last_error());
    CHECK(strcmp(info.backend, gpu ? "fake" : "cpu") == 0,
          "accel_device_open(NULL) chose '%s', want '%s'", info.backend, gpu ? "fake" : "cpu");
    accel_device_close(d);
  }
  accel_device_rank_t ranks[16];
  int n = 0;
  st = accel_device_ranking(ranks, 16, &n);
  CHECK(st == ACCEL_OK && n >= 2, "accel_device_ranking -> %s, %d entries", accel_status_name(st),
        n);
  int fake_at = -1, cpu_at = -1;
  for (int i = 0; i < n && i < 16; ++i) {
    printf("rank %d: %s:%d %s (%s)\n", i + 1, ranks[i].backend, ranks[i].index, ranks[i].name,
           ranks[i].reason);
    if (strcmp(ranks[i].backend, "fake") == 0) fake_at = i;
    if (strcmp(ranks[i].backend, "cpu") == 0) cpu_at = i;
  }
  CHECK(fake_at >= 0 && cpu_at >= 0 && (fake_at < cpu_at) == gpu,
        "ranking: fake at %d, cpu at %d", fake_at, cpu_at);
  CHECK(fake_at >= 0 && strstr(ranks[fake_at].reason, gpu ? "GPU-type" : "CPU-type"),
        "the fake device's reason does not name its type");
  CHECK(accel_device_ranking(NULL, 0, &n) == ACCEL_OK && n >= 2, "count-only ranking");
  CHECK(accel_device_ranking(NULL, 1, &n) == ACCEL_ERROR_INVALID_ARGUMENT &&
            strstr(accel_last_error(), "accel_device_ranking"),
        "NULL out with capacity 1 accepted");
}

/* host->run_kernel_c: the fake plugin built with FAKE_HOST_KERNELS runs accel's kernels through
 * it (after checking that malformed launches are refused); a fill and an L1 norm come out as
 * computed here. */
static void scenario_host_kernels(void) {
  enum { N = 1000 };
  accel_device_t *d = NULL;
  accel_stream_t *s = NULL;
  float *x = NULL, *norm = NULL, host[N], got = -1.0f;
  accel_status_t st = accel_device_open("fake", &d);
  if (st == ACCEL_OK) st = accel_stream_create(d, &s);
  if (st == ACCEL_OK) st = accel_malloc(d, N * sizeof(float), (void **)&x);
  if (st == ACCEL_OK) st = accel_malloc(d, sizeof(float), (void **)&norm);
  accel_tensor_t t = {x, N, ACCEL_F32};
  if (st == ACCEL_OK) st = accel_fill(s, &t, 1, -0.5f);
  if (st == ACCEL_OK) st = accel_multi_tensor_norm(s, &t, 1, 1.0f, norm);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, host, x, sizeof(host));
  if (st == ACCEL_OK) st = accel_memcpy_async(s, &got, norm, sizeof(got));
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  CHECK(st == ACCEL_OK, "kernels on the fake device: %s: %s", accel_status_name(st),
        accel_last_error());
  int filled = 1;
  for (int i = 0; i < N; i++) filled &= host[i] == -0.5f;
  CHECK(st != ACCEL_OK || (filled && got == 0.5f * N), "fill/norm results: norm %g, want %g",
        (double)got, 0.5 * N);
  printf("kernels through run_kernel_c: L1 norm %g (want %g)\n", (double)got, 0.5 * N);
  if (norm) accel_free(d, norm);
  if (x) accel_free(d, x);
  if (s) accel_stream_destroy(s);
  if (d) accel_device_close(d);
}

/* A plugin that runs accel's kernels, built with kernel ABI version 4243: refused at load with
 * both versions in the message; opening it is PLUGIN with that reason. */
static void scenario_kernel_abi_other(const char *plugin) {
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_FAILED, &r);
  CHECK(strstr(r.message, "kernel ABI") != NULL, "message does not say 'kernel ABI': %s",
        r.message);
  CHECK(has_number(r.message, 4243), "message does not name the plugin's kernel ABI 4243: %s",
        r.message);
  CHECK(has_number(r.message, ACCEL_KERNEL_ABI_VERSION),
        "message does not name the library's kernel ABI %u: %s", ACCEL_KERNEL_ABI_VERSION,
        r.message);
  expect_open_refused("fake", r.message);
}

/* The same mismatch in a plugin that runs none of accel's kernels (kernel_forms 0): the kernel
 * ABI does not concern it, so it loads and works; the report shows what it declared. */
static void scenario_kernel_abi_other_no_kernels(const char *plugin) {
  scenario_valid(plugin);
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_LOADED, &r);
  CHECK(has_number(r.message, 4243), "report does not show the declared kernel ABI 4243: %s",
        r.message);
}

/* A plugin built before the handshake (struct_size ends before kernel_abi_version) was built
 * with version 1, the only one there was: it loads and runs the kernels while this libaccel
 * is at version 1, and is refused naming both versions once it is not. */
static void scenario_kernel_abi_undeclared(const char *plugin) {
  accel_plugin_report_t r;
  if (ACCEL_KERNEL_ABI_VERSION != 1u) {
    expect_report(plugin, ACCEL_PLUGIN_FAILED, &r);
    CHECK(strstr(r.message, "not declared") && has_number(r.message, 1) &&
              has_number(r.message, ACCEL_KERNEL_ABI_VERSION),
          "refusal of an undeclared kernel ABI: %s", r.message);
    return;
  }
  expect_report(plugin, ACCEL_PLUGIN_LOADED, &r);
  CHECK(strstr(r.message, "not declared") != NULL, "report does not say 'not declared': %s",
        r.message);
  scenario_host_kernels();
}

/* A plugin built before accel_cast's row existed (kernel_count = ACCEL_KERNEL_ID_CAST): it
 * loads and runs the kernels it knows; accel_cast is answered UNSUPPORTED by the core, naming
 * the kernel and the plugin's count, without reaching the plugin. */
static void scenario_kernel_count_older(const char *plugin) {
  enum { N = 300 };
  accel_plugin_report_t r;
  expect_report(plugin, ACCEL_PLUGIN_LOADED, &r);
  CHECK(has_number(r.message, ACCEL_KERNEL_ID_CAST), "report does not show %u kernels: %s",
        ACCEL_KERNEL_ID_CAST, r.message);
  accel_device_t *d = NULL;
  accel_stream_t *s = NULL;
  float *a = NULL, *b = NULL, host[N];
  accel_status_t st = accel_device_open("fake", &d);
  if (st == ACCEL_OK) st = accel_stream_create(d, &s);
  if (st == ACCEL_OK) st = accel_malloc(d, N * sizeof(float), (void **)&a);
  if (st == ACCEL_OK) st = accel_malloc(d, N * sizeof(float), (void **)&b);
  accel_tensor_t ta = {a, N, ACCEL_F32}, tb = {b, N, ACCEL_F32};
  if (st == ACCEL_OK) st = accel_fill(s, &ta, 1, 2.5f);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, host, a, sizeof(host));
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  CHECK(st == ACCEL_OK && host[0] == 2.5f && host[N - 1] == 2.5f,
        "accel_fill on a plugin that knows it: %s: %s", accel_status_name(st),
        accel_last_error());
  if (st == ACCEL_OK) {
    st = accel_cast(s, &ta, &tb, 1, NULL);
    const char *msg = accel_last_error();
    printf("accel_cast: %s: %s\n", accel_status_name(st), msg);
    CHECK(st == ACCEL_ERROR_UNSUPPORTED, "accel_cast on a plugin without it -> %s, want %s",
          accel_status_name(st), accel_status_name(ACCEL_ERROR_UNSUPPORTED));
    CHECK(strstr(msg, "accel_k_cast") && has_number(msg, ACCEL_KERNEL_ID_CAST),
          "message does not name the kernel and the plugin's count: %s", msg);
  }
  if (b) accel_free(d, b);
  if (a) accel_free(d, a);
  if (s) accel_stream_destroy(s);
  if (d) accel_device_close(d);
}

/* Counts the lines of a file (0 when absent). */
static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  int n = 0;
  if (!f) return 0;
  for (int c; (c = fgetc(f)) != EOF;) n += c == '\n';
  fclose(f);
  return n;
}

/* backend_shutdown runs exactly once at process exit, after every device is closed, and not at
 * all while a device is still open. Each case runs in a child process that exits normally. */
static void scenario_shutdown(void) {
  for (int leave_open = 0; leave_open <= 1; ++leave_open) {
    char log[PATH_MAX + 32];
    snprintf(log, sizeof(log), "%s/shutdown-%d.log", g_tmpdir, leave_open);
    remember(log);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      g_ncreated = 0; /* the parent removes the files */
      g_tmpdir[0] = '\0';
      setenv("FAKE_SHUTDOWN_LOG", log, 1);
      accel_device_t *d = NULL, *d2 = NULL;
      int ok = accel_device_open("fake", &d) == ACCEL_OK &&
               accel_device_open("fake", &d2) == ACCEL_OK; /* two references, one device */
      if (ok) accel_device_close(d2);
      if (ok && !leave_open) accel_device_close(d);
      exit(ok && count_lines(log) == 0 ? 0 : 3); /* nothing before exit */
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/waitpid failed");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "child (device %s) failed or shut down early (status %d)",
          leave_open ? "left open" : "closed", status);
    int lines = count_lines(log);
    CHECK(lines == (leave_open ? 0 : 1), "backend_shutdown ran %d time(s) with the device %s",
          lines, leave_open ? "left open (want 0)" : "closed (want 1)");
    printf("backend_shutdown at exit, device %s: %d call(s)\n",
           leave_open ? "left open" : "closed", lines);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: test_loader valid|wrong_abi|no_entry|query_fails|null_slots|duplicate|"
            "duplicate_builtin|odd_struct_size|negative_count|huge_count|fifo|many_junk|"
            "visible_map|visible_empty|rank_gpu|rank_cpu|shutdown|host_kernels|"
            "kernel_abi_other|kernel_abi_other_no_kernels|kernel_abi_undeclared|"
            "kernel_count_older PLUGIN.so\n       test_loader not_elf\n");
    return 2;
  }
  const char *scenario = argv[1];
  const char *plugin = argc > 2 ? argv[2] : NULL;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_tmpdir, sizeof(g_tmpdir), "%s/accel-loader-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(g_tmpdir)) {
    perror("mkdtemp");
    g_tmpdir[0] = '\0';
    return 1;
  }
  atexit(cleanup);

  char a[PATH_MAX + 8], b[PATH_MAX + 8], path_env[2 * PATH_MAX + 32];
  snprintf(a, sizeof(a), "%s/a", g_tmpdir);
  snprintf(b, sizeof(b), "%s/b", g_tmpdir);
  char first[PATH_MAX + 64], second[PATH_MAX + 64];
  snprintf(first, sizeof(first), "%s/libaccel-fake.so", a);
  snprintf(second, sizeof(second), "%s/libaccel-fake.so", b);
  if (!make_dir(a) || !make_dir(b)) return 1;
  snprintf(path_env, sizeof(path_env), "%s:%s", a, b);

  int is_not_elf = strcmp(scenario, "not_elf") == 0;
  if (!is_not_elf && !plugin) {
    fprintf(stderr, "test_loader %s: missing PLUGIN.so argument\n", scenario);
    return 2;
  }
  if (is_not_elf) {
    snprintf(first, sizeof(first), "%s/libaccel-bogus.so", a);
    if (!make_text_file(first, "this is a text file, not a shared object\n")) return 1;
  } else if (strcmp(scenario, "fifo") == 0 || strcmp(scenario, "many_junk") == 0) {
    /* the odd files in a, the plugin in b */
    if (!copy_file(plugin, second)) return 1;
    if (strcmp(scenario, "fifo") == 0) {
      snprintf(first, sizeof(first), "%s/libaccel-fifo.so", a);
      if (mkfifo(first, 0600) != 0) {
        perror(first);
        return 1;
      }
      remember(first);
      alarm(20); /* a loader that opens the FIFO blocks forever: fail instead */
    } else {
      for (int i = 0; i < NJUNK; i++) {
        snprintf(first, sizeof(first), "%s/libaccel-junk%03d.so", a, i);
        if (!make_text_file(first, "not a plugin\n")) return 1;
      }
    }
  } else {
    if (!copy_file(plugin, first)) return 1;
    if (strcmp(scenario, "duplicate") == 0 && !copy_file(plugin, second)) return 1;
  }
  /* Before the first accel call: the plugin search reads it once. */
  setenv("ACCEL_PLUGIN_PATH", path_env, 1);
  unsetenv("ACCEL_BACKEND");

  if (strcmp(scenario, "valid") == 0) scenario_valid(first);
  else if (strcmp(scenario, "wrong_abi") == 0) scenario_wrong_abi(first);
  else if (strcmp(scenario, "no_entry") == 0) scenario_no_entry(first);
  else if (is_not_elf) scenario_not_elf(first);
  else if (strcmp(scenario, "query_fails") == 0) scenario_query_fails(first);
  else if (strcmp(scenario, "null_slots") == 0) scenario_null_slots(first);
  else if (strcmp(scenario, "duplicate") == 0) scenario_duplicate(first, second);
  else if (strcmp(scenario, "duplicate_builtin") == 0) scenario_duplicate_builtin(first);
  else if (strcmp(scenario, "odd_struct_size") == 0) scenario_odd_struct_size(first);
  else if (strcmp(scenario, "negative_count") == 0) scenario_bad_count(first, -3);
  else if (strcmp(scenario, "huge_count") == 0) scenario_bad_count(first, 1000000);
  else if (strcmp(scenario, "fifo") == 0) scenario_fifo(first, second);
  else if (strcmp(scenario, "many_junk") == 0) scenario_many_junk(a, second);
  else if (strcmp(scenario, "visible_map") == 0) scenario_visible_map();
  else if (strcmp(scenario, "visible_empty") == 0) scenario_visible_empty();
  else if (strcmp(scenario, "rank_gpu") == 0) scenario_rank(1);
  else if (strcmp(scenario, "rank_cpu") == 0) scenario_rank(0);
  else if (strcmp(scenario, "shutdown") == 0) scenario_shutdown();
  else if (strcmp(scenario, "host_kernels") == 0) scenario_host_kernels();
  else if (strcmp(scenario, "kernel_abi_other") == 0) scenario_kernel_abi_other(first);
  else if (strcmp(scenario, "kernel_abi_other_no_kernels") == 0)
    scenario_kernel_abi_other_no_kernels(first);
  else if (strcmp(scenario, "kernel_abi_undeclared") == 0) scenario_kernel_abi_undeclared(first);
  else if (strcmp(scenario, "kernel_count_older") == 0) scenario_kernel_count_older(first);
  else {
    fprintf(stderr, "test_loader: unknown scenario '%s'\n", scenario);
    return 2;
  }
  expect_cpu_fallback();
  return CHECK_EXIT("test_loader %s", scenario);
}
