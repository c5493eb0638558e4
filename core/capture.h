/*
 * Layer 5, capture / lazy (docs/ARCHITECTURE.md, "Rooms and layers"): the checks every call
 * makes against active captures, and the capture internals graph.c, stream.c, event.c and
 * memory.c use (see capture.c).
 */
#ifndef ACCEL_CORE_CAPTURE_H
#define ACCEL_CORE_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "allocator.h"
#include "cmdlist.h"
#include "event.h"
#include "pool.h"
#include "stream.h"

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

/* Called by every potentially unsafe call (synchronize, query, blocking copy, accel_malloc):
 * if a capture covers the calling thread (per its mode) the capture is invalidated and
 * ILLEGAL_IN_CAPTURE is returned with a message naming fn. stream may be NULL. */
accel_status_t accel_capture_check_unsafe(const char *fn, accel_stream_t *stream);
/* The same for a call illegal while any stream captures, in any mode and from any thread
 * (communicator creation communicates now): every active capture is invalidated. */
accel_status_t accel_capture_check_none(const char *fn);
/* Records a command on a capturing stream (caller holds s->lock). */
accel_status_t accel_capture_record_locked(accel_stream_t *s, const accel_cmd_t *cmd,
                                           accel_keepalive_t *keep);
accel_status_t accel_capture_event_record_locked(accel_stream_t *s, accel_event_t *e);
accel_status_t accel_capture_event_wait_locked(accel_stream_t *s, accel_capture_t *ec,
                                               uint32_t slot);
/* Invalidate the capture s belongs to (caller holds s->lock) with a reason. */
void accel_capture_invalidate(accel_capture_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Conditional regions (accel_graph_capture_if / _while; graph_cond.c) nest this deep at most. */
#define ACCEL_CAPTURE_COND_DEPTH ACCEL_COND_MAX_DEPTH
/* Opens a conditional region on the capturing stream s (caller holds s->lock): pins the flag's
 * allocation and records begin (an ACCEL_CMD_COND_BEGIN). Every region of a capture is on one
 * stream. private_capture: the capture was begun for this region alone (graph_cond.c). */
accel_status_t accel_capture_cond_begin_locked(accel_stream_t *s, const accel_cmd_t *begin,
                                               bool private_capture);
/* Closes the innermost region, which must be of kind (ACCEL_COND_*), on s (s->lock held):
 * records COND_END. *finish: the capture's graph when that closed the last region of a private
 * capture (the caller ends and replays it), else NULL. */
accel_status_t accel_capture_cond_end_locked(accel_stream_t *s, uint32_t kind, const char *fn,
                                             accel_graph_t **finish);
/* Active captures in the process (fast path for the unsafe-call check). */
extern atomic_int accel_active_captures;

#endif
