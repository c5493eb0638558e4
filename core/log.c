#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <pthread.h>

#include "core_util.h"

static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static accel_log_level_t level = ACCEL_LOG_WARN;

static void read_level(void) {
  const char *v = accel_env("ACCEL_LOG");
  if (!v) return;
  static const char *const names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; ++i)
    if (strcmp(v, names[i]) == 0) level = (accel_log_level_t)i;
}

bool accel_log_enabled(accel_log_level_t l) {
  pthread_once(&level_once, read_level);
  return l <= level;
}

void accel_log(accel_log_level_t l, const char *domain, const char *fmt, ...) {
  if (!accel_log_enabled(l)) return;
  static const char *const tags[] = {"error", "warn", "info", "debug"};
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[accel:%s] %s: %s\n", tags[l], domain ? domain : "accel", msg);
}
