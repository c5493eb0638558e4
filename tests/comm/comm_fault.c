/*
 * Fault test (run by check_fault.sh under mpirun): the last rank dies (--fault exit), stops
 * taking part (--fault hang) or issues another count than the others (--fault mismatch: the
 * collective check's pattern, learnt in the first steps, predicts the others' collective, so
 * they run it while the last rank agrees alone) in the middle of a step of collectives; every
 * other rank must see
 * the failure through accel_comm_get_error within ACCEL_COMM_TIMEOUT, print
 * "rank R: comm error: ..." and end the job with accel_comm_abort (after a grace of 2 s, so
 * that every survivor's report is in the log). A rank that finishes all
 * steps prints "rank R: no error" (a test failure: the fault went unnoticed).
 * With --graph 1 each step replays a graph that captured its collectives (with
 * ACCEL_COMM_MPI_PERSISTENT=1: persistent requests).
 */
#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define COUNT (1 << 14)

static accel_status_t issue_step(accel_comm_t *comm, accel_stream_t *s, float *buf,
                                 size_t count) {
  accel_status_t st = ACCEL_OK;
  for (int k = 0; k < 4 && st == ACCEL_OK; ++k)
    st = accel_all_reduce(comm, s, buf, buf, count, ACCEL_F32, ACCEL_REDUCE_SUM);
  return st;
}

int main(int argc, char **argv) {
  const char *fault = argc > 2 && strcmp(argv[1], "--fault") == 0 ? argv[2] : "exit";
  const int use_graph = argc > 4 && strcmp(argv[3], "--graph") == 0 && strcmp(argv[4], "1") == 0;
  int provided = 0, rank = 0, size = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  accel_device_t *dev = NULL;
  accel_stream_t *s = NULL;
  accel_comm_t *comm = NULL;
  float *buf = NULL;
  if (accel_device_open("cpu", &dev) != ACCEL_OK ||
      accel_comm_create_mpi(dev, NULL, "mpi", &comm) != ACCEL_OK ||
      accel_stream_create(dev, &s) != ACCEL_OK || accel_malloc(dev, 1 << 16, (void **)&buf)) {
    fprintf(stderr, "rank %d: setup failed: %s\n", rank, accel_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  accel_graph_t *g = NULL;
  if (use_graph &&
      (accel_graph_create(dev, &g) != ACCEL_OK ||
       accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL) != ACCEL_OK ||
       issue_step(comm, s, buf, COUNT) != ACCEL_OK || accel_graph_capture_end(g) != ACCEL_OK)) {
    fprintf(stderr, "rank %d: capture failed: %s\n", rank, accel_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int step = 0; step < 10; ++step) {
    const int odd = step == 3 && rank == size - 1;
    if (odd && strcmp(fault, "hang") == 0)
      for (;;) pause(); /* alive but never joins the collective */
    if (odd && strcmp(fault, "exit") == 0) _exit(3); /* dies without MPI_Finalize */
    /* one step: a few collectives, then the host looks at the result */
    if (g) accel_graph_replay(g, s);
    else issue_step(comm, s, buf, odd ? COUNT - 1 : COUNT);
    accel_stream_synchronize(s);
    if (accel_comm_get_error(comm) != ACCEL_OK) {
      fprintf(stderr, "rank %d: comm error at step %d: %s\n", rank, step, accel_last_error());
      fflush(stderr);
      /* the survivors time out within moments of each other: let each one report before the
       * first abort ends the job (an application would abort at once) */
      sleep(2);
      accel_comm_abort(comm, 2);
    }
  }
  printf("rank %d: no error\n", rank);
  MPI_Finalize();
  return 0;
}
