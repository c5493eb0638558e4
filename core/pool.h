/*
 * Layer 3, device (docs/ARCHITECTURE.md, "Rooms and layers"): a graph memory pool, an arena of
 * the device's caching allocator that captures and graphs hold (graph_pool.c).
 */
#ifndef ACCEL_CORE_POOL_H
#define ACCEL_CORE_POOL_H

#include <stdbool.h>

#include "accel/accel_plugin.h"
#include "allocator.h"
#include "device.h"
#include "handle.h"
#include "kernel_support.h"

struct accel_pool {
  accel_handle_t hdr;
  accel_device_t *dev;
  accel_allocator_arena_t *arena; /* the pool's segments inside dev->mem */
  atomic_int graphs;              /* graphs holding it as their pool (graph memory info) */
};

/* Pool references (graph_pool.c): captures and graphs hold them. A pool made for a capture
 * (user: false) has no user reference. */
accel_status_t accel_pool_create_internal(accel_device_t *dev, bool user, accel_pool_t **out);
void accel_pool_retain(accel_pool_t *p);
void accel_pool_release_ref(accel_pool_t *p);
/* A keepalive holding a pool reference (NULL when out of host memory). */
accel_keepalive_t *accel_pool_keepalive(accel_pool_t *p);
/* Retires the collection of zombie (an unreferenced, empty graph-pool arena; NULL: nothing). */
void accel_pool_arena_retire(accel_device_t *dev, accel_allocator_arena_t *zombie);

#endif
