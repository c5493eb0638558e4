/*
 * The CUDA plugin leaves the caller's current context as it found it (fake driver,
 * fake_driver.c): a PyTorch thread that uses another device, or no context at all, must not find
 * accel's device current after an accel call (cudart follows the driver's current context).
 * Every kind of entry point is called with no context current and with a context of "another
 * runtime" current, and the current context is compared after each.
 * 77 when the cuda device is not the fake one (LD_LIBRARY_PATH must name it).
 */
#include <dlfcn.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_interop.h"
#include "check.h"
#include "fake_open.h"

typedef unsigned (*ctx_get_fn)(void **ctx);
typedef unsigned (*ctx_set_fn)(void *ctx);
static ctx_get_fn ctx_get;
static ctx_set_fn ctx_set;

static void expect_current(void *want, const char *after) {
  void *cur = (void *)1;
  CHECK(ctx_get(&cur) == 0, "cuCtxGetCurrent failed");
  CHECK(cur == want, "after %s the current context is %p, the caller's was %p", after, cur,
        want);
}

static void round_trip(accel_device_t *dev, void *callers) {
  CHECK(ctx_set(callers) == 0, "cuCtxSetCurrent(%p)", callers);
  accel_stream_t *s = NULL;
  accel_event_t *e = NULL;
  void *p = NULL;
  OK(accel_stream_create(dev, &s));
  expect_current(callers, "accel_stream_create");
  OK(accel_malloc(dev, 1 << 20, &p)); /* the caching allocator reaches cuMemAlloc */
  expect_current(callers, "accel_malloc");
  OK(accel_memset_async(s, p, 1, 1 << 20));
  expect_current(callers, "accel_memset_async");
  OK(accel_event_create(dev, 0, &e));
  OK(accel_event_record(e, s));
  expect_current(callers, "accel_event_record");
  OK(accel_stream_synchronize(s));
  expect_current(callers, "accel_stream_synchronize");
  OK(accel_event_destroy(e));
  expect_current(callers, "accel_event_destroy");
  OK(accel_free(dev, p));
  OK(accel_empty_cache(dev)); /* cuMemFree */
  expect_current(callers, "accel_empty_cache");
  accel_native_t native = {.struct_size = sizeof native};
  OK(accel_device_native(dev, &native));
  OK(accel_stream_destroy(s));
  expect_current(callers, "accel_stream_destroy");
  OK(accel_device_synchronize(dev));
  expect_current(callers, "accel_device_synchronize");
}

int main(int argc, char **argv) {
  accel_device_t *dev = NULL;
  void *drv = NULL;
  const int skip = fake_open_driver(argc, argv, &dev, &drv);
  if (skip) return skip;
  ctx_get = drv ? (ctx_get_fn)dlsym(drv, "cuCtxGetCurrent") : NULL;
  ctx_set = drv ? (ctx_set_fn)dlsym(drv, "cuCtxSetCurrent") : NULL;
  CHECK(ctx_get && ctx_set, "the fake's cuCtxGetCurrent / cuCtxSetCurrent not found");
  static int other_runtime; /* the fake takes any pointer as a context */
  round_trip(dev, NULL);
  round_trip(dev, &other_runtime);
  ctx_set(NULL);
  accel_device_close(dev);
  expect_current(NULL, "accel_device_close");
  printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures ? 1 : 0;
}
