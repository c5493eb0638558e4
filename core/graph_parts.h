/*
 * What graph.c lends the other graph files (graph_update.c, graph_cond.c): the graph's replayable
 * contents, swapped in while replays of the old ones may still be queued, native instantiation,
 * and the release of a graph core made itself.
 */
#ifndef ACCEL_CORE_GRAPH_PARTS_H
#define ACCEL_CORE_GRAPH_PARTS_H

#include "accel/accel_plugin.h"
#include "allocator.h"
#include "cmdlist.h"
#include "graph.h"

/* What a replay runs: the captured lists (a reference), the pool and pins that keep the memory
 * they use, and the native graph (NULL: replayed as a batch of the flat list). */
typedef struct accel_graph_contents {
  accel_graph_lists_t *lists;
  accel_pool_t *pool;           /* one reference */
  accel_allocator_pins_t pins;
  accel_be_graph_t *native;
} accel_graph_contents_t;

/* The old contents of a graph, released once the replays issued before were finished. */
typedef struct accel_graph_remains accel_graph_remains_t;

/* One more holder of l; one fewer (the last frees the lists; NULL: nothing). */
void accel_graph_lists_retain(accel_graph_lists_t *l);
void accel_graph_lists_release(accel_graph_lists_t *l);

/* The native graph of cmds, or NULL when the device has none or declines this list (logged:
 * the graph then replays as a batch). */
accel_be_graph_t *accel_graph_instantiate_native(accel_device_t *dev, const accel_cmdlist_t *cmds);
/* g (lock held, READY) takes next's contents (next is emptied); the old ones, less a native
 * graph that next keeps, are returned for accel_graph_release_remains (NULL: released already).
 * Replay ordering (last replay stream and its event) is kept. */
accel_graph_remains_t *accel_graph_swap_contents(accel_graph_t *g, accel_graph_contents_t *next);
/* Retires r behind a fence of every stream of dev (no graph lock held). NULL: nothing. */
void accel_graph_release_remains(accel_device_t *dev, accel_graph_remains_t *r);
/* Drops the reference a core caller holds from accel_graph_create (graph_cond.c's private
 * graphs) as accel_graph_release does a user's; fn names the caller in any message. */
void accel_graph_release_owned(accel_graph_t *g, const char *fn);

#endif
