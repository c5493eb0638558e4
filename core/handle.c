/*
 * Live-handle registry: a set of handle addresses with their kind, so that entry points reject
 * NULL, destroyed or foreign handles with ACCEL_ERROR_INVALID_HANDLE instead of crashing.
 *
 * The registry holds the handles the user may still name (user_refs > 0, see internal.h): an
 * object that only internal holders keep alive is not in it. Every API call looks a handle up,
 * so reads take no lock: writers (create/destroy) serialise
 * on a mutex and bump a sequence counter around each change (a seqlock); a reader retries when
 * the counter moved. A table replaced by a larger one is retired, not freed, so a reader still
 * probing it never touches freed memory (tables only grow; the retired ones are freed at exit).
 */
#include <stdlib.h>

#include "internal.h"

typedef struct slot {
  const void *h; /* NULL = empty */
  accel_handle_kind_t kind;
} slot_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint seq;             /* odd while a writer is changing the table */
static slot_t *_Atomic slots_pub;   /* the table readers probe */
static _Atomic size_t cap_pub;
static slot_t *slots;               /* writer's view (== slots_pub outside grow) */
static size_t cap, count;
static slot_t *retired[64];
static int nretired;

static void free_retired(void) {
  for (int i = 0; i < nretired; ++i) free(retired[i]);
  free(slots);
}

static size_t home(const void *h, size_t c) {
  uint64_t x = (uint64_t)(uintptr_t)h * 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 24) & (c - 1);
}

static void grow(void) {
  size_t ncap = cap ? cap * 2 : 256;
  slot_t *n = calloc(ncap, sizeof *n);
  if (!n) return; /* keep the old table; insertion below copes with a full table */
  for (size_t i = 0; i < cap; ++i) {
    if (!slots[i].h) continue;
    size_t j = home(slots[i].h, ncap);
    while (n[j].h) j = (j + 1) & (ncap - 1);
    n[j] = slots[i];
  }
  if (slots) {
    if (nretired == 0) atexit(free_retired);
    if (nretired < 64) retired[nretired++] = slots;
  }
  slots = n;
  cap = ncap;
  atomic_store(&slots_pub, n);
  atomic_store(&cap_pub, ncap);
}

/* Inserts h (lock held, seq odd). */
static void insert_locked(accel_handle_t *h) {
  if ((count + 1) * 2 > cap) grow();
  if (count < cap) {
    size_t j = home(h, cap);
    while (slots[j].h) j = (j + 1) & (cap - 1);
    __atomic_store_n(&slots[j].kind, h->kind, __ATOMIC_RELAXED);
    __atomic_store_n(&slots[j].h, h, __ATOMIC_RELAXED);
    count++;
  }
}

/* Slot of h, or SIZE_MAX (lock held). */
static size_t find_locked(const void *h) {
  if (!cap) return SIZE_MAX;
  size_t j = home(h, cap);
  while (slots[j].h && slots[j].h != h) j = (j + 1) & (cap - 1);
  return slots[j].h == h ? j : SIZE_MAX;
}

/* Removes slot j; backward-shift deletion keeps probe chains intact (lock held, seq odd). */
static void erase_locked(size_t j) {
  __atomic_store_n(&slots[j].h, NULL, __ATOMIC_RELAXED);
  count--;
  for (size_t k = (j + 1) & (cap - 1); slots[k].h; k = (k + 1) & (cap - 1)) {
    size_t hk = home(slots[k].h, cap);
    bool between = j <= k ? (hk > j && hk <= k) : (hk > j || hk <= k);
    if (!between) {
      __atomic_store_n(&slots[j].kind, slots[k].kind, __ATOMIC_RELAXED);
      __atomic_store_n(&slots[j].h, slots[k].h, __ATOMIC_RELAXED);
      __atomic_store_n(&slots[k].h, NULL, __ATOMIC_RELAXED);
      j = k;
    }
  }
}

void accel_handle_register(accel_handle_t *h, accel_handle_kind_t kind,
                           const accel_backend_vtable_t *vt) {
  h->vt = vt;
  h->kind = kind;
  h->user_refs = 1;
  atomic_store(&h->refcount, 1);
  pthread_mutex_lock(&lock);
  atomic_fetch_add(&seq, 1);
  insert_locked(h);
  atomic_fetch_add(&seq, 1);
  pthread_mutex_unlock(&lock);
}

void accel_handle_unregister(accel_handle_t *h) {
  pthread_mutex_lock(&lock);
  size_t j = find_locked(h);
  if (j != SIZE_MAX) {
    atomic_fetch_add(&seq, 1);
    erase_locked(j);
    atomic_fetch_add(&seq, 1);
  }
  h->user_refs = 0;
  pthread_mutex_unlock(&lock);
}

void accel_handle_add_user(accel_handle_t *h) {
  pthread_mutex_lock(&lock);
  if (h->user_refs++ == 0) {
    atomic_fetch_add(&seq, 1);
    insert_locked(h);
    atomic_fetch_add(&seq, 1);
  }
  pthread_mutex_unlock(&lock);
}

static const char *const what[] = {
    [ACCEL_HANDLE_DEVICE] = "closed device handle", [ACCEL_HANDLE_STREAM] = "destroyed stream",
    [ACCEL_HANDLE_EVENT] = "destroyed event",       [ACCEL_HANDLE_GRAPH] = "destroyed graph",
    [ACCEL_HANDLE_POOL] = "released pool"};

accel_status_t accel_handle_drop_user(const void *h, accel_handle_kind_t kind, const char *fn) {
  pthread_mutex_lock(&lock);
  size_t j = h ? find_locked(h) : SIZE_MAX;
  if (j == SIZE_MAX || slots[j].kind != kind) {
    pthread_mutex_unlock(&lock);
    return accel_set_error(ACCEL_ERROR_INVALID_HANDLE,
                           "%s: invalid or %s %p (released more often than it was obtained?)",
                           fn, what[kind], h);
  }
  accel_handle_t *hd = (accel_handle_t *)h;
  if (--hd->user_refs == 0) {
    atomic_fetch_add(&seq, 1);
    erase_locked(j);
    atomic_fetch_add(&seq, 1);
  }
  pthread_mutex_unlock(&lock);
  return ACCEL_OK;
}

bool accel_handle_is_live(const void *h, accel_handle_kind_t kind) {
  if (!h) return false;
  for (;;) {
    unsigned before = atomic_load_explicit(&seq, memory_order_acquire);
    if (before & 1u) continue; /* a writer is mid-change */
    slot_t *t = atomic_load_explicit(&slots_pub, memory_order_acquire);
    size_t c = atomic_load_explicit(&cap_pub, memory_order_acquire);
    bool live = false;
    if (t && c) {
      size_t j = home(h, c);
      for (size_t probes = 0; probes < c; ++probes) {
        const void *k = __atomic_load_n(&t[j].h, __ATOMIC_RELAXED);
        if (!k) break;
        if (k == h) {
          live = __atomic_load_n(&t[j].kind, __ATOMIC_RELAXED) == kind;
          break;
        }
        j = (j + 1) & (c - 1);
      }
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&seq, memory_order_relaxed) == before) return live;
  }
}

accel_status_t accel_handle_check(const void *h, accel_handle_kind_t kind, const char *fn) {
  if (accel_handle_is_live(h, kind)) return ACCEL_OK;
  return accel_set_error(ACCEL_ERROR_INVALID_HANDLE, "%s: invalid or %s %p", fn, what[kind], h);
}
