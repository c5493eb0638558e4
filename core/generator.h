/*
 * Layer 7, ops (docs/ARCHITECTURE.md, "Rooms and layers"): random-number generators
 * (accel_random.h). generator.c owns the object (create, fork, state copies, release);
 * generator_ops.c launches the random kernels over it.
 */
#ifndef ACCEL_CORE_GENERATOR_H
#define ACCEL_CORE_GENERATOR_H

#include <stdatomic.h>
#include <stdint.h>

#include "accel/accel_random.h"
#include "handle.h"

/* What a root generator and every generator forked from it share: the next stream number a
 * fork hands out (counter word 3; the root has 0). */
typedef struct accel_generator_family {
  atomic_int refcount;
  atomic_uint_fast64_t next_stream;
} accel_generator_family_t;

struct accel_generator {
  accel_handle_t hdr;
  accel_device_t *dev;
  accel_generator_state_t *state; /* device memory (an accel_malloc block of dev) */
  accel_generator_family_t *family;
};

/* ACCEL_OK when gen is a live generator whose device is stream's (a live stream); *dev gets
 * it. Else the status with a message naming fn. */
accel_status_t accel_generator_check(accel_generator_t *gen, accel_stream_t *stream,
                                     const char *fn, accel_device_t **dev);

#endif
