/* Environment, clock and fault-injection helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <stdatomic.h>

#include "fault.h"
#include "log.h"

const char *accel_env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

bool accel_env_flag(const char *name, bool dflt) {
  const char *v = accel_env(name);
  if (!v) return dflt;
  return !(strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "off") == 0 ||
           strcmp(v, "no") == 0);
}

uint64_t accel_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Fault injection for tests: ACCEL_FAULT_INJECT="alloc:N,kernel_build:N,launch:N" makes the
 * N-th call (1-based) at that site fail once (fault.h says where the sites are). Off (zero cost
 * beyond one atomic load) when unset.
 */
static const char *const site_names[] = {"alloc", "kernel_build", "launch"};
#define NSITES (sizeof site_names / sizeof site_names[0])
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static long fault_at[NSITES];
static atomic_long fault_calls[NSITES];

static void fault_parse(void) {
  const char *v = accel_env("ACCEL_FAULT_INJECT");
  if (!v) return;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", v);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    if (!colon) continue;
    *colon = '\0';
    for (size_t i = 0; i < NSITES; ++i)
      if (strcmp(tok, site_names[i]) == 0) fault_at[i] = strtol(colon + 1, NULL, 10);
  }
}

bool accel_fault_armed(accel_fault_site_t site) {
  if ((size_t)site >= NSITES) return false;
  pthread_once(&fault_once, fault_parse);
  return fault_at[site] > 0 && atomic_load(&fault_calls[site]) < fault_at[site];
}

int accel_fault_should_fail(accel_fault_site_t site) {
  if ((size_t)site >= NSITES) return 0;
  pthread_once(&fault_once, fault_parse);
  if (fault_at[site] <= 0) return 0;
  long n = atomic_fetch_add(&fault_calls[site], 1) + 1;
  if (n != fault_at[site]) return 0;
  accel_log(ACCEL_LOG_INFO, "accel", "fault injection: failing %s call #%ld", site_names[site], n);
  return 1;
}
