/*
 * The collective check (core/comm_check.c): ranks that issue different collectives get an
 * error on every rank, and the collective does not run. Run with ACCEL_COMM_CHECK=1 (every
 * collective checked; the message names ACCEL_COMM_CHECK) and without it (the default: a
 * collective the sequence so far does not predict, such as the first on a communicator, is
 * checked; the message says "collective check"), in both wait modes.
 *  1. A matching sequence of every fingerprinted kind passes and computes the right values.
 *  2. For each mismatch (count, dtype, reduce op, broadcast root, kind), on a fresh
 *     communicator: the last rank issues the odd one; every rank must see INVALID_ARGUMENT
 *     from accel_comm_get_error naming ACCEL_COMM_CHECK and the differing field, its recv
 *     buffer untouched, and the device still usable.
 * Prints "rank R: OK" and exits 0, or names the failed check and exits 1 (so the job fails).
 */
#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64

static int rank, size, failures;

static void expect(int ok, const char *what) {
  if (ok) return;
  fprintf(stderr, "rank %d: FAILED: %s (last error: %s)\n", rank, what, accel_last_error());
  ++failures;
}

typedef enum { M_COUNT, M_DTYPE, M_DTYPE16, M_OP, M_ROOT, M_KIND, M_COUNT_OF } mismatch_t;
static const char *const mismatch_names[] = {"count", "dtype", "dtype of one size", "op",
                                             "root", "kind"};
static const char *const mismatch_words[] = {"count 63", "BF16", "BF16", "max", "root 1",
                                             "all_gather"};

/* Issues the collective of mismatch m: the odd variant on the last rank. */
static void issue(accel_comm_t *c, accel_stream_t *s, float *send, float *recv, mismatch_t m) {
  const int odd = rank == size - 1;
  switch (m) {
    case M_COUNT:
      accel_all_reduce(c, s, send, recv, odd ? N - 1 : N, ACCEL_F32, ACCEL_REDUCE_SUM);
      break;
    case M_DTYPE:
      accel_all_reduce(c, s, send, recv, N, odd ? ACCEL_BF16 : ACCEL_F32, ACCEL_REDUCE_SUM);
      break;
    case M_DTYPE16: /* the same bytes: invisible to MPI */
      accel_all_reduce(c, s, send, recv, N, odd ? ACCEL_BF16 : ACCEL_F16, ACCEL_REDUCE_SUM);
      break;
    case M_OP:
      accel_all_reduce(c, s, send, recv, N, ACCEL_F32, odd ? ACCEL_REDUCE_MAX : ACCEL_REDUCE_SUM);
      break;
    case M_ROOT:
      accel_broadcast(c, s, recv, N, ACCEL_F32, odd ? 1 : 0);
      break;
    default:
      if (odd) accel_all_gather(c, s, send, recv, N / size, ACCEL_F32);
      else accel_all_reduce(c, s, send, recv, N / size, ACCEL_F32, ACCEL_REDUCE_SUM);
      break;
  }
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *device = argc > 2 && strcmp(argv[1], "--device") == 0 ? argv[2] : "cpu";
  const char *mode = getenv("ACCEL_COMM_CHECK");
  const char *checker = mode && strcmp(mode, "1") == 0 ? "ACCEL_COMM_CHECK" : "collective check";
  accel_device_t *dev = NULL;
  accel_stream_t *s = NULL;
  accel_comm_t *comm = NULL;
  float *send = NULL, *recv = NULL;
  if (accel_device_open(device, &dev) != ACCEL_OK || accel_stream_create(dev, &s) != ACCEL_OK ||
      accel_malloc(dev, N * 4, (void **)&send) != ACCEL_OK ||
      accel_malloc(dev, N * 4 * (size_t)size, (void **)&recv) != ACCEL_OK ||
      accel_comm_create_mpi(dev, NULL, "mpi", &comm) != ACCEL_OK) {
    fprintf(stderr, "rank %d: setup failed: %s\n", rank, accel_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  float host[N * 4];
  for (int i = 0; i < N; ++i) host[i] = (float)(rank + 1);
  accel_memcpy(dev, send, host, sizeof(float) * N);

  /* 1. a matching sequence passes */
  accel_all_reduce(comm, s, send, recv, N, ACCEL_F32, ACCEL_REDUCE_SUM);
  accel_reduce_scatter(comm, s, send, recv, N / size, ACCEL_F32, ACCEL_REDUCE_MAX);
  accel_all_gather(comm, s, send, recv, N, ACCEL_F32);
  accel_broadcast(comm, s, recv, N, ACCEL_F32, 0);
  expect(accel_stream_synchronize(s) == ACCEL_OK, "synchronize after the matching sequence");
  expect(accel_comm_get_error(comm) == ACCEL_OK, "a matching sequence passes the check");
  accel_memcpy(dev, host, recv, sizeof(float) * N);
  int ok = 1;
  for (int i = 0; i < N; ++i) ok &= host[i] == 1.0f; /* rank 0's block of the all-gather */
  expect(ok, "values of the matching sequence");
  accel_comm_destroy(comm);

  /* 2. every kind of mismatch, each on a fresh communicator */
  for (mismatch_t m = 0; m < M_COUNT_OF; ++m) {
    if (accel_comm_create_mpi(dev, NULL, "mpi", &comm) != ACCEL_OK) {
      expect(0, "accel_comm_create_mpi");
      break;
    }
    for (int i = 0; i < N * size; ++i) host[i] = -7.0f;
    accel_memcpy(dev, recv, host, sizeof(float) * N * (size_t)size);
    issue(comm, s, send, recv, m);
    expect(accel_stream_synchronize(s) == ACCEL_OK, "the stream survives a mismatch");
    accel_status_t st = accel_comm_get_error(comm);
    char what[96];
    snprintf(what, sizeof what, "%s mismatch reported as INVALID_ARGUMENT",
             mismatch_names[m]);
    expect(st == ACCEL_ERROR_INVALID_ARGUMENT, what);
    snprintf(what, sizeof what, "%s mismatch: message names %s and '%s'", mismatch_names[m],
             checker, mismatch_words[m]);
    expect(strstr(accel_last_error(), checker) && strstr(accel_last_error(), mismatch_words[m]),
           what);
    if (rank == 0) printf("rank 0, %s mismatch: %s\n", mismatch_names[m], accel_last_error());
    accel_memcpy(dev, host, recv, sizeof(float) * N * (size_t)size);
    ok = 1;
    for (int i = 0; i < N * size; ++i) ok &= host[i] == -7.0f;
    snprintf(what, sizeof what, "%s mismatch: the collective did not run", mismatch_names[m]);
    expect(ok, what);
    accel_comm_destroy(comm);
  }
  /* the device is still usable */
  accel_tensor_t t = {send, N, ACCEL_F32};
  expect(accel_fill(s, &t, 1, 3.0f) == ACCEL_OK && accel_stream_synchronize(s) == ACCEL_OK,
         "the device works after the mismatches");
  accel_memcpy(dev, host, send, sizeof(float) * N);
  expect(host[N - 1] == 3.0f, "fill after the mismatches");

  accel_free(dev, send);
  accel_free(dev, recv);
  accel_stream_destroy(s);
  accel_device_close(dev);
  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!failures) printf("rank %d: OK\n", rank);
  MPI_Finalize();
  return any ? 1 : 0;
}
