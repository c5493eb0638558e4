/*
 * Memory you can see (docs/MEMORY.md) on the CPU backend: accel_memory_stats_ex's
 * fragmentation figures and struct_size rules, accel_graph_memory_info for two graphs sharing
 * one pool and one with its own (checked against the allocator's own counters) and the chunk
 * tables a graph keeps (each once), and memory
 * tags (nesting, per thread, kept by blocks after their thread ended) as the snapshot shows
 * them. The JSON's schema and its sums are tests/python/test_memory.py's.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_kernels.h"
#include "../common/check.h"

static accel_device_t *dev;

/* Occurrences of needle in the device's snapshot. */
static int snapshot_count(const char *needle) {
  char *json = NULL;
  size_t len = 0;
  OK(accel_memory_snapshot(dev, &json, &len));
  int n = 0;
  for (const char *p = json; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
  CHECK(json && strlen(json) == len, "snapshot length %zu", len);
  accel_memory_snapshot_free(json);
  return n;
}

static void test_stats_ex(void) {
  accel_memory_stats_ex_t ex = {.struct_size = sizeof ex};
  OK(accel_memory_stats_ex(dev, &ex));
  const uint64_t empties = ex.cache_empties;
  void *a = NULL, *b = NULL, *c = NULL;
  OK(accel_malloc(dev, 4096, &a));
  OK(accel_malloc(dev, 8192, &b));
  OK(accel_malloc(dev, 4096, &c));
  OK(accel_free(dev, b)); /* a hole between two live blocks of one segment */
  OK(accel_memory_stats_ex(dev, &ex));
  CHECK(ex.struct_size == sizeof ex, "struct_size %zu", ex.struct_size);
  accel_memory_stats_t st;
  OK(accel_memory_stats(dev, &st));
  CHECK(ex.stats.allocated_bytes == st.allocated_bytes &&
            ex.stats.reserved_bytes == st.reserved_bytes,
        "ex stats differ from accel_memory_stats");
  /* the segment (2 MiB) holds a and c: everything else in it is free and split */
  CHECK(ex.inactive_split_bytes == st.reserved_bytes - st.allocated_bytes,
        "inactive split %llu, reserved-allocated %llu",
        (unsigned long long)ex.inactive_split_bytes,
        (unsigned long long)(st.reserved_bytes - st.allocated_bytes));
  CHECK(ex.inactive_split_blocks == 2, "split blocks %llu",
        (unsigned long long)ex.inactive_split_blocks);
  CHECK(ex.largest_free_block == st.reserved_bytes - st.allocated_bytes - 8192,
        "largest free %llu", (unsigned long long)ex.largest_free_block);
  OK(accel_free(dev, a));
  OK(accel_free(dev, c));
  OK(accel_empty_cache(dev));
  OK(accel_memory_stats_ex(dev, &ex));
  CHECK(ex.cache_empties == empties + 1 && ex.cache_empty_released_bytes >= (2u << 20),
        "cache empties %llu released %llu", (unsigned long long)ex.cache_empties,
        (unsigned long long)ex.cache_empty_released_bytes);
  CHECK(ex.inactive_split_bytes == 0 && ex.stats.reserved_bytes == 0, "cache not empty");

  /* a caller built against a longer struct (a newer header): nothing past ours is written */
  unsigned char big[sizeof ex + 32];
  memset(big, 0xab, sizeof big);
  size_t room = sizeof big;
  memcpy(big, &room, sizeof room);
  OK(accel_memory_stats_ex(dev, (accel_memory_stats_ex_t *)(void *)big));
  memcpy(&room, big, sizeof room);
  CHECK(room == sizeof ex, "filled %zu of %zu", room, sizeof ex);
  CHECK(big[sizeof ex] == 0xab && big[sizeof big - 1] == 0xab, "wrote past its struct");
  /* smaller than the first version: refused */
  ex.struct_size = sizeof(size_t) + sizeof(accel_memory_stats_t);
  CHECK(accel_memory_stats_ex(dev, &ex) == ACCEL_ERROR_INVALID_ARGUMENT, "short struct taken");
  CHECK(accel_memory_stats_ex(dev, NULL) == ACCEL_ERROR_INVALID_ARGUMENT, "NULL taken");
}

/* Captures into g (pool: NULL for its own) one allocation of bytes, returned, and a memset of
 * user. */
static void *capture(accel_graph_t *g, accel_stream_t *s, accel_pool_t *pool, size_t bytes,
                     void *user) {
  OK(accel_graph_capture_begin(g, s, pool, ACCEL_CAPTURE_MODE_THREAD_LOCAL));
  void *p = NULL, *scratch = NULL;
  OK(accel_malloc_async(s, bytes, &scratch)); /* freed in the capture: raises the peak only */
  OK(accel_free_async(s, scratch));
  OK(accel_malloc_async(s, bytes, &p));
  OK(accel_memset_async(s, p, 1, bytes));
  OK(accel_memset_async(s, user, 2, 4096));
  OK(accel_graph_capture_end(g));
  return p;
}

static accel_graph_memory_info_t info_of(accel_graph_t *g) {
  accel_graph_memory_info_t i = {.struct_size = sizeof i};
  OK(accel_graph_memory_info(g, &i));
  CHECK(i.struct_size == sizeof i, "struct_size %zu", i.struct_size);
  return i;
}

static void test_graph_info(void) {
  accel_stream_t *s = NULL;
  OK(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s));
  accel_pool_t *shared = NULL;
  OK(accel_graph_pool_create(dev, &shared));
  accel_graph_t *g1 = NULL, *g2 = NULL, *g3 = NULL;
  OK(accel_graph_create(dev, &g1));
  OK(accel_graph_create(dev, &g2));
  OK(accel_graph_create(dev, &g3));
  accel_graph_memory_info_t e = info_of(g1);
  CHECK(e.pool_reserved_bytes == 0 && e.pool_graphs == 0 && e.pinned_bytes == 0,
        "an empty graph holds memory");
  void *user = NULL;
  OK(accel_malloc(dev, 4096, &user));
  void *kept[3] = {capture(g1, s, shared, 1u << 20, user),
                   capture(g2, s, shared, 1u << 20, user), capture(g3, s, NULL, 3u << 20, user)};
  accel_graph_memory_info_t i1 = info_of(g1), i2 = info_of(g2), i3 = info_of(g3);
  CHECK(i1.pool_graphs == 2 && i2.pool_graphs == 2 && i3.pool_graphs == 1,
        "pool graphs %u %u %u", i1.pool_graphs, i2.pool_graphs, i3.pool_graphs);
  CHECK(i1.pool_reserved_bytes == i2.pool_reserved_bytes, "one pool, two figures");
  accel_memory_stats_t st;
  OK(accel_memory_stats(dev, &st));
  CHECK(i1.pool_reserved_bytes + i3.pool_reserved_bytes == st.graph_pool_reserved_bytes,
        "pools %llu + %llu, allocator %llu", (unsigned long long)i1.pool_reserved_bytes,
        (unsigned long long)i3.pool_reserved_bytes,
        (unsigned long long)st.graph_pool_reserved_bytes);
  CHECK(i1.pool_allocated_bytes == 2u << 20 && i3.pool_allocated_bytes == 3u << 20,
        "pool allocated %llu %llu", (unsigned long long)i1.pool_allocated_bytes,
        (unsigned long long)i3.pool_allocated_bytes);
  /* g1's peak: its scratch and its block at once is not possible (freed first): 1 MiB */
  CHECK(i1.capture_peak_allocated_bytes == 1u << 20, "g1 peak %llu",
        (unsigned long long)i1.capture_peak_allocated_bytes);
  /* g2 began with g1's block live in the shared pool */
  CHECK(i2.capture_peak_allocated_bytes == 2u << 20, "g2 peak %llu",
        (unsigned long long)i2.capture_peak_allocated_bytes);
  CHECK(i3.capture_peak_reserved_bytes == i3.pool_reserved_bytes, "g3 peak reserved");
  for (int k = 0; k < 3; ++k) {
    const accel_graph_memory_info_t *i = k == 0 ? &i1 : k == 1 ? &i2 : &i3;
    CHECK(i->pinned_bytes == 4096 && i->pinned_blocks == 1, "graph %d pins %llu in %llu", k,
          (unsigned long long)i->pinned_bytes, (unsigned long long)i->pinned_blocks);
  }
  /* g2 updated from a capture with a pool of its own: g2 leaves the shared pool for it */
  accel_graph_t *src = NULL;
  OK(accel_graph_create(dev, &src));
  void *src_block = capture(src, s, NULL, 1u << 20, user);
  OK(accel_graph_update(g2, src));
  CHECK(info_of(g1).pool_graphs == 1 && info_of(g2).pool_graphs == 2,
        "after the update: shared pool %u graphs, src's pool %u", info_of(g1).pool_graphs,
        info_of(g2).pool_graphs);
  OK(accel_graph_destroy(src));
  CHECK(info_of(g2).pool_graphs == 1, "src's share outlived it");
  OK(accel_graph_destroy(g1));
  OK(accel_graph_destroy(g2));
  OK(accel_free(dev, src_block));
  OK(accel_graph_destroy(g3));
  OK(accel_pool_release(shared));
  for (int k = 0; k < 3; ++k) OK(accel_free(dev, kept[k]));
  OK(accel_free(dev, user));
  OK(accel_stream_destroy(s));
  accel_graph_memory_info_t bad = {.struct_size = 8};
  CHECK(accel_graph_memory_info(g1, &bad) == ACCEL_ERROR_INVALID_HANDLE, "destroyed graph");
}

/* Chunk-table bytes of a graph that fills one tensor of 3 chunks `fills` times. */
static uint64_t chunk_bytes_of_fills(accel_stream_t *s, void *data, int fills) {
  accel_graph_t *g = NULL;
  OK(accel_graph_create(dev, &g));
  accel_tensor_t t = {data, 3u * 65536u, ACCEL_F32};
  OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_THREAD_LOCAL));
  for (int i = 0; i < fills; ++i) OK(accel_fill(s, &t, 1, 1.0f));
  OK(accel_graph_capture_end(g));
  accel_graph_memory_info_t i = info_of(g);
  CHECK(i.pinned_bytes == 3u * 65536u * 4u, "fill graph pins %llu",
        (unsigned long long)i.pinned_bytes);
  OK(accel_graph_destroy(g));
  return i.chunk_table_bytes;
}

static void test_chunk_tables(void) {
  accel_stream_t *s = NULL;
  OK(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &s));
  void *data = NULL;
  OK(accel_malloc(dev, 3u * 65536u * 4u, &data));
  const uint64_t once = chunk_bytes_of_fills(s, data, 1);
  CHECK(once > 0 && once % 3 == 0, "3 chunks in %llu bytes", (unsigned long long)once);
  /* the same table kept by two commands counts once */
  CHECK(chunk_bytes_of_fills(s, data, 2) == once, "a shared table counted twice");
  OK(accel_free(dev, data));
  OK(accel_stream_destroy(s));
}

static void *tagged_thread(void *arg) {
  void **p = arg;
  OK(accel_memory_tag_push("thread"));
  OK(accel_malloc(dev, 512, &p[0]));
  OK(accel_memory_tag_push("thread-inner"));
  OK(accel_malloc(dev, 512, &p[1]));
  return NULL; /* exits with its tags pushed: the blocks keep them */
}

static void test_tags(void) {
  void *p[6] = {0};
  OK(accel_memory_tag_push("outer"));
  OK(accel_malloc(dev, 512, &p[0]));
  OK(accel_memory_tag_push("inner"));
  OK(accel_malloc(dev, 512, &p[1]));
  pthread_t t;
  CHECK(pthread_create(&t, NULL, tagged_thread, &p[3]) == 0, "thread");
  pthread_join(t, NULL);
  OK(accel_memory_tag_pop());
  OK(accel_malloc(dev, 512, &p[2]));
  OK(accel_memory_tag_pop());
  CHECK(accel_memory_tag_pop() == ACCEL_ERROR_STATE, "pop of an empty stack");
  CHECK(snapshot_count("\"tag\":\"outer\"") == 2, "outer tags");
  CHECK(snapshot_count("\"tag\":\"inner\"") == 1, "inner tags");
  CHECK(snapshot_count("\"tag\":\"thread\"") == 1, "thread tags");
  CHECK(snapshot_count("\"tag\":\"thread-inner\"") == 1, "thread-inner tags");
  void *untagged = NULL;
  OK(accel_malloc(dev, 512, &untagged));
  CHECK(snapshot_count("\"state\":\"allocated\"") == 6, "live blocks");
  CHECK(snapshot_count("\"tag\":null") >= 1, "untagged block");
  CHECK(accel_memory_tag_push(NULL) == ACCEL_ERROR_INVALID_ARGUMENT, "NULL tag");
  CHECK(accel_memory_tag_push("") == ACCEL_ERROR_INVALID_ARGUMENT, "empty tag");
  char longtag[200];
  memset(longtag, 'x', sizeof longtag - 1);
  longtag[sizeof longtag - 1] = 0;
  CHECK(accel_memory_tag_push(longtag) == ACCEL_ERROR_INVALID_ARGUMENT, "long tag");
  OK(accel_memory_tag_push("quote\"tag"));
  OK(accel_malloc(dev, 512, &p[5]));
  OK(accel_memory_tag_pop());
  CHECK(snapshot_count("\"tag\":\"quote\\\"tag\"") == 1, "escaped tag");
  for (int k = 0; k < 6; ++k) OK(accel_free(dev, p[k]));
  OK(accel_free(dev, untagged));
}

int main(void) {
  OK(accel_device_open("cpu", &dev));
  if (!dev) return 1;
  test_stats_ex();
  test_graph_info();
  test_chunk_tables();
  test_tags();
  char *json = NULL;
  CHECK(accel_memory_snapshot(NULL, &json, NULL) == ACCEL_ERROR_INVALID_HANDLE, "NULL device");
  CHECK(accel_memory_snapshot(dev, NULL, NULL) == ACCEL_ERROR_INVALID_ARGUMENT, "NULL out");
  OK(accel_device_close(dev));
  printf("test_memory_view: %d failures\n", failures);
  return failures ? 1 : 0;
}
