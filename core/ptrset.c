#include "ptrset.h"

#include <stdint.h>
#include <stdlib.h>

static size_t home(const void *p, size_t cap) {
  return (size_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 24) & (cap - 1);
}

static bool grow(accel_ptrset_t *s) {
  size_t cap = s->cap ? s->cap * 2 : 64;
  const void **n = calloc(cap, sizeof *n);
  if (!n) return false;
  for (size_t i = 0; i < s->cap; ++i) {
    if (!s->slots[i]) continue;
    size_t j = home(s->slots[i], cap);
    while (n[j]) j = (j + 1) & (cap - 1);
    n[j] = s->slots[i];
  }
  free(s->slots);
  s->slots = n;
  s->cap = cap;
  return true;
}

bool accel_ptrset_insert(accel_ptrset_t *s, const void *p) {
  if ((s->count + 1) * 2 > s->cap && !grow(s)) return false;
  size_t j = home(p, s->cap);
  while (s->slots[j]) j = (j + 1) & (s->cap - 1);
  s->slots[j] = p;
  s->count++;
  return true;
}

bool accel_ptrset_remove(accel_ptrset_t *s, const void *p) {
  if (!s->cap) return false;
  size_t mask = s->cap - 1, j = home(p, s->cap);
  while (s->slots[j] && s->slots[j] != p) j = (j + 1) & mask;
  if (!s->slots[j]) return false;
  s->slots[j] = NULL;
  s->count--;
  for (size_t k = (j + 1) & mask; s->slots[k]; k = (k + 1) & mask) {
    size_t h = home(s->slots[k], s->cap);
    bool between = j <= k ? (h > j && h <= k) : (h > j || h <= k);
    if (!between) {
      s->slots[j] = s->slots[k];
      s->slots[k] = NULL;
      j = k;
    }
  }
  return true;
}

void accel_ptrset_free(accel_ptrset_t *s) {
  free(s->slots);
  s->slots = NULL;
  s->cap = s->count = 0;
}
