/* The service table handed to plugins (and to the built-in CPU backend). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "accel_cpu_kernels.h"
#include "accel_kernel_abi_host.h"
#include "accel_kernel_ids.h"
#include "backend.h"
#include "core_util.h"
#include "fault.h"
#include "log.h"

static accel_status_t host_set_error(accel_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static accel_status_t host_set_error(accel_status_t status, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return accel_set_error(status, "%s", buf);
}

static void host_log(accel_log_level_t level, const char *domain, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void host_log(accel_log_level_t level, const char *domain, const char *fmt, ...) {
  if (!accel_log_enabled(level)) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  accel_log(level, domain, "%s", buf);
}

static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static char cache_path[1024];

static bool make_dirs(char *path) {
  for (char *p = path + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(path, 0755);
    *p = '/';
  }
  mkdir(path, 0755);
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void find_cache_dir(void) {
  const char *dir = accel_env("ACCEL_CACHE_DIR");
  const char *xdg = accel_env("XDG_CACHE_HOME");
  const char *home = accel_env("HOME");
  if (dir) snprintf(cache_path, sizeof cache_path, "%s", dir);
  else if (xdg) snprintf(cache_path, sizeof cache_path, "%s/accel", xdg);
  else if (home) snprintf(cache_path, sizeof cache_path, "%s/.cache/accel", home);
  if (cache_path[0] && !make_dirs(cache_path)) {
    accel_log(ACCEL_LOG_WARN, "accel", "cache directory %s is not usable; on-disk caches off",
              cache_path);
    cache_path[0] = '\0';
  }
}

static const char *host_cache_dir(void) {
  pthread_once(&cache_once, find_cache_dir);
  return cache_path[0] ? cache_path : NULL;
}

/* sizeof each kernel's parameter struct, from the kernel table. */
static const uint32_t kernel_params_size[ACCEL_KERNEL_COUNT] = {
#define ACCEL_KERNEL(id, name, T, ...) sizeof(T),
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
};

/* The largest parameter struct, for an aligned private copy of a plugin's block. */
typedef union kernel_params_storage {
#define ACCEL_KERNEL(id, name, T, ...) T id;
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
} kernel_params_storage_t;

/* run_kernel_c: the built-in CPU backend's kernel functions, every block on this thread (any
 * split of the blocks gives the same bits); no lock and no shared state, so plugin threads may
 * call it at once. The parameter block is copied so that a plugin's byte buffer need not be
 * aligned for the struct. A launch it does not know (id, size) did not come from this
 * libaccel: INVALID_ARGUMENT, where a plugin asked for a kernel newer than itself answers
 * UNSUPPORTED (docs/PLUGINS.md, "Statuses for kernel launches"). */
static accel_status_t host_run_kernel_c(const accel_kernel_launch_t *launch) {
  static const char fn_name[] = "run_kernel_c";
  if (!launch || !launch->params)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: launch or its params is NULL",
                           fn_name);
  accel_cpu_kernel_fn fn = accel_cpu_kernel_lookup(launch->kernel_id);
  if (launch->kernel_id >= ACCEL_KERNEL_COUNT || !fn)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: unknown kernel id %u (%s; %u kernels known)", fn_name,
                           launch->kernel_id, launch->kernel_name ? launch->kernel_name : "?",
                           (unsigned)ACCEL_KERNEL_COUNT);
  if (launch->params_size != kernel_params_size[launch->kernel_id])
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: kernel %s takes %u parameter bytes, the launch has %u", fn_name,
                           accel_kernel_names[launch->kernel_id],
                           kernel_params_size[launch->kernel_id], launch->params_size);
  if (launch->num_blocks == 0)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: kernel %s launched with 0 blocks",
                           fn_name, accel_kernel_names[launch->kernel_id]);
  kernel_params_storage_t params;
  memcpy(&params, launch->params, launch->params_size);
  fn(&params, 0, launch->num_blocks);
  return ACCEL_OK;
}

const accel_host_api_t accel_host_api = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_host_api_t),
    .log = host_log,
    .set_error = host_set_error,
    .fault_should_fail = accel_fault_should_fail,
    .cache_dir = host_cache_dir,
    .run_kernel_c = host_run_kernel_c,
    .kernel_abi_version = ACCEL_KERNEL_ABI_VERSION,
    .kernel_count = ACCEL_KERNEL_COUNT,
    .last_error = accel_last_error,
};
