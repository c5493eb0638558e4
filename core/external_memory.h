/* Registrations shared by accel_memory_register and DLPack imports (core/external_memory.c). */
#ifndef ACCEL_CORE_EXTERNAL_MEMORY_H
#define ACCEL_CORE_EXTERNAL_MEMORY_H

#include <stdbool.h>

#include "internal.h"

/* Registers [ptr, ptr + size) with dev after the backend accepted it (owner: NULL for the
 * user's, else the DLPack import making it); errors name fn. */
accel_status_t accel_external_register(accel_device_t *dev, const char *fn, void *ptr,
                                       size_t size, bool read_only, const void *owner,
                                       void **device_ptr);
/* The backend's side of ending a registration the allocator has let go of. */
void accel_external_finish(accel_device_t *dev, void *ptr, void *device_ptr);
/* Ends every registration still there at device teardown (after the device drained). */
void accel_external_teardown(accel_device_t *dev);

#endif
