#include "hashtab.h"

#include <stdlib.h>

#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)

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

bool accel_hashtab_put(accel_hashtab_t *t, uintptr_t key, void *value) {
  if (t->count + 1 >= t->cap) return false;
  size_t mask = t->cap - 1, j = (size_t)accel_hash_u64(key) & mask;
  while (t->slots[j].key) j = (j + 1) & mask;
  /* value first: a reader that sees the key sees its value */
  STORE(&t->slots[j].value, value);
  STORE(&t->slots[j].key, key);
  t->count++;
  return true;
}

bool accel_hashtab_insert(accel_hashtab_t *t, uintptr_t key, void *value) {
  accel_hashtab_slot_t *old;
  if (accel_hashtab_grow(t, &old)) free(old);
  return accel_hashtab_put(t, key, value);
}

void accel_hashtab_erase_at(accel_hashtab_t *t, size_t j) {
  accel_hashtab_slot_t *s = t->slots;
  size_t mask = t->cap - 1;
  STORE(&s[j].key, (uintptr_t)0);
  t->count--;
  /* Move each later key of the run back into the hole at j unless its home lies in (j, k]
   * (cyclically): probe chains stay unbroken without tombstones. */
  for (size_t k = (j + 1) & mask; s[k].key; k = (k + 1) & mask) {
    size_t home = (size_t)accel_hash_u64(s[k].key) & mask;
    bool between = j <= k ? (home > j && home <= k) : (home > j || home <= k);
    if (!between) {
      STORE(&s[j].value, s[k].value);
      STORE(&s[j].key, s[k].key);
      STORE(&s[k].key, (uintptr_t)0);
      j = k;
    }
  }
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
