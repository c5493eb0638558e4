/*
 * Layer 6, graph (docs/ARCHITECTURE.md, "Rooms and layers"): a captured graph, its recorded
 * commands, its pool and its replay ordering (graph.c).
 */
#ifndef ACCEL_CORE_GRAPH_H
#define ACCEL_CORE_GRAPH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "accel/accel_plugin.h"
#include "allocator.h"
#include "capture.h"
#include "cmdlist.h"
#include "handle.h"
#include "pool.h"
#include "stream.h"

typedef enum accel_graph_state {
  ACCEL_GRAPH_EMPTY = 0,
  ACCEL_GRAPH_CAPTURING,
  ACCEL_GRAPH_READY
} accel_graph_state_t;

/* A capture's commands, never changed once captured: shared by the graph that captured them
 * and the graphs updated from it (accel_graph_update takes a reference, not a copy). */
typedef struct accel_graph_lists {
  atomic_uint refs;
  accel_cmdlist_t cmds; /* as recorded, with fork/join events (flat keeps what they use) */
  accel_cmdlist_t flat; /* without event commands: the batch a replay submits */
} accel_graph_lists_t;

struct accel_graph {
  accel_handle_t hdr;
  accel_device_t *dev;
  pthread_mutex_t lock;
  accel_graph_state_t state;
  accel_capture_t *capture;
  accel_stream_t *capture_stream; /* origin stream while capturing */
  accel_graph_lists_t *lists;     /* what was captured (READY, else NULL): one reference */
  accel_pool_t *pool;             /* reference held while captured */
  accel_be_graph_t *native;
  uint64_t replays;
  uint64_t trace_id;
  /* replays of one graph run one at a time (as CUDA's launches of one executable graph): a
   * replay on another stream than the last one waits for it through this event */
  accel_stream_t *last_replay_stream; /* reference held */
  accel_be_event_t *replay_done;
  accel_allocator_pins_t pins;    /* allocations the recorded work uses (freeing them defers) */
  uint64_t capture_peak_allocated, capture_peak_reserved; /* its pool's, during the capture */
};

#endif
