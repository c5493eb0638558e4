/*
 * Shared helpers of the reliability tests (tests/reliability/): failure counting, device
 * opening with SKIP (exit 77) when the backend is absent, and a kernel + copy round trip that
 * proves a device still computes correct results after something went wrong.
 */
#ifndef ACCEL_TESTS_REL_COMMON_H
#define ACCEL_TESTS_REL_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "accel/accel.h"
#include "accel/accel_kernels.h"

/* meson's exit code for a skipped test */
#define REL_SKIP 77

extern int rel_failures;

#define REL_CHECK(cond, ...)                                           \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__);    \
      fprintf(stderr, __VA_ARGS__);                                    \
      fprintf(stderr, " [last error: %s]\n", accel_last_error());      \
      rel_failures++;                                                  \
    }                                                                  \
  } while (0)

/* REL_CHECK from several threads: serializes the failure counter. cond is evaluated once (it
 * is often an API call, which must not run again to report its failure). */
extern pthread_mutex_t rel_fail_lock;
#define T_CHECK(cond, ...)                  \
  do {                                      \
    if (!(cond)) {                          \
      pthread_mutex_lock(&rel_fail_lock);   \
      REL_CHECK(0, __VA_ARGS__);            \
      pthread_mutex_unlock(&rel_fail_lock); \
    }                                       \
  } while (0)

/* Opens selector; exits with REL_SKIP when its backend or device is absent, 1 on any other
 * failure. */
accel_device_t *rel_open(const char *selector);

/* Fills n floats with 1.5, scales them by a device scalar 2.0, takes their L1 norm and copies
 * everything back: true when every value is exact (3.0 each, norm 3.0 * n). Frees what it
 * allocates. Reports its own failures through REL_CHECK. */
bool rel_round_trip(accel_device_t *dev, accel_stream_t *stream, size_t n);

/* The device's memory statistics now (zeros, and a failed check, when the call fails). */
accel_memory_stats_t rel_stats(accel_device_t *dev);
/* Memory statistics after synchronizing the device and emptying the cache. */
accel_memory_stats_t rel_settled_stats(accel_device_t *dev);

/* Exit status for rel_failures, with a one-line verdict naming the test. */
int rel_finish(const char *name);

#endif
