/*
 * Live-handle registry: a set of handle addresses with their kind, so that entry points reject
 * NULL, destroyed or foreign handles with ACCEL_ERROR_INVALID_HANDLE instead of crashing.
 *
 * The registry holds the handles the user may still name (user_refs > 0, see handle.h): an
 * object that only internal holders keep alive is not in it. Every API call looks a handle up,
 * so reads take no lock: writers (create/destroy) serialise
 * on a mutex and bump a sequence counter around each change (a seqlock); a reader retries when
 * the counter moved. A table replaced by a larger one is retired, not freed, so a reader still
 * probing it never touches freed memory (tables only grow; the retired ones are freed at exit).
 * The table is the core hash table (hashtab.h), which is written for this use.
 */
#include <pthread.h>
#include <stdlib.h>

#include "core_util.h"
#include "handle.h"
#include "hashtab.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint seq; /* odd while a writer is changing the table */
/* The table readers probe. cap_pub is stored after slots_pub and loaded before it: a reader
 * that sees a new capacity sees the new array, and one that sees the old capacity probes
 * within it whichever array it gets (tables only grow). */
static accel_hashtab_slot_t *_Atomic slots_pub;
static _Atomic size_t cap_pub;
/* The writer's view: handle address -> kind (== the published table outside a change). */
static accel_hashtab_t table = {.min_cap = 256};
static accel_hashtab_slot_t *retired[64];
static int nretired;

static void free_retired(void) {
  for (int i = 0; i < nretired; ++i) free(retired[i]);
  accel_hashtab_free(&table);
}

/* Inserts h (lock held, seq odd). Out of host memory, the table fills past 1/2 load and h
 * is left out only when no slot is free: it then reads as invalid. */
static void insert_locked(accel_handle_t *h) {
  accel_hashtab_slot_t *old;
  if (accel_hashtab_grow(&table, &old)) {
    if (old) {
      if (nretired == 0) atexit(free_retired);
      if (nretired < 64) retired[nretired++] = old; /* readers may still probe it */
    }
    atomic_store_explicit(&slots_pub, table.slots, memory_order_release);
    atomic_store_explicit(&cap_pub, table.cap, memory_order_release);
  }
  accel_hashtab_put(&table, (uintptr_t)h, (void *)(uintptr_t)h->kind);
}

/* Slot of h, or SIZE_MAX (lock held). */
static size_t find_locked(const void *h) { return accel_hashtab_find(&table, (uintptr_t)h); }

/* Removes slot j (lock held, seq odd). */
static void erase_locked(size_t j) { accel_hashtab_erase_at(&table, j); }

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

static const char *const what[ACCEL_HANDLE_KIND_END] = {
    [ACCEL_HANDLE_DEVICE] = "closed device handle", [ACCEL_HANDLE_STREAM] = "destroyed stream",
    [ACCEL_HANDLE_EVENT] = "destroyed event",       [ACCEL_HANDLE_GRAPH] = "destroyed graph",
    [ACCEL_HANDLE_POOL] = "released pool",          [ACCEL_HANDLE_DLPACK_IMPORT] = "released DLPack import",
    [ACCEL_HANDLE_COMM] = "destroyed communicator", [ACCEL_HANDLE_GENERATOR] = "released generator",
    [ACCEL_HANDLE_MODULE] = "released module",      [ACCEL_HANDLE_KERNEL] = "kernel of a released module"};

accel_status_t accel_handle_drop_user(const void *h, accel_handle_kind_t kind, const char *fn) {
  pthread_mutex_lock(&lock);
  size_t j = h ? find_locked(h) : SIZE_MAX;
  if (j == SIZE_MAX || (uintptr_t)table.slots[j].value != (uintptr_t)kind) {
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
    size_t c = atomic_load_explicit(&cap_pub, memory_order_acquire);
    const accel_hashtab_slot_t *t = atomic_load_explicit(&slots_pub, memory_order_acquire);
    void *k = NULL;
    bool live = t && accel_hashtab_probe(t, c, (uintptr_t)h, &k) != SIZE_MAX &&
                (uintptr_t)k == (uintptr_t)kind;
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&seq, memory_order_relaxed) == before) return live;
  }
}

unsigned accel_handle_registry_version(void) {
  return atomic_load_explicit(&seq, memory_order_acquire);
}

accel_status_t accel_handle_check(const void *h, accel_handle_kind_t kind, const char *fn) {
  if (accel_handle_is_live(h, kind)) return ACCEL_OK;
  return accel_set_error(ACCEL_ERROR_INVALID_HANDLE, "%s: invalid or %s %p", fn, what[kind], h);
}
