/*
 * The NCCL engine on one rank, without MPI (the GPU machine has none): the engine plugin
 * (libaccelcomm-nccl.so, from ACCEL_PLUGIN_PATH) driven through its ABI the way core/comm.c
 * drives it, with a one-rank bootstrap, on a cuda device's own stream. Checks, on the GPU:
 * libnccl loads (LD_LIBRARY_PATH names the pip wheel's lib/ in scripts/device-check),
 * ncclCommInitRank makes a communicator of one rank, all-reduce (sum, max), broadcast and
 * all-gather on accel memory and accel's native stream give the right values, the watchdog's
 * probe (comm_async_error) answers OK, then comm_cancel (ncclCommAbort) and comm_destroy
 * after it (the abort freed the communicator: destroy must not touch it) and a probe after
 * the cancel (must report an error, never read the freed communicator).
 *
 *   nccl-one-rank      exit 0 all good, 1 a check failed, 77 no cuda device or no NCCL
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_comm_engine.h"
#include "check.h"
#include "fake_host.h"

#define N 4096

static accel_status_t one_rank_gather(void *ctx, const void *send, void *recv, size_t bytes) {
  (void)ctx;
  memcpy(recv, send, bytes);
  return ACCEL_OK;
}

static const accel_comm_engine_vtable_t *load_engine(void) {
  const char *dir = getenv("ACCEL_PLUGIN_PATH");
  char path[4096];
  snprintf(path, sizeof path, "%s%slibaccelcomm-nccl.so", dir ? dir : "", dir ? "/" : "");
  void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!so) {
    fprintf(stderr, "FAIL: %s\n", dlerror());
    return NULL;
  }
  typedef accel_status_t (*query_fn)(uint32_t, const accel_host_api_t *,
                                     const accel_comm_engine_vtable_t **);
  query_fn q = (query_fn)dlsym(so, ACCEL_COMM_ENGINE_QUERY_SYMBOL);
  const accel_comm_engine_vtable_t *vt = NULL;
  if (!q || q(ACCEL_COMM_ENGINE_ABI_VERSION, &fake_host, &vt) != ACCEL_OK) {
    fprintf(stderr, "FAIL: query: %s\n", q ? fake_host_error : "no query symbol");
    return NULL;
  }
  return vt;
}

/* Runs op on the stream and waits. */
static int issue(const accel_comm_engine_vtable_t *vt, accel_ce_comm_t *c, accel_stream_t *s,
                 accel_comm_op_t op, const char *what) {
  accel_native_t ns = {.struct_size = sizeof ns};
  if (accel_stream_native(s, &ns) != ACCEL_OK) {
    CHECK(0, "%s: accel_stream_native: %s", what, accel_last_error());
    return 1;
  }
  if (vt->enqueue(c, &op, &ns) != ACCEL_OK) {
    CHECK(0, "%s: enqueue: %s", what, fake_host_error);
    return 1;
  }
  if (accel_stream_synchronize(s) != ACCEL_OK) {
    CHECK(0, "%s: synchronize: %s", what, accel_last_error());
    return 1;
  }
  return 0;
}

int main(void) {
  accel_device_t *dev = NULL;
  if (accel_device_open("cuda", &dev) != ACCEL_OK) {
    printf("SKIP: no cuda device: %s\n", accel_last_error());
    return 77;
  }
  const accel_comm_engine_vtable_t *vt = load_engine();
  if (!vt) return 1;
  if (vt->engine_init(&fake_host) != ACCEL_OK) {
    printf("SKIP: %s\n", fake_host_error); /* no libnccl: UNAVAILABLE */
    return 77;
  }
  accel_native_t nd = {.struct_size = sizeof nd};
  accel_stream_t *s = NULL;
  float *a = NULL, *g = NULL;
  if (accel_device_native(dev, &nd) != ACCEL_OK || accel_stream_create(dev, &s) != ACCEL_OK ||
      accel_malloc(dev, N * sizeof *a, (void **)&a) != ACCEL_OK ||
      accel_malloc(dev, N * sizeof *g, (void **)&g) != ACCEL_OK) {
    fprintf(stderr, "FAIL: setup: %s\n", accel_last_error());
    return 1;
  }
  accel_comm_bootstrap_t boot = {.rank = 0, .size = 1, .all_gather = one_rank_gather};
  accel_ce_comm_t *c = NULL;
  if (vt->comm_create_bootstrap(&boot, &nd, &c) != ACCEL_OK) {
    fprintf(stderr, "FAIL: comm_create_bootstrap: %s\n", fake_host_error);
    return 1;
  }
  static float host[N], back[N];
  for (int i = 0; i < N; ++i) host[i] = (float)(i % 97) - 48.0f;
  CHECK(accel_memcpy(dev, a, host, sizeof host) == ACCEL_OK, "upload: %s", accel_last_error());
  const accel_comm_op_t ops[] = {
      {.kind = ACCEL_COMM_ALL_REDUCE, .dtype = ACCEL_F32, .reduce = ACCEL_REDUCE_SUM,
       .send = a, .recv = a, .count = N},
      {.kind = ACCEL_COMM_ALL_REDUCE, .dtype = ACCEL_F32, .reduce = ACCEL_REDUCE_MAX,
       .send = a, .recv = g, .count = N},
      {.kind = ACCEL_COMM_BROADCAST, .dtype = ACCEL_F32, .peer = 0, .recv = g, .count = N},
      {.kind = ACCEL_COMM_ALL_GATHER, .dtype = ACCEL_F32, .send = a, .recv = g, .count = N},
      {.kind = ACCEL_COMM_ALL_GATHER, .dtype = ACCEL_F32, .send = NULL, .recv = g, .count = N},
  };
  const char *names[] = {"all_reduce sum in place", "all_reduce max", "broadcast",
                         "all_gather", "all_gather in place"};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; ++k) {
    if (issue(vt, c, s, ops[k], names[k])) continue;
    /* one rank: every op leaves the input's values in its output */
    CHECK(accel_memcpy(dev, back, ops[k].recv, sizeof back) == ACCEL_OK, "download");
    CHECK(memcmp(back, host, sizeof back) == 0, "%s: wrong values (first %g, want %g)",
          names[k], (double)back[0], (double)host[0]);
    printf("ok: %s\n", names[k]);
  }
  if (vt->comm_async_error)
    CHECK(vt->comm_async_error(c) == ACCEL_OK, "async error: %s", fake_host_error);
  if (vt->comm_cancel) {
    vt->comm_cancel(c); /* ncclCommAbort: frees NCCL's communicator */
    if (vt->comm_async_error)
      CHECK(vt->comm_async_error(c) != ACCEL_OK, "a probe after the abort reported OK");
    printf("ok: cancel (ncclCommAbort), then a probe that reports the abort\n");
  }
  vt->comm_destroy(c);
  accel_free(dev, a);
  accel_free(dev, g);
  accel_stream_destroy(s);
  accel_device_close(dev);
  printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures ? 1 : 0;
}
