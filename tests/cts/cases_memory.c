/*
 * accel CTS: device memory, copies, memset, stream-ordered allocation and the allocator's
 * statistics.
 */
#include <stdlib.h>
#include <string.h>

#include "cts_internal.h"

#define MIB (1024u * 1024u)

/* Runs memset of the whole buffer and checks its first and last bytes. */
static cts_result_t check_one_size(cts_ctx_t *ctx, accel_stream_t *s, size_t size,
                                   unsigned char value, unsigned char *host, size_t host_size) {
  void *p = NULL;
  CTS_OK(accel_malloc(ctx->dev, size, &p));
  CTS_CHECK(p != NULL, "accel_malloc(%zu) returned NULL", size);
  CTS_CHECK((uintptr_t)p % 256 == 0, "accel_malloc(%zu) = %p is not 256-byte aligned", size, p);
  CTS_OK(accel_memset_async(s, p, value, size));
  CTS_OK(accel_stream_flush(s));
  CTS_OK(accel_stream_synchronize(s));
  size_t n = size < host_size ? size : host_size;
  memset(host, ~value, n);
  CTS_OK(cts_download(ctx, host, p, n));
  size_t bad = cts_find_not_byte(host, n, value);
  CTS_CHECK(bad == n, "size %zu: byte %zu is 0x%02x, want 0x%02x", size, bad, host[bad], value);
  memset(host, ~value, n);
  CTS_OK(cts_download(ctx, host, (char *)p + size - n, n));
  bad = cts_find_not_byte(host, n, value);
  CTS_CHECK(bad == n, "size %zu: byte %zu is 0x%02x, want 0x%02x", size, size - n + bad,
            host[bad], value);
  CTS_OK(accel_free(ctx->dev, p));
  return CTS_PASS;
}

CTS_CASE(memory_alloc_sizes, CTS_TAG_NONE) {
  static const size_t sizes[] = {1, 3, 255, 256, 257, 4096, 65537, MIB, 16 * MIB + 1, 64 * MIB};
  enum { HOST = 4096 };
  static unsigned char host[HOST];
  accel_stream_t *s = NULL;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    cts_result_t r = check_one_size(ctx, s, sizes[i], (unsigned char)(0x31 + i), host, HOST);
    if (r != CTS_PASS) return r;
  }
  CTS_OK(accel_stream_destroy(s));
  return CTS_PASS;
}

CTS_CASE(memory_malloc_zero, CTS_TAG_NONE) {
  void *p = &p;
  CTS_OK(accel_malloc(ctx->dev, 0, &p));
  CTS_CHECK(p == NULL, "accel_malloc(0) returned %p, want NULL", p);
  CTS_OK(accel_free(ctx->dev, NULL));
  return CTS_PASS;
}

/* Copies in every direction, with the device side at interior offsets. */
typedef struct copy_job {
  unsigned char *host_src;  /* malloc'd host memory */
  unsigned char *host_dst;  /* accel_host_alloc memory */
  unsigned char *host_dst2; /* malloc'd host memory */
  unsigned char *dev_a;
  unsigned char *dev_b;     /* size + 128 bytes; data lands at offset 64 */
  size_t size;
} copy_job_t;

static accel_status_t copy_body(accel_stream_t *s, void *user) {
  copy_job_t *j = user;
  accel_status_t st = accel_memcpy_async(s, j->dev_a, j->host_src, j->size);            /* H2D */
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->dev_b + 64, j->dev_a, j->size);     /* D2D */
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->host_dst, j->dev_b + 64, j->size);  /* D2H */
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->host_dst2, j->host_src, j->size);   /* H2H */
  return st;
}

CTS_CASE(memory_copy_directions, CTS_TAG_NONE) {
  copy_job_t j = {.size = 64 * 1024 + 13};
  j.host_src = malloc(j.size);
  j.host_dst2 = malloc(j.size);
  unsigned char *edges = malloc(j.size + 128);
  CTS_CHECK(j.host_src && j.host_dst2 && edges, "host malloc failed");
  CTS_OK(accel_host_alloc(ctx->dev, j.size, (void **)&j.host_dst));
  CTS_OK(accel_malloc(ctx->dev, j.size, (void **)&j.dev_a));
  CTS_OK(accel_malloc(ctx->dev, j.size + 128, (void **)&j.dev_b));
  cts_fill_pattern(j.host_src, j.size, 11);
  memset(j.host_dst, 0, j.size);
  memset(j.host_dst2, 0, j.size);
  memset(edges, 0xEE, j.size + 128);
  CTS_OK(cts_upload(ctx, j.dev_b, edges, j.size + 128));

  CTS_OK(cts_exec(ctx, copy_body, &j, 2));
  size_t bad = cts_check_pattern(j.host_dst, j.size, 11);
  CTS_CHECK(bad == j.size, "H2D -> D2D -> D2H: byte %zu wrong", bad);
  bad = cts_check_pattern(j.host_dst2, j.size, 11);
  CTS_CHECK(bad == j.size, "H2H: byte %zu wrong", bad);
  CTS_OK(cts_download(ctx, edges, j.dev_b, j.size + 128));
  CTS_CHECK(cts_find_not_byte(edges, 64, 0xEE) == 64, "D2D wrote before its destination");
  CTS_CHECK(cts_find_not_byte(edges + 64 + j.size, 64, 0xEE) == 64,
            "D2D wrote past its destination");

  /* The blocking copy in every direction. */
  cts_fill_pattern(j.host_src, j.size, 12);
  memset(j.host_dst, 0, j.size);
  memset(j.host_dst2, 0, j.size);
  CTS_OK(accel_memcpy(ctx->dev, j.dev_a + 1, j.host_src, j.size - 1));
  CTS_OK(accel_memcpy(ctx->dev, j.dev_b + 3, j.dev_a + 1, j.size - 1));
  CTS_OK(accel_memcpy(ctx->dev, j.host_dst, j.dev_b + 3, j.size - 1));
  CTS_OK(accel_memcpy(ctx->dev, j.host_dst2, j.host_dst, j.size - 1));
  bad = cts_check_pattern(j.host_dst2, j.size - 1, 12);
  CTS_CHECK(bad == j.size - 1, "blocking copies: byte %zu wrong", bad);

  CTS_OK(accel_free(ctx->dev, j.dev_a));
  CTS_OK(accel_free(ctx->dev, j.dev_b));
  CTS_OK(accel_host_free(ctx->dev, j.host_dst));
  free(j.host_src);
  free(j.host_dst2);
  free(edges);
  return CTS_PASS;
}

/* memset and copies on interior ranges of one allocation. */
typedef struct interior_job {
  unsigned char *dev;
  size_t size;
} interior_job_t;

static accel_status_t interior_body(accel_stream_t *s, void *user) {
  interior_job_t *j = user;
  accel_status_t st = accel_memset_async(s, j->dev, 0, j->size);
  if (st == ACCEL_OK) st = accel_memset_async(s, j->dev + 100, 0x77, 333);
  if (st == ACCEL_OK) st = accel_memset_async(s, j->dev + 150, 0x13, 10);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->dev + 1000, j->dev + 140, 100);
  if (st == ACCEL_OK) st = accel_memset_async(s, j->dev + j->size - 1, 0xFE, 1);
  return st;
}

CTS_CASE(memory_interior_pointers, CTS_TAG_NONE) {
  interior_job_t j = {.size = 4096};
  CTS_OK(accel_malloc(ctx->dev, j.size, (void **)&j.dev));
  CTS_OK(cts_exec(ctx, interior_body, &j, 2));
  unsigned char want[4096], got[4096];
  memset(want, 0, sizeof(want));
  memset(want + 100, 0x77, 333);
  memset(want + 150, 0x13, 10);
  memmove(want + 1000, want + 140, 100);
  want[4095] = 0xFE;
  CTS_OK(cts_download(ctx, got, j.dev, j.size));
  for (size_t i = 0; i < j.size; i++)
    CTS_CHECK(got[i] == want[i], "byte %zu is 0x%02x, want 0x%02x", i, got[i], want[i]);
  CTS_OK(accel_free(ctx->dev, j.dev));
  return CTS_PASS;
}

/* memset takes (unsigned char)value; odd sizes and offsets. */
static const struct { int value; size_t offset, size; } k_memsets[] = {
    {0, 0, 1}, {0xAB, 1, 7}, {0xFF, 64, 4097}, {0x1FF, 5000, 13}, {-1, 6000, 255}, {0x100, 7000, 9},
};
enum { MEMSET_BUF = 8192, MEMSET_COUNT = sizeof(k_memsets) / sizeof(k_memsets[0]) };

static accel_status_t memset_body(accel_stream_t *s, void *user) {
  unsigned char *dev = user;
  accel_status_t st = accel_memset_async(s, dev, 0x5A, MEMSET_BUF);
  for (int i = 0; i < MEMSET_COUNT && st == ACCEL_OK; i++)
    st = accel_memset_async(s, dev + k_memsets[i].offset, k_memsets[i].value, k_memsets[i].size);
  return st;
}

CTS_CASE(memory_memset_values, CTS_TAG_NONE) {
  unsigned char *dev = NULL;
  static unsigned char want[MEMSET_BUF], got[MEMSET_BUF];
  CTS_OK(accel_malloc(ctx->dev, MEMSET_BUF, (void **)&dev));
  CTS_OK(cts_exec(ctx, memset_body, dev, 1));
  memset(want, 0x5A, MEMSET_BUF);
  for (int i = 0; i < MEMSET_COUNT; i++)
    memset(want + k_memsets[i].offset, (unsigned char)k_memsets[i].value, k_memsets[i].size);
  CTS_OK(cts_download(ctx, got, dev, MEMSET_BUF));
  for (size_t i = 0; i < MEMSET_BUF; i++)
    CTS_CHECK(got[i] == want[i], "byte %zu is 0x%02x, want 0x%02x", i, got[i], want[i]);
  CTS_OK(accel_free(ctx->dev, dev));
  return CTS_PASS;
}

/* Stream-ordered allocation: allocate, use, free, allocate again (the block may be reused at
 * once, in stream order) and use again. */
typedef struct async_job {
  unsigned char *host_a, *host_b;
  size_t size;
} async_job_t;

static accel_status_t async_body(accel_stream_t *s, void *user) {
  async_job_t *j = user;
  void *p = NULL, *q = NULL;
  accel_status_t st = accel_malloc_async(s, j->size, &p);
  if (st == ACCEL_OK) st = accel_memset_async(s, p, 0x3C, j->size);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->host_a, p, j->size);
  if (st == ACCEL_OK) st = accel_free_async(s, p);
  if (st == ACCEL_OK) st = accel_malloc_async(s, j->size, &q);
  if (st == ACCEL_OK) st = accel_memset_async(s, q, 0x4D, j->size);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, j->host_b, q, j->size);
  if (st == ACCEL_OK) st = accel_free_async(s, q);
  return st;
}

CTS_CASE(memory_async_alloc_free, CTS_TAG_NONE) {
  async_job_t j = {.size = 10000};
  static unsigned char a[10000], b[10000];
  j.host_a = a;
  j.host_b = b;
  CTS_OK(cts_exec(ctx, async_body, &j, 3));
  size_t bad = cts_find_not_byte(a, j.size, 0x3C);
  CTS_CHECK(bad == j.size, "first block: byte %zu is 0x%02x", bad, a[bad]);
  bad = cts_find_not_byte(b, j.size, 0x4D);
  CTS_CHECK(bad == j.size, "second block: byte %zu is 0x%02x", bad, b[bad]);
  return CTS_PASS;
}

CTS_CASE(memory_stats_up_down, CTS_TAG_NONE) {
  accel_memory_stats_t base, up, down;
  CTS_OK(accel_memory_stats(ctx->dev, &base));
  void *p = NULL;
  CTS_OK(accel_malloc(ctx->dev, MIB, &p));
  CTS_OK(accel_memory_stats(ctx->dev, &up));
  CTS_OK(accel_free(ctx->dev, p));
  CTS_OK(accel_memory_stats(ctx->dev, &down));
  CTS_CHECK(up.allocated_bytes >= base.allocated_bytes + MIB, "allocated_bytes %llu -> %llu",
            (unsigned long long)base.allocated_bytes, (unsigned long long)up.allocated_bytes);
  CTS_CHECK(up.reserved_bytes >= up.allocated_bytes, "reserved %llu < allocated %llu",
            (unsigned long long)up.reserved_bytes, (unsigned long long)up.allocated_bytes);
  CTS_CHECK(up.peak_allocated_bytes >= up.allocated_bytes, "peak below current");
  CTS_CHECK(up.peak_reserved_bytes >= up.reserved_bytes, "peak reserved below current");
  CTS_CHECK(up.alloc_count == base.alloc_count + 1, "alloc_count %llu -> %llu",
            (unsigned long long)base.alloc_count, (unsigned long long)up.alloc_count);
  CTS_CHECK(up.active_blocks == base.active_blocks + 1, "active_blocks %llu -> %llu",
            (unsigned long long)base.active_blocks, (unsigned long long)up.active_blocks);
  CTS_CHECK(up.segment_count >= 1, "no segment held while a block is live");
  CTS_CHECK(down.allocated_bytes == base.allocated_bytes, "allocated_bytes %llu after free, %llu before",
            (unsigned long long)down.allocated_bytes, (unsigned long long)base.allocated_bytes);
  CTS_CHECK(down.free_count == base.free_count + 1, "free_count %llu -> %llu",
            (unsigned long long)base.free_count, (unsigned long long)down.free_count);
  CTS_CHECK(down.active_blocks == base.active_blocks, "active_blocks did not come back");
  return CTS_PASS;
}

CTS_CASE(memory_reset_peak, CTS_TAG_NONE) {
  accel_memory_stats_t base, st;
  CTS_OK(accel_reset_peak_memory_stats(ctx->dev));
  CTS_OK(accel_memory_stats(ctx->dev, &base));
  void *p = NULL;
  CTS_OK(accel_malloc(ctx->dev, 4 * MIB, &p));
  CTS_OK(accel_free(ctx->dev, p));
  CTS_OK(accel_memory_stats(ctx->dev, &st));
  CTS_CHECK(st.peak_allocated_bytes >= base.allocated_bytes + 4 * MIB,
            "peak_allocated_bytes %llu after a 4 MiB block", (unsigned long long)st.peak_allocated_bytes);
  CTS_OK(accel_reset_peak_memory_stats(ctx->dev));
  CTS_OK(accel_memory_stats(ctx->dev, &st));
  CTS_CHECK(st.peak_allocated_bytes == st.allocated_bytes,
            "after reset peak_allocated %llu != allocated %llu",
            (unsigned long long)st.peak_allocated_bytes, (unsigned long long)st.allocated_bytes);
  CTS_CHECK(st.peak_reserved_bytes == st.reserved_bytes,
            "after reset peak_reserved %llu != reserved %llu",
            (unsigned long long)st.peak_reserved_bytes, (unsigned long long)st.reserved_bytes);
  return CTS_PASS;
}

CTS_CASE(memory_empty_cache, CTS_TAG_NONE) {
  void *p = NULL;
  accel_memory_stats_t cached, emptied;
  CTS_OK(accel_malloc(ctx->dev, 8 * MIB, &p));
  CTS_OK(accel_free(ctx->dev, p));
  CTS_OK(accel_memory_stats(ctx->dev, &cached));
  CTS_CHECK(cached.reserved_bytes >= 8 * MIB,
            "freed 8 MiB block not cached: reserved_bytes %llu",
            (unsigned long long)cached.reserved_bytes);
  CTS_OK(accel_empty_cache(ctx->dev));
  CTS_OK(accel_memory_stats(ctx->dev, &emptied));
  CTS_CHECK(emptied.reserved_bytes + 8 * MIB <= cached.reserved_bytes,
            "empty_cache: reserved_bytes %llu -> %llu", (unsigned long long)cached.reserved_bytes,
            (unsigned long long)emptied.reserved_bytes);
  CTS_CHECK(emptied.segment_count < cached.segment_count, "segment_count %llu -> %llu",
            (unsigned long long)cached.segment_count, (unsigned long long)emptied.segment_count);
  CTS_CHECK(emptied.allocated_bytes == cached.allocated_bytes, "empty_cache changed allocated_bytes");
  return CTS_PASS;
}

CTS_CASE(memory_host_alloc, CTS_TAG_NONE) {
  size_t size = MIB + 7;
  unsigned char *a = NULL, *b = NULL;
  void *dev = NULL;
  CTS_OK(accel_host_alloc(ctx->dev, size, (void **)&a));
  CTS_OK(accel_host_alloc(ctx->dev, size, (void **)&b));
  CTS_CHECK(a && b && a != b, "host_alloc returned %p and %p", (void *)a, (void *)b);
  cts_fill_pattern(a, size, 77); /* the host can write it directly */
  memset(b, 0, size);
  CTS_OK(accel_malloc(ctx->dev, size, &dev));
  CTS_OK(accel_memcpy(ctx->dev, dev, a, size));
  CTS_OK(accel_memcpy(ctx->dev, b, dev, size));
  size_t bad = cts_check_pattern(b, size, 77);
  CTS_CHECK(bad == size, "round trip through pinned memory: byte %zu wrong", bad);
  /* Host memory is not device memory. */
  CTS_STATUS(accel_free(ctx->dev, a), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_OK(accel_free(ctx->dev, dev));
  CTS_OK(accel_host_free(ctx->dev, a));
  CTS_OK(accel_host_free(ctx->dev, b));
  return CTS_PASS;
}

CTS_CASE(memory_bad_free, CTS_TAG_NONE) {
  accel_memory_stats_t base, after;
  CTS_OK(accel_memory_stats(ctx->dev, &base));
  unsigned char *p = NULL;
  int on_stack = 0;
  CTS_OK(accel_malloc(ctx->dev, 4096, (void **)&p));
  CTS_STATUS(accel_free(ctx->dev, p + 256), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_CHECK(accel_last_error()[0] != '\0', "no message for an interior pointer");
  CTS_STATUS(accel_free(ctx->dev, &on_stack), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_OK(accel_free(ctx->dev, p));
  CTS_STATUS(accel_free(ctx->dev, p), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_CHECK(accel_last_error()[0] != '\0', "no message for a double free");

  accel_stream_t *s = NULL;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_STATUS(accel_free_async(s, &on_stack), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_free_async(s, p), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_OK(accel_stream_destroy(s));

  CTS_OK(accel_memory_stats(ctx->dev, &after));
  CTS_CHECK(after.allocated_bytes == base.allocated_bytes &&
                after.active_blocks == base.active_blocks,
            "bad frees changed the statistics");
  /* The allocator still works (and may hand the same block out again). */
  CTS_OK(accel_malloc(ctx->dev, 4096, (void **)&p));
  CTS_OK(accel_free(ctx->dev, p));
  return CTS_PASS;
}

CTS_CASE(memory_size_overflow, CTS_TAG_NONE) {
  void *const sentinel = (void *)(uintptr_t)0x1234;
  void *p = sentinel;
  accel_status_t st = accel_malloc(ctx->dev, SIZE_MAX, &p);
  CTS_CHECK(st != ACCEL_OK, "accel_malloc(SIZE_MAX) succeeded");
  CTS_CHECK(p == sentinel, "accel_malloc wrote its output on failure");
  CTS_CHECK(accel_last_error()[0] != '\0', "no message for accel_malloc(SIZE_MAX)");
  st = accel_malloc(ctx->dev, SIZE_MAX - 255, &p);
  CTS_CHECK(st != ACCEL_OK && p == sentinel, "accel_malloc(SIZE_MAX - 255) -> %s",
            accel_status_name(st));
  st = accel_host_alloc(ctx->dev, SIZE_MAX, &p);
  CTS_CHECK(st != ACCEL_OK && p == sentinel, "accel_host_alloc(SIZE_MAX) -> %s",
            accel_status_name(st));
  accel_stream_t *s = NULL;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  st = accel_malloc_async(s, SIZE_MAX, &p);
  accel_status_t destroy = accel_stream_destroy(s);
  CTS_CHECK(st != ACCEL_OK && p == sentinel, "accel_malloc_async(SIZE_MAX) -> %s",
            accel_status_name(st));
  CTS_OK(destroy);
  return CTS_PASS;
}
