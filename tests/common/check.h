/* CHECK(cond, fmt, ...): report a failed condition with its location and count it in failures
 * (the test's exit status), without stopping the test. */
#ifndef ACCEL_TESTS_CHECK_H
#define ACCEL_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                      \
  do {                                                        \
    if (!(cond)) {                                            \
      fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);         \
      fprintf(stderr, __VA_ARGS__);                           \
      fprintf(stderr, "\n");                                  \
      failures++;                                             \
    }                                                         \
  } while (0)

/* OK(call): CHECK that an accel call returned ACCEL_OK, naming the call, its status and
 * accel_last_error() otherwise (accel/accel.h must be included first). */
#define OK(call)                                                                        \
  do {                                                                                  \
    accel_status_t st_ = (call);                                                        \
    CHECK(st_ == ACCEL_OK, "%s -> %s: %s", #call, accel_status_name(st_), accel_last_error()); \
  } while (0)

#endif
