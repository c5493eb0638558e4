/* Small helpers shared by every core file. */
#ifndef ACCEL_CORE_UTIL_H
#define ACCEL_CORE_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"

accel_status_t accel_set_error(accel_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Returns INVALID_ARGUMENT naming fn and the NULL argument. */
#define ACCEL_REQUIRE_ARG(cond, fn, what)                                                   \
  do {                                                                                      \
    if (!(cond)) return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s", fn, what);  \
  } while (0)

/* Returns INVALID_ARGUMENT naming fn and the bits of flags outside known. */
#define ACCEL_REQUIRE_FLAGS(flags, known, fn)                                               \
  do {                                                                                      \
    const unsigned accel_unknown_flags_ = (unsigned)((flags) & ~(unsigned)(known));         \
    if (accel_unknown_flags_)                                                               \
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn,    \
                             accel_unknown_flags_);                                         \
  } while (0)

/* env.c */
const char *accel_env(const char *name);  /* getenv, "" treated as unset */
bool accel_env_flag(const char *name, bool dflt);
uint64_t accel_now_ns(void);

#endif
