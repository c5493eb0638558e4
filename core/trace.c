#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core_util.h"
#include "log.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static bool first_event = true;
static atomic_uint_fast64_t next_track = 1;
static uint64_t t_base;

static void close_trace(void) {
  pthread_mutex_lock(&lock);
  if (out) {
    fputs("\n]\n", out);
    fclose(out);
    out = NULL;
  }
  pthread_mutex_unlock(&lock);
}

/* Opens ACCEL_TRACE for writing without ever blocking: O_NONBLOCK makes open() of a FIFO fail
 * (ENXIO) instead of waiting for a reader, and anything that is not a regular file (a FIFO with a
 * reader, a device, a directory) is refused before it is truncated or written. */
static FILE *open_trace_file(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) {
    accel_log(ACCEL_LOG_WARN, "trace", "cannot open ACCEL_TRACE file %s: %s%s; tracing disabled",
              path, strerror(errno), errno == ENXIO ? " (not a regular file)" : "");
    return NULL;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    accel_log(ACCEL_LOG_WARN, "trace", "ACCEL_TRACE=%s is not a regular file; tracing disabled",
              path);
    close(fd);
    return NULL;
  }
  FILE *f = NULL;
  if (ftruncate(fd, 0) != 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 ||
      !(f = fdopen(fd, "w"))) {
    accel_log(ACCEL_LOG_WARN, "trace", "cannot use ACCEL_TRACE file %s: %s; tracing disabled",
              path, strerror(errno));
    close(fd);
  }
  return f;
}

static void open_trace(void) {
  const char *path = accel_env("ACCEL_TRACE");
  if (!path) return;
  out = open_trace_file(path);
  if (!out) return;
  t_base = accel_now_ns();
  /* track 0: calls not tied to a device or stream yet (device selection) */
  fprintf(out, "[\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":0,"
               "\"args\":{\"name\":\"accel host\"}}",
          (int)getpid());
  first_event = false;
  atexit(close_trace);
}

bool accel_trace_enabled(void) {
  pthread_once(&once, open_trace);
  return out != NULL;
}

static void emit(const char *json) {
  pthread_mutex_lock(&lock);
  if (out) {
    fputs(first_event ? "" : ",\n", out);
    fputs(json, out);
    first_event = false;
  }
  pthread_mutex_unlock(&lock);
}

uint64_t accel_trace_new_track(const char *kind, const char *name, int index) {
  if (!accel_trace_enabled()) return 0;
  uint64_t id = atomic_fetch_add(&next_track, 1);
  char buf[256];
  snprintf(buf, sizeof buf,
           "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%llu,"
           "\"args\":{\"name\":\"%s %s:%d #%llu\"}}",
           (int)getpid(), (unsigned long long)id, kind, name, index, (unsigned long long)id);
  emit(buf);
  return id;
}

accel_trace_scope_t accel_trace_begin(uint64_t track, const char *name) {
  accel_trace_scope_t s = {track, name, 0};
  if (accel_trace_enabled()) s.t0 = accel_now_ns();
  return s;
}

static void end_with(accel_trace_scope_t *s, const char *args) {
  if (!s->t0) return;
  uint64_t t1 = accel_now_ns();
  char buf[1024];
  snprintf(buf, sizeof buf,
           "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"accel\",\"pid\":%d,\"tid\":%llu,"
           "\"ts\":%.3f,\"dur\":%.3f,\"args\":{%s}}",
           s->name, (int)getpid(), (unsigned long long)s->track, (double)(s->t0 - t_base) / 1e3,
           (double)(t1 - s->t0) / 1e3, args);
  emit(buf);
  s->t0 = 0;
}

void accel_trace_end(accel_trace_scope_t *s) { end_with(s, ""); }

void accel_trace_end_args(accel_trace_scope_t *s, const char *fmt, ...) {
  if (!s->t0) return;
  char args[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  end_with(s, args);
}

/* ph "C" and "i" events: ts now, args from fmt (name is ours: no escaping needed). */
static void emit_point(const char *ph, uint64_t track, const char *name, const char *fmt,
                      va_list ap) {
  char args[768], buf[1024];
  vsnprintf(args, sizeof args, fmt, ap);
  snprintf(buf, sizeof buf,
           "{\"ph\":\"%s\",\"name\":\"%s\",\"cat\":\"memory\",\"pid\":%d,\"tid\":%llu,"
           "\"ts\":%.3f,%s\"args\":{%s}}",
           ph, name, (int)getpid(), (unsigned long long)track,
           (double)(accel_now_ns() - t_base) / 1e3, *ph == 'i' ? "\"s\":\"t\"," : "", args);
  emit(buf);
}

void accel_trace_counter(const char *name, const char *fmt, ...) {
  if (!accel_trace_enabled()) return;
  va_list ap;
  va_start(ap, fmt);
  emit_point("C", 0, name, fmt, ap);
  va_end(ap);
}

void accel_trace_instant(uint64_t track, const char *name, const char *fmt, ...) {
  if (!accel_trace_enabled()) return;
  va_list ap;
  va_start(ap, fmt);
  emit_point("i", track, name, fmt, ap);
  va_end(ap);
}
