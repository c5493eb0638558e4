/*
 * Collectives under hostile use (issue 31), under mpirun on one device (--device, default cpu);
 * accel initialises MPI itself (the program makes no MPI call), so its finalization at exit is
 * accel's. --case picks one:
 *   refused   Argument errors of the distributed kernels issue nothing: the last rank calls
 *             accel_comm_clip_by_global_norm with its norm output inside the clipped tensor,
 *             then accel_comm_global_norm with a host pointer as output (INVALID_ARGUMENT
 *             each), while the other ranks call neither; then every rank all-reduces, and the
 *             sum must be exact with no communicator error (run with ACCEL_COMM_CHECK=1, so an
 *             all-gather issued by a refused call is reported as a mismatch). Every rank then
 *             makes the same refused call, and an all-reduce still matches. Before: the clip
 *             issued the norm's all-gather and only then refused.
 *   capture   accel_comm_split and accel_comm_create_mpi during a RELAXED capture on any rank:
 *             ILLEGAL_IN_CAPTURE (they communicate now), the capture ends invalidated, and a
 *             split outside the capture works. Before: the split was accepted.
 *   exit      Every rank queues 300 all-reduces and a global norm on a stream and returns from
 *             main without synchronizing: the job must end with status 0 (accel drains the
 *             engine's queued work before MPI_Finalize). Before: MPI_Finalize ran under the
 *             stream's thread (MPI errors, exit 1, or a crash).
 * Prints "rank R: OK" or the failed checks, exit 1 on a failure (exit lets the job say it).
 */
#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <accel/accel_kernels.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"

#define N 256
#define EXIT_N (1 << 18) /* large enough that the queued collectives still run at exit */

static accel_device_t *dev;
static accel_stream_t *s;
static accel_comm_t *comm;
static int rank, size;
static float *buf; /* N floats of device memory, then scalars */

#define EXPECT_STATUS(call, want)                                                             \
  do {                                                                                        \
    accel_status_t st_ = (call);                                                              \
    CHECK(st_ == (want), "rank %d: %s -> %s, expected %s (%s)", rank, #call,                 \
          accel_status_name(st_), accel_status_name(want), accel_last_error());              \
  } while (0)

/* Every rank all-reduces rank + 1 into buf: the sum must be exact, the communicator fine. */
static void all_reduce_matches(const char *after) {
  accel_tensor_t t = {buf, N, ACCEL_F32};
  OK(accel_fill(s, &t, 1, (float)(rank + 1)));
  OK(accel_all_reduce(comm, s, buf, buf, N, ACCEL_F32, ACCEL_REDUCE_SUM));
  OK(accel_stream_synchronize(s));
  accel_status_t st = accel_comm_get_error(comm);
  CHECK(st == ACCEL_OK, "rank %d: the communicator failed after %s: %s", rank, after,
        accel_last_error());
  float host[N];
  OK(accel_memcpy(dev, host, buf, sizeof host));
  const float want = (float)(size * (size + 1) / 2);
  CHECK(host[0] == want && host[N - 1] == want, "rank %d: all-reduce after %s gave %g, want %g",
        rank, after, host[0], want);
}

/* The clip and the norm with arguments that are refused: nothing may be issued. */
static void refused_calls(void) {
  accel_tensor_t t = {buf, N, ACCEL_F32};
  float *inside = buf + 3; /* the norm output inside the clipped tensor */
  EXPECT_STATUS(accel_comm_clip_by_global_norm(comm, s, &t, 1, 1.0f, 2.0f, 1e-6f, inside, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  float host_out = 0;
  EXPECT_STATUS(accel_comm_global_norm(comm, s, &t, 1, 2.0f, &host_out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(accel_comm_global_norm(comm, s, &t, 1, -1.0f, buf + N),
                ACCEL_ERROR_INVALID_ARGUMENT);
  /* sendrecv: this rank as a peer, a rank outside the communicator, overlapping buffers, a
   * NULL buffer, a count that overflows, an unknown dtype */
  const int other = (rank + 1) % size;
  EXPECT_STATUS(accel_sendrecv(comm, s, buf, 8, rank, buf + 8, 8, other, ACCEL_F32),
                ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(accel_sendrecv(comm, s, buf, 8, other, buf + 8, 8, size, ACCEL_F32),
                ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(accel_sendrecv(comm, s, buf, 8, other, buf + 4, 8, other, ACCEL_F32),
                ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(accel_sendrecv(comm, s, buf, 8, other, NULL, 8, other, ACCEL_F32),
                ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(accel_sendrecv(comm, s, buf, SIZE_MAX / 2, other, buf + 8, 8, other, ACCEL_F32),
                ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(accel_sendrecv(comm, s, buf, 8, other, buf + 8, 8, other, (accel_dtype_t)9),
                ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(accel_sendrecv(comm, s, buf, 8, other, buf + 8, 8, other, ACCEL_U8),
                ACCEL_ERROR_INVALID_ARGUMENT);
}

static void case_refused(void) {
  if (rank == size - 1) refused_calls(); /* alone: the others issue nothing meanwhile */
  all_reduce_matches("one rank's refused calls");
  refused_calls(); /* every rank */
  all_reduce_matches("every rank's refused calls");
  /* the same clip with a valid output works on every rank */
  accel_tensor_t t = {buf, N, ACCEL_F32};
  OK(accel_comm_clip_by_global_norm(comm, s, &t, 1, 1.0f, 2.0f, 1e-6f, buf + N, NULL));
  OK(accel_stream_synchronize(s));
  CHECK(accel_comm_get_error(comm) == ACCEL_OK, "rank %d: clip: %s", rank, accel_last_error());
}

static void case_capture(void) {
  accel_stream_t *cs = NULL;
  accel_graph_t *g = NULL;
  accel_comm_t *sub = NULL, *again = NULL;
  OK(accel_stream_create(dev, &cs));
  OK(accel_graph_create(dev, &g));
  OK(accel_graph_capture_begin(g, cs, NULL, ACCEL_CAPTURE_MODE_RELAXED));
  EXPECT_STATUS(accel_comm_split(comm, rank % 2, rank, &sub), ACCEL_ERROR_ILLEGAL_IN_CAPTURE);
  EXPECT_STATUS(accel_comm_create_mpi(dev, NULL, "mpi", &again), ACCEL_ERROR_ILLEGAL_IN_CAPTURE);
  EXPECT_STATUS(accel_graph_capture_end(g), ACCEL_ERROR_CAPTURE_INVALIDATED);
  if (sub) accel_comm_destroy(sub); /* accepted before the fix: it is a matched split */
  if (again) accel_comm_destroy(again);
  sub = NULL;
  OK(accel_comm_split(comm, rank % 2, rank, &sub));
  int sub_size = 0;
  OK(accel_comm_size(sub, &sub_size));
  CHECK(sub_size == (size + 1 - rank % 2) / 2, "rank %d: split size %d", rank, sub_size);
  OK(accel_comm_destroy(sub));
  OK(accel_graph_destroy(g));
  OK(accel_stream_destroy(cs));
  all_reduce_matches("the refused split");
}

/* Queues collectives and returns without synchronizing or destroying anything: the stream's
 * thread is still running them when main returns. */
static void case_exit(void) {
  accel_tensor_t t = {buf, EXIT_N, ACCEL_F32};
  OK(accel_fill(s, &t, 1, 1.0f));
  for (int i = 0; i < 300; ++i)
    OK(accel_all_reduce(comm, s, buf, buf, EXIT_N, ACCEL_F32, i % 2 ? ACCEL_REDUCE_MAX
                                                                    : ACCEL_REDUCE_SUM));
  OK(accel_comm_global_norm(comm, s, &t, 1, 2.0f, buf + EXIT_N));
}

int main(int argc, char **argv) {
  const char *device = "cpu", *which = "refused";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--device") == 0) device = argv[i + 1];
    if (strcmp(argv[i], "--case") == 0) which = argv[i + 1];
  }
  /* the exit case's collectives queue on the stream's thread, never run in the call */
  if (strcmp(which, "exit") == 0) setenv("ACCEL_CPU_RUN_ON_CALLER", "0", 1);
  accel_status_t st = accel_device_open(device, &dev);
  if (st == ACCEL_OK) st = accel_stream_create(dev, &s);
  if (st == ACCEL_OK) st = accel_malloc(dev, (EXIT_N + 16) * sizeof(float), (void **)&buf);
  if (st == ACCEL_OK) st = accel_comm_create_mpi(dev, NULL, "mpi", &comm);
  if (st == ACCEL_ERROR_UNAVAILABLE) {
    printf("SKIP: %s\n", accel_last_error());
    return 77;
  }
  if (st != ACCEL_OK) {
    fprintf(stderr, "setup failed: %s\n", accel_last_error());
    return 1;
  }
  OK(accel_comm_rank(comm, &rank));
  OK(accel_comm_size(comm, &size));
  if (strcmp(which, "exit") == 0) {
    case_exit();
    printf("rank %d: %d collectives queued, returning from main\n", rank, 301);
    return failures ? 1 : 0; /* no synchronize, no destroy */
  }
  if (strcmp(which, "capture") == 0) case_capture();
  else case_refused();
  OK(accel_comm_destroy(comm));
  OK(accel_free(dev, buf));
  OK(accel_stream_destroy(s));
  OK(accel_device_close(dev));
  if (!failures) printf("rank %d: OK\n", rank);
  return failures ? 1 : 0;
}
