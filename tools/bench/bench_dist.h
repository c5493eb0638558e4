/*
 * The distributed scenarios' common setup (accel-bench comm, optstep --dist), run under
 * mpirun: MPI with MPI_THREAD_MULTIPLE, one device per rank, a communicator over
 * MPI_COMM_WORLD. Only rank 0 prints tables and JSON.
 */
#ifndef ACCEL_BENCH_DIST_H
#define ACCEL_BENCH_DIST_H

#include "accel/accel_comm.h"
#include "bench.h"

typedef struct bench_dist {
  accel_device_t *dev;
  accel_stream_t *s;
  accel_comm_t *comm;
  int rank, size;
} bench_dist_t;

/* Initialises MPI and opens everything; returns 0, or the exit status after reporting. */
int bench_dist_open(const bench_opts_t *o, bench_dist_t *d);
/* Tears down and finalizes MPI; returns rc, made nonzero when any rank failed (collective). */
int bench_dist_close(bench_dist_t *d, int rc);
/* Barrier over the job (plain MPI). */
void bench_dist_barrier(void);
/* The largest of every rank's value (plain MPI): timings are the slowest rank's. */
double bench_dist_max(double v);

#endif
