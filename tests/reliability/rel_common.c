/* Shared helpers of the reliability tests (see rel_common.h). */
#include "rel_common.h"

#include <stdlib.h>
#include <string.h>

int rel_failures;
pthread_mutex_t rel_fail_lock = PTHREAD_MUTEX_INITIALIZER;

accel_device_t *rel_open(const char *selector) {
  accel_device_t *dev = NULL;
  accel_status_t st = accel_device_open(selector, &dev);
  if (st == ACCEL_ERROR_UNAVAILABLE) {
    printf("SKIP: device '%s' is not available here: %s\n", selector, accel_last_error());
    exit(REL_SKIP);
  }
  if (st != ACCEL_OK) {
    fprintf(stderr, "accel_device_open(\"%s\") -> %s: %s\n", selector, accel_status_name(st),
            accel_last_error());
    exit(1);
  }
  return dev;
}

bool rel_round_trip(accel_device_t *dev, accel_stream_t *stream, size_t n) {
  const int before = rel_failures;
  float *data = NULL, *scalars = NULL; /* scalars[0] = scale, scalars[1] = norm */
  float *host = malloc(n * sizeof *host);
  float two = 2.0f, norm = -1.0f;
  REL_CHECK(host != NULL, "out of host memory");
  accel_status_t st = host ? accel_malloc(dev, n * sizeof(float), (void **)&data)
                           : ACCEL_ERROR_OUT_OF_MEMORY;
  if (st == ACCEL_OK) st = accel_malloc(dev, 2 * sizeof(float), (void **)&scalars);
  accel_tensor_t t = {data, n, ACCEL_F32};
  if (st == ACCEL_OK) st = accel_memcpy_async(stream, scalars, &two, sizeof two);
  if (st == ACCEL_OK) st = accel_fill(stream, &t, 1, 1.5f);
  if (st == ACCEL_OK) st = accel_scale(stream, &t, 1, scalars);
  if (st == ACCEL_OK) st = accel_multi_tensor_norm(stream, &t, 1, 1.0f, scalars + 1);
  if (st == ACCEL_OK) st = accel_memcpy_async(stream, host, data, n * sizeof(float));
  if (st == ACCEL_OK) st = accel_memcpy_async(stream, &norm, scalars + 1, sizeof norm);
  if (st == ACCEL_OK) st = accel_stream_synchronize(stream);
  REL_CHECK(st == ACCEL_OK, "round trip: %s", accel_status_name(st));
  if (st == ACCEL_OK) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += host[i] != 3.0f;
    REL_CHECK(bad == 0, "round trip: %zu of %zu values differ from 3.0", bad, n);
    REL_CHECK(norm == 3.0f * (float)n, "round trip: L1 norm %g, want %g", (double)norm,
              3.0 * (double)n);
  }
  /* wait for the stream even after a failure: queued work may still use the buffers */
  accel_stream_synchronize(stream);
  if (data) REL_CHECK(accel_free(dev, data) == ACCEL_OK, "free");
  if (scalars) REL_CHECK(accel_free(dev, scalars) == ACCEL_OK, "free");
  free(host);
  return rel_failures == before;
}

accel_memory_stats_t rel_stats(accel_device_t *dev) {
  accel_memory_stats_t s;
  memset(&s, 0, sizeof s);
  REL_CHECK(accel_memory_stats(dev, &s) == ACCEL_OK, "memory stats");
  return s;
}

accel_memory_stats_t rel_settled_stats(accel_device_t *dev) {
  REL_CHECK(accel_device_synchronize(dev) == ACCEL_OK, "device synchronize");
  REL_CHECK(accel_empty_cache(dev) == ACCEL_OK, "empty cache");
  return rel_stats(dev);
}

int rel_finish(const char *name) {
  if (rel_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, rel_failures);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}
