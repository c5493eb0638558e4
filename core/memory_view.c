/*
 * Memory you can see (docs/MEMORY.md): the growable statistics, one graph's figures and the
 * allocator snapshot, over the allocator's views (allocator_view.c, allocator_snapshot.c).
 */
#include "memory_view.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "device.h"
#include "graph.h"
#include "pool.h"
#include "trace.h"

/* Copies the filled struct full (full_size bytes, struct_size first) into the caller's out,
 * whose struct_size says how many bytes it has room for; min: the first version's size. */
static accel_status_t struct_out(const char *fn, void *out, const void *full, size_t full_size,
                                 size_t min) {
  size_t room;
  memcpy(&room, out, sizeof room);
  if (room < min)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: struct_size %zu is below the struct's first version (%zu "
                           "bytes); set it to sizeof the struct",
                           fn, room, min);
  const size_t n = room < full_size ? room : full_size;
  memcpy((char *)out + sizeof n, (const char *)full + sizeof n, n - sizeof n);
  memcpy(out, &n, sizeof n);
  return ACCEL_OK;
}

accel_status_t accel_memory_stats_ex(accel_device_t *dev, accel_memory_stats_ex_t *out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  accel_memory_stats_ex_t full = {.struct_size = sizeof full};
  accel_allocator_stats_ex(dev->mem, &full);
  /* the first version ends at graph_pools */
  return struct_out(__func__, out, &full, sizeof full,
                    offsetof(accel_memory_stats_ex_t, graph_pools) + sizeof full.graph_pools);
}

static int cmp_keep(const void *x, const void *y) {
  uintptr_t a = (uintptr_t) * (void *const *)x, b = (uintptr_t) * (void *const *)y;
  return a < b ? -1 : a > b;
}

/* Chunk-table bytes the list keeps, each table once (commands may share one). */
static uint64_t chunk_table_bytes(const accel_cmdlist_t *l) {
  if (!l->nkeeps) return 0;
  accel_keepalive_t **k = malloc(l->nkeeps * sizeof *k);
  if (!k) return 0;
  memcpy(k, l->keeps, l->nkeeps * sizeof *k);
  qsort(k, l->nkeeps, sizeof *k, cmp_keep);
  uint64_t bytes = 0;
  for (size_t i = 0; i < l->nkeeps; ++i)
    if (!i || k[i] != k[i - 1]) bytes += accel_chunk_table_bytes(k[i]);
  free(k);
  return bytes;
}

accel_status_t accel_graph_memory_info(accel_graph_t *g, accel_graph_memory_info_t *out) {
  accel_status_t st = accel_handle_check(g, ACCEL_HANDLE_GRAPH, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  accel_graph_memory_info_t full = {.struct_size = sizeof full};
  pthread_mutex_lock(&g->lock);
  if (g->pool) {
    accel_allocator_arena_info_t a;
    accel_allocator_arena_info(g->pool->arena, &a);
    full.pool_reserved_bytes = a.reserved;
    full.pool_allocated_bytes = a.allocated;
    full.pool_segments = (uint32_t)a.segments;
    full.pool_graphs = (uint32_t)atomic_load(&g->pool->graphs);
    const bool capturing = g->state == ACCEL_GRAPH_CAPTURING;
    full.capture_peak_allocated_bytes = capturing ? a.peak_allocated : g->capture_peak_allocated;
    full.capture_peak_reserved_bytes = capturing ? a.peak_reserved : g->capture_peak_reserved;
  }
  accel_allocator_pins_bytes(g->dev->mem, &g->pins, &full.pinned_bytes, &full.pinned_blocks);
  full.chunk_table_bytes = g->lists ? chunk_table_bytes(&g->lists->flat) : 0u;
  pthread_mutex_unlock(&g->lock);
  /* the first version ends at capture_peak_reserved_bytes */
  return struct_out(__func__, out, &full, sizeof full,
                    offsetof(accel_graph_memory_info_t, capture_peak_reserved_bytes) +
                        sizeof full.capture_peak_reserved_bytes);
}

accel_status_t accel_memory_snapshot(accel_device_t *dev, char **json, size_t *length) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(json, __func__, "json is NULL");
  *json = NULL;
  char name[64];
  snprintf(name, sizeof name, "%s:%d", dev->backend->name, dev->index);
  size_t n = 0;
  st = accel_allocator_snapshot(dev->mem, name, json, &n);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  if (length) *length = n;
  return ACCEL_OK;
}

void accel_memory_snapshot_free(char *json) { free(json); }

void accel_memory_trace_counters(accel_device_t *dev) {
  if (!accel_trace_enabled()) return;
  accel_memory_stats_t st;
  accel_allocator_stats(dev->mem, &st);
  char name[64];
  snprintf(name, sizeof name, "memory %s:%d", dev->backend->name, dev->index);
  accel_trace_counter(name,
                      "\"allocated\":%llu,\"reserved\":%llu,\"graph_pools\":%llu",
                      (unsigned long long)st.allocated_bytes,
                      (unsigned long long)st.reserved_bytes,
                      (unsigned long long)st.graph_pool_reserved_bytes);
}

void accel_memory_trace_retry(accel_device_t *dev, size_t size, const char *reason,
                              bool recovered) {
  if (!accel_trace_enabled()) return;
  char text[200]; /* the reason as a JSON string's contents */
  size_t n = 0;
  for (const char *c = reason; *c && n + 7 < sizeof text; ++c) {
    if (*c == '"' || *c == '\\') text[n++] = '\\';
    text[n++] = (unsigned char)*c < 0x20 ? ' ' : *c;
  }
  text[n] = 0;
  accel_trace_instant(dev->trace_id, "out-of-memory retry",
                      "\"bytes\":%zu,\"recovered\":%d,\"reason\":\"%s\"", size, recovered,
                      text);
  accel_memory_trace_counters(dev);
}

void accel_memory_trace_empty(accel_device_t *dev, uint64_t released) {
  if (!accel_trace_enabled()) return;
  accel_trace_instant(dev->trace_id, "empty cache", "\"released\":%llu",
                      (unsigned long long)released);
  accel_memory_trace_counters(dev);
}
