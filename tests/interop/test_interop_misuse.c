/*
 * Interop under hostile use (issue 31) on one device (argv[1], "cpu" or "opencl"); each case
 * failed before the fix it names, and the device must compute exactly afterwards:
 *  - host-free: accel_host_free of an accel_host_alloc block that a registration covers (all of
 *    it, or part) is STATE naming the registration, which keeps working; after the unregister
 *    the free succeeds. Also under a DLPack import of the block (CPU). Before: OK, and the
 *    registration was left over freed memory (ASan: heap-use-after-free in the next fill).
 *  - cross-device (opencl): an OpenCL allocation and host block registered with the CPU
 *    device: accel_free / accel_host_free on the OpenCL device are STATE naming cpu:0.
 *  - shared-imports (DLPack devices): three imports of one range (the whole of it twice, and a
 *    part) share one registration: releasing the first leaves the others' views working, a
 *    graph over it keeps it after every import is released, and the deleters run once the
 *    last holder let go. Before: the first release ended the registration the others pinned.
 *  - host-function-deleter (DLPack devices): a deleter that synchronizes the device, whose
 *    import's release became ready while a host function of another stream allocates: the
 *    deleter does not run inside that host function (before: it did, and deadlocked), but in
 *    the next accel_device_synchronize.
 *  - export-message (DLPack devices): unregistering a range a DLPack export holds is STATE
 *    saying that the consumer's deleter lets go (before: it suggested resetting a graph).
 * Cases that do not apply to the device print why. A case that hangs is ended by an alarm.
 * Usage: test_interop_misuse DEVICE [CASE] (CASE: one of the names above; default all).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"
#include "accel/accel_interop.h"
#include "accel/accel_kernels.h"
#include "interop_check.h"

#define N 1024 /* floats per buffer */
#define BYTES (N * sizeof(float))

static accel_device_t *dev;
static accel_stream_t *stream;
static float *scale_dev; /* device scalar 0.5 */
static const char *selector;
static const char *only; /* the one case to run, or NULL */

#define RUN(name, fn)                                 \
  do {                                                \
    if (!only || strcmp(only, name) == 0) fn();       \
  } while (0)

/* A case that deadlocks fails the test instead of hanging it. */
static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "FAIL: a case hung (deadlock) and was ended by the alarm\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
  _exit(1);
}

/* Every element of p (n floats) equals want. */
static bool all_equal(const float *p, size_t n, float want) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != want) return false;
  return true;
}

/* The device still computes exactly: a fill and a norm on an allocation. */
static void check_usable(const char *after) {
  float *d = NULL, norm = 0;
  EXPECT(accel_malloc(dev, BYTES + 4, (void **)&d), ACCEL_OK);
  accel_tensor_t t = {d, N, ACCEL_F32};
  EXPECT(accel_fill(stream, &t, 1, 2.0f), ACCEL_OK);
  EXPECT(accel_multi_tensor_norm(stream, &t, 1, 1.0f, d + N), ACCEL_OK);
  EXPECT(accel_memcpy_async(stream, &norm, d + N, sizeof norm), ACCEL_OK);
  EXPECT(accel_stream_synchronize(stream), ACCEL_OK);
  CHECK(norm == 2.0f * N, "device wrong after %s: norm %g", after, norm);
  EXPECT(accel_free(dev, d), ACCEL_OK);
}

/* Fills the registered range [p, +n floats) with value through the device and reads it back
 * through the host pointer. */
static void fill_through(float *p, size_t n, float value, const char *what) {
  accel_tensor_t t = {p, n, ACCEL_F32};
  EXPECT(accel_fill(stream, &t, 1, value), ACCEL_OK);
  EXPECT(accel_stream_synchronize(stream), ACCEL_OK);
  CHECK(all_equal(p, n, value), "%s: the fill did not land", what);
}

/* ------------------------------------------------------------------------------------------- */

static void case_host_free(void) {
  float *p = NULL;
  void *dptr = NULL;
  EXPECT(accel_host_alloc(dev, BYTES, (void **)&p), ACCEL_OK);
  accel_status_t st = accel_memory_register(dev, p, BYTES, 0, &dptr);
  if (st != ACCEL_OK) {
    printf("host-free: %s cannot register accel_host_alloc memory (%s): case left out\n",
           selector, accel_last_error());
    EXPECT(accel_host_free(dev, p), ACCEL_OK);
    return;
  }
  st = accel_host_free(dev, p);
  CHECK(st == ACCEL_ERROR_STATE, "accel_host_free of a registered block: %s, expected STATE",
        accel_status_name(st));
  if (st == ACCEL_OK) return; /* freed under the registration: touching it would be a UAF */
  EXPECT_MSG("accel_host_free", "accel_memory_unregister");
  fill_through(dptr, N, 3.0f, "after the refused free");
  EXPECT(accel_memory_unregister(dev, p), ACCEL_OK);
  /* a registration of part of the block covers it too */
  EXPECT(accel_memory_register(dev, p + N / 2, BYTES / 2, 0, &dptr), ACCEL_OK);
  EXPECT(accel_host_free(dev, p), ACCEL_ERROR_STATE);
  EXPECT(accel_memory_unregister(dev, p + N / 2), ACCEL_OK);
  EXPECT(accel_host_free(dev, p), ACCEL_OK);
  check_usable("host-free");
  printf("host-free: refused while registered, freed after the unregister\n");
}

/* A DLPack import over an accel_host_alloc block holds it the same way. */
static void case_host_free_import(void) {
  float *p = NULL;
  EXPECT(accel_host_alloc(dev, BYTES, (void **)&p), ACCEL_OK);
  int64_t shape[1] = {N};
  accel_dl_device_t where;
  EXPECT(accel_device_dlpack_device(dev, &where), ACCEL_OK);
  accel_dl_managed_tensor_versioned_t m = {
      .version = {1, 0},
      .dl_tensor = {.data = p, .device = where, .ndim = 1, .dtype = {ACCEL_DL_FLOAT, 32, 1},
                    .shape = shape}};
  accel_tensor_t v;
  accel_dlpack_import_t *imp = NULL;
  EXPECT(accel_dlpack_import(dev, &m, 0, &v, &imp), ACCEL_OK);
  accel_status_t st = accel_host_free(dev, p);
  CHECK(st == ACCEL_ERROR_STATE, "accel_host_free of an imported block: %s, expected STATE",
        accel_status_name(st));
  if (st == ACCEL_OK) return;
  EXPECT_MSG("accel_host_free", "accel_dlpack_release");
  EXPECT(accel_dlpack_release(imp), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  EXPECT(accel_host_free(dev, p), ACCEL_OK);
  printf("host-free: refused under a DLPack import, freed after its release\n");
}

/* OpenCL memory registered with the CPU device: freeing it on OpenCL is refused. */
static void case_cross_device(void) {
  accel_device_t *cpu = NULL;
  if (accel_device_open("cpu", &cpu) != ACCEL_OK) {
    printf("cross-device: no CPU device (%s): case left out\n", accel_last_error());
    return;
  }
  accel_stream_t *cs = NULL;
  EXPECT(accel_stream_create(cpu, &cs), ACCEL_OK);
  float *d = NULL, *h = NULL;
  void *dptr = NULL;
  EXPECT(accel_malloc(dev, BYTES, (void **)&d), ACCEL_OK);
  EXPECT(accel_host_alloc(dev, BYTES, (void **)&h), ACCEL_OK);
  EXPECT(accel_memory_register(cpu, d, BYTES, 0, &dptr), ACCEL_OK);
  EXPECT(accel_memory_register(cpu, h, BYTES, 0, &dptr), ACCEL_OK);
  accel_status_t fst = accel_free(dev, d);
  if (fst == ACCEL_ERROR_STATE) EXPECT_MSG("accel_free", "cpu:0");
  accel_status_t hst = accel_host_free(dev, h);
  CHECK(fst == ACCEL_ERROR_STATE && hst == ACCEL_ERROR_STATE,
        "frees of memory the CPU device registered: accel_free %s, accel_host_free %s, "
        "expected STATE for both", accel_status_name(fst), accel_status_name(hst));
  accel_tensor_t t = {hst == ACCEL_OK ? d : h, N, ACCEL_F32}; /* never a freed host block */
  EXPECT(accel_fill(cs, &t, 1, 4.0f), ACCEL_OK); /* the registration still works */
  EXPECT(accel_stream_synchronize(cs), ACCEL_OK);
  EXPECT(accel_memory_unregister(cpu, d), ACCEL_OK);
  EXPECT(accel_memory_unregister(cpu, h), ACCEL_OK);
  if (fst != ACCEL_OK) EXPECT(accel_free(dev, d), ACCEL_OK);
  if (hst != ACCEL_OK) EXPECT(accel_host_free(dev, h), ACCEL_OK);
  EXPECT(accel_stream_destroy(cs), ACCEL_OK);
  EXPECT(accel_device_close(cpu), ACCEL_OK);
  check_usable("cross-device");
  printf("cross-device: frees refused while the CPU device registers the memory\n");
}

/* ------------------------------------------------------------------------------------------- */
/* DLPack */

static atomic_int deleted;
static atomic_int deleter_sync_status = -1;

static void count_deleter(accel_dl_managed_tensor_versioned_t *self) {
  (void)self;
  atomic_fetch_add(&deleted, 1);
}

/* A deleter that synchronizes the device (the docs say deleters may call accel). */
static void syncing_deleter(accel_dl_managed_tensor_versioned_t *self) {
  (void)self;
  atomic_store(&deleter_sync_status, (int)accel_device_synchronize(dev));
  atomic_fetch_add(&deleted, 1);
}

static accel_dl_managed_tensor_versioned_t managed(float *data, int64_t *shape,
                                                    void (*deleter)(
                                                        accel_dl_managed_tensor_versioned_t *)) {
  accel_dl_device_t where = {0, 0};
  EXPECT(accel_device_dlpack_device(dev, &where), ACCEL_OK);
  return (accel_dl_managed_tensor_versioned_t){
      .version = {1, 0},
      .deleter = deleter,
      .dl_tensor = {.data = data, .device = where, .ndim = 1, .dtype = {ACCEL_DL_FLOAT, 32, 1},
                    .shape = shape}};
}

static void case_shared_imports(void) {
  float *host = aligned_alloc(64, BYTES);
  for (size_t i = 0; i < N; ++i) host[i] = 1.0f;
  int64_t whole[1] = {N}, half[1] = {N / 2};
  accel_dl_managed_tensor_versioned_t ma = managed(host, whole, count_deleter),
                                      mb = managed(host, whole, count_deleter),
                                      mc = managed(host + N / 2, half, count_deleter);
  accel_tensor_t va, vb, vc;
  accel_dlpack_import_t *a = NULL, *b = NULL, *c = NULL;
  atomic_store(&deleted, 0);
  EXPECT(accel_dlpack_import(dev, &ma, 0, &va, &a), ACCEL_OK);
  EXPECT(accel_dlpack_import(dev, &mb, 0, &vb, &b), ACCEL_OK);
  EXPECT(accel_dlpack_import(dev, &mc, 0, &vc, &c), ACCEL_OK);
  /* the first import released: the others still hold the range */
  EXPECT(accel_dlpack_release(a), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  accel_status_t st = accel_scale(stream, &vb, 1, scale_dev);
  CHECK(st == ACCEL_OK, "a kernel on the second import after the first's release: %s (%s)",
        accel_status_name(st), accel_last_error());
  EXPECT(accel_scale(stream, &vc, 1, scale_dev), ACCEL_OK);
  EXPECT(accel_stream_synchronize(stream), ACCEL_OK);
  CHECK(host[0] == 0.5f && host[N - 1] == 0.25f, "scaled in place: %g %g", host[0], host[N - 1]);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_MSG("accel_memory_unregister", "accel_dlpack_release");
  /* a graph over it keeps it after every import is released */
  accel_graph_t *g = graph_scaling(dev, stream, &vb, scale_dev);
  EXPECT(accel_dlpack_release(b), ACCEL_OK);
  EXPECT(accel_dlpack_release(c), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  CHECK(atomic_load(&deleted) == 0, "%d deleters ran while a graph uses the range",
        atomic_load(&deleted));
  EXPECT(accel_scale(stream, &vb, 1, scale_dev), ACCEL_ERROR_INVALID_ARGUMENT); /* released */
  EXPECT(accel_graph_replay(g, stream), ACCEL_OK);
  EXPECT(accel_stream_synchronize(stream), ACCEL_OK);
  CHECK(host[0] == 0.25f, "the replay after every release: %g", host[0]);
  EXPECT(accel_graph_destroy(g), ACCEL_OK);
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  CHECK(atomic_load(&deleted) == 3, "%d deleter calls once the graph is gone, 3 expected",
        atomic_load(&deleted));
  void *dptr = NULL; /* the range is free again */
  EXPECT(accel_memory_register(dev, host, BYTES, 0, &dptr), ACCEL_OK);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  free(host);
  check_usable("shared imports");
  printf("shared-imports: one registration for three imports, ended at the last holder\n");
}

static atomic_int gate, allocated;

static void wait_for_gate(void *user) {
  (void)user;
  while (!atomic_load(&gate)) usleep(1000);
}

static void allocate_in_host_function(void *user) {
  (void)user;
  void *p = NULL;
  if (accel_malloc(dev, 64, &p) == ACCEL_OK && accel_free(dev, p) == ACCEL_OK)
    atomic_store(&allocated, 1);
}

static void case_host_function_deleter(void) {
  float *host = aligned_alloc(64, BYTES);
  int64_t shape[1] = {N};
  accel_dl_managed_tensor_versioned_t m = managed(host, shape, syncing_deleter);
  accel_tensor_t v;
  accel_dlpack_import_t *imp = NULL;
  accel_stream_t *a = NULL, *b = NULL;
  EXPECT(accel_stream_create(dev, &a), ACCEL_OK);
  EXPECT(accel_stream_create(dev, &b), ACCEL_OK);
  atomic_store(&deleted, 0);
  atomic_store(&gate, 0);
  /* the release is fenced behind a busy stream, then becomes ready */
  EXPECT(accel_launch_host_func(a, wait_for_gate, NULL), ACCEL_OK);
  EXPECT(accel_dlpack_import(dev, &m, 0, &v, &imp), ACCEL_OK);
  EXPECT(accel_dlpack_release(imp), ACCEL_OK);
  atomic_store(&gate, 1);
  EXPECT(accel_stream_synchronize(a), ACCEL_OK);
  /* a host function allocates: the ready release must not run its deleter there */
  alarm(60);
  EXPECT(accel_launch_host_func(b, allocate_in_host_function, NULL), ACCEL_OK);
  EXPECT(accel_stream_synchronize(b), ACCEL_OK);
  alarm(0);
  CHECK(atomic_load(&allocated) == 1, "the host function's accel_malloc failed");
  CHECK(atomic_load(&deleted) == 0, "the deleter ran inside the host function");
  EXPECT(accel_device_synchronize(dev), ACCEL_OK);
  CHECK(atomic_load(&deleted) == 1, "%d deleter calls after accel_device_synchronize, 1 expected",
        atomic_load(&deleted));
  CHECK(atomic_load(&deleter_sync_status) == ACCEL_OK,
        "the deleter's accel_device_synchronize returned %d", atomic_load(&deleter_sync_status));
  EXPECT(accel_stream_destroy(a), ACCEL_OK);
  EXPECT(accel_stream_destroy(b), ACCEL_OK);
  free(host);
  check_usable("host-function deleter");
  printf("host-function-deleter: ran in accel_device_synchronize, not in the host function\n");
}

static void case_export_message(void) {
  float *host = aligned_alloc(64, BYTES);
  void *dptr = NULL;
  EXPECT(accel_memory_register(dev, host, BYTES, 0, &dptr), ACCEL_OK);
  accel_tensor_t t = {host + 16, 64, ACCEL_F32};
  accel_dl_managed_tensor_versioned_t *m = NULL;
  EXPECT(accel_dlpack_export(dev, &t, &m), ACCEL_OK);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_ERROR_STATE);
  EXPECT_MSG("accel_memory_unregister", "deleter");
  CHECK(!strstr(accel_last_error(), "accel_graph_reset"),
        "the message for an export suggests a graph reset: %s", accel_last_error());
  if (m) m->deleter(m);
  EXPECT(accel_memory_unregister(dev, host), ACCEL_OK);
  free(host);
  printf("export-message: the unregister names the export's deleter\n");
}

int main(int argc, char **argv) {
  selector = argc > 1 ? argv[1] : "cpu";
  only = argc > 2 ? argv[2] : NULL;
  signal(SIGALRM, on_alarm);
  const int opened = open_device(selector, &dev);
  if (opened) return opened;
  EXPECT(accel_stream_create(dev, &stream), ACCEL_OK);
  EXPECT(accel_malloc(dev, sizeof(float), (void **)&scale_dev), ACCEL_OK);
  const float half = 0.5f;
  EXPECT(accel_memcpy(dev, scale_dev, &half, sizeof half), ACCEL_OK);

  RUN("host-free", case_host_free);
  if (strcmp(selector, "cpu") != 0) RUN("cross-device", case_cross_device);
  accel_dl_device_t where;
  if (accel_device_dlpack_device(dev, &where) == ACCEL_OK) {
    RUN("host-free", case_host_free_import);
    RUN("shared-imports", case_shared_imports);
    RUN("host-function-deleter", case_host_function_deleter);
    RUN("export-message", case_export_message);
  } else {
    printf("%s has no DLPack device (%s): the DLPack cases are left out\n", selector,
           accel_last_error());
  }

  EXPECT(accel_free(dev, scale_dev), ACCEL_OK);
  EXPECT(accel_stream_destroy(stream), ACCEL_OK);
  EXPECT(accel_device_close(dev), ACCEL_OK);
  printf("%s: %s (%d failures)\n", selector, failures ? "FAIL" : "ok", failures);
  return failures ? 1 : 0;
}
