/*
 * An old binary still runs: this caller does not include accel/accel.h but a copy of the
 * declarations as they were before accel_memory_stats_ex existed (the first
 * accel_memory_stats_t), and is linked against today's library. Its struct must be filled
 * exactly (no byte written past it) and agree with what it allocated and freed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* --- copied from include/accel/accel.h as of issue 35 (do not update) --- */
typedef int accel_status_t;
typedef struct accel_device accel_device_t;
typedef struct accel_memory_stats {
  uint64_t allocated_bytes;
  uint64_t reserved_bytes;
  uint64_t peak_allocated_bytes;
  uint64_t peak_reserved_bytes;
  uint64_t alloc_count;
  uint64_t free_count;
  uint64_t active_blocks;
  uint64_t segment_count;
  uint64_t graph_pool_reserved_bytes;
  uint64_t alloc_retries;
  uint64_t ooms;
} accel_memory_stats_t;
accel_status_t accel_device_open(const char *selector, accel_device_t **out);
accel_status_t accel_device_close(accel_device_t *device);
accel_status_t accel_malloc(accel_device_t *device, size_t size, void **ptr);
accel_status_t accel_free(accel_device_t *device, void *ptr);
accel_status_t accel_memory_stats(accel_device_t *device, accel_memory_stats_t *out);
/* --- end of the copy --- */

int main(void) {
  accel_device_t *dev = NULL;
  if (accel_device_open("cpu", &dev) != 0) return 1;
  struct {
    accel_memory_stats_t stats;
    unsigned char canary[64];
  } s;
  memset(&s, 0xcd, sizeof s);
  void *p = NULL;
  int failures = 0;
  if (accel_malloc(dev, 1000, &p) != 0 || accel_memory_stats(dev, &s.stats) != 0) failures++;
  if (s.stats.allocated_bytes != 1024 || s.stats.active_blocks != 1 ||
      s.stats.segment_count != 1 || s.stats.reserved_bytes != (2u << 20) ||
      s.stats.ooms != 0) {
    fprintf(stderr, "old stats wrong: allocated %llu active %llu segments %llu reserved %llu\n",
            (unsigned long long)s.stats.allocated_bytes,
            (unsigned long long)s.stats.active_blocks,
            (unsigned long long)s.stats.segment_count,
            (unsigned long long)s.stats.reserved_bytes);
    failures++;
  }
  for (size_t i = 0; i < sizeof s.canary; ++i)
    if (s.canary[i] != 0xcd) {
      fprintf(stderr, "byte %zu past the old struct was written\n", i);
      failures++;
      break;
    }
  if (accel_free(dev, p) != 0 || accel_memory_stats(dev, &s.stats) != 0 ||
      s.stats.allocated_bytes != 0 || s.stats.free_count != 1)
    failures++;
  accel_device_close(dev);
  printf("test_memory_abi: %d failures\n", failures);
  return failures != 0;
}
