/* Capture internals shared by graph.c and memory.c (see capture.c). */
#ifndef ACCEL_CORE_CAPTURE_H
#define ACCEL_CORE_CAPTURE_H

#include "internal.h"

/* Starts capturing on s (caller holds s->lock and checked every precondition). */
accel_status_t accel_capture_begin(accel_graph_t *g, accel_stream_t *s, accel_pool_t *pool,
                                   accel_capture_mode_t mode, accel_capture_t **out);
/* Ends the capture (caller holds the origin stream's lock); on success *valid is true and
 * *out receives the recorded commands. The capture object is freed either way. */
accel_status_t accel_capture_end(accel_capture_t *c, accel_cmdlist_t *out, bool *valid);
accel_mempool_arena_t *accel_capture_arena(accel_capture_t *c);
/* Keeps obj alive as long as the capture's recorded commands (replay inside a capture). */
accel_status_t accel_capture_keep_locked(accel_stream_t *s, accel_keepalive_t *keep);
/* accel_free_async during capture: only blocks of the capture's pool may be freed. */
accel_status_t accel_capture_check_free_locked(accel_stream_t *s, void *ptr);

#endif
