#include "cpu_sysinfo.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cpu_workers.h"

unsigned cpu_sysinfo_usable_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (unsigned)CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1u : (unsigned)n;
}

unsigned cpu_sysinfo_thread_count(const accel_host_api_t *host) {
  const char *env = getenv("ACCEL_CPU_THREADS");
  if (env != NULL && env[0] != '\0') {
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(env, &end, 10);
    if (errno == 0 && *end == '\0' && isdigit((unsigned char)env[0]) && v >= 1 &&
        v <= CPU_POOL_MAX_THREADS)
      return (unsigned)v;
    host->log(ACCEL_LOG_WARN, "cpu",
              "ignoring ACCEL_CPU_THREADS=\"%s\": want an integer in 1..%u; using the online "
              "usable CPU count", env, CPU_POOL_MAX_THREADS);
  }
  unsigned n = cpu_sysinfo_usable_cpus();
  return n > CPU_POOL_MAX_THREADS ? CPU_POOL_MAX_THREADS : n;
}

static int word_is(const char *s, const char *const *words) {
  for (; *words; ++words)
    if (strcasecmp(s, *words) == 0) return 1;
  return 0;
}

int cpu_sysinfo_run_on_caller(const accel_host_api_t *host) {
  static const char *const on[] = {"1", "on", "yes", "true", NULL};
  static const char *const off[] = {"0", "off", "no", "false", NULL};
  const char *env = getenv("ACCEL_CPU_RUN_ON_CALLER");
  if (env != NULL && word_is(env, on)) return 1;
  if (env != NULL && word_is(env, off)) return 0;
  if (env != NULL && env[0] != '\0' && strcasecmp(env, "auto") != 0)
    host->log(ACCEL_LOG_WARN, "cpu",
              "ignoring ACCEL_CPU_RUN_ON_CALLER=\"%s\": want 1, 0 or auto; using auto", env);
  return cpu_sysinfo_usable_cpus() == 1;
}

/* Copies the value of a "key<TAB>: value" line of /proc/cpuinfo, trimmed. */
static int cpuinfo_value(const char *line, const char *key, char *out, size_t size) {
  size_t klen = strlen(key);
  if (strncmp(line, key, klen) != 0) return 0;
  const char *p = line + klen;
  while (*p == ' ' || *p == '\t') ++p;
  if (*p != ':') return 0;
  ++p;
  while (*p == ' ' || *p == '\t') ++p;
  size_t len = strcspn(p, "\n");
  while (len > 0 && isspace((unsigned char)p[len - 1])) --len;
  if (len == 0) return 0;
  if (len >= size) len = size - 1;
  memcpy(out, p, len);
  out[len] = '\0';
  return 1;
}

void cpu_sysinfo_processor(char *name, size_t name_size, char *vendor, size_t vendor_size) {
  name[0] = '\0';
  vendor[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f != NULL) {
    char line[512];
    while ((name[0] == '\0' || vendor[0] == '\0') && fgets(line, sizeof(line), f) != NULL) {
      if (name[0] == '\0') cpuinfo_value(line, "model name", name, name_size);
      if (vendor[0] == '\0') cpuinfo_value(line, "vendor_id", vendor, vendor_size);
    }
    fclose(f);
  }
  if (name[0] == '\0') {
    struct utsname u;
    snprintf(name, name_size, "%s CPU", uname(&u) == 0 ? u.machine : "generic");
  }
  if (vendor[0] == '\0') snprintf(vendor, vendor_size, "unknown");
}

void cpu_sysinfo_os_version(char *buf, size_t size) {
  struct utsname u;
  if (uname(&u) == 0)
    snprintf(buf, size, "%s %s", u.sysname, u.release);
  else
    snprintf(buf, size, "unknown");
}

/* Value in bytes of a "Key:   N kB" line of /proc/meminfo. */
static int meminfo_value(const char *line, const char *key, uint64_t *out) {
  size_t klen = strlen(key);
  if (strncmp(line, key, klen) != 0 || line[klen] != ':') return 0;
  unsigned long long kb = 0;
  if (sscanf(line + klen + 1, "%llu", &kb) != 1) return 0;
  *out = (uint64_t)kb * 1024u;
  return 1;
}

int cpu_sysinfo_memory(uint64_t *total, uint64_t *available) {
  int have_total = 0, have_avail = 0;
  FILE *f = fopen("/proc/meminfo", "r");
  if (f != NULL) {
    char line[256];
    while ((!have_total || !have_avail) && fgets(line, sizeof(line), f) != NULL) {
      if (!have_total) have_total = meminfo_value(line, "MemTotal", total);
      if (!have_avail) have_avail = meminfo_value(line, "MemAvailable", available);
    }
    fclose(f);
  }
  if (have_total && have_avail) return 0;
  struct sysinfo si;
  if (sysinfo(&si) != 0) return errno;
  *total = (uint64_t)si.totalram * si.mem_unit;
  /* Without MemAvailable (kernels before 3.14) free + buffers is the usual estimate. */
  *available = ((uint64_t)si.freeram + si.bufferram) * si.mem_unit;
  return 0;
}
