/*
 * Native handles on the CPU backend: it has no vendor objects, so every native-handle call
 * answers ACCEL_ERROR_UNSUPPORTED with a message naming the backend and the function, after
 * the same argument checks as everywhere (NULL, struct_size, destroyed handles); the device
 * stays usable.
 */
#include <stdio.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_interop.h"
#include "accel/accel_kernels.h"
#include "check.h"

int main(void) {
  accel_device_t *dev = NULL;
  if (accel_device_open("cpu", &dev) != ACCEL_OK) {
    fprintf(stderr, "cpu device: %s\n", accel_last_error());
    return 1;
  }
  accel_stream_t *s = NULL;
  accel_event_t *e = NULL;
  if (accel_stream_create(dev, &s) != ACCEL_OK || accel_event_create(dev, 0, &e) != ACCEL_OK) {
    fprintf(stderr, "stream/event: %s\n", accel_last_error());
    return 1;
  }
  accel_native_t n;
  memset(&n, 0, sizeof n);
  n.struct_size = sizeof n;
  n.queue = &n; /* any non-NULL value: the backend refuses before looking at it */
  n.context = &n;
  int marker = 0;
  EXPECT_ERROR(accel_device_native(dev, &n), ACCEL_ERROR_UNSUPPORTED,
               "accel_device_native: the cpu");
  EXPECT_ERROR(accel_stream_native(s, &n), ACCEL_ERROR_UNSUPPORTED, "accel_stream_native: the cpu");
  EXPECT_ERROR(accel_event_native(e, &n), ACCEL_ERROR_UNSUPPORTED, "accel_event_native: the cpu");
  /* the reason is the backend's own (vtable no_native_reason), not a name core compares */
  EXPECT_ERROR(accel_device_native(dev, &n), ACCEL_ERROR_UNSUPPORTED, "it runs on host threads");
  EXPECT_ERROR(accel_stream_wait_native_event(s, &marker), ACCEL_ERROR_UNSUPPORTED,
               "accel_stream_wait_native_event: the cpu");
  accel_stream_t *w = NULL;
  n.queue = &marker;
  EXPECT_ERROR(accel_stream_wrap_native(dev, &n, &w), ACCEL_ERROR_UNSUPPORTED,
               "accel_stream_wrap_native: the cpu");
  accel_device_t *d = NULL;
  EXPECT_ERROR(accel_device_wrap_native("cpu", &n, &d), ACCEL_ERROR_UNSUPPORTED,
               "accel_device_wrap_native: the cpu");
  CHECK(w == NULL && d == NULL, "nothing is returned on failure");
  /* argument checks come first */
  n.struct_size = 4;
  EXPECT_ERROR(accel_device_native(dev, &n), ACCEL_ERROR_INVALID_ARGUMENT, "struct_size is 4");
  EXPECT_ERROR(accel_stream_native(s, NULL), ACCEL_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERROR(accel_stream_wait_native_event(s, NULL), ACCEL_ERROR_INVALID_ARGUMENT, "NULL");
  n.struct_size = sizeof n;
  EXPECT_ERROR(accel_event_native((accel_event_t *)s, &n), ACCEL_ERROR_INVALID_HANDLE,
               "accel_event_native");
  EXPECT_ERROR(accel_stream_native((accel_stream_t *)dev, &n), ACCEL_ERROR_INVALID_HANDLE,
               "accel_stream_native");
  /* still usable */
  float *x = NULL;
  float h[64];
  accel_tensor_t t = {NULL, 64, ACCEL_F32};
  CHECK(accel_malloc(dev, sizeof h, (void **)&x) == ACCEL_OK, "malloc: %s", accel_last_error());
  t.data = x;
  CHECK(accel_fill(s, &t, 1, 1.5f) == ACCEL_OK, "fill: %s", accel_last_error());
  CHECK(accel_memcpy_async(s, h, x, sizeof h) == ACCEL_OK, "copy: %s", accel_last_error());
  CHECK(accel_stream_synchronize(s) == ACCEL_OK, "sync: %s", accel_last_error());
  CHECK(h[0] == 1.5f && h[63] == 1.5f, "the device still works");
  accel_free(dev, x);
  accel_event_destroy(e);
  accel_stream_destroy(s);
  accel_device_close(dev);
  return failures ? 1 : 0;
}
