/*
 * User kernels on the CPU (cpu_module.h). A build writes one C file: the embedded prelude, the
 * rows' parameter structs, `#define ACCEL_KERNEL(...)` (the rows are the core's), the user's
 * source under `#line 1 "<module>"` (the compiler's messages give the user's lines) and one
 * exported pointer per kernel. ACCEL_CC (default cc; split at spaces, so "ccache gcc" works)
 * compiles it, with the module's options, into <cache>/module-cpu-<key>.so, renamed into place
 * when complete; a later build with the same key only loads that file. The object stays
 * loaded for the life of the process, so a graph that outlives the module keeps running.
 */
#include "cpu_module.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel_cpu_module_prelude.h"
#include "cpu_device.h"
#include "module_bundle.h"
#include "module_text.h"
#include "tool_run.h"

/* ---------------------------------------------------------------------------------------------
 * Launch ids of user kernels -> functions
 * ------------------------------------------------------------------------------------------- */

/* Every launch resolves its id, so reading takes no lock: the functions sit in pages of
 * USER_PAGE that never move once published, under a directory that a growth replaces; a
 * replaced directory stays allocated (a reader may still hold it), linked from the new one.
 * Binding (a module build) takes user_lock. */
#define USER_PAGE 1024u

typedef struct user_dir {
  struct user_dir *retired; /* the directory this one replaced */
  size_t npages;
  accel_cpu_kernel_fn *pages[]; /* NULL: none bound there yet */
} user_dir_t;

static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;
static user_dir_t *user_dir; /* published with release, read with acquire */

/* The directory (user_lock held) with room for page p: d itself or its replacement; NULL
 * without memory. */
static user_dir_t *dir_with_page(user_dir_t *d, size_t p) {
  if (d && p < d->npages) return d;
  size_t n = d ? d->npages * 2 : 16;
  while (n <= p) n *= 2;
  user_dir_t *g = calloc(1, sizeof *g + n * sizeof g->pages[0]);
  if (!g) return NULL;
  g->retired = d;
  g->npages = n;
  for (size_t i = 0; d && i < d->npages; ++i) g->pages[i] = d->pages[i];
  __atomic_store_n(&user_dir, g, __ATOMIC_RELEASE);
  return g;
}

static int user_bind(uint32_t id, accel_cpu_kernel_fn fn) {
  const size_t k = id - ACCEL_KERNEL_ID_USER_BASE, p = k / USER_PAGE;
  pthread_mutex_lock(&user_lock);
  user_dir_t *d = dir_with_page(user_dir, p);
  accel_cpu_kernel_fn *page = d ? d->pages[p] : NULL;
  if (d && !page) {
    page = calloc(USER_PAGE, sizeof *page);
    if (page) __atomic_store_n(&d->pages[p], page, __ATOMIC_RELEASE);
  }
  if (page) __atomic_store_n(&page[k % USER_PAGE], fn, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&user_lock);
  return page != NULL;
}

accel_cpu_kernel_fn cpu_kernel_resolve(uint32_t id) {
  if (id < ACCEL_KERNEL_ID_USER_BASE) return accel_cpu_kernel_lookup(id);
  const size_t k = id - ACCEL_KERNEL_ID_USER_BASE, p = k / USER_PAGE;
  const user_dir_t *d = __atomic_load_n(&user_dir, __ATOMIC_ACQUIRE);
  accel_cpu_kernel_fn *page =
      d && p < d->npages ? __atomic_load_n(&d->pages[p], __ATOMIC_ACQUIRE) : NULL;
  return page ? __atomic_load_n(&page[k % USER_PAGE], __ATOMIC_ACQUIRE) : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Compiling
 * ------------------------------------------------------------------------------------------- */

typedef struct cpu_build {
  const accel_host_api_t *host;
  const accel_module_build_t *b;
  char dir[1024]; /* the cache, or a private temporary directory */
  int temporary;
  char so[1100];
} cpu_build_t;

/* FNV-1a of s continuing from key. */
static uint64_t fold(uint64_t key, const char *s) {
  for (; *s; ++s) key = (key ^ (uint8_t)*s) * 0x100000001b3ull;
  return key;
}

/* What an object's parameter structs were: the hash of the rows' generated structs. */
static uint64_t params_hash(const accel_module_build_t *b) {
  return fold(0xcbf29ce484222325ull, b->params);
}

/* After the source: one exported pointer per kernel (load_object finds them) and the hash of
 * the parameter structs (a bundle's object must match the rows this accel reads). */
static void exports(FILE *f, const accel_module_build_t *b) {
  fprintf(f, "#line 1 \"<exports>\"\n");
  fprintf(f, "__attribute__((visibility(\"default\"))) const unsigned long long "
             "accel_module_params_hash = %lluull;\n", (unsigned long long)params_hash(b));
  for (uint32_t k = 0; k < b->nkernels; ++k)
    fprintf(f, "__attribute__((visibility(\"default\"))) void (*const accel_module_kernel_%u)"
               "(const void *, acc_u32, acc_u32) = %s;\n", k, b->symbols[k]);
}

/* argv of "$ACCEL_CC -O2 ... options -o out in" (words split at spaces; free argv[0]'s
 * buffer, *buf). */
static char **compile_argv(const char *options, const char *out, const char *in, char **buf) {
  const char *cc = getenv("ACCEL_CC");
  static const char fixed[] = "-std=gnu11 -O2 -fPIC -shared -fno-math-errno -ffp-contract=off "
                              "-Werror=implicit-function-declaration";
  const size_t len = strlen(cc && *cc ? cc : "cc") + strlen(options) + sizeof fixed + 3;
  *buf = malloc(len);
  char **argv = calloc(len / 2 + 6, sizeof *argv);
  if (!*buf || !argv) {
    free(argv);
    return NULL;
  }
  snprintf(*buf, len, "%s %s %s", cc && *cc ? cc : "cc", fixed, options);
  size_t n = 0;
  char *save = NULL;
  for (char *w = strtok_r(*buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
    argv[n++] = w;
  argv[n++] = "-o";
  argv[n++] = (char *)out;
  argv[n++] = (char *)in;
  return argv;
}

/* Runs the compiler on in (the unit) into out, its messages into logpath. */
static accel_status_t run_compiler(cpu_build_t *cb, const char *in, const char *out,
                                   const char *logpath) {
  char *buf = NULL;
  char **argv = compile_argv(cb->b->options, out, in, &buf);
  if (!argv) return cb->host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "cpu: module_build: no memory");
  accel_status_t st = accel_tool_run(cb->host, "cpu",
                                     "no C compiler to build the module (ACCEL_CC)", argv, logpath);
  free(argv);
  free(buf);
  return st;
}

/* Compiles the unit into cb->so (a temporary name renamed into place). */
static accel_status_t compile_unit(cpu_build_t *cb) {
  if (cb->host->fault_should_fail(ACCEL_FAULT_KERNEL_BUILD))
    return cb->host->set_error(ACCEL_ERROR_BACKEND,
                               "cpu: module_build: injected fault (ACCEL_FAULT_KERNEL_BUILD)");
  char in[1100], tmp[1100], logpath[1100];
  snprintf(in, sizeof in, "%s/.module-%ld-XXXXXX.c", cb->dir, (long)getpid());
  const int fd = mkstemps(in, 2);
  if (fd < 0)
    return cb->host->set_error(ACCEL_ERROR_BACKEND, "cpu: module_build: cannot create %s: %s",
                               in, strerror(errno));
  char *text = accel_module_text((const char *)accel_cpu_module_prelude, cb->b, exports);
  const size_t len = text ? strlen(text) : 0;
  const int wrote = text && write(fd, text, len) == (ssize_t)len;
  close(fd);
  free(text);
  snprintf(tmp, sizeof tmp, "%.*s.so", (int)(strlen(in) - 2), in);
  snprintf(logpath, sizeof logpath, "%.*s.log", (int)(strlen(in) - 2), in);
  accel_status_t st = wrote ? run_compiler(cb, in, tmp, logpath)
                            : cb->host->set_error(ACCEL_ERROR_BACKEND,
                                                  "cpu: module_build: cannot write %s", in);
  if (st == ACCEL_OK && rename(tmp, cb->so) != 0)
    st = cb->host->set_error(ACCEL_ERROR_BACKEND, "cpu: module_build: rename to %s: %s", cb->so,
                             strerror(errno));
  unlink(in);
  unlink(logpath);
  if (st != ACCEL_OK) unlink(tmp);
  return st;
}

/* Loads cb->so and binds its kernels to their launch ids. */
static accel_status_t load_object(cpu_build_t *cb) {
  void *h = dlopen(cb->so, RTLD_NOW | RTLD_LOCAL);
  if (!h) return cb->host->set_error(ACCEL_ERROR_BACKEND, "cpu: module_build: %s", dlerror());
  const unsigned long long *hash = dlsym(h, "accel_module_params_hash");
  if (!hash || *hash != params_hash(cb->b)) {
    dlclose(h);
    return cb->host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "cpu: module_build: %s was built for other parameter structs than "
                               "this accel makes of its rows (rebuild the bundle with this "
                               "accel's accel-kc)", cb->so);
  }
  for (uint32_t k = 0; k < cb->b->nkernels; ++k) {
    char name[64];
    snprintf(name, sizeof name, "accel_module_kernel_%u", k);
    accel_cpu_kernel_fn const *fn = dlsym(h, name);
    if (!fn || !user_bind(cb->b->first_id + k, *fn))
      return cb->host->set_error(ACCEL_ERROR_BACKEND, "cpu: module_build: %s: no %s (%s)",
                                 cb->so, name, cb->b->symbols[k]);
  }
  return ACCEL_OK; /* h stays open: the functions live as long as the process */
}

/* A bundle's shared object for this machine into cb->so (named by its checksum; written to a
 * temporary name renamed into place unless there): no compiler runs. */
static accel_status_t write_form(cpu_build_t *cb) {
  const accel_module_build_t *b = cb->b;
  const accel_module_form_t *form =
      accel_bundle_find_form(b->forms, b->nforms, ACCEL_MODULE_FORM_CPU_SO, ACCEL_BUNDLE_CPU_TARGET);
  if (!form) {
    char list[512];
    accel_bundle_list_forms(b->forms, b->nforms, list, sizeof list);
    return cb->host->set_error(ACCEL_ERROR_UNSUPPORTED, "cpu: the bundle has no shared object "
                               "for %s (its forms: %s)", ACCEL_BUNDLE_CPU_TARGET, list);
  }
  snprintf(cb->so, sizeof cb->so, "%s/module-cpu-bundle-%016llx.so", cb->dir,
           (unsigned long long)accel_bundle_checksum(b->key, form->data, form->size));
  if (access(cb->so, R_OK) == 0) return ACCEL_OK;
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s/.bundle-%ld-XXXXXX.so", cb->dir, (long)getpid());
  const int fd = mkstemps(tmp, 3);
  if (fd < 0)
    return cb->host->set_error(ACCEL_ERROR_BACKEND, "cpu: module_build: cannot create %s: %s",
                               tmp, strerror(errno));
  const int wrote = write(fd, form->data, form->size) == (ssize_t)form->size;
  const int closed = close(fd) == 0;
  if (wrote && closed && rename(tmp, cb->so) == 0) return ACCEL_OK;
  unlink(tmp);
  return cb->host->set_error(ACCEL_ERROR_BACKEND, "cpu: module_build: cannot write %s: %s",
                             cb->so, strerror(errno));
}

accel_status_t cpu_module_build(accel_be_device_t *device, const accel_module_build_t *build,
                                accel_be_module_t **out) {
  cpu_device_t *d = device;
  cpu_build_t *cb = calloc(1, sizeof *cb);
  if (!cb) return d->host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "cpu: module_build: no memory");
  cb->host = d->host;
  cb->b = build;
  const char *cache = d->host->cache_dir ? d->host->cache_dir() : NULL;
  if (cache) {
    snprintf(cb->dir, sizeof cb->dir, "%s", cache);
  } else {
    const char *t = getenv("TMPDIR");
    snprintf(cb->dir, sizeof cb->dir, "%s/accel-module-XXXXXX", t && *t ? t : "/tmp");
    cb->temporary = mkdtemp(cb->dir) != NULL;
  }
  /* the key covers the rows, source, options, device and accel version; add the prelude, the
   * compiler and the text's layout */
  const char *cc = getenv("ACCEL_CC");
  const uint64_t key = fold(fold(fold(build->key, ACCEL_CPU_MODULE_PRELUDE_HASH), cc ? cc : "cc"),
                            ACCEL_MODULE_TEXT_VERSION);
  snprintf(cb->so, sizeof cb->so, "%s/module-cpu-%016llx.so", cb->dir, (unsigned long long)key);
  accel_status_t st = ACCEL_OK;
  if (build->struct_size > offsetof(accel_module_build_t, nforms) && build->nforms > 0)
    st = write_form(cb);
  else if (access(cb->so, R_OK) != 0)
    st = compile_unit(cb);
  if (st == ACCEL_OK) st = load_object(cb);
  if (cb->temporary) {
    unlink(cb->so);
    rmdir(cb->dir);
  }
  cb->b = NULL;
  if (st != ACCEL_OK) {
    free(cb);
    return st;
  }
  *out = cb;
  return ACCEL_OK;
}

void cpu_module_destroy(accel_be_module_t *module) { free(module); }
