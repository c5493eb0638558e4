/* Capture internals shared by graph.c and memory.c (see capture.c). */
#ifndef ACCEL_CORE_CAPTURE_H
#define ACCEL_CORE_CAPTURE_H

#include "internal.h"

/* Starts capturing on s (caller holds s->lock and checked every precondition). */
accel_status_t accel_capture_begin(accel_graph_t *g, accel_stream_t *s, accel_pool_t *pool,
                                   accel_capture_mode_t mode, accel_capture_t **out);
/* Ends the capture (caller holds the origin stream's lock); on success *valid is true, *out
 * receives the recorded commands and *pins the allocations they use. Drops every reference the
 * capture held except the origin stream's; the caller then unlocks the origin and drops that
 * one and the graph's reference to the capture (accel_capture_release). */
accel_status_t accel_capture_end(accel_capture_t *c, accel_cmdlist_t *out,
                                 accel_allocator_pins_t *pins, bool *valid);
/* Pins the allocations that ranges(ctx, i < n) touch (and the blocks of more, may be NULL) for
 * the capture on s (caller holds s->lock): a graph's memory is not freed under it (allocator.h). */
accel_status_t accel_capture_pin_locked(accel_stream_t *s, accel_range_fn ranges, void *ctx,
                                        size_t n, const accel_allocator_pins_t *more);
accel_allocator_arena_t *accel_capture_arena(accel_capture_t *c);
void accel_capture_retain(accel_capture_t *c);
void accel_capture_release(accel_capture_t *c);
/* The live capture e was last recorded in, with a reference for the caller (and its event slot),
 * or NULL when there is none or it ended. */
accel_capture_t *accel_event_capture_get(accel_event_t *e, uint32_t *slot);
/* Whether the calling thread may end c (CUDA: only the beginning thread, unless RELAXED). */
bool accel_capture_ended_by_caller(const accel_capture_t *c);
/* Keeps obj alive as long as the capture's recorded commands (replay inside a capture). */
accel_status_t accel_capture_keep_locked(accel_stream_t *s, accel_keepalive_t *keep);
/* accel_free_async during capture: only blocks of the capture's pool may be freed. */
accel_status_t accel_capture_check_free_locked(accel_stream_t *s, void *ptr);

#endif
