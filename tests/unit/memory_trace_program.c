/*
 * Run by check_memory_trace.py with ACCEL_TRACE set and ACCEL_FAULT_INJECT=alloc:2 (the second
 * segment allocation fails once): allocations and frees, one captured allocation in a graph
 * pool, an out-of-memory retry and a cache empty. Prints the final accel_memory_stats as JSON,
 * where the trace's memory counters must end.
 */
#include <stdio.h>

#include "accel/accel.h"

#define TRY(call)                                                                     \
  do {                                                                                \
    accel_status_t st_ = (call);                                                      \
    if (st_ != ACCEL_OK) {                                                            \
      fprintf(stderr, "%s: %s: %s\n", #call, accel_status_name(st_), accel_last_error()); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main(void) {
  accel_device_t *dev = NULL;
  TRY(accel_device_open("cpu", &dev));
  void *a = NULL, *b = NULL, *c = NULL, *g = NULL;
  TRY(accel_malloc(dev, 3u << 20, &a));
  TRY(accel_malloc(dev, 3u << 20, &b)); /* the injected failure: a retry that recovers */
  TRY(accel_free(dev, a));
  accel_stream_t *s = NULL;
  accel_graph_t *graph = NULL;
  TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s));
  TRY(accel_graph_create(dev, &graph));
  TRY(accel_graph_capture_begin(graph, s, NULL, ACCEL_CAPTURE_MODE_THREAD_LOCAL));
  TRY(accel_malloc_async(s, 1u << 20, &g));
  TRY(accel_graph_capture_end(graph));
  TRY(accel_malloc(dev, 1000, &c));
  TRY(accel_empty_cache(dev));
  TRY(accel_free(dev, c));
  accel_memory_stats_t st;
  TRY(accel_memory_stats(dev, &st));
  printf("{\"allocated\":%llu,\"reserved\":%llu,\"graph_pools\":%llu,\"peak_allocated\":%llu,"
         "\"alloc_retries\":%llu}\n",
         (unsigned long long)st.allocated_bytes, (unsigned long long)st.reserved_bytes,
         (unsigned long long)st.graph_pool_reserved_bytes,
         (unsigned long long)st.peak_allocated_bytes, (unsigned long long)st.alloc_retries);
  fflush(stdout);
  TRY(accel_free(dev, b));
  TRY(accel_free(dev, g));
  TRY(accel_graph_destroy(graph));
  TRY(accel_stream_destroy(s));
  TRY(accel_device_close(dev));
  return 0;
}
