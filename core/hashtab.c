#include "hashtab.h"

#include <stdlib.h>

bool accel_hashtab_grow(accel_hashtab_t *t, accel_hashtab_slot_t **old) {
  if ((t->count + 1) * 2 <= t->cap) return false;
  size_t cap = t->cap ? t->cap * 2 : t->min_cap ? t->min_cap : 16;
  accel_hashtab_slot_t *n = calloc(cap, sizeof *n);
  if (!n) return false;
  /* n is private until the caller publishes it: plain stores */
  for (size_t i = 0; i < t->cap; ++i) {
    uintptr_t k = t->slots[i].key;
    if (!k) continue;
    size_t j = (size_t)accel_hash_u64(k) & (cap - 1);
    while (n[j].key) j = (j + 1) & (cap - 1);
    n[j] = t->slots[i];
  }
  *old = t->slots;
  t->slots = n;
  t->cap = cap;
  return true;
}

void accel_hashtab_grow_free(accel_hashtab_t *t) {
  accel_hashtab_slot_t *old;
  if (accel_hashtab_grow(t, &old)) free(old);
}

bool accel_hashtab_erase(accel_hashtab_t *t, uintptr_t key) {
  size_t j = accel_hashtab_find(t, key);
  if (j == SIZE_MAX) return false;
  accel_hashtab_erase_at(t, j);
  return true;
}

void accel_hashtab_free(accel_hashtab_t *t) {
  free(t->slots);
  t->slots = NULL;
  t->cap = t->count = 0;
}
