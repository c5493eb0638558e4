/*
 * accel CTS: small host-side helpers shared by the case files (host functions used as probes,
 * byte patterns).
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "cts_internal.h"

void cts_sleep_ms(unsigned ms) {
  struct timespec ts = {.tv_sec = ms / 1000u, .tv_nsec = (long)(ms % 1000u) * 1000000L};
  /* Interrupted by a signal: sleep for the remainder. */
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void cts_gate_init(cts_gate_t *gate) {
  atomic_init(&gate->open, 0);
  atomic_init(&gate->entered, 0);
  atomic_init(&gate->timed_out, 0);
}

void cts_gate_host_fn(void *user) {
  cts_gate_t *gate = user;
  atomic_store(&gate->entered, 1);
  /* 10 s in 1 ms steps: long enough for any test, short enough that a failing test that never
   * opens the gate does not hang the suite. */
  for (int i = 0; i < 10000; i++) {
    if (atomic_load(&gate->open)) return;
    cts_sleep_ms(1);
  }
  atomic_store(&gate->timed_out, 1);
}

void cts_gate_open(cts_gate_t *gate) { atomic_store(&gate->open, 1); }

void cts_sleep_host_fn(void *ms) { cts_sleep_ms((unsigned)(uintptr_t)ms); }

void cts_flag_host_fn(void *flag) { atomic_store((atomic_int *)flag, 1); }

void cts_seq_host_fn(void *user) {
  cts_seq_item_t *item = user;
  size_t at = atomic_fetch_add(&item->log->count, 1);
  if (at < item->log->capacity) item->log->values[at] = item->value;
}

static unsigned char pattern_byte(size_t i, uint32_t seed) {
  uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u;
  return (unsigned char)(x >> 13 ^ x >> 5);
}

void cts_fill_pattern(void *dst, size_t size, uint32_t seed) {
  unsigned char *p = dst;
  for (size_t i = 0; i < size; i++) p[i] = pattern_byte(i, seed);
}

size_t cts_check_pattern(const void *src, size_t size, uint32_t seed) {
  const unsigned char *p = src;
  for (size_t i = 0; i < size; i++)
    if (p[i] != pattern_byte(i, seed)) return i;
  return size;
}

size_t cts_find_not_byte(const void *p, size_t size, unsigned char value) {
  const unsigned char *b = p;
  for (size_t i = 0; i < size; i++)
    if (b[i] != value) return i;
  return size;
}
