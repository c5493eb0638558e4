/*
 * The backend plugin search, which fills the registry (core/registry.c) once.
 *
 * Built-in backends come first, from the plugin table the build generates (plugin_table.h).
 * Then every libaccel-*.so of the plugin directories (plugin_loader.h: ACCEL_PLUGIN_PATH, the
 * installed plugin dir, the directory of libaccel) is opened by the one plugin loader
 * (core/plugin_loader.c: file, ELF and vtable header checks, shared with the collective
 * engines), checked here for what a backend needs (required slots, kernel ABI) and
 * de-duplicated by backend name; the first one found wins. A missing plugin is quiet (info
 * log); a present but broken one logs why at warn level and is skipped. Any
 * number of files is considered (no fixed table); every file considered is kept as a report
 * for accel-info, up to MAX_FAILED_REPORTS reports of files that failed before naming a
 * backend (junk), after which one summary report counts the rest. Loaded plugins are never
 * dlclose'd.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_kernel_abi_host.h"
#include "accel_kernel_ids.h"
#include "core_util.h"
#include "log.h"
#include "plugin_loader.h"
#include "plugin_table.h"
#include "registry.h"

/* Reports of files that failed before a backend name was known (junk named libaccel-*.so) are
 * kept up to this many (each is about 1.5 KiB); the rest are counted in one summary report and
 * still logged. Reports naming a backend are always kept. */
#define MAX_FAILED_REPORTS 4096

/* Written only by accel_loader_load_all (once), read-only afterwards. */
static accel_plugin_report_t *reports;
static int nreports, capreports, nanonymous, nunreported;
static char searched[2048]; /* the directories searched, for messages */

static void add_report(const char *path, const char *backend, accel_plugin_outcome_t outcome,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void add_report(const char *path, const char *backend, accel_plugin_outcome_t outcome,
                       const char *fmt, ...) {
  bool anonymous = !backend || !backend[0];
  if (anonymous && nanonymous >= MAX_FAILED_REPORTS) {
    nunreported++;
    return;
  }
  if (nreports == capreports) {
    int cap = capreports ? capreports * 2 : 64;
    accel_plugin_report_t *grown = realloc(reports, (size_t)cap * sizeof *grown);
    if (!grown) {
      nunreported++;
      return;
    }
    reports = grown;
    capreports = cap;
  }
  nanonymous += anonymous;
  accel_plugin_report_t *r = &reports[nreports++];
  memset(r, 0, sizeof *r);
  snprintf(r->path, sizeof r->path, "%s", path ? path : "");
  snprintf(r->backend, sizeof r->backend, "%s", backend ? backend : "");
  r->outcome = outcome;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->message, sizeof r->message, fmt, ap);
  va_end(ap);
}

/* Whether file (a path) is libaccel-NAME.so for backend name; '_' and '-' are the same there
 * (level_zero is libaccel-level-zero.so). */
static bool is_plugin_file_of(const char *file, const char *name) {
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  if (strncmp(base, "libaccel-", 9) != 0) return false;
  base += 9;
  size_t len = strlen(name);
  if (strlen(base) != len + 3 || strcmp(base + len, ".so") != 0) return false;
  for (size_t i = 0; i < len; ++i) {
    char a = base[i] == '_' ? '-' : base[i], b = name[i] == '_' ? '-' : name[i];
    if (a != b) return false;
  }
  return true;
}

/* The first report that says why backend name is not registered: a file refused at load that
 * named it (or, refused before naming a backend, is its libaccel-NAME.so), or a known plugin
 * not found. NULL when none. */
const accel_plugin_report_t *accel_loader_report_for(const char *name) {
  for (int r = 0; r < nreports; ++r) {
    const accel_plugin_report_t *rep = &reports[r];
    if (rep->outcome == ACCEL_PLUGIN_NOT_FOUND && strcmp(rep->backend, name) == 0) return rep;
    if (rep->outcome == ACCEL_PLUGIN_FAILED &&
        (rep->backend[0] ? strcmp(rep->backend, name) == 0 : is_plugin_file_of(rep->path, name)))
      return rep;
  }
  return NULL;
}

/* The backend's own checks of a vtable whose header passed (plugin_loader.c): the required
 * slots and the kernel ABI. NULL when acceptable, else why not. */
static const char *check_vtable(const void *header, void *ctx, char *buf, size_t len) {
  (void)ctx;
  const accel_backend_vtable_t *vt = header;
#define REQUIRE(slot)                                                     \
  if (!vt->slot) {                                                        \
    snprintf(buf, len, "required vtable slot '" #slot "' is NULL");       \
    return buf;                                                           \
  }
  REQUIRE(backend_init) REQUIRE(backend_shutdown) REQUIRE(device_count) REQUIRE(device_info)
  REQUIRE(device_open) REQUIRE(device_close) REQUIRE(mem_alloc) REQUIRE(mem_free)
  REQUIRE(host_alloc) REQUIRE(host_free) REQUIRE(stream_create) REQUIRE(stream_destroy)
  REQUIRE(stream_synchronize) REQUIRE(stream_query) REQUIRE(stream_wait_event)
  REQUIRE(event_create) REQUIRE(event_destroy) REQUIRE(event_record) REQUIRE(event_synchronize)
  REQUIRE(event_query) REQUIRE(event_elapsed_ms) REQUIRE(memcpy_async) REQUIRE(memset_async)
  REQUIRE(launch_host_func) REQUIRE(launch_kernel)
#undef REQUIRE
  /* The kernel ABI, for a plugin that runs accel's kernels (kernel_forms): ids and parameter
   * layouts are the same within one version, so only the version has to match; a plugin that
   * knows fewer kernels is launched only those (accel_plugin.h, kernel_abi_version). */
  accel_backend_vtable_t copy;
  accel_vtable_copy(&copy, vt);
  if (copy.kernel_forms && copy.kernel_abi_version != ACCEL_KERNEL_ABI_VERSION) {
    snprintf(buf, len, "plugin kernel ABI version %u%s, library kernel ABI version %u",
             copy.kernel_abi_version,
             accel_vtable_declares_kernel_abi(vt) ? "" : " (not declared: built before the handshake)",
             ACCEL_KERNEL_ABI_VERSION);
    return buf;
  }
  return NULL;
}

/* "native, host C" for a kernel_forms value (zero in an older plugin's copy: "none"). */
static void kernel_forms_text(uintptr_t forms, char *buf, size_t len) {
  static const struct { uintptr_t bit; const char *name; } names[] = {
      {ACCEL_KERNEL_FORM_NATIVE, "native"},     {ACCEL_KERNEL_FORM_OPENCL_C, "OpenCL C"},
      {ACCEL_KERNEL_FORM_SPIRV, "SPIR-V"},      {ACCEL_KERNEL_FORM_HOST_C, "host C"}};
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
    if (forms & names[i].bit)
      used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[i].name);
  if (!used) snprintf(buf, len, "none");
}

static accel_status_t backend_query(void *entry, const void **out) {
  const accel_backend_vtable_t *vt = NULL;
  accel_status_t st =
      ((accel_plugin_query_fn)entry)(ACCEL_PLUGIN_ABI_VERSION, &accel_host_api, &vt);
  *out = vt;
  return st;
}

static const accel_plugin_kind_t backend_kind = {
    .query_symbol = ACCEL_PLUGIN_QUERY_SYMBOL,
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .query = backend_query,
    .min_size = offsetof(accel_backend_vtable_t, submit_batch),
    .name_size = sizeof ((accel_backend_t *)0)->name,
    .check = check_vtable,
};

static void report_loaded(const char *path, const accel_backend_vtable_t *vt,
                          const accel_backend_t *b) {
  const accel_backend_vtable_t *copy = b->vt;
  char forms[96];
  kernel_forms_text(copy->kernel_forms, forms, sizeof forms);
  if (accel_vtable_declares_kernel_abi(vt))
    add_report(path, vt->name, ACCEL_PLUGIN_LOADED,
               "loaded (ABI %u, kernels: %s, kernel ABI %u with %u kernels)", vt->abi_version,
               forms, copy->kernel_abi_version, copy->kernel_count);
  else
    add_report(path, vt->name, ACCEL_PLUGIN_LOADED,
               "loaded (ABI %u, kernels: %s, kernel ABI not declared: taken as 1)",
               vt->abi_version, forms);
  accel_log(ACCEL_LOG_INFO, "loader", "loaded backend '%s' from %s", vt->name, path);
}

static void load_plugin(const char *path) {
  accel_plugin_file_t f;
  if (accel_plugin_open(&backend_kind, path, NULL, &f) != ACCEL_OK) {
    add_report(path, f.name, ACCEL_PLUGIN_FAILED, "%s", f.why);
    accel_log(ACCEL_LOG_WARN, "loader", "skipping plugin %s: %s", path, f.why);
    return;
  }
  const accel_backend_vtable_t *vt = f.vtable;
  const accel_backend_t *have = accel_registry_find(vt->name);
  if (have) {
    add_report(path, vt->name, ACCEL_PLUGIN_DUPLICATE, "backend '%s' is already provided by %s",
               vt->name, have->path[0] ? have->path : "libaccel");
    accel_log(ACCEL_LOG_INFO, "loader", "ignoring %s: backend '%s' already registered", path,
              vt->name);
    dlclose(f.dl);
    return;
  }
  const accel_backend_t *b = accel_registry_add(vt, path, f.dl);
  if (!b) {
    add_report(path, vt->name, ACCEL_PLUGIN_FAILED, "too many backends (max %d)",
               ACCEL_MAX_BACKENDS);
    dlclose(f.dl);
    return;
  }
  report_loaded(path, vt, b);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A growable list of strings (file names of one directory; real paths already considered). */
typedef struct {
  char **items;
  size_t n, cap;
} str_list_t;

static bool str_list_add(str_list_t *l, const char *s) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 32;
    char **grown = realloc(l->items, cap * sizeof *grown);
    if (!grown) return false;
    l->items = grown;
    l->cap = cap;
  }
  char *copy = strdup(s);
  if (!copy) return false;
  l->items[l->n++] = copy;
  return true;
}

static void str_list_free(str_list_t *l) {
  for (size_t i = 0; i < l->n; ++i) free(l->items[i]);
  free(l->items);
  *l = (str_list_t){0};
}

static bool str_list_has(const str_list_t *l, const char *s) {
  for (size_t i = 0; i < l->n; ++i)
    if (strcmp(l->items[i], s) == 0) return true;
  return false;
}

/* Loads every libaccel-*.so of dir in name order (accel_plugin_search's visit; ctx: the real
 * paths considered so far). */
static int scan_dir(const char *dir, void *ctx) {
  str_list_t *seen = ctx;
  DIR *d = opendir(dir);
  if (!d) return 0;
  str_list_t names = {0};
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "libaccel-", 9) == 0 && len > 12 &&
        strcmp(e->d_name + len - 3, ".so") == 0 && !str_list_add(&names, e->d_name)) {
      accel_log(ACCEL_LOG_WARN, "loader", "out of host memory listing %s: %s and later files "
                "not considered", dir, e->d_name);
      break;
    }
  }
  closedir(d);
  if (names.n) qsort(names.items, names.n, sizeof *names.items, cmp_str);
  for (size_t i = 0; i < names.n; ++i) {
    char path[PATH_MAX], real[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, names.items[i]) >= (int)sizeof path) {
      add_report(dir, NULL, ACCEL_PLUGIN_FAILED, "skipped %s: path longer than %d bytes",
                 names.items[i], PATH_MAX);
      continue;
    }
    if (!realpath(path, real)) snprintf(real, sizeof real, "%s", path);
    if (str_list_has(seen, real)) continue; /* the same file through another directory */
    if (!str_list_add(seen, real))
      accel_log(ACCEL_LOG_WARN, "loader", "out of host memory: %s may be considered twice", path);
    load_plugin(path);
  }
  str_list_free(&names);
  return 0;
}

void accel_loader_load_all(void) {
  for (size_t i = 0; i < accel_plugin_table.builtin_count; ++i)
    accel_registry_add(accel_plugin_table.builtin[i](), NULL, NULL);
  str_list_t seen = {0};
  accel_plugin_search(scan_dir, &seen, searched, sizeof searched);
  str_list_free(&seen);
  accel_registry_apply_visible_devices();
  if (nunreported) {
    int dropped = nunreported;
    nanonymous = 0; /* room for the summary itself */
    add_report("", NULL, ACCEL_PLUGIN_FAILED,
               "%d more file(s) failed to load and are not listed (reports are kept for the "
               "first %d such files; ACCEL_LOG=warn logs every one)",
               dropped, MAX_FAILED_REPORTS);
  }
  for (size_t i = 0; i < accel_plugin_table.known_count; ++i) {
    const char *name = accel_plugin_table.known[i].name;
    if (accel_registry_find(name) || accel_loader_report_for(name)) continue;
    char file[64];
    snprintf(file, sizeof file, "libaccel-%s.so", name);
    for (char *c = file; *c; ++c)
      if (*c == '_') *c = '-';
    add_report("", name, ACCEL_PLUGIN_NOT_FOUND, "%s not found in: %s", file, searched);
    accel_log(ACCEL_LOG_INFO, "loader", "backend '%s': %s not found in: %s", name, file,
              searched);
  }
}

int accel_plugin_report_count(void) {
  accel_registry_ensure_loaded();
  return nreports;
}

accel_status_t accel_plugin_report_get(int index, accel_plugin_report_t *out) {
  accel_registry_ensure_loaded();
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  if (index < 0 || index >= nreports)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: index %d out of range [0, %d)", __func__, index,
                           nreports);
  *out = reports[index];
  return ACCEL_OK;
}
