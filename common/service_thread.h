/*
 * The one way core and the plugins start a service thread: detached (nobody joins it; it lives
 * as long as the process or ends on its own). Core's ACCEL_COMM_TIMEOUT watchdog
 * (core/comm_watchdog.c), the MPI engine's watchdog of blocking calls (engines/mpi/
 * mpi_watchdog.c) and the GPU plugins' host-function workers (backends/gpu_common/
 * gpu_hostfn.c) use it; compiled into each (common/meson.build).
 */
#ifndef ACCEL_COMMON_SERVICE_THREAD_H
#define ACCEL_COMMON_SERVICE_THREAD_H

/* Runs fn(arg) on a new detached thread: 1 when it was started, 0 when no thread could be. */
int accel_service_thread_start(void *(*fn)(void *), void *arg);

#endif
