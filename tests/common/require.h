/* REQUIRE_OK(call, on_fail): for a call that the rest of a test program depends on (setup, a
 * step the next ones build on): when it does not return ACCEL_OK, print where, the call, its
 * status and accel_last_error(), then run on_fail (`return st_`, `exit(2)`, `goto fail`); st_ is
 * the call's status there. accel/accel.h must be included first. */
#ifndef ACCEL_TESTS_REQUIRE_H
#define ACCEL_TESTS_REQUIRE_H

#include <stdio.h>

#define REQUIRE_OK(call, on_fail)                                                                 \
  do {                                                                                            \
    accel_status_t st_ = (call);                                                                  \
    if (st_ != ACCEL_OK) {                                                                        \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, accel_status_name(st_), \
              accel_last_error());                                                                \
      on_fail;                                                                                    \
    }                                                                                             \
  } while (0)

#endif
