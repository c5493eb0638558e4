/*
 * External memory and DLPack on one device (argv[1], e.g. "cpu" or "opencl"):
 * accel_memory_register/unregister, accel_dlpack_view/import/import_legacy/release/export.
 * Kernels on registered and imported host memory are compared bitwise with the same kernels on
 * accel_malloc'd copies; every misuse must give its status with a message naming the function,
 * and the device must still compute afterwards. Host memory (malloc) is what the CPU backend
 * registers; a backend that cannot use it (OpenCL without fine-grained system SVM) must say
 * UNSUPPORTED, and the cases then run on memory it can register that is not an allocation:
 * accel_host_alloc's (fine-grained SVM of the device's context on OpenCL). The DLPack cases
 * need a backend with a DLPack device type (not OpenCL: DLPack's OpenCL tensors are cl_mem).
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_interop.h"
#include "accel/accel_kernels.h"
#include "interop_check.h"

#define N 4096

static accel_device_t *dev;
static accel_stream_t *stream;
static float *scale_dev; /* device scalar 0.75 */
static float *norm_dev;
static bool use_host_alloc; /* buffers from accel_host_alloc instead of malloc */

static float *host_buffer(size_t n, float seed) {
  float *p = NULL;
  if (use_host_alloc) EXPECT(accel_host_alloc(dev, n * sizeof(float), (void **)&p), ACCEL_OK);
  else p = aligned_alloc(64, n * sizeof(float));
  for (size_t i = 0; i < n; ++i) p[i] = seed + (float)((i * 7919u) % 1000u) / 997.0f - 0.5f;
  return p;
}

static void buffer_free(float *p) {
  if (use_host_alloc) EXPECT(accel_host_free(dev, p), ACCEL_OK);
  else free(p);
}

/* scale by 0.75 then the L2 norm, on t (n floats at p) — the work compared bitwise. */
static void run_kernels(float *p, size_t n, float *norm_out) {
  accel_tensor_t t = {p, n, ACCEL_F32};
  EXPECT(accel_scale(stream, &t, 1, scale_dev), ACCEL_OK);
  EXPECT(accel_multi_tensor_norm(stream, &t, 1, 2.0f, norm_dev), ACCEL_OK);
  EXPECT(accel_memcpy_async(stream, norm_out, norm_dev, sizeof(float)), ACCEL_OK);
  EXPECT(accel_stream_synchronize(stream), ACCEL_OK);
}

/* The same kernels on an accel_malloc'd copy of src: the reference results. */
static void reference(const float *src, size_t n, float *out, float *norm_out) {
  float *d = NULL;
  EXPECT(accel_malloc(dev, n * sizeof(float), (void **)&d), ACCEL_OK);
  EXPECT(accel_memcpy(dev, d, src, n * sizeof(float)), ACCEL_OK);
  run_kernels(d, n, norm_out);
  EXPECT(accel_memcpy(dev, out, d, n * sizeof(float)), ACCEL_OK);
  EXPECT(accel_free(dev, d), ACCEL_OK);
}

/* The device still computes exactly after the misuse above. */
static void check_usable(const char *after) {
  float *d = NULL, host[256], norm = 0;
  EXPECT(accel_malloc(dev, sizeof host, (void **)&d), ACCEL_OK);
  accel_tensor_t t = {d, 256, ACCEL_F32};
  EXPECT(accel_fill(stream, &t, 1, 2.0f), ACCEL_OK);
  EXPECT(accel_multi_tensor_norm(stream, &t, 1, 1.0f, norm_dev), ACCEL_OK);
  EXPECT(accel_memcpy_async(stream, &norm, norm_dev, sizeof norm), ACCEL_OK);
  EXPECT(accel_memcpy_async(stream, host, d, sizeof host), ACCEL_OK);
  EXPECT(accel_stream_synchronize(stream), ACCEL_OK);
  CHECK(norm == 512.0f && host[255] == 2.0f, "device wrong after %s: norm %g", after, norm);
  EXPECT(accel_free(dev, d), ACCEL_OK);
}

/* ------------------------------------------------------------------------------------------- */

static void test_register_zero_copy(void) {
  float *host = host_buffer(N, 1.0f), *want = malloc(N * sizeof(float)), want_norm, got_norm;
  reference(host, N, want, &want_norm);
  void *dptr = NULL;
  EXPECT(accel_memory_register(dev, host, N * sizeof(float), 0, &dptr), ACCEL_OK);
  CHECK(dptr == host, "device_ptr %p differs from the host pointer %p", dptr, (void *)host);
  run_kernels(host, N, &got_norm);
  CHECK(memcmp(host, want, N * sizeof(float)) == 0, "registered memory: results differ");
  CHECK(memcmp(&got_norm, &want_norm, sizeof got_norm) == 0, "norm %.9g vs %.9g", got_norm,
        want_norm);
  /* a sub-range and copies in and out of it */
  accel_tensor_t half = {host + N / 2, N / 2, ACCEL_F32};
  EXPECT(accel_scale(stream, &half, 1, scale_dev), ACCEL_OK);
  EXPECT(accel_memset_async(stream, host, 0, 16), ACCEL_OK);
  EXPECT(accel_stream_synchronize(stream), ACCEL_OK);
  CHECK(host[0] == 0.0f && host[4] == want[4], "memset on registered memory");
  /* ranges that leave it are refused, as for allocations */
  accel_tensor_t past = {host + 1, N, ACCEL_F32};
  EXPECT(accel_scale(stream, &past, 1, scale_dev), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_scale", "not inside a live allocation");
  EXPECT(accel_memset_async(stream, host + N - 1, 0, 8), ACCEL_ERROR_INVALID_ARGUMENT);
  /* overlaps */
  EXPECT(accel_memory_register(dev, host + 8, 64, 0, &dptr), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_memory_register", "overlaps");
  EXPECT(accel_memory_register(dev, scale_dev, 4, 0, &dptr), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_memory_register", "allocation");
  EXPECT(accel_free(dev, host), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_free", "accel_memory_unregister");
  /* ends */
  EXPECT(accel_memory_unregister(dev, host + 1), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_memory_unregister", "not its start");
  EXPECT(accel_memory_unregister(dev, scale_dev), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_memory_unregister", "not registered");
  accel_tensor_t all = {host, N, ACCEL_F32};
  EXPECT(accel_scale(stream, &all, 1, scale_dev), ACCEL_ERROR_INVALID_ARGUMENT); /* after */
  EXPECT(accel_memory_register(dev, host, N * sizeof(float), 0, &dptr), ACCEL_OK); /* again */
  EXPECT(accel_scale(stream, &all, 1, scale_dev), ACCEL_OK);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  check_usable("registration misuse");
  buffer_free(host);
  free(want);
}

static void test_register_bad_input(void) {
  float *host = host_buffer(64, 0);
  void *dptr = NULL;
  EXPECT(accel_memory_register(NULL, host, 64, 0, &dptr), ACCEL_ERROR_INVALID_HANDLE);
  EXPECT(accel_memory_register(dev, NULL, 64, 0, &dptr), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_memory_register(dev, host, 0, 0, &dptr), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_memory_register(dev, host, 64, 0, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_memory_register(dev, host, 64, 0x80, &dptr), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_memory_register", "flags");
  EXPECT(accel_memory_register(dev, host, SIZE_MAX, 0, &dptr), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_memory_register", "wraps");
  EXPECT(accel_memory_unregister(dev, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_memory_unregister(NULL, host), ACCEL_ERROR_INVALID_HANDLE);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_ERROR_INVALID_ARGUMENT);
  buffer_free(host);
}

static void test_read_only(void) {
  float *host = host_buffer(N, 2.0f), norm = 0, want_norm = 0;
  float *want = malloc(N * sizeof(float));
  reference(host, N, want, &want_norm);
  void *dptr = NULL;
  EXPECT(accel_memory_register(dev, host, N * sizeof(float), ACCEL_REGISTER_READ_ONLY, &dptr),
         ACCEL_OK);
  accel_tensor_t t = {host, N, ACCEL_F32};
  EXPECT(accel_scale(stream, &t, 1, scale_dev), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_scale", "read-only");
  EXPECT(accel_memset_async(stream, host, 0, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_memset_async", "read-only");
  EXPECT(accel_memcpy_async(stream, host, scale_dev, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  /* reads are fine */
  EXPECT(accel_multi_tensor_norm(stream, &t, 1, 2.0f, norm_dev), ACCEL_OK);
  EXPECT(accel_memcpy_async(stream, &norm, norm_dev, 4), ACCEL_OK);
  EXPECT(accel_stream_synchronize(stream), ACCEL_OK);
  float ref_norm = 0;
  {
    float *d = NULL;
    EXPECT(accel_malloc(dev, N * sizeof(float), (void **)&d), ACCEL_OK);
    EXPECT(accel_memcpy(dev, d, host, N * sizeof(float)), ACCEL_OK);
    accel_tensor_t dt = {d, N, ACCEL_F32};
    EXPECT(accel_multi_tensor_norm(stream, &dt, 1, 2.0f, norm_dev), ACCEL_OK);
    EXPECT(accel_memcpy_async(stream, &ref_norm, norm_dev, 4), ACCEL_OK);
    EXPECT(accel_stream_synchronize(stream), ACCEL_OK);
    EXPECT(accel_free(dev, d), ACCEL_OK);
  }
  CHECK(memcmp(&norm, &ref_norm, 4) == 0, "read-only norm %.9g vs %.9g", norm, ref_norm);
  /* the same list, cached, after re-registering writable at the same address: allowed; and
   * read-only again: refused again (the cached validation must not remember the old flags) */
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  EXPECT(accel_memory_register(dev, host, N * sizeof(float), 0, &dptr), ACCEL_OK);
  EXPECT(accel_scale(stream, &t, 1, scale_dev), ACCEL_OK);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  EXPECT(accel_memory_register(dev, host, N * sizeof(float), ACCEL_REGISTER_READ_ONLY, &dptr),
         ACCEL_OK);
  EXPECT(accel_scale(stream, &t, 1, scale_dev), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  buffer_free(host);
  free(want);
}

static void test_register_graph(void) {
  float *host = host_buffer(N, 3.0f);
  float *want = malloc(N * sizeof(float));
  memcpy(want, host, N * sizeof(float));
  void *dptr = NULL;
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL;
  EXPECT(accel_memory_register(dev, host, N * sizeof(float), 0, &dptr), ACCEL_OK);
  EXPECT(accel_stream_create(dev, &s), ACCEL_OK);
  EXPECT(accel_graph_create(dev, &g), ACCEL_OK);
  accel_tensor_t t = {host, N, ACCEL_F32};
  EXPECT(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL), ACCEL_OK);
  EXPECT(accel_scale(s, &t, 1, scale_dev), ACCEL_OK);
  /* registration changes are illegal while a GLOBAL capture runs */
  float other[16];
  EXPECT(accel_memory_register(dev, other, sizeof other, 0, &dptr),
         ACCEL_ERROR_ILLEGAL_IN_CAPTURE);
  EXPECT(accel_graph_capture_end(g), ACCEL_ERROR_CAPTURE_INVALIDATED);
  EXPECT(accel_graph_reset(g), ACCEL_OK);
  EXPECT(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_RELAXED), ACCEL_OK);
  EXPECT(accel_scale(s, &t, 1, scale_dev), ACCEL_OK);
  /* an open capture holds it too */
  EXPECT(accel_memory_unregister(dev, host), ACCEL_ERROR_STATE);
  EXPECT(accel_graph_capture_end(g), ACCEL_OK);
  for (int r = 0; r < 3; ++r) EXPECT(accel_graph_replay(g, s), ACCEL_OK);
  EXPECT(accel_stream_synchronize(s), ACCEL_OK);
  /* three replays, each a real scale: compare with the same on an allocation */
  float *d = NULL;
  EXPECT(accel_malloc(dev, N * sizeof(float), (void **)&d), ACCEL_OK);
  EXPECT(accel_memcpy(dev, d, want, N * sizeof(float)), ACCEL_OK);
  accel_tensor_t dt = {d, N, ACCEL_F32};
  for (int r = 0; r < 3; ++r) EXPECT(accel_scale(stream, &dt, 1, scale_dev), ACCEL_OK);
  EXPECT(accel_stream_synchronize(stream), ACCEL_OK); /* the default stream does not wait */
  EXPECT(accel_memcpy(dev, want, d, N * sizeof(float)), ACCEL_OK);
  EXPECT(accel_free(dev, d), ACCEL_OK);
  CHECK(memcmp(host, want, N * sizeof(float)) == 0, "graph replays on registered memory");
  /* the graph holds the range */
  EXPECT(accel_memory_unregister(dev, host), ACCEL_ERROR_STATE);
  EXPECT_MSG("accel_memory_unregister", "graph");
  EXPECT(accel_graph_replay(g, s), ACCEL_OK); /* still works */
  EXPECT(accel_stream_synchronize(s), ACCEL_OK);
  EXPECT(accel_graph_destroy(g), ACCEL_OK);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  EXPECT(accel_stream_destroy(s), ACCEL_OK);
  check_usable("graph over registered memory");
  buffer_free(host);
  free(want);
}

/* ------------------------------------------------------------------------------------------- */
/* DLPack */

static int deleted; /* deleter calls of the producer below */

static void count_deleter_v(accel_dl_managed_tensor_versioned_t *self) {
  deleted++;
  (void)self;
}

static void count_deleter_l(accel_dl_managed_tensor_t *self) {
  deleted++;
  (void)self;
}

static accel_dl_device_t dl_dev(void) {
  accel_dl_device_t d = {0, 0};
  EXPECT(accel_device_dlpack_device(dev, &d), ACCEL_OK);
  return d;
}

static accel_dl_tensor_t dl_of(void *data, int64_t *shape, int32_t ndim) {
  return (accel_dl_tensor_t){.data = data, .device = dl_dev(), .ndim = ndim,
                             .dtype = {ACCEL_DL_FLOAT, 32, 1}, .shape = shape};
}

static void test_dlpack_view(void) {
  float buf[64];
  int64_t shape[3] = {2, 4, 8}, strides[3] = {32, 8, 1};
  accel_tensor_t v;
  accel_dl_tensor_t t = dl_of(buf, shape, 3);
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_OK);
  CHECK(v.data == buf && v.numel == 64 && v.dtype == ACCEL_F32, "view of a 2x4x8 tensor");
  t.strides = strides;
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_OK);
  strides[1] = 16; /* a slice: not compact */
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_UNSUPPORTED);
  EXPECT_MSG("accel_dlpack_view", "strides");
  int64_t one[2] = {1, 64}, odd[2] = {12345, 1}; /* extent-1 dimensions may have any stride */
  t = dl_of(buf, one, 2);
  t.strides = odd;
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_OK);
  t = dl_of(buf, NULL, 0); /* a scalar */
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_OK);
  CHECK(v.numel == 1, "0-d tensor numel %zu", v.numel);
  t = dl_of(buf, shape, 3);
  t.byte_offset = 8;
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_OK);
  CHECK(v.data == (char *)buf + 8, "byte_offset applied");
  t.byte_offset = 2;
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_dlpack_view", "aligned");
  t = dl_of(buf, shape, 3);
  t.dtype = (accel_dl_dtype_t){ACCEL_DL_INT, 32, 1};
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_UNSUPPORTED);
  EXPECT_MSG("accel_dlpack_view", "dtype");
  t.dtype = (accel_dl_dtype_t){ACCEL_DL_FLOAT, 64, 1};
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_UNSUPPORTED);
  t.dtype = (accel_dl_dtype_t){ACCEL_DL_FLOAT, 32, 4};
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_UNSUPPORTED);
  EXPECT_MSG("accel_dlpack_view", "lanes");
  t.dtype = (accel_dl_dtype_t){ACCEL_DL_BFLOAT, 16, 1};
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_OK);
  CHECK(v.dtype == ACCEL_BF16 && v.numel == 64, "bfloat16 view");
  t.dtype = (accel_dl_dtype_t){ACCEL_DL_FLOAT, 16, 1};
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_OK);
  CHECK(v.dtype == ACCEL_F16, "float16 view");
  t = dl_of(buf, shape, 3);
  t.device.device_type = t.device.device_type == ACCEL_DL_CPU ? ACCEL_DL_CUDA : ACCEL_DL_CPU;
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_dlpack_view", "DLPack device");
  t = dl_of(buf, shape, 3);
  t.device.device_id = 7;
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_INVALID_ARGUMENT);
  t = dl_of(buf, shape, -1);
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_INVALID_ARGUMENT);
  t = dl_of(buf, NULL, 2);
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_INVALID_ARGUMENT);
  int64_t neg[1] = {-4}, huge[3] = {INT64_MAX, INT64_MAX, 4};
  t = dl_of(buf, neg, 1);
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_INVALID_ARGUMENT);
  t = dl_of(buf, huge, 3);
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_dlpack_view", "overflow");
  t = dl_of(NULL, shape, 3);
  EXPECT(accel_dlpack_view(dev, &t, &v), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_dlpack_view(dev, NULL, &v), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_dlpack_view(dev, &t, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_dlpack_view(NULL, &t, &v), ACCEL_ERROR_INVALID_HANDLE);
}

static void test_dlpack_import(void) {
  float *host = host_buffer(N, 4.0f), *want = malloc(N * sizeof(float)), want_norm, got_norm;
  reference(host, N, want, &want_norm);
  int64_t shape[2] = {N / 64, 64};
  accel_dl_managed_tensor_versioned_t m = {.version = {1, 0}, .deleter = count_deleter_v,
                                           .dl_tensor = dl_of(host, shape, 2)};
  accel_tensor_t v;
  accel_dlpack_import_t *imp = NULL;
  deleted = 0;
  EXPECT(accel_dlpack_import(dev, &m, 0, &v, &imp), ACCEL_OK);
  CHECK(v.data == host && v.numel == N, "import view");
  run_kernels(v.data, v.numel, &got_norm);
  CHECK(memcmp(host, want, N * sizeof(float)) == 0, "imported memory: results differ");
  CHECK(memcmp(&got_norm, &want_norm, 4) == 0, "norm %.9g vs %.9g", got_norm, want_norm);
  /* the import's registration is the import's */
  EXPECT(accel_memory_unregister(dev, host), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_memory_unregister", "accel_dlpack_release");
  CHECK(deleted == 0, "deleter called before the release");
  EXPECT(accel_dlpack_release(imp), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  CHECK(deleted == 1, "deleter called %d times after the release", deleted);
  EXPECT(accel_dlpack_release(imp), ACCEL_ERROR_INVALID_HANDLE);
  EXPECT_MSG("accel_dlpack_release", "DLPack import");
  EXPECT(accel_dlpack_release(NULL), ACCEL_ERROR_INVALID_HANDLE);
  accel_tensor_t all = {host, N, ACCEL_F32};
  EXPECT(accel_scale(stream, &all, 1, scale_dev), ACCEL_ERROR_INVALID_ARGUMENT); /* after */

  /* versions from the future, read-only, borrow, bad flags: nothing owned on failure */
  m.version.major = 2;
  EXPECT(accel_dlpack_import(dev, &m, 0, &v, &imp), ACCEL_ERROR_UNSUPPORTED);
  EXPECT_MSG("accel_dlpack_import", "2.0");
  m.version = (accel_dl_version_t){1, 7}; /* a newer minor version is ABI compatible */
  m.flags = ACCEL_DL_FLAG_READ_ONLY;
  EXPECT(accel_dlpack_import(dev, &m, 0x10, &v, &imp), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_dlpack_import(dev, NULL, 0, &v, &imp), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_dlpack_import(dev, &m, 0, NULL, &imp), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_dlpack_import(dev, &m, 0, &v, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  m.dl_tensor.dtype.code = ACCEL_DL_INT;
  EXPECT(accel_dlpack_import(dev, &m, 0, &v, &imp), ACCEL_ERROR_UNSUPPORTED);
  m.dl_tensor.dtype.code = ACCEL_DL_FLOAT;
  CHECK(deleted == 1, "a failed import called the deleter");
  EXPECT(accel_dlpack_import(dev, &m, ACCEL_DLPACK_IMPORT_BORROW, &v, &imp), ACCEL_OK);
  EXPECT(accel_scale(stream, &v, 1, scale_dev), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_scale", "read-only");
  EXPECT(accel_multi_tensor_norm(stream, &v, 1, 2.0f, norm_dev), ACCEL_OK);
  EXPECT(accel_dlpack_release(imp), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  CHECK(deleted == 1, "a borrowed import called the deleter");

  /* legacy, inside a user registration: the registration is held while the import lives */
  void *dptr = NULL;
  EXPECT(accel_memory_register(dev, host, N * sizeof(float), 0, &dptr), ACCEL_OK);
  accel_dl_managed_tensor_t lm = {.dl_tensor = dl_of(host + 64, shape, 1),
                                  .deleter = count_deleter_l};
  EXPECT(accel_dlpack_import_legacy(dev, &lm, 0, &v, &imp), ACCEL_OK);
  CHECK(v.data == host + 64 && v.numel == (size_t)N / 64, "legacy view");
  EXPECT(accel_memory_unregister(dev, host), ACCEL_ERROR_STATE);
  EXPECT_MSG("accel_memory_unregister", "DLPack import");
  EXPECT(accel_dlpack_release(imp), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  CHECK(deleted == 2, "legacy deleter: %d calls", deleted);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  /* half in a registration, half out: refused */
  EXPECT(accel_memory_register(dev, host, 256, 0, &dptr), ACCEL_OK);
  EXPECT(accel_dlpack_import_legacy(dev, &lm, 0, &v, &imp), ACCEL_OK); /* beyond it: its own */
  EXPECT(accel_dlpack_release(imp), ACCEL_OK);
  lm.dl_tensor.data = host + 32;
  EXPECT(accel_dlpack_import_legacy(dev, &lm, 0, &v, &imp), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_dlpack_import_legacy", "overlaps");
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  CHECK(deleted == 3, "deleter calls: %d", deleted);
  check_usable("DLPack import misuse");
  buffer_free(host);
  free(want);
}

/* A graph captured over an imported tensor keeps it: the deleter waits for the graph. */
static void test_dlpack_graph(void) {
  float *host = host_buffer(N, 5.0f);
  int64_t shape[1] = {N};
  accel_dl_managed_tensor_versioned_t m = {.version = {1, 0}, .deleter = count_deleter_v,
                                           .dl_tensor = dl_of(host, shape, 1)};
  accel_tensor_t v;
  accel_dlpack_import_t *imp = NULL;
  accel_stream_t *s = NULL;
  deleted = 0;
  EXPECT(accel_dlpack_import(dev, &m, 0, &v, &imp), ACCEL_OK);
  EXPECT(accel_stream_create(dev, &s), ACCEL_OK);
  accel_graph_t *g = graph_scaling(dev, s, &v, scale_dev);
  EXPECT(accel_dlpack_release(imp), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  CHECK(deleted == 0, "deleter ran while a graph uses the tensor");
  const float before = host[5];
  EXPECT(accel_graph_replay(g, s), ACCEL_OK);
  EXPECT(accel_stream_synchronize(s), ACCEL_OK);
  CHECK(host[5] == before * 0.75f, "replay after the release: %g vs %g", host[5],
        before * 0.75f);
  EXPECT(accel_graph_destroy(g), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  CHECK(deleted == 1, "deleter calls after the graph: %d", deleted);
  EXPECT(accel_stream_destroy(s), ACCEL_OK);
  /* the range is free again */
  void *dptr = NULL;
  EXPECT(accel_memory_register(dev, host, N * sizeof(float), 0, &dptr), ACCEL_OK);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  buffer_free(host);
}

static void test_dlpack_export(void) {
  float *d = NULL;
  EXPECT(accel_malloc(dev, 1000 * sizeof(float), (void **)&d), ACCEL_OK);
  accel_tensor_t t = {d + 8, 100, ACCEL_F32};
  accel_dl_managed_tensor_versioned_t *m = NULL;
  EXPECT(accel_dlpack_export(dev, &t, &m), ACCEL_OK);
  accel_dl_device_t want = dl_dev();
  CHECK(m && m->version.major == 1 && m->dl_tensor.data == d + 8 && m->dl_tensor.ndim == 1 &&
            m->dl_tensor.shape[0] == 100 && m->dl_tensor.dtype.code == ACCEL_DL_FLOAT &&
            m->dl_tensor.dtype.bits == 32 && m->dl_tensor.dtype.lanes == 1 &&
            m->dl_tensor.device.device_type == want.device_type && m->deleter && !m->flags,
        "exported DLTensor fields");
  /* an export imported back is a view of the same memory */
  accel_tensor_t v;
  accel_dlpack_import_t *imp = NULL;
  EXPECT(accel_dlpack_import(dev, m, ACCEL_DLPACK_IMPORT_BORROW, &v, &imp), ACCEL_OK);
  CHECK(v.data == d + 8 && v.numel == 100, "round trip");
  EXPECT(accel_fill(stream, &v, 1, 1.0f), ACCEL_OK);
  EXPECT(accel_dlpack_release(imp), ACCEL_OK);
  /* accel_free while exported: deferred until the deleter */
  accel_memory_stats_t st0, st1;
  EXPECT(accel_device_synchronize(dev), ACCEL_OK); /* the import's retired release runs */
  EXPECT(accel_free(dev, d), ACCEL_OK);
  EXPECT(accel_memory_stats(dev, &st0), ACCEL_OK);
  EXPECT(accel_fill(stream, &t, 1, 1.0f), ACCEL_ERROR_INVALID_ARGUMENT); /* freed for the user */
  void (*deleter)(accel_dl_managed_tensor_versioned_t *) = m->deleter;
  deleter(m);
  EXPECT(accel_memory_stats(dev, &st1), ACCEL_OK);
  CHECK(st1.allocated_bytes < st0.allocated_bytes, "the deferred free completes at the deleter "
                                                   "(%llu -> %llu)",
        (unsigned long long)st0.allocated_bytes, (unsigned long long)st1.allocated_bytes);
  deleter(m); /* misuse: logged, ignored */
  /* legacy; export of what is not an allocation */
  EXPECT(accel_malloc(dev, 256, (void **)&d), ACCEL_OK);
  t = (accel_tensor_t){d, 64, ACCEL_BF16};
  accel_dl_managed_tensor_t *lm = NULL;
  EXPECT(accel_dlpack_export_legacy(dev, &t, &lm), ACCEL_OK);
  CHECK(lm && lm->dl_tensor.dtype.code == ACCEL_DL_BFLOAT && lm->dl_tensor.dtype.bits == 16 &&
            lm->dl_tensor.shape[0] == 64,
        "legacy export fields");
  lm->deleter(lm);
  t.numel = 1000; /* past the allocation */
  EXPECT(accel_dlpack_export(dev, &t, &m), ACCEL_ERROR_INVALID_ARGUMENT);
  float host[4];
  t = (accel_tensor_t){host, 4, ACCEL_F32};
  EXPECT(accel_dlpack_export(dev, &t, &m), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_dlpack_export", "allocation");
  t.dtype = (accel_dtype_t)42;
  EXPECT(accel_dlpack_export_legacy(dev, &t, &lm), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_dlpack_export(dev, NULL, &m), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_dlpack_export(NULL, &t, &m), ACCEL_ERROR_INVALID_HANDLE);
  EXPECT(accel_free(dev, d), ACCEL_OK);
  check_usable("DLPack export misuse");
}

/* Threads that each register their own buffer, compute on it (eagerly and through a captured
 * graph on their own stream) and unregister it, while the others do the same: unregister
 * drains the device while other threads submit, capture and replay. Every result is exact. */
#define WORKERS 3
#define ROUNDS 60

static void *worker(void *arg) {
  const int id = (int)(intptr_t)arg;
  float *buf = host_buffer(1024, 0);
  accel_stream_t *s = NULL;
  int bad = 0;
  if (accel_stream_create(dev, &s) != ACCEL_OK) return (void *)(intptr_t)1;
  for (int r = 0; r < ROUNDS && !bad; ++r) {
    void *dptr = NULL;
    for (int i = 0; i < 1024; ++i) buf[i] = (float)(id + 1);
    bad |= accel_memory_register(dev, buf, 1024 * sizeof(float), 0, &dptr) != ACCEL_OK;
    accel_tensor_t t = {buf, 1024, ACCEL_F32};
    accel_graph_t *g = NULL;
    bad |= accel_scale(s, &t, 1, scale_dev) != ACCEL_OK; /* x 0.75 */
    if (r % 2) { /* and once more through a graph, replayed twice */
      bad |= accel_graph_create(dev, &g) != ACCEL_OK;
      bad |= accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_RELAXED) != ACCEL_OK;
      bad |= accel_scale(s, &t, 1, scale_dev) != ACCEL_OK;
      bad |= accel_graph_capture_end(g) != ACCEL_OK;
      bad |= accel_graph_replay(g, s) != ACCEL_OK || accel_graph_replay(g, s) != ACCEL_OK;
      bad |= accel_memory_unregister(dev, buf) != ACCEL_ERROR_STATE;
      bad |= accel_graph_destroy(g) != ACCEL_OK;
    }
    bad |= accel_memory_unregister(dev, buf) != ACCEL_OK; /* waits for the work above */
    const float want = (float)(id + 1) * (r % 2 ? 0.75f * 0.75f * 0.75f : 0.75f);
    for (int i = 0; i < 1024 && !bad; ++i) bad |= buf[i] != want;
    if (bad) fprintf(stderr, "worker %d round %d: %s (buf[0] %g, want %g)\n", id, r,
                     accel_last_error(), buf[0], want);
  }
  accel_stream_destroy(s);
  buffer_free(buf);
  return (void *)(intptr_t)bad;
}

static void test_threads(void) {
  pthread_t th[WORKERS];
  for (int i = 0; i < WORKERS; ++i) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < WORKERS; ++i) {
    void *bad = NULL;
    pthread_join(th[i], &bad);
    CHECK(bad == NULL, "worker %d failed", i);
  }
  check_usable("concurrent registrations");
}

/* OpenCL: SVM the runtime allocated itself in accel's context (clSVMAlloc over the context of
 * accel_device_native) registers; its interior and malloc memory do not. Needs the native
 * handles (looked up at run time, so the case runs once they are part of the build). */
typedef void *(*svm_alloc_fn)(void *context, uint64_t flags, size_t size, unsigned alignment);
typedef void (*svm_free_fn)(void *context, void *ptr);
typedef accel_status_t (*device_native_fn)(accel_device_t *device, accel_native_t *out);

static void test_opencl_svm(void) {
  device_native_fn native = (device_native_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "accel_device_native");
  void *cl = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  svm_alloc_fn svm_alloc = cl ? (svm_alloc_fn)(uintptr_t)dlsym(cl, "clSVMAlloc") : NULL;
  svm_free_fn svm_free = cl ? (svm_free_fn)(uintptr_t)dlsym(cl, "clSVMFree") : NULL;
  accel_native_t nat = {.struct_size = sizeof nat};
  if (!native || !svm_alloc || !svm_free || native(dev, &nat) != ACCEL_OK || !nat.context) {
    printf("opencl: clSVMAlloc case left out (accel_device_native %s in this build%s)\n",
           native ? "is" : "is not", native ? ", but gave no context" : "");
    if (cl) dlclose(cl);
    return;
  }
  float *svm = svm_alloc(nat.context, 1 /* CL_MEM_READ_WRITE */, N * sizeof(float), 0);
  CHECK(svm != NULL, "clSVMAlloc");
  if (!svm) return;
  float *src = malloc(N * sizeof(float)), *want = malloc(N * sizeof(float)), *got = malloc(N * sizeof(float));
  for (size_t i = 0; i < N; ++i) src[i] = (float)((i * 7919u) % 1000u) / 997.0f - 0.5f;
  float want_norm, got_norm;
  reference(src, N, want, &want_norm);
  void *dptr = NULL;
  EXPECT(accel_memory_register(dev, svm + 16, 64, 0, &dptr), ACCEL_ERROR_UNSUPPORTED);
  EXPECT_MSG("accel_memory_register", "SVM");
  EXPECT(accel_memory_register(dev, svm, N * sizeof(float), 0, &dptr), ACCEL_OK);
  EXPECT(accel_memcpy(dev, svm, src, N * sizeof(float)), ACCEL_OK);
  run_kernels(svm, N, &got_norm);
  EXPECT(accel_memcpy(dev, got, svm, N * sizeof(float)), ACCEL_OK);
  CHECK(memcmp(got, want, N * sizeof(float)) == 0, "clSVMAlloc memory: results differ");
  CHECK(memcmp(&got_norm, &want_norm, 4) == 0, "norm %.9g vs %.9g", got_norm, want_norm);
  EXPECT(accel_memory_unregister(dev, svm), ACCEL_OK);
  svm_free(nat.context, svm);
  free(src);
  free(want);
  free(got);
  dlclose(cl);
  printf("opencl: clSVMAlloc memory of the device's context registered and used in place\n");
}

int main(int argc, char **argv) {
  const char *selector = argc > 1 ? argv[1] : "cpu";
  const int opened = open_device(selector, &dev);
  if (opened) return opened;
  accel_status_t st;
  EXPECT(accel_stream_create(dev, &stream), ACCEL_OK);
  EXPECT(accel_malloc(dev, 64, (void **)&scale_dev), ACCEL_OK);
  norm_dev = scale_dev + 1;
  const float scale = 0.75f;
  EXPECT(accel_memcpy(dev, scale_dev, &scale, sizeof scale), ACCEL_OK);

  test_register_bad_input();
  float probe[16];
  void *dptr = NULL;
  st = accel_memory_register(dev, probe, sizeof probe, 0, &dptr);
  if (st == ACCEL_OK) {
    EXPECT(accel_memory_unregister(dev, probe), ACCEL_OK);
  } else {
    CHECK(st == ACCEL_ERROR_UNSUPPORTED, "registering host memory: %s", accel_status_name(st));
    printf("%s: malloc memory refused as it must be here: %s\n", selector, accel_last_error());
    use_host_alloc = true;
    float *p = host_buffer(16, 0);
    st = accel_memory_register(dev, p, 64, 0, &dptr);
    if (st == ACCEL_OK) EXPECT(accel_memory_unregister(dev, p), ACCEL_OK);
    else printf("%s: accel_host_alloc memory cannot be registered either (%s)\n", selector,
                accel_last_error());
    buffer_free(p);
  }
  if (strncmp(selector, "opencl", 6) == 0) test_opencl_svm();
  if (st == ACCEL_OK) {
    test_register_zero_copy();
    test_read_only();
    test_register_graph();
    test_threads();
  }
  accel_dl_device_t dl;
  accel_status_t dl_st = accel_device_dlpack_device(dev, &dl);
  if (dl_st == ACCEL_OK) {
    test_dlpack_view();
    if (st == ACCEL_OK) {
      test_dlpack_import();
      test_dlpack_graph();
    }
    test_dlpack_export();
  } else {
    CHECK(dl_st == ACCEL_ERROR_UNSUPPORTED, "accel_device_dlpack_device: %s",
          accel_status_name(dl_st));
    printf("%s: no DLPack device (%s): DLPack cases left out\n", selector, accel_last_error());
  }

  EXPECT(accel_free(dev, scale_dev), ACCEL_OK);
  EXPECT(accel_stream_destroy(stream), ACCEL_OK);
  EXPECT(accel_device_close(dev), ACCEL_OK);
  printf("%s: %s (%d failures)\n", selector, failures ? "FAIL" : "ok", failures);
  return failures ? 1 : 0;
}
