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

#endif
