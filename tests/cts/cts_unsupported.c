/*
 * accel CTS: cases a backend is known not to support, with the reason. Such cases are reported
 * SKIP with the reason instead of being run. Keep entries rare and specific: a case that fails
 * because of a bug belongs in the bug tracker, not here. See docs/CTS.md.
 */
#include <string.h>

#include "cts_internal.h"

typedef struct cts_unsupported {
  const char *backend;   /* accel_device_info_t.backend */
  const char *case_name; /* exact case name */
  const char *reason;
} cts_unsupported_t;

/* Terminated by an all-NULL entry. Example entry:
 *   {"opencl", "event_elapsed_timing", "PoCL 3.1 has no profiling on out-of-order queues"}, */
static const cts_unsupported_t k_unsupported[] = {
    {NULL, NULL, NULL},
};

const char *cts_unsupported_reason(const char *backend, const char *case_name) {
  for (const cts_unsupported_t *u = k_unsupported; u->backend; u++)
    if (strcmp(u->backend, backend) == 0 && strcmp(u->case_name, case_name) == 0) return u->reason;
  return NULL;
}
