/* Stand-ins for core/status.c in the unit tests that compile single core files without it:
 * accel_set_error formats the message into one buffer (not thread-local) that
 * accel_last_error returns and accel_clear_error empties. */
#include <stdarg.h>
#include <stdio.h>

#include "core_util.h"

static char last[1024];

accel_status_t accel_set_error(accel_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last, sizeof last, fmt, ap);
  va_end(ap);
  return status;
}

const char *accel_last_error(void) { return last; }

void accel_clear_error(void) { last[0] = 0; }
