/*
 * Collectives that run on the issuing thread (ACCEL_CPU_RUN_ON_CALLER, docs/DISTRIBUTED.md),
 * under mpirun on the CPU device, 2 or more ranks:
 *   comm_on_caller --expect caller   (run with ACCEL_CPU_RUN_ON_CALLER=1)
 *   comm_on_caller --expect stream   (run with ACCEL_CPU_RUN_ON_CALLER=0)
 * (--device cpu is accepted: the CPU device is the only one with the hold.)
 * 1. An all-reduce on an idle stream: with "caller" its result is in recv when the call
 *    returns, before any synchronize.
 * 2. Rank 1 enters LATE_MS late. With "caller" rank 0's call returns only after that (it ran
 *    the collective); with "stream" it returns at once and synchronize waits.
 * 3. Meanwhile a second thread of rank 0 submits to the same stream a host function that
 *    snapshots recv, records an event and synchronizes: the snapshot holds the reduced result
 *    (stream order across threads), in both modes, and the event is complete.
 * 4. A busy stream is not held: behind a host function that blocks it BUSY_MS, the collective
 *    is queued (the call returns at once) and its result comes in stream order.
 * 5. A capture records the collective even right after the same call ran eagerly (which the
 *    issuing thread remembers as validated), and the graph replays it; the communicator
 *    reports no error.
 * Exit 77 when the CPU device or the MPI engine is absent.
 */
#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/check.h"
#include "comm_util.h"

#define N 1024
#define LATE_MS 500
#define BUSY_MS 300
/* A call that ran the collective waited for the late rank; one that queued it did not. */
#define RAN_MIN_MS 300.0
#define QUEUED_MAX_MS 200.0

typedef struct ctx {
  accel_device_t *dev;
  accel_stream_t *s;
  accel_comm_t *comm;
  int rank, size, caller;
  float *send, *recv; /* device memory, host-accessible on the CPU device */
  float want[N];      /* the sum over ranks, computed here */
} ctx_t;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* send = this rank's values for salt; want = their sum over ranks; recv cleared. */
static void prepare(ctx_t *c, unsigned salt) {
  for (size_t i = 0; i < N; ++i) {
    c->send[i] = grid_value(c->rank, i, salt);
    float sum = 0.0f; /* grid values: every partial sum is exact */
    for (int r = 0; r < c->size; ++r) sum += grid_value(r, i, salt);
    c->want[i] = sum;
    c->recv[i] = -1000.0f;
  }
}

static size_t mismatches(const ctx_t *c, const float *got) {
  size_t bad = 0;
  for (size_t i = 0; i < N; ++i) bad += got[i] != c->want[i];
  return bad;
}

static void test_result_on_return(ctx_t *c) {
  prepare(c, 1);
  OK(accel_all_reduce(c->comm, c->s, c->send, c->recv, N, ACCEL_F32, ACCEL_REDUCE_SUM));
  if (c->caller)
    CHECK(mismatches(c, c->recv) == 0, "caller: recv not final when the call returned");
  OK(accel_stream_synchronize(c->s));
  CHECK(mismatches(c, c->recv) == 0, "after synchronize: %zu wrong", mismatches(c, c->recv));
}

/* The second thread of test 3. */
typedef struct observer {
  ctx_t *c;
  atomic_int go;
  float snapshot[N];
  accel_status_t st;
  int event_done;
} observer_t;

static void snapshot_fn(void *user) {
  observer_t *o = user;
  memcpy(o->snapshot, o->c->recv, sizeof o->snapshot);
}

static void *observe(void *arg) {
  observer_t *o = arg;
  while (!atomic_load(&o->go)) sleep_ms(1);
  sleep_ms(100); /* rank 0's collective is waiting for the late rank by now */
  accel_event_t *ev = NULL;
  o->st = accel_event_create(o->c->dev, ACCEL_EVENT_DEFAULT, &ev);
  if (o->st == ACCEL_OK) o->st = accel_launch_host_func(o->c->s, snapshot_fn, o);
  if (o->st == ACCEL_OK) o->st = accel_event_record(ev, o->c->s);
  if (o->st == ACCEL_OK) o->st = accel_stream_synchronize(o->c->s);
  if (o->st == ACCEL_OK) o->event_done = accel_event_query(ev) == ACCEL_OK;
  if (ev) accel_event_destroy(ev);
  return NULL;
}

static void test_late_peer(ctx_t *c) {
  prepare(c, 2);
  MPI_Barrier(MPI_COMM_WORLD);
  if (c->rank != 0) {
    if (c->rank == 1) sleep_ms(LATE_MS);
    OK(accel_all_reduce(c->comm, c->s, c->send, c->recv, N, ACCEL_F32, ACCEL_REDUCE_SUM));
    OK(accel_stream_synchronize(c->s));
    CHECK(mismatches(c, c->recv) == 0, "rank %d: wrong result", c->rank);
    return;
  }
  observer_t o = {.c = c};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, observe, &o) == 0, "pthread_create");
  atomic_store(&o.go, 1);
  const double t0 = now_ms();
  OK(accel_all_reduce(c->comm, c->s, c->send, c->recv, N, ACCEL_F32, ACCEL_REDUCE_SUM));
  const double call_ms = now_ms() - t0;
  if (c->caller)
    CHECK(call_ms >= RAN_MIN_MS, "caller: the call returned after %.0f ms, before the late "
          "rank entered: it did not run the collective", call_ms);
  else
    CHECK(call_ms < QUEUED_MAX_MS, "stream: the call took %.0f ms: it should only queue",
          call_ms);
  OK(accel_stream_synchronize(c->s));
  pthread_join(th, NULL);
  CHECK(o.st == ACCEL_OK, "observer thread: %s", accel_status_name(o.st));
  CHECK(mismatches(c, o.snapshot) == 0,
        "a host function submitted by another thread during the collective ran before it "
        "(%zu elements not reduced)", mismatches(c, o.snapshot));
  CHECK(o.event_done, "an event recorded after the collective was not complete");
  CHECK(mismatches(c, c->recv) == 0, "rank 0: wrong result");
}

static void block_fn(void *user) {
  (void)user;
  sleep_ms(BUSY_MS);
}

static void test_busy_stream(ctx_t *c) {
  prepare(c, 3);
  MPI_Barrier(MPI_COMM_WORLD);
  OK(accel_launch_host_func(c->s, block_fn, NULL));
  const double t0 = now_ms();
  OK(accel_all_reduce(c->comm, c->s, c->send, c->recv, N, ACCEL_F32, ACCEL_REDUCE_SUM));
  const double call_ms = now_ms() - t0;
  CHECK(call_ms < QUEUED_MAX_MS, "a collective behind busy work took %.0f ms to issue",
        call_ms);
  OK(accel_stream_synchronize(c->s));
  CHECK(mismatches(c, c->recv) == 0, "busy stream: wrong result");
}

static void test_graph_after(ctx_t *c) {
  prepare(c, 4);
  /* the same call eagerly first: the capture must record it even so (rerun_validated) */
  OK(accel_all_reduce(c->comm, c->s, c->send, c->recv, N, ACCEL_F32, ACCEL_REDUCE_SUM));
  OK(accel_stream_synchronize(c->s));
  for (size_t i = 0; i < N; ++i) c->recv[i] = -1000.0f;
  accel_graph_t *g = NULL;
  OK(accel_graph_create(c->dev, &g));
  OK(accel_graph_capture_begin(g, c->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  OK(accel_all_reduce(c->comm, c->s, c->send, c->recv, N, ACCEL_F32, ACCEL_REDUCE_SUM));
  OK(accel_graph_capture_end(g));
  CHECK(c->recv[0] == -1000.0f, "a captured collective ran during the capture");
  for (int r = 0; r < 3; ++r) {
    memset(c->recv, 0, N * sizeof(float));
    OK(accel_graph_replay(g, c->s));
    OK(accel_stream_synchronize(c->s));
    CHECK(mismatches(c, c->recv) == 0, "replay %d: wrong result", r);
  }
  OK(accel_graph_destroy(g));
}

int main(int argc, char **argv) {
  const char *mode = "", *device = "cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--expect") == 0) mode = argv[i + 1];
    if (strcmp(argv[i], "--device") == 0) device = argv[i + 1];
  }
  if ((strcmp(mode, "caller") != 0 && strcmp(mode, "stream") != 0) || strcmp(device, "cpu")) {
    fprintf(stderr, "usage: comm_on_caller [--device cpu] --expect caller|stream "
                    "(under mpirun)\n");
    return 2;
  }
  ctx_t *c = calloc(1, sizeof *c);
  c->caller = strcmp(mode, "caller") == 0;
  const int early = comm_test_start(&argc, &argv, "cpu", &c->rank, &c->size, &c->dev, &c->comm);
  if (early >= 0) return early;
  const char *env = getenv("ACCEL_CPU_RUN_ON_CALLER");
  CHECK(env && strcmp(env, c->caller ? "1" : "0") == 0,
        "ACCEL_CPU_RUN_ON_CALLER=%s does not match the mode %s", env ? env : "(unset)", mode);
  OK(accel_stream_create(c->dev, &c->s));
  OK(accel_malloc(c->dev, N * sizeof(float), (void **)&c->send));
  OK(accel_malloc(c->dev, N * sizeof(float), (void **)&c->recv));
  if (failures == 0) {
    test_result_on_return(c);
    test_late_peer(c);
    test_busy_stream(c);
    test_graph_after(c);
    CHECK(accel_comm_get_error(c->comm) == ACCEL_OK, "communicator error: %s",
          accel_last_error());
  }
  OK(accel_free(c->dev, c->send));
  OK(accel_free(c->dev, c->recv));
  const int any = comm_test_finish(c->s, c->comm, c->dev);
  if (c->rank == 0)
    printf("comm_on_caller %s, %d ranks: %s\n", mode, c->size, any ? "FAIL" : "PASS");
  free(c);
  MPI_Finalize();
  return any ? 1 : 0;
}
