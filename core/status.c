/* Status names and the thread-local last-error message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "accel_config.h"
#include "log.h"

static _Thread_local char last_error[1024];

const char *accel_status_name(accel_status_t status) {
  switch (status) {
    case ACCEL_OK: return "ACCEL_OK";
    case ACCEL_ERROR_INVALID_ARGUMENT: return "ACCEL_ERROR_INVALID_ARGUMENT";
    case ACCEL_ERROR_INVALID_HANDLE: return "ACCEL_ERROR_INVALID_HANDLE";
    case ACCEL_ERROR_OUT_OF_MEMORY: return "ACCEL_ERROR_OUT_OF_MEMORY";
    case ACCEL_ERROR_UNAVAILABLE: return "ACCEL_ERROR_UNAVAILABLE";
    case ACCEL_ERROR_UNSUPPORTED: return "ACCEL_ERROR_UNSUPPORTED";
    case ACCEL_ERROR_NOT_READY: return "ACCEL_ERROR_NOT_READY";
    case ACCEL_ERROR_ILLEGAL_IN_CAPTURE: return "ACCEL_ERROR_ILLEGAL_IN_CAPTURE";
    case ACCEL_ERROR_CAPTURE_INVALIDATED: return "ACCEL_ERROR_CAPTURE_INVALIDATED";
    case ACCEL_ERROR_PLUGIN: return "ACCEL_ERROR_PLUGIN";
    case ACCEL_ERROR_BACKEND: return "ACCEL_ERROR_BACKEND";
    case ACCEL_ERROR_STATE: return "ACCEL_ERROR_STATE";
    case ACCEL_ERROR_GRAPH_MISMATCH: return "ACCEL_ERROR_GRAPH_MISMATCH";
  }
  return "ACCEL_ERROR_UNKNOWN";
}

const char *accel_last_error(void) { return last_error; }

void accel_clear_error(void) { last_error[0] = '\0'; }

const char *accel_version_string(void) { return ACCEL_VERSION_STRING; }

accel_status_t accel_set_error(accel_status_t status, const char *fmt, ...) {
  /* format into a scratch buffer first: callers may pass accel_last_error() as an argument */
  char buf[sizeof last_error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  memcpy(last_error, buf, sizeof buf);
  accel_log(ACCEL_LOG_DEBUG, "accel", "%s: %s", accel_status_name(status), buf);
  return status;
}
