/*
 * Helpers shared by the communicator tests (run under mpirun): an independent reference
 * conversion for F16/BF16 (the compiler's _Float16 and plain bit rounding, not accel's code),
 * deterministic inputs, device buffers, and the start and end of a test's main.
 */
#ifndef ACCEL_TESTS_COMM_UTIL_H
#define ACCEL_TESTS_COMM_UTIL_H

#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "../common/check.h"

static inline float ref_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t ref_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float ref_f16_to_f32(uint16_t h) {
  _Float16 x;
  memcpy(&x, &h, 2);
  return (float)x;
}

static inline uint16_t ref_f32_to_f16(float f) {
  _Float16 x = (_Float16)f;
  uint16_t h;
  memcpy(&h, &x, 2);
  return h;
}

/* Element i of a typed host array, as float. */
static inline float elem_get(const void *p, accel_dtype_t dt, size_t i) {
  if (dt == ACCEL_F32) return ((const float *)p)[i];
  uint16_t h = ((const uint16_t *)p)[i];
  return dt == ACCEL_BF16 ? ref_bf16_to_f32(h) : ref_f16_to_f32(h);
}

static inline void elem_set(void *p, accel_dtype_t dt, size_t i, float v) {
  if (dt == ACCEL_F32) ((float *)p)[i] = v;
  else ((uint16_t *)p)[i] = dt == ACCEL_BF16 ? ref_f32_to_bf16(v) : ref_f32_to_f16(v);
}

/* A value in [-4, 4) on a 1/32 grid: exact in F32, F16 and BF16. */
static inline float grid_value(int rank, size_t i, unsigned salt) {
  uint32_t x = (uint32_t)rank * 2654435761u ^ (uint32_t)i * 40503u ^ salt * 97u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return (float)((int)(x % 256u) - 128) / 32.0f;
}

/* A float with all mantissa bits used (for rounding tests), |v| < 8. */
static inline float rough_value(int rank, size_t i) {
  uint32_t x = (uint32_t)rank * 747796405u + (uint32_t)i * 2891336453u + 1u;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  return ((float)(x & 0xffffffu) / 16777216.0f - 0.5f) * 16.0f;
}

/* Initialises MPI (MPI_THREAD_MULTIPLE), gives this rank and the size of MPI_COMM_WORLD, and
 * opens device and an MPI communicator on every rank. Returns -1 when all ranks succeeded, else
 * (MPI already finalised) the exit status every rank must return: 77 (meson SKIP) when some
 * rank's device or engine is unavailable and none failed otherwise, 1 when one failed; every
 * rank agrees. */
static inline int comm_test_start(int *argc, char ***argv, const char *device, int *rank,
                                  int *size, accel_device_t **dev, accel_comm_t **comm) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  accel_status_t st = accel_device_open(device, dev);
  if (st == ACCEL_OK) st = accel_comm_create_mpi(*dev, NULL, "mpi", comm);
  int skip = st == ACCEL_ERROR_UNAVAILABLE || st == ACCEL_ERROR_UNSUPPORTED, any_skip = 0;
  int err = st != ACCEL_OK && !skip, any_err = 0;
  MPI_Allreduce(&skip, &any_skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&err, &any_err, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!any_skip && !any_err) return -1;
  if (*rank == 0 || st != ACCEL_OK)
    fprintf(stderr, "rank %d: %s: %s: %s\n", *rank, any_skip ? "SKIP" : "FAIL",
            accel_status_name(st), accel_last_error());
  MPI_Finalize();
  return any_skip && !any_err ? 77 : 1;
}

/* The end of a test's main, on every rank: destroys s, comm and dev (each an OK check), then
 * returns 1 when a check failed on any rank, else 0 (every rank agrees); MPI stays up. */
static inline int comm_test_finish(accel_stream_t *s, accel_comm_t *comm, accel_device_t *dev) {
  OK(accel_stream_destroy(s));
  OK(accel_comm_destroy(comm));
  OK(accel_device_close(dev));
  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}

#endif
