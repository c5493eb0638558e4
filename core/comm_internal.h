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

/* dst[i] = src[i] rounded to dtype (F16 or BF16, nearest even) as the kernels' conversions. */
void accel_comm_downcast(void *dst, const float *src, size_t n, accel_dtype_t dtype);

#endif
