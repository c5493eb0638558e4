/*
 * Unit test of core/hashtab.c: the open-addressing table behind the live-handle registry,
 * the allocator's live-block table and the device's host-allocation set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hashtab.h"

#define EXPECT(c) CHECK(c, "%s", #c)

static size_t home(uintptr_t key, size_t cap) { return (size_t)accel_hash_u64(key) & (cap - 1); }

/* The n first keys (>= *from) whose home slot in a table of cap is h. */
static void keys_with_home(size_t h, size_t cap, uintptr_t *from, uintptr_t *out, int n) {
  for (int i = 0; i < n; ++(*from))
    if (home(*from, cap) == h) out[i++] = *from;
}

static bool has(const accel_hashtab_t *t, uintptr_t key, void *value) {
  size_t j = accel_hashtab_find(t, key);
  return j != SIZE_MAX && t->slots[j].key == key && t->slots[j].value == value;
}

static void *val(uintptr_t k) { return (void *)(k * 3 + 1); }

static void test_mixer(void) {
  EXPECT(accel_hash_ptr((void *)0x1234) == accel_hash_u64(0x1234));
  /* 512-aligned addresses (the allocator's) and 16-aligned pointers fill a 1024-slot table's
   * homes evenly enough: no home gets more than a few of 1024 consecutive ones. */
  for (unsigned shift = 4; shift <= 9; shift += 5) {
    int hits[1024] = {0}, worst = 0;
    for (uintptr_t i = 0; i < 1024; ++i) {
      int c = ++hits[home(((uintptr_t)0x7f0000000000 + (i << shift)), 1024)];
      if (c > worst) worst = c;
    }
    EXPECT(worst <= 8);
  }
  EXPECT(accel_hash_fold(1, 2) != accel_hash_fold(2, 1));
  EXPECT(accel_hash_fold(accel_hash_fold(7, 1), 2) != accel_hash_fold(accel_hash_fold(7, 2), 1));
}

/* Keys sharing one home slot: insert, find, erase from the middle of the chain. */
static void test_collisions(void) {
  accel_hashtab_t t = {.min_cap = 64};
  uintptr_t from = 1, k[6];
  EXPECT(accel_hashtab_find(&t, 5) == SIZE_MAX); /* empty, never allocated */
  EXPECT(!accel_hashtab_erase(&t, 5));
  keys_with_home(10, 64, &from, k, 6);
  for (int i = 0; i < 6; ++i) EXPECT(accel_hashtab_insert(&t, k[i], val(k[i])));
  EXPECT(t.cap == 64 && t.count == 6);
  for (int i = 0; i < 6; ++i) EXPECT(accel_hashtab_find(&t, k[i]) == (size_t)(10 + i));
  for (int i = 0; i < 6; ++i) EXPECT(has(&t, k[i], val(k[i])));
  uintptr_t absent;
  keys_with_home(10, 64, &from, &absent, 1); /* probes the whole run, then the empty slot */
  EXPECT(accel_hashtab_find(&t, absent) == SIZE_MAX);
  /* erase the third: the later three shift back, each stays findable */
  EXPECT(accel_hashtab_erase(&t, k[2]));
  EXPECT(!accel_hashtab_erase(&t, k[2]));
  EXPECT(t.count == 5);
  EXPECT(accel_hashtab_find(&t, k[2]) == SIZE_MAX);
  for (int i = 0; i < 6; ++i)
    if (i != 2) EXPECT(has(&t, k[i], val(k[i])));
  EXPECT(t.slots[15].key == 0); /* the run is contiguous again */
  /* a key whose home is inside the run must not move before its home when the run shrinks */
  uintptr_t from2 = 1, other;
  keys_with_home(12, 64, &from2, &other, 1);
  EXPECT(accel_hashtab_insert(&t, other, val(other))); /* lands at 15 */
  EXPECT(accel_hashtab_find(&t, other) == 15);
  EXPECT(accel_hashtab_erase(&t, k[0])); /* 10..14 hold k1 k3 k4 k5 then other */
  for (int i = 1; i < 6; ++i)
    if (i != 2) EXPECT(has(&t, k[i], val(k[i])));
  EXPECT(has(&t, other, val(other)));
  size_t jo = accel_hashtab_find(&t, other);
  EXPECT(jo >= 12 && jo <= 14);
  accel_hashtab_free(&t);
  EXPECT(t.slots == NULL && t.cap == 0 && t.count == 0);
}

/* A run that wraps from the last slot to slot 0, with deletions on both sides of the wrap. */
static void test_wraparound(void) {
  accel_hashtab_t t = {.min_cap = 32};
  uintptr_t from = 1, a[4], b[2];
  keys_with_home(30, 32, &from, a, 4); /* slots 30 31 0 1 */
  from = 1;
  keys_with_home(0, 32, &from, b, 2);  /* home 0: slots 2 3 */
  for (int i = 0; i < 4; ++i) EXPECT(accel_hashtab_insert(&t, a[i], val(a[i])));
  for (int i = 0; i < 2; ++i) EXPECT(accel_hashtab_insert(&t, b[i], val(b[i])));
  EXPECT(t.cap == 32);
  EXPECT(accel_hashtab_find(&t, a[2]) == 0 && accel_hashtab_find(&t, a[3]) == 1);
  EXPECT(accel_hashtab_find(&t, b[0]) == 2 && accel_hashtab_find(&t, b[1]) == 3);
  EXPECT(accel_hashtab_erase(&t, a[1])); /* hole at 31: a2, a3 shift across the wrap */
  EXPECT(accel_hashtab_find(&t, a[2]) == 31 && accel_hashtab_find(&t, a[3]) == 0);
  EXPECT(accel_hashtab_find(&t, b[0]) == 1 && accel_hashtab_find(&t, b[1]) == 2);
  for (int i = 0; i < 4; ++i)
    if (i != 1) EXPECT(has(&t, a[i], val(a[i])));
  for (int i = 0; i < 2; ++i) EXPECT(has(&t, b[i], val(b[i])));
  EXPECT(accel_hashtab_erase(&t, b[0])); /* hole at 1 (home 0 <= 1): b1 moves back to 1 */
  EXPECT(accel_hashtab_find(&t, b[1]) == 1 && t.slots[2].key == 0);
  EXPECT(accel_hashtab_erase(&t, a[0])); /* hole at 30: a2 (home 30) back to 30, a3 to 31 */
  EXPECT(accel_hashtab_find(&t, a[2]) == 30 && accel_hashtab_find(&t, a[3]) == 31);
  EXPECT(has(&t, b[1], val(b[1])) && t.count == 3);
  accel_hashtab_free(&t);
}

/* Growth at 1/2 load; grow hands the old array back; put never fills the last slot; probe
 * stays bounded on a full array. */
static void test_growth(void) {
  accel_hashtab_t t = {.min_cap = 16};
  for (uintptr_t k = 1; k <= 8; ++k) EXPECT(accel_hashtab_insert(&t, k << 4, val(k)));
  EXPECT(t.cap == 16 && t.count == 8);
  EXPECT(accel_hashtab_insert(&t, 9 << 4, val(9)));
  EXPECT(t.cap == 32 && t.count == 9);
  for (uintptr_t k = 1; k <= 9; ++k) EXPECT(has(&t, k << 4, val(k)));
  for (uintptr_t k = 10; k <= 1000; ++k) EXPECT(accel_hashtab_insert(&t, k << 4, val(k)));
  EXPECT(t.cap == 2048 && t.count == 1000);
  for (uintptr_t k = 1; k <= 1000; ++k) EXPECT(has(&t, k << 4, val(k)));
  accel_hashtab_free(&t);

  /* caller-controlled growth: the old array stays readable until the caller frees it */
  accel_hashtab_t g = {.min_cap = 4};
  accel_hashtab_slot_t *old = (void *)1;
  EXPECT(accel_hashtab_grow(&g, &old) && old == NULL && g.cap == 4);
  EXPECT(!accel_hashtab_grow(&g, &old)); /* 1 key in 4 slots: no growth needed */
  EXPECT(accel_hashtab_put(&g, 7, val(7)));
  EXPECT(accel_hashtab_put(&g, 8, val(8)));
  accel_hashtab_slot_t *before = g.slots;
  EXPECT(accel_hashtab_grow(&g, &old) && old == before && g.cap == 8);
  void *v = NULL;
  EXPECT(accel_hashtab_probe(old, 4, 7, &v) != SIZE_MAX && v == val(7));
  EXPECT(accel_hashtab_probe(g.slots, g.cap, 8, &v) != SIZE_MAX && v == val(8));
  free(old);
  /* without growing, put fills all but one slot */
  for (uintptr_t k = 9; k <= 13; ++k) EXPECT(accel_hashtab_put(&g, k, val(k)));
  EXPECT(g.count == 7 && !accel_hashtab_put(&g, 14, val(14)));
  EXPECT(accel_hashtab_find(&g, 14) == SIZE_MAX);
  /* a full array (as a reader may see one mid-change) still ends its probe */
  accel_hashtab_slot_t full[4] = {{1, 0}, {2, 0}, {3, 0}, {4, 0}};
  EXPECT(accel_hashtab_probe(full, 4, 5, NULL) == SIZE_MAX);
  EXPECT(accel_hashtab_probe(full, 0, 5, NULL) == SIZE_MAX);
  accel_hashtab_free(&g);
}

/* ---- randomized comparison with a sorted array ------------------------------------------ */

static uint64_t rng = 42;
static uint64_t next_rand(void) {
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

typedef struct {
  uintptr_t key;
  void *value;
} ref_t;
static ref_t ref[1 << 16];
static size_t nref;

static size_t ref_lower(uintptr_t key) {
  size_t lo = 0, hi = nref;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ref[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void test_random(void) {
  accel_hashtab_t t = {.min_cap = 8};
  /* Keys from a small universe so inserts hit present keys and erases hit absent ones; three
   * shapes: small integers, 512-aligned addresses, arbitrary 64-bit values. */
  enum { UNIVERSE = 3000, OPS = 100000 };
  static uintptr_t universe[UNIVERSE];
  for (size_t i = 0; i < UNIVERSE; ++i) {
    uintptr_t k;
    switch (i % 3) {
      case 0: k = i + 1; break;
      case 1: k = (uintptr_t)0x7f1200000000 + (uintptr_t)(next_rand() % 100000) * 512; break;
      default: k = (uintptr_t)next_rand() | 1; break;
    }
    universe[i] = k;
  }
  int mismatches = 0;
  size_t peak = 0;
  for (int op = 0; op < OPS; ++op) {
    uintptr_t key = universe[next_rand() % UNIVERSE];
    size_t r = ref_lower(key);
    bool in_ref = r < nref && ref[r].key == key;
    /* phases: mostly inserts, then balanced, then mostly erases, so the table grows, churns
     * and empties */
    unsigned p = (unsigned)(next_rand() % 100);
    unsigned insert_pct = op < OPS / 3 ? 70 : op < 2 * OPS / 3 ? 50 : 25;
    if (p < insert_pct) {
      if (in_ref) {
        if (!has(&t, key, ref[r].value)) mismatches++;
        continue;
      }
      void *v = (void *)(uintptr_t)next_rand();
      if (!accel_hashtab_insert(&t, key, v)) mismatches++;
      memmove(&ref[r + 1], &ref[r], (nref - r) * sizeof *ref);
      ref[r] = (ref_t){key, v};
      nref++;
    } else if (p < 90) {
      bool erased = accel_hashtab_erase(&t, key);
      if (erased != in_ref) mismatches++;
      if (in_ref) {
        memmove(&ref[r], &ref[r + 1], (nref - r - 1) * sizeof *ref);
        nref--;
      }
    } else {
      size_t j = accel_hashtab_find(&t, key);
      if ((j != SIZE_MAX) != in_ref || (in_ref && t.slots[j].value != ref[r].value)) mismatches++;
    }
    if (t.count != nref) mismatches++;
    if (nref > peak) peak = nref;
    if (op % 5000 == 0) {
      /* every reference key is findable; the table holds nothing else */
      for (size_t i = 0; i < nref; ++i)
        if (!has(&t, ref[i].key, ref[i].value)) mismatches++;
      size_t n = 0;
      for (size_t i = 0; i < t.cap; ++i) {
        if (!t.slots[i].key) continue;
        n++;
        size_t rr = ref_lower(t.slots[i].key);
        if (rr == nref || ref[rr].key != t.slots[i].key) mismatches++;
      }
      if (n != nref || (t.cap && nref * 2 > t.cap)) mismatches++;
    }
  }
  for (size_t i = 0; i < nref; ++i)
    if (!has(&t, ref[i].key, ref[i].value)) mismatches++;
  printf("random: %d ops, peak %zu keys, final %zu keys in %zu slots\n", OPS, peak, nref, t.cap);
  EXPECT(mismatches == 0);
  EXPECT(peak > 1000);
  accel_hashtab_free(&t);
}

int main(void) {
  test_mixer();
  test_collisions();
  test_wraparound();
  test_growth();
  test_random();
  printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
