/*
 * Memory you can see (docs/MEMORY.md): the hooks other core files call for the figures of
 * accel_graph_memory_info and the trace's memory tracks (memory_view.c, chunk_table.c).
 */
#ifndef ACCEL_CORE_MEMORY_VIEW_H
#define ACCEL_CORE_MEMORY_VIEW_H

#include <stddef.h>

#include "internal.h"

/* Keeps the peaks of g's pool during the capture that just ended (g->lock held). */
void accel_graph_note_capture_peaks(accel_graph_t *g);
/* Device bytes of the chunk table k is (chunk_table.c), 0 when k is another keepalive. */
size_t accel_chunk_table_bytes(const accel_keepalive_t *k);

#endif
