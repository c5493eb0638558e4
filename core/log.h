/* Logging filtered by ACCEL_LOG=error|warn|info|debug (default: warn), to stderr. */
#ifndef ACCEL_CORE_LOG_H
#define ACCEL_CORE_LOG_H

#include <stdbool.h>

#include "accel/accel_plugin.h"

void accel_log(accel_log_level_t level, const char *domain, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool accel_log_enabled(accel_log_level_t level);

#endif
