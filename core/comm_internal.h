/*
 * Communicators (core/comm.c) and their engines (core/comm_loader.c).
 */
#ifndef ACCEL_CORE_COMM_INTERNAL_H
#define ACCEL_CORE_COMM_INTERNAL_H

#include "accel/accel_comm.h"
#include "accel/accel_comm_engine.h"
#include "internal.h"

/* The engine named name, loaded and initialised once: ACCEL_OK, or UNAVAILABLE / PLUGIN (an
 * engine whose runtime is absent stays UNAVAILABLE) with a message naming fn. */
accel_status_t accel_comm_engine_get(const char *name, const char *fn,
                                     const accel_comm_engine_vtable_t **out);

/* ACCEL_COMM_CHECK (core/comm_check.c): whether it is set; whether op is fingerprinted (not
 * send/recv); and the check itself before collective number seq of a communicator: the
 * fingerprints of every rank all-gathered through the engine's host_all_gather and compared,
 * INVALID_ARGUMENT naming both sides on every rank when they differ. */
bool accel_comm_check_enabled(void);
bool accel_comm_check_applies(const accel_comm_op_t *op);
accel_status_t accel_comm_check_fingerprints(const accel_comm_engine_vtable_t *ev,
                                             accel_ce_comm_t *impl, int rank, int size,
                                             uint64_t seq, const accel_comm_op_t *op,
                                             double timeout_s);

/* comm_exit.c: every communicator is listed from its creation to its teardown; at process exit
 * the streams of their devices finish their work (bounded by the longest timeout) before the
 * engines' own exit handlers (MPI_Finalize) run. */
typedef struct accel_comm_live {
  accel_device_t *dev;
  double timeout_s;
  struct accel_comm_live *prev, *next;
} accel_comm_live_t;
void accel_comm_live_add(accel_comm_live_t *l);
void accel_comm_live_remove(accel_comm_live_t *l);

/* dst[i] = src[i] rounded to dtype (F16 or BF16, nearest even) as the kernels' conversions. */
void accel_comm_downcast(void *dst, const float *src, size_t n, accel_dtype_t dtype);

/* ACCEL_COMM_TIMEOUT for stream engines (core/comm_watchdog.c): watches the work submitted to
 * the eager stream s so far. async_error (may be NULL) is polled while it runs; expired(owner,
 * why) is called from the watchdog thread when it reports an error or timeout_s passed first
 * (possibly more than once for one owner); release(owner) once the watch is gone. On failure
 * nothing is watched and release is not called. */
typedef struct accel_watch_ops {
  accel_status_t (*async_error)(void *owner);
  void (*expired)(void *owner, const char *why);
  void (*release)(void *owner);
} accel_watch_ops_t;
accel_status_t accel_watch_stream(accel_stream_t *s, double timeout_s, const char *what,
                                  const accel_watch_ops_t *ops, void *owner);

#endif
