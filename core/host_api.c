/* The service table handed to plugins (and to the built-in CPU backend). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fault.h"
#include "internal.h"

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

const accel_host_api_t accel_host_api = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_host_api_t),
    .log = host_log,
    .set_error = host_set_error,
    .fault_should_fail = accel_fault_should_fail,
    .cache_dir = host_cache_dir,
};
