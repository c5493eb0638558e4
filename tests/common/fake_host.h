/*
 * A minimal accel_host_api_t for tests that drive a backend's vtable directly, without libaccel
 * (the CPU backend unit test, the vendor-plugin UNAVAILABLE checks). Header-only: every
 * definition is static, and a test uses the parts it needs.
 */
#ifndef ACCEL_TESTS_FAKE_HOST_H
#define ACCEL_TESTS_FAKE_HOST_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "accel/accel_plugin.h"

#define FAKE_HOST_MAYBE_UNUSED __attribute__((unused))

/* The last set_error message of this thread. */
static _Thread_local char fake_host_error[1024] FAKE_HOST_MAYBE_UNUSED;
/* Nonzero: log info and debug messages too (warnings and errors are always printed). */
static int fake_host_verbose FAKE_HOST_MAYBE_UNUSED;
/* Nonzero: every call at that fault-injection site fails. */
static atomic_int fake_host_fail_alloc FAKE_HOST_MAYBE_UNUSED;

static void fake_host_log(accel_log_level_t level, const char *domain, const char *fmt, ...) {
  if (!fake_host_verbose && level > ACCEL_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  [%s:%d] ", domain, (int)level);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static accel_status_t fake_host_set_error(accel_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fake_host_error, sizeof fake_host_error, fmt, ap);
  va_end(ap);
  return status;
}

static int fake_host_fault(accel_fault_site_t site) {
  return site == ACCEL_FAULT_ALLOC ? atomic_load(&fake_host_fail_alloc) : 0;
}

static const char *fake_host_cache_dir(void) { return NULL; }

static const accel_host_api_t fake_host FAKE_HOST_MAYBE_UNUSED = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_host_api_t),
    .log = fake_host_log,
    .set_error = fake_host_set_error,
    .fault_should_fail = fake_host_fault,
    .cache_dir = fake_host_cache_dir,
};

#endif
