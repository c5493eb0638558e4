/*
 * A stream engine's collectives as native commands (ACCEL_CMD_NATIVE) on a backend without
 * native capture (OpenCL on PoCL here), with the fake engine of fake_stream_engine.c:
 *  - eager: the engine's enqueue runs at once, on the accel stream's native queue;
 *  - lazy: the queued work is flushed and the collective issued at once (the plugin's batches
 *    cannot carry it);
 *  - capture: UNSUPPORTED naming the reason, the engine is not called, the capture is
 *    invalidated (capture_end: CAPTURE_INVALIDATED, an empty graph), and the stream and
 *    communicator stay usable (a fill and a copy round-trip, another collective);
 *  - an enqueue that fails marks the communicator failed (accel_comm_get_error), and later
 *    collectives on it fail without reaching the engine;
 *  - accel_all_gather_downcast: the cast kernel rounds this rank's fp32 shard into its block of
 *    recv (checked against an independent bf16 rounding) and the engine gets an in-place BF16
 *    all-gather; the other blocks are untouched (the fake engine moves nothing);
 *  - ACCEL_COMM_TIMEOUT (2 s here): a collective whose stream is held by a blocking host
 *    function fails its communicator after the deadline, not before, and the engine's
 *    comm_cancel runs once; an asynchronous error the engine reports fails it before the
 *    deadline. With two collectives in flight, nothing polls or issues on the communicator
 *    after comm_cancel (NCCL's abort frees it). The watchdog is core/comm_watchdog.c.
 * argv[1]: the path of libaccelcomm-fakestream.so (its counters are read with dlopen NOLOAD).
 * SKIP (77) without an OpenCL device.
 */
#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <accel/accel_comm_engine.h>
#include <accel/accel_interop.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/check.h"
#include "comm_util.h"

#define TIMEOUT_S 2.0 /* ACCEL_COMM_TIMEOUT in meson.build */

static int *calls;
static int *async_fail, *cancels, *used_after_cancel; /* shared with the watchdog: __atomic */
static atomic_int hold; /* the blocking host function waits while it is 1 */
static void **last_queue;
static accel_comm_op_t *last_op;

static void *native_queue(accel_stream_t *s) {
  accel_native_t n = {.struct_size = sizeof n};
  accel_status_t st = accel_stream_native(s, &n);
  CHECK(st == ACCEL_OK, "accel_stream_native: %s", accel_last_error());
  return n.queue;
}

/* One all-reduce of buf on s; the fake engine must have issued it on s's queue. */
static void eager_case(accel_comm_t *c, accel_stream_t *s, float *buf, size_t n) {
  const int before = *calls;
  accel_status_t st = accel_all_reduce(c, s, buf, buf, n, ACCEL_F32, ACCEL_REDUCE_SUM);
  CHECK(st == ACCEL_OK, "eager all_reduce: %s %s", accel_status_name(st), accel_last_error());
  CHECK(*calls == before + 1, "eager: engine called %d times", *calls - before);
  CHECK(*last_queue == native_queue(s), "eager: issued on another queue");
  CHECK(last_op->kind == ACCEL_COMM_ALL_REDUCE && last_op->count == n &&
            last_op->recv == buf && last_op->send == buf,
        "eager: the engine got another operation");
}

static void lazy_case(accel_device_t *dev, accel_comm_t *c, float *buf, size_t n) {
  accel_stream_t *s = NULL;
  if (accel_stream_create_ex(dev, ACCEL_STREAM_LAZY, &s) != ACCEL_OK) {
    CHECK(0, "lazy stream: %s", accel_last_error());
    return;
  }
  accel_lazy_stats_t a = {0}, b = {0};
  CHECK(accel_memset_async(s, buf, 0, n * sizeof *buf) == ACCEL_OK, "lazy fill");
  accel_stream_lazy_stats(s, &a);
  CHECK(a.ops_queued >= 1, "the fill was not queued");
  const int before = *calls;
  accel_status_t st = accel_all_reduce(c, s, buf, buf, n, ACCEL_F32, ACCEL_REDUCE_SUM);
  CHECK(st == ACCEL_OK, "lazy all_reduce: %s %s", accel_status_name(st), accel_last_error());
  CHECK(*calls == before + 1, "lazy: engine called %d times", *calls - before);
  accel_stream_lazy_stats(s, &b);
  CHECK(b.flushes == a.flushes + 1, "lazy: the queue was not flushed before the collective");
  CHECK(accel_stream_synchronize(s) == ACCEL_OK, "lazy sync: %s", accel_last_error());
  accel_stream_destroy(s);
}

static void capture_case(accel_device_t *dev, accel_comm_t *c, accel_stream_t *s, float *buf,
                         size_t n) {
  accel_graph_t *g = NULL;
  CHECK(accel_graph_create(dev, &g) == ACCEL_OK, "graph: %s", accel_last_error());
  CHECK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL) == ACCEL_OK,
        "capture_begin: %s", accel_last_error());
  CHECK(accel_memset_async(s, buf, 0, n * sizeof *buf) == ACCEL_OK, "captured fill");
  const int before = *calls;
  accel_status_t st = accel_all_reduce(c, s, buf, buf, n, ACCEL_F32, ACCEL_REDUCE_SUM);
  CHECK(st == ACCEL_ERROR_UNSUPPORTED, "captured all_reduce: %s", accel_status_name(st));
  CHECK(strstr(accel_last_error(), "accel_all_reduce") &&
            strstr(accel_last_error(), "cannot capture native work"),
        "message: %s", accel_last_error());
  CHECK(*calls == before, "capture: the engine was called");
  st = accel_graph_capture_end(g);
  CHECK(st == ACCEL_ERROR_CAPTURE_INVALIDATED, "capture_end: %s", accel_status_name(st));
  CHECK(strstr(accel_last_error(), "cannot capture native work"), "capture_end message: %s",
        accel_last_error());
  size_t nodes = 1;
  accel_graph_node_count(g, &nodes);
  CHECK(nodes == 0, "invalidated graph holds %zu nodes", nodes);
  accel_graph_destroy(g);
}

/* The stream still works: a fill and a copy back give the filled bytes. */
static void usable_case(accel_stream_t *s, float *buf, size_t n) {
  unsigned char host[64];
  memset(host, 0, sizeof host);
  CHECK(accel_memset_async(s, buf, 0x5a, sizeof host) == ACCEL_OK, "fill: %s",
        accel_last_error());
  CHECK(accel_memcpy_async(s, host, buf, sizeof host) == ACCEL_OK, "copy: %s",
        accel_last_error());
  CHECK(accel_stream_synchronize(s) == ACCEL_OK, "sync: %s", accel_last_error());
  for (size_t i = 0; i < sizeof host; ++i)
    if (host[i] != 0x5a) {
      CHECK(0, "byte %zu is %#x after the fill", i, host[i]);
      break;
    }
  (void)n;
}

/* The fake engine fails a collective of 13 elements (FAKE_STREAM_FAIL_COUNT). */
static void failure_case(accel_comm_t *c, accel_stream_t *s, float *buf) {
  const int before = *calls;
  accel_status_t st = accel_all_reduce(c, s, buf, buf, 13, ACCEL_F32, ACCEL_REDUCE_SUM);
  CHECK(st == ACCEL_ERROR_BACKEND, "failing all_reduce: %s", accel_status_name(st));
  CHECK(accel_comm_get_error(c) == ACCEL_ERROR_BACKEND &&
            strstr(accel_last_error(), "injected enqueue failure"),
        "accel_comm_get_error after the failure: %s", accel_last_error());
  st = accel_all_reduce(c, s, buf, buf, 8, ACCEL_F32, ACCEL_REDUCE_SUM);
  CHECK(st != ACCEL_OK, "a collective on the failed communicator: %s", accel_status_name(st));
  CHECK(*calls == before + 1, "the engine was called %d times", *calls - before);
  usable_case(s, buf, 16);
}

static void downcast_case(accel_comm_t *c, accel_stream_t *s, accel_device_t *dev) {
  enum { N = 300 };
  int rank = 0, size = 0;
  accel_comm_rank(c, &rank);
  accel_comm_size(c, &size);
  float host_src[N];
  for (size_t i = 0; i < N; ++i) host_src[i] = grid_value(rank, i, 7) * 1.00390625f + 1e-3f;
  float *src = NULL;
  uint16_t *recv = NULL;
  CHECK(accel_malloc(dev, sizeof host_src, (void **)&src) == ACCEL_OK, "malloc src");
  CHECK(accel_malloc(dev, (size_t)size * N * 2, (void **)&recv) == ACCEL_OK, "malloc recv");
  if (!src || !recv) return;
  uint16_t host_recv[4 * N];
  CHECK(size <= 4, "size %d", size);
  CHECK(accel_memcpy_async(s, src, host_src, sizeof host_src) == ACCEL_OK, "upload");
  CHECK(accel_memset_async(s, recv, 0xee, (size_t)size * N * 2) == ACCEL_OK, "fill recv");
  const int before = *calls;
  accel_status_t st = accel_all_gather_downcast(c, s, src, recv, N, ACCEL_BF16);
  CHECK(st == ACCEL_OK, "all_gather_downcast: %s %s", accel_status_name(st), accel_last_error());
  CHECK(*calls == before + 1, "downcast: engine called %d times", *calls - before);
  CHECK(last_op->kind == ACCEL_COMM_ALL_GATHER && last_op->send == NULL &&
            last_op->recv == recv && last_op->count == N && last_op->dtype == ACCEL_BF16,
        "downcast: the engine got another operation");
  CHECK(accel_memcpy_async(s, host_recv, recv, (size_t)size * N * 2) == ACCEL_OK, "download");
  CHECK(accel_stream_synchronize(s) == ACCEL_OK, "sync: %s", accel_last_error());
  int bad = 0;
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < N; ++i) {
      uint16_t want = r == rank ? ref_f32_to_bf16(host_src[i]) : 0xeeee;
      if (host_recv[(size_t)r * N + i] != want && bad++ < 3)
        CHECK(0, "recv block %d [%zu] = %#x, want %#x", r, i, host_recv[(size_t)r * N + i], want);
    }
  accel_free(dev, src);
  accel_free(dev, recv);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void block_stream(void *user) {
  (void)user;
  struct timespec ts = {0, 1000000};
  while (atomic_load(&hold)) nanosleep(&ts, NULL);
}

/* A collective stuck behind a blocking host function: inject_async 0 waits for the deadline,
 * 1 reports an asynchronous error right after the issue. */
static void watchdog_case(accel_device_t *dev, float *buf, int inject_async) {
  accel_comm_t *c = NULL;
  accel_stream_t *s = NULL;
  if (accel_comm_create_mpi(dev, NULL, "fakestream", &c) != ACCEL_OK ||
      accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s) != ACCEL_OK) {
    CHECK(0, "watchdog setup: %s", accel_last_error());
    return;
  }
  const int cancels_before = __atomic_load_n(cancels, __ATOMIC_SEQ_CST);
  atomic_store(&hold, 1);
  CHECK(accel_launch_host_func(s, block_stream, NULL) == ACCEL_OK, "host func: %s",
        accel_last_error());
  const double t0 = now_s();
  accel_status_t st = accel_all_reduce(c, s, buf, buf, 8, ACCEL_F32, ACCEL_REDUCE_SUM);
  CHECK(st == ACCEL_OK, "watched all_reduce: %s", accel_last_error());
  /* a second one in flight behind it: the watchdog must stop polling both after the cancel */
  st = accel_all_reduce(c, s, buf + 8, buf + 8, 8, ACCEL_F32, ACCEL_REDUCE_SUM);
  CHECK(st == ACCEL_OK, "second watched all_reduce: %s", accel_last_error());
  if (inject_async) __atomic_store_n(async_fail, 1, __ATOMIC_SEQ_CST);
  while (accel_comm_get_error(c) == ACCEL_OK && now_s() - t0 < 4 * TIMEOUT_S) {
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  const double waited = now_s() - t0;
  st = accel_comm_get_error(c);
  const char *msg = accel_last_error();
  CHECK(st == ACCEL_ERROR_BACKEND, "after %.2f s: %s", waited, accel_status_name(st));
  if (inject_async) {
    CHECK(waited < TIMEOUT_S, "async error seen after %.2f s", waited);
    CHECK(strstr(msg, "failed asynchronously") && strstr(msg, "injected async error"),
          "message: %s", msg);
  } else {
    CHECK(waited >= TIMEOUT_S - 0.01 && waited < 3 * TIMEOUT_S, "timed out after %.2f s",
          waited);
    CHECK(strstr(msg, "accel_all_reduce did not complete within 2 s (ACCEL_COMM_TIMEOUT)"),
          "message: %s", msg);
  }
  /* the watchdog fails the communicator first (no new enqueue), then cancels the engine */
  const double failed_at = now_s();
  while (__atomic_load_n(cancels, __ATOMIC_SEQ_CST) == cancels_before &&
         now_s() - failed_at < 1.0) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  const int ncancels = __atomic_load_n(cancels, __ATOMIC_SEQ_CST) - cancels_before;
  CHECK(ncancels == 1, "comm_cancel ran %d times", ncancels);
  struct timespec polls = {0, 50000000}; /* 10 of the watchdog's 5 ms rounds */
  nanosleep(&polls, NULL);
  const int used = __atomic_load_n(used_after_cancel, __ATOMIC_SEQ_CST);
  CHECK(used == 0, "the communicator was used %d times after comm_cancel", used);
  __atomic_store_n(async_fail, 0, __ATOMIC_SEQ_CST);
  atomic_store(&hold, 0);
  CHECK(accel_stream_synchronize(s) == ACCEL_OK, "sync: %s", accel_last_error());
  const int before = *calls;
  CHECK(accel_all_reduce(c, s, buf, buf, 8, ACCEL_F32, ACCEL_REDUCE_SUM) != ACCEL_OK,
        "a collective after the failure succeeded");
  CHECK(*calls == before, "the engine was called after the failure");
  accel_stream_destroy(s);
  accel_comm_destroy(c);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s LIBACCELCOMM_FAKESTREAM\n", argv[0]);
    return 2;
  }
  accel_device_t *dev = NULL;
  if (accel_device_open("opencl", &dev) != ACCEL_OK) {
    printf("SKIP: no OpenCL device: %s\n", accel_last_error());
    return 77;
  }
  accel_comm_t *c = NULL;
  accel_status_t st = accel_comm_create_mpi(dev, NULL, "fakestream", &c);
  if (st != ACCEL_OK) {
    fprintf(stderr, "accel_comm_create_mpi(fakestream): %s %s\n", accel_status_name(st),
            accel_last_error());
    return 1;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
  calls = lib ? dlsym(lib, "fake_stream_calls") : NULL;
  last_queue = lib ? dlsym(lib, "fake_stream_last_queue") : NULL;
  last_op = lib ? dlsym(lib, "fake_stream_last_op") : NULL;
  async_fail = lib ? dlsym(lib, "fake_stream_async_fail") : NULL;
  cancels = lib ? dlsym(lib, "fake_stream_cancels") : NULL;
  used_after_cancel = lib ? dlsym(lib, "fake_stream_used_after_cancel") : NULL;
  if (!calls || !last_queue || !last_op || !async_fail || !cancels || !used_after_cancel) {
    fprintf(stderr, "%s is not the engine libaccel loaded: %s\n", argv[1], dlerror());
    return 1;
  }
  const size_t n = 256;
  float *buf = NULL;
  accel_stream_t *s = NULL;
  CHECK(accel_malloc(dev, n * sizeof *buf, (void **)&buf) == ACCEL_OK, "malloc: %s",
        accel_last_error());
  CHECK(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s) == ACCEL_OK, "stream: %s",
        accel_last_error());
  if (buf && s) {
    eager_case(c, s, buf, n);
    lazy_case(dev, c, buf, n);
    capture_case(dev, c, s, buf, n);
    usable_case(s, buf, n);
    eager_case(c, s, buf, n);
  }
  accel_status_t cerr = accel_comm_get_error(c);
  CHECK(cerr == ACCEL_OK, "communicator failed: %s", accel_status_name(cerr));
  if (buf && s) downcast_case(c, s, dev);
  if (buf && s) failure_case(c, s, buf);
  if (buf) watchdog_case(dev, buf, 0);
  if (buf) watchdog_case(dev, buf, 1);
  if (s) accel_stream_destroy(s);
  if (buf) accel_free(dev, buf);
  accel_comm_destroy(c);
  accel_device_close(dev);
  printf("%s\n", failures ? "FAIL" : "ok");
  return failures ? 1 : 0;
}
