/* CHECK(cond, fmt, ...): report a failed condition with its location and count it in failures
 * (the test's exit status), without stopping the test. */
#ifndef ACCEL_TESTS_CHECK_H
#define ACCEL_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                              \
  do {                                                \
    if (!(cond)) {                                    \
      fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                   \
      fprintf(stderr, "\n");                          \
      failures++;                                     \
    }                                                 \
  } while (0)

/* CHECK_EXIT(fmt, ...): the exit status of a test program at its end, 1 when a CHECK failed
 * (saying how many on stderr) else 0 (saying ok on stdout); fmt and its arguments name the
 * program and its scenario. */
#define CHECK_EXIT(...)                                                                         \
  (failures                                                                                     \
       ? (fprintf(stderr, __VA_ARGS__), fprintf(stderr, ": %d check(s) failed\n", failures), 1) \
       : (printf(__VA_ARGS__), printf(": ok\n"), 0))

/* OK(call): CHECK that an accel call returned ACCEL_OK, naming the call, its status and
 * accel_last_error() otherwise (accel/accel.h must be included first). */
#define OK(call)                                                                               \
  do {                                                                                         \
    accel_status_t st_ = (call);                                                               \
    CHECK(st_ == ACCEL_OK, "%s -> %s: %s", #call, accel_status_name(st_), accel_last_error()); \
  } while (0)

/* EXPECT_ERROR(call, want, sub): CHECK that a call returned status want with a message in
 * accel_last_error() that contains sub, then clear the message. */
#define EXPECT_ERROR(call, want, sub)                                                    \
  do {                                                                                   \
    accel_status_t got_ = (call);                                                        \
    const char *msg_ = accel_last_error();                                               \
    CHECK(got_ == (want) && msg_ && strstr(msg_, (sub)),                                 \
          "%s -> %s, want %s with '%s' (message: '%s')", #call, accel_status_name(got_), \
          accel_status_name(want), (sub), msg_ ? msg_ : "(null)");                       \
    accel_clear_error();                                                                 \
  } while (0)

#endif
