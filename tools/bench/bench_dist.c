/* Common setup of the distributed scenarios (bench_dist.h). */
#include <mpi.h>
#include <stdlib.h>

#include "bench_dist.h"

int bench_dist_open(const bench_opts_t *o, bench_dist_t *d) {
  int provided = 0;
  MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &d->size);
  if (bench_open_device(o, &d->dev)) goto fail_quiet;
  BENCH_TRY(accel_comm_create_mpi(d->dev, NULL, NULL, &d->comm));
  BENCH_TRY(accel_stream_create(d->dev, &d->s));
  return 0;
fail:
fail_quiet:
  fprintf(stderr, "accel-bench: rank %d could not set up; ending the job\n", d->rank);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

int bench_dist_close(bench_dist_t *d, int rc) {
  if (d->comm && accel_comm_get_error(d->comm) != ACCEL_OK)
    rc = bench_fail(ACCEL_ERROR_BACKEND, accel_last_error());
  if (d->s) accel_stream_destroy(d->s);
  if (d->comm) accel_comm_destroy(d->comm);
  if (d->dev) accel_device_close(d->dev);
  int any = 0;
  MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}

void bench_dist_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

double bench_dist_max(double v) {
  double m = v;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}
