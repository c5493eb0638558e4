/* The checks of the interop tests: EXPECT(call, status) checks the status an accel call
 * returned; EXPECT_MSG(fn, what) that accel_last_error() names fn and contains what;
 * open_device opens the device under test or says why not; graph_scaling captures a graph
 * that uses a tensor. */
#ifndef ACCEL_TESTS_INTEROP_CHECK_H
#define ACCEL_TESTS_INTEROP_CHECK_H

#include <stdio.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_kernels.h"
#include "check.h"

#define EXPECT(call, status)                                                                  \
  do {                                                                                        \
    accel_status_t got_ = (call);                                                             \
    CHECK(got_ == (status), "%s: %s, expected %s [%s]", #call, accel_status_name(got_),       \
          accel_status_name(status), accel_last_error());                                     \
  } while (0)

#define EXPECT_MSG(fn, what)                                                                  \
  CHECK(strstr(accel_last_error(), fn) && strstr(accel_last_error(), what),                  \
        "message \"%s\" should name %s and say \"%s\"", accel_last_error(), fn, what)

/* Opens the device named selector: 0, or the test's exit status (77: absent, a SKIP). */
static inline int open_device(const char *selector, accel_device_t **dev) {
  accel_status_t st = accel_device_open(selector, dev);
  if (st == ACCEL_ERROR_UNAVAILABLE) {
    printf("SKIP: %s: %s\n", selector, accel_last_error());
    return 77;
  }
  if (st != ACCEL_OK) {
    fprintf(stderr, "open %s: %s\n", selector, accel_last_error());
    return 1;
  }
  return 0;
}

/* A new graph that scales t by *scale_dev on s (a RELAXED capture): a graph that uses t's memory
 * until it is destroyed. */
static inline accel_graph_t *graph_scaling(accel_device_t *dev, accel_stream_t *s,
                                           const accel_tensor_t *t, const float *scale_dev) {
  accel_graph_t *g = NULL;
  EXPECT(accel_graph_create(dev, &g), ACCEL_OK);
  EXPECT(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_RELAXED), ACCEL_OK);
  EXPECT(accel_scale(s, t, 1, scale_dev), ACCEL_OK);
  EXPECT(accel_graph_capture_end(g), ACCEL_OK);
  return g;
}

#endif
