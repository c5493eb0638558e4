/*
 * The one hash table of core and its mixer.
 *
 * accel_hashtab_t maps uintptr_t keys (0 = empty slot) to void * values: open addressing with
 * linear probing, a power-of-two capacity that doubles when an insertion would pass 1/2 load,
 * and backward-shift deletion (no tombstones). It is not thread-safe, but it is written so
 * that one writer (serialised by the caller) may run beside lock-free readers that validate
 * with a seqlock (core/handle.c):
 *  - every slot field is read and written with relaxed atomics (plain moves on x86);
 *  - accel_hashtab_probe() takes a slot array and capacity, never runs more than cap probes,
 *    and so stays in bounds on an array that changes under it;
 *  - accel_hashtab_grow() hands the old slot array back instead of freeing it, so the caller
 *    decides when no reader can still be probing it.
 * A single-threaded user just calls accel_hashtab_insert / find / erase / free.
 */
#ifndef ACCEL_CORE_HASHTAB_H
#define ACCEL_CORE_HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The mixer: a bijection on 64 bits (a multiply by 2^64/phi, then the high half folded into
 * the low half), so that aligned pointers and addresses spread over the low bits a
 * power-of-two table masks with. */
static inline uint64_t accel_hash_u64(uint64_t x) {
  x *= 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 32);
}

static inline uint64_t accel_hash_ptr(const void *p) { return accel_hash_u64((uintptr_t)p); }

/* One step of a content hash that folds many values: h absorbs v. */
static inline uint64_t accel_hash_fold(uint64_t h, uint64_t v) {
  return accel_hash_u64(h ^ accel_hash_u64(v));
}

typedef struct accel_hashtab_slot {
  uintptr_t key; /* 0 = empty */
  void *value;
} accel_hashtab_slot_t;

typedef struct accel_hashtab {
  accel_hashtab_slot_t *slots;
  size_t cap;     /* 0 or a power of two */
  size_t count;
  size_t min_cap; /* capacity of the first allocation (a power of two; 0: 16) */
} accel_hashtab_t;

/* Index of key in slots[0, cap), or SIZE_MAX; stores its value in *value when found. Safe on
 * an array a writer changes meanwhile (the answer is then only as good as the caller's
 * validation of it). */
static inline size_t accel_hashtab_probe(const accel_hashtab_slot_t *slots, size_t cap,
                                         uintptr_t key, void **value) {
  if (!cap) return SIZE_MAX;
  size_t mask = cap - 1, j = (size_t)accel_hash_u64(key) & mask;
  for (size_t n = 0; n < cap; ++n, j = (j + 1) & mask) {
    uintptr_t k = __atomic_load_n(&slots[j].key, __ATOMIC_RELAXED);
    if (k == key) {
      if (value) *value = __atomic_load_n(&slots[j].value, __ATOMIC_RELAXED);
      return j;
    }
    if (!k) break;
  }
  return SIZE_MAX;
}

/* Index of key, or SIZE_MAX; its value is t->slots[index].value. */
static inline size_t accel_hashtab_find(const accel_hashtab_t *t, uintptr_t key) {
  return accel_hashtab_probe(t->slots, t->cap, key, NULL);
}

/* If one more key would pass 1/2 load, moves every key into a new array twice as large (or
 * min_cap) and returns true with *old = the previous array (NULL the first time), which the
 * caller frees once nobody can be probing it. Returns false, table unchanged, when no growth
 * is needed or the allocation fails. */
bool accel_hashtab_grow(accel_hashtab_t *t, accel_hashtab_slot_t **old);

/* Adds key (non-zero, not present) without growing; false when that would leave no empty
 * slot. */
static inline bool accel_hashtab_put(accel_hashtab_t *t, uintptr_t key, void *value) {
  if (t->count + 1 >= t->cap) return false;
  size_t mask = t->cap - 1, j = (size_t)accel_hash_u64(key) & mask;
  while (t->slots[j].key) j = (j + 1) & mask;
  /* value first: a reader that sees the key sees its value */
  __atomic_store_n(&t->slots[j].value, value, __ATOMIC_RELAXED);
  __atomic_store_n(&t->slots[j].key, key, __ATOMIC_RELAXED);
  t->count++;
  return true;
}

/* accel_hashtab_grow, freeing the old array (the out-of-line half of insert). */
void accel_hashtab_grow_free(accel_hashtab_t *t);

/* Grows as needed (freeing the old array), then puts. False: out of memory. */
static inline bool accel_hashtab_insert(accel_hashtab_t *t, uintptr_t key, void *value) {
  if ((t->count + 1) * 2 > t->cap) accel_hashtab_grow_free(t);
  return accel_hashtab_put(t, key, value);
}

/* Removes the key at index j (from accel_hashtab_find). Each later key of the run moves back
 * into the hole unless its home lies cyclically in (hole, its slot]: probe chains stay
 * unbroken without tombstones. */
static inline void accel_hashtab_erase_at(accel_hashtab_t *t, size_t j) {
  accel_hashtab_slot_t *s = t->slots;
  size_t mask = t->cap - 1;
  __atomic_store_n(&s[j].key, (uintptr_t)0, __ATOMIC_RELAXED);
  t->count--;
  for (size_t k = (j + 1) & mask; s[k].key; k = (k + 1) & mask) {
    size_t home = (size_t)accel_hash_u64(s[k].key) & mask;
    bool between = j <= k ? (home > j && home <= k) : (home > j || home <= k);
    if (!between) {
      __atomic_store_n(&s[j].value, s[k].value, __ATOMIC_RELAXED);
      __atomic_store_n(&s[j].key, s[k].key, __ATOMIC_RELAXED);
      __atomic_store_n(&s[k].key, (uintptr_t)0, __ATOMIC_RELAXED);
      j = k;
    }
  }
}

/* Removes key; false when it was not present. */
bool accel_hashtab_erase(accel_hashtab_t *t, uintptr_t key);

/* Frees the slot array; the table is empty afterwards (min_cap is kept). */
void accel_hashtab_free(accel_hashtab_t *t);

#endif
