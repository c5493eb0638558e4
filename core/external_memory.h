/* Registrations shared by accel_memory_register and DLPack imports (core/external_memory.c). */
#ifndef ACCEL_CORE_EXTERNAL_MEMORY_H
#define ACCEL_CORE_EXTERNAL_MEMORY_H

#include <stdbool.h>

#include "allocator.h"

/* Registers [ptr, ptr + size) with dev after the backend accepted it: the user's (ended
 * NULL), or shared by DLPack imports (accel_allocator_register: its first user's pin goes into
 * pins). Errors name fn. */
accel_status_t accel_external_register(accel_device_t *dev, const char *fn, void *ptr,
                                       size_t size, bool read_only,
                                       accel_allocator_ended_fn ended, void *ctx,
                                       accel_allocator_pins_t *pins, void **device_ptr);
/* ACCEL_OK unless a live registration of any device covers a byte of [ptr, ptr + size); then
 * STATE naming it (a free of that memory would leave the registration over freed memory). The
 * allocators' free guard and accel_host_free ask it; it takes no allocator lock. */
accel_status_t accel_external_check_free(const void *ptr, size_t size);
/* The backend's side of ending a registration the allocator has let go of. */
void accel_external_finish(accel_device_t *dev, void *ptr, void *device_ptr);
/* Ends every registration still there at device teardown (after the device drained). */
void accel_external_teardown(accel_device_t *dev);

#endif
