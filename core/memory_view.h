/*
 * Memory you can see (docs/MEMORY.md): the hooks other core files call for the figures of
 * accel_graph_memory_info and the trace's memory tracks (memory_view.c, chunk_table.c).
 */
#ifndef ACCEL_CORE_MEMORY_VIEW_H
#define ACCEL_CORE_MEMORY_VIEW_H

#include <stddef.h>

#include <stdbool.h>

#include "accel/accel.h"
#include "kernel_support.h"

/* Device bytes of the chunk table k is (chunk_table.c), 0 when k is another keepalive. */
size_t accel_chunk_table_bytes(const accel_keepalive_t *k);

/* ACCEL_TRACE's memory tracks (no-ops when tracing is off): the device's allocated, reserved
 * and graph-pool bytes as counters; an out-of-memory retry of size bytes (reason: why its first
 * attempt failed; recovered: whether the second succeeded) and a cache empty that returned
 * released bytes as instant events on the device's track. */
void accel_memory_trace_counters(accel_device_t *dev);
void accel_memory_trace_retry(accel_device_t *dev, size_t size, const char *reason,
                              bool recovered);
void accel_memory_trace_empty(accel_device_t *dev, uint64_t released);

#endif
