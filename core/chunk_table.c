/*
 * The chunk-table cache of the tensor operations and each stream's memo of its last table per
 * operation.
 *
 * A chunk table has one entry per ACC_CHUNK elements of every non-empty tensor, holding the
 * element addresses of every list of the operation. Tables live in internal device memory and
 * are cached per device, keyed by the exact list contents (addresses, sizes, dtypes, operation,
 * written lists; and the stream for norms, whose table carries the partials scratch), so
 * repeated calls and captured graphs reuse them. A launch passes its table as keepalive, so
 * graphs and lazy queues keep it alive; the cache evicts only entries nobody else holds and
 * frees them only after a fence on every stream (eager work may still read them; see
 * core/retire.c). An entry exists only for lists that passed the full validation
 * (core/kernel_validate.c), which is what lets a hit skip most of it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "kernel_ops_internal.h"
#include "memory_view.h"

/* Entries kept per device before unused ones are evicted. Per-tensor loops over a large model
 * create one entry per (op, tensor), so the cache holds many; an eviction records a fence on
 * every stream, so it frees a quarter of the cache at once to keep evictions rare. */
#define KOP_CACHE_MAX 65536u
#define KOP_CACHE_AFTER_EVICT (KOP_CACHE_MAX / 4u * 3u)

typedef struct kop_state {
  pthread_mutex_t mu;
  kop_entry_t **buckets; /* nbuckets chains, a power of two */
  size_t nbuckets;
  size_t count;
  uint64_t tick;
} kop_state_t;

/* Links e into its bucket, growing the table past two entries per bucket (mu held). */
static void kop_insert(kop_state_t *s, kop_entry_t *e) {
  if (s->count + 1 > s->nbuckets * 2) {
    size_t n = s->nbuckets ? s->nbuckets * 2 : 1024;
    kop_entry_t **nb = calloc(n, sizeof *nb);
    if (nb) { /* without memory the chains just get longer */
      for (size_t i = 0; i < s->nbuckets; ++i)
        for (kop_entry_t *x = s->buckets[i], *nx; x; x = nx) {
          nx = x->next;
          x->next = nb[x->hash & (n - 1)];
          nb[x->hash & (n - 1)] = x;
        }
      free(s->buckets);
      s->buckets = nb;
      s->nbuckets = n;
    }
  }
  kop_entry_t **head = &s->buckets[e->hash & (s->nbuckets - 1)];
  e->next = *head;
  *head = e;
  ++s->count;
}

static void kop_unlink(kop_state_t *s, kop_entry_t *e) {
  for (kop_entry_t **pp = &s->buckets[e->hash & (s->nbuckets - 1)]; *pp; pp = &(*pp)->next)
    if (*pp == e) {
      *pp = e->next;
      --s->count;
      return;
    }
}

static int kop_older(const void *a, const void *b) {
  const kop_entry_t *x = *(kop_entry_t *const *)a, *y = *(kop_entry_t *const *)b;
  return x->last_use < y->last_use ? -1 : x->last_use > y->last_use;
}

static pthread_mutex_t g_state_create_mu = PTHREAD_MUTEX_INITIALIZER;

static kop_state_t *kop_state(accel_device_t *dev) {
  void **slot = accel_device_kernel_state(dev);
  kop_state_t *s = __atomic_load_n((kop_state_t **)slot, __ATOMIC_ACQUIRE);
  if (s) return s;
  pthread_mutex_lock(&g_state_create_mu);
  s = *slot;
  if (!s) {
    s = calloc(1, sizeof *s);
    if (s) {
      pthread_mutex_init(&s->mu, NULL);
      __atomic_store_n((kop_state_t **)slot, s, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&g_state_create_mu);
  return s;
}

static void kop_entry_free(kop_entry_t *e) {
  accel_device_internal_free(e->dev, e->mem);
  free(e->key);
  free(e->spans);
  free(e);
}

/* Last reference gone: only reached from accel_kernel_state_destroy (the device is drained),
 * since eviction frees entries directly and only when the cache holds the sole reference. */
static void kop_entry_last_release(accel_keepalive_t *k) { kop_entry_free((kop_entry_t *)k); }

void kop_entry_release(kop_entry_t *e) { accel_keepalive_release(&e->keep); }

size_t accel_chunk_table_bytes(const accel_keepalive_t *k) {
  if (k->release != kop_entry_last_release) return 0;
  const kop_entry_t *e = (const kop_entry_t *)k;
  return (size_t)e->num_chunks * (sizeof(acc_chunk_t) + (e->partials_addr ? sizeof(float) : 0));
}

/* The lists this call writes (validation sets r->written from the table and the flags). */
static uint32_t written_mask(const kop_req_t *r) { return r->written; }

/* Elements of a key: one per tensor of every list the call gave. */
static size_t key_len(const kop_req_t *r) {
  return (size_t)__builtin_popcount(r->present) * r->n;
}

static const void *stream_key(const kop_req_t *r) {
  return r->desc->per_stream ? (const void *)r->stream : NULL;
}

/* Hash of the call's cache key. Two independent multiply chains (addresses; sizes and dtypes),
 * one multiply per tensor each since this runs on every call over every tensor (a 2000-tensor
 * list hashes in a few microseconds), then folded with the core mixer. */
uint64_t kop_hash(const kop_req_t *r) {
  uint64_t a = 0x9E3779B97F4A7C15ull, b = 0xC2B2AE3D27D4EB4Full;
  for (int l = 0; l < r->desc->nl; ++l)
    for (size_t i = 0; kop_has_list(r, l) && i < r->n; ++i) {
      const accel_tensor_t *t = &r->lists[l][i];
      a = ((a << 23 | a >> 41) ^ (uint64_t)(uintptr_t)t->data) * 0xFF51AFD7ED558CCDull;
      b = ((b << 23 | b >> 41) ^ (uint64_t)t->numel ^ (uint64_t)t->dtype << 58) *
          0xC4CEB9FE1A85EC53ull;
    }
  uint64_t h = accel_hash_fold(accel_hash_fold(a, b),
                               (uint64_t)r->op | (uint64_t)written_mask(r) << 32);
  h = accel_hash_fold(h, r->present);
  return accel_hash_fold(h, (uintptr_t)stream_key(r));
}

static int key_matches(const kop_entry_t *e, const kop_req_t *r) {
  if (e->present != r->present || e->key_len != key_len(r)) return 0;
  const kop_key_elem_t *k = e->key;
  for (int l = 0; l < r->desc->nl; ++l)
    for (size_t i = 0; kop_has_list(r, l) && i < r->n; ++i, ++k) {
      const accel_tensor_t *t = &r->lists[l][i];
      if (k->data != (uintptr_t)t->data || k->numel != t->numel || k->dtype != (uint64_t)t->dtype)
        return 0;
    }
  return 1;
}

/* The cached entry for r with a reference, or NULL. */
static kop_entry_t *kop_find(kop_state_t *s, const kop_req_t *r, uint64_t h) {
  const void *stream = stream_key(r);
  const uint32_t written = written_mask(r);
  pthread_mutex_lock(&s->mu);
  kop_entry_t *e = s->nbuckets ? s->buckets[h & (s->nbuckets - 1)] : NULL;
  for (; e; e = e->next)
    if (e->hash == h && e->op == r->op && e->written == written && e->stream == stream &&
        key_matches(e, r)) {
      accel_keepalive_retain(&e->keep);
      e->last_use = ++s->tick;
      break;
    }
  pthread_mutex_unlock(&s->mu);
  return e;
}

/* The tensor intervals (not the scalars) of the sorted iv, merged. */
static kop_span_t *make_spans(const kop_interval_t *iv, size_t count, size_t *nspans) {
  kop_span_t *sp = malloc((count ? count : 1) * sizeof *sp);
  size_t n = 0;
  for (size_t k = 0; sp && k < count; ++k) {
    if (iv[k].index == SIZE_MAX) continue;
    if (n && iv[k].begin <= sp[n - 1].end) {
      if (iv[k].end > sp[n - 1].end) sp[n - 1].end = iv[k].end;
    } else {
      sp[n++] = (kop_span_t){iv[k].begin, iv[k].end};
    }
  }
  *nspans = n;
  return sp;
}

static kop_key_elem_t *kop_make_key(const kop_req_t *r, size_t *len) {
  *len = key_len(r);
  kop_key_elem_t *key = calloc(*len + 1, sizeof *key);
  if (!key) return NULL;
  size_t k = 0;
  for (int l = 0; l < r->desc->nl; ++l)
    for (size_t i = 0; kop_has_list(r, l) && i < r->n; ++i) {
      const accel_tensor_t *t = &r->lists[l][i];
      key[k++] = (kop_key_elem_t){(uintptr_t)t->data, t->numel, (uint64_t)t->dtype};
    }
  return key;
}

static accel_status_t kop_build(const kop_req_t *r, int with_partials, kop_entry_t *e) {
  const size_t table_bytes = (size_t)r->num_chunks * sizeof(acc_chunk_t);
  const size_t bytes = table_bytes + (with_partials ? (size_t)r->num_chunks * sizeof(float) : 0);
  acc_chunk_t *host = calloc(r->num_chunks, sizeof *host); /* only built for num_chunks > 0 */
  if (!host) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", r->fn);
  uint32_t c = 0;
  for (size_t i = 0; i < r->n; ++i) {
    const size_t numel = r->lists[0][i].numel;
    for (size_t off = 0; off < numel; off += ACC_CHUNK) {
      for (int l = 0; l < r->desc->nl; ++l) {
        if (!kop_has_list(r, l)) continue; /* calloc left its address 0 */
        const accel_tensor_t *t = &r->lists[l][i];
        const unsigned per_row = r->desc->lists[l].per_row; /* then off is a row's */
        const size_t elem = per_row ? off / ACC_BLOCK * per_row : off;
        host[c].ptr[l] = (acc_u64)((uintptr_t)t->data + elem * accel_dtype_size(t->dtype));
      }
      host[c].count = (acc_u32)(numel - off < ACC_CHUNK ? numel - off : ACC_CHUNK);
      host[c].tensor = (acc_u32)i;
      ++c;
    }
  }
  accel_status_t st = accel_device_internal_alloc(r->dev, bytes, &e->mem);
  if (st == ACCEL_OK) {
    st = accel_device_upload(r->dev, e->mem, host, table_bytes);
    if (st != ACCEL_OK) accel_device_internal_free(r->dev, e->mem);
  }
  free(host);
  if (st != ACCEL_OK) return st;
  e->num_chunks = c;
  e->chunks_addr = (uint64_t)(uintptr_t)e->mem;
  e->partials_addr = with_partials ? e->chunks_addr + table_bytes : 0;
  return ACCEL_OK;
}

typedef struct kop_victims {
  size_t n;
  kop_entry_t **entries;
} kop_victims_t;

static void kop_victims_free(void *ctx) {
  kop_victims_t *v = ctx;
  for (size_t i = 0; i < v->n; ++i) kop_entry_free(v->entries[i]);
  free(v->entries);
  free(v);
}

/* Unlinks least recently used entries that only the cache holds, down to
 * KOP_CACHE_AFTER_EVICT, keeping keep, and frees them once every stream finished the work
 * submitted so far (eager launches may still read them; recorded ones hold references). */
static void kop_evict(kop_state_t *s, accel_device_t *dev, const kop_entry_t *keep) {
  kop_victims_t *v = calloc(1, sizeof *v);
  if (!v) return;
  pthread_mutex_lock(&s->mu);
  kop_entry_t **cand = malloc(s->count * sizeof *cand);
  size_t ncand = 0, nvict = 0;
  for (size_t i = 0; cand && i < s->nbuckets; ++i)
    for (kop_entry_t *e = s->buckets[i]; e; e = e->next)
      if (e != keep && __atomic_load_n(&e->keep.refcount, __ATOMIC_ACQUIRE) == 1)
        cand[ncand++] = e;
  if (cand && s->count > KOP_CACHE_AFTER_EVICT) {
    nvict = s->count - KOP_CACHE_AFTER_EVICT;
    if (nvict > ncand) nvict = ncand;
    qsort(cand, ncand, sizeof *cand, kop_older);
    for (size_t i = 0; i < nvict; ++i) kop_unlink(s, cand[i]);
  }
  pthread_mutex_unlock(&s->mu);
  v->n = nvict;
  v->entries = cand;
  if (nvict) accel_device_retire(dev, kop_victims_free, v);
  else kop_victims_free(v);
}

accel_status_t kop_table(const kop_req_t *r, const kop_interval_t *iv, size_t count,
                                kop_entry_t **out) {
  kop_state_t *s = kop_state(r->dev);
  if (!s) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", r->fn);
  const uint64_t h = r->hash;
  kop_entry_t *e = kop_find(s, r, h);
  if (e) {
    __atomic_store_n(&e->ranges_gen, r->free_gen, __ATOMIC_RELAXED); /* r was just validated */
    *out = e;
    return ACCEL_OK;
  }
  e = calloc(1, sizeof *e);
  if (e) e->key = kop_make_key(r, &e->key_len);
  if (e && e->key) e->spans = make_spans(iv, count, &e->nspans);
  if (!e || !e->key || !e->spans) {
    if (e) free(e->key);
    free(e);
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", r->fn);
  }
  accel_status_t st = kop_build(r, r->desc->per_stream, e);
  if (st != ACCEL_OK) {
    free(e->key);
    free(e->spans);
    free(e);
    return st;
  }
  e->ranges_gen = r->free_gen; /* r's tensors were just seen live */
  e->keep.refcount = 2; /* the cache's and the caller's */
  e->keep.release = kop_entry_last_release;
  e->dev = r->dev;
  e->hash = h;
  e->op = r->op;
  e->present = r->present;
  e->written = written_mask(r);
  e->stream = stream_key(r);
  pthread_mutex_lock(&s->mu);
  e->last_use = ++s->tick;
  kop_insert(s, e);
  const int over = s->count > KOP_CACHE_MAX;
  pthread_mutex_unlock(&s->mu);
  if (over) kop_evict(s, r->dev, e);
  *out = e;
  return ACCEL_OK;
}

static int tensor_range(void *ctx, size_t k, const void **ptr, size_t *size) {
  const kop_req_t *r = ctx;
  if (!kop_has_list(r, (int)(k / r->n))) return 0;
  const accel_tensor_t *t = &r->lists[k / r->n][k % r->n];
  *ptr = t->data;
  *size = t->numel * accel_dtype_size(t->dtype);
  if (t->numel == 0) return 0;
  return (r->written >> (k / r->n)) & 1 ? 2 : 1; /* written: not in read-only memory */
}

size_t kop_entry_dead_range(kop_entry_t *e, const kop_req_t *r) {
  if (__atomic_load_n(&e->ranges_gen, __ATOMIC_RELAXED) == r->free_gen) return SIZE_MAX;
  const size_t k = accel_device_ranges_valid(r->dev, (size_t)r->desc->nl * r->n, tensor_range,
                                             (void *)r);
  if (k == SIZE_MAX) __atomic_store_n(&e->ranges_gen, r->free_gen, __ATOMIC_RELAXED);
  return k;
}

/* The stream's memo slot for r's operation (a void *: the values are entries): the table
 * user's own, or for a user kernel one of the slots after them by its launch id. */
static void **memo_slot(const kop_req_t *r) {
  const int slot = r->desc->memo >= 0
                       ? r->desc->memo
                       : ACCEL_KERNEL_TABLE_USERS + (int)(r->op % ACCEL_KOP_MEMO_USER_SLOTS);
  return &accel_stream_kop_memo(r->stream)[slot];
}

/* The entry r's stream remembers for r's operation when it is r's (with the memo's reference,
 * which the call now owns), else NULL. Two calls racing on one stream: one gets the memo, the
 * other finds the slot empty and looks in the cache. */
static kop_entry_t *memo_take(const kop_req_t *r) {
  kop_entry_t *e = __atomic_exchange_n(memo_slot(r), (void *)NULL, __ATOMIC_ACQUIRE);
  if (e && (e->hash != r->hash || e->op != r->op || e->written != written_mask(r) ||
            e->stream != stream_key(r) || !key_matches(e, r))) {
    accel_keepalive_release(&e->keep); /* still in the cache: memo entries are never evicted */
    e = NULL;
  }
  return e;
}

void kop_memo_put(const kop_req_t *r, kop_entry_t *e) {
  kop_entry_t *old = __atomic_exchange_n(memo_slot(r), (void *)e, __ATOMIC_ACQ_REL);
  if (old) accel_keepalive_release(&old->keep);
}

void accel_kernel_stream_forget(accel_stream_t *stream) {
  for (int i = 0; i < ACCEL_KOP_MEMO_SLOTS; ++i) {
    kop_entry_t *e =
        __atomic_exchange_n(&accel_stream_kop_memo(stream)[i], (void *)NULL, __ATOMIC_ACQUIRE);
    if (e) accel_keepalive_release(&e->keep);
  }
}

/* A list validated before (same op, lists, written lists and stream: a cache hit) needs only
 * what can have changed since: its tensors must still lie in live allocations (looked up only
 * when something was freed since the entry last saw them there), and this call's scalars must
 * be valid and touch neither the tensors nor each other. Returns 1 with
 * r->entry/num_chunks set; 0 leaves everything to the full validation (which also finds the
 * exact message when one of these checks fails). */
kop_entry_t *kop_lookup(const kop_req_t *r) {
  kop_state_t *s = kop_state(r->dev);
  if (!s) return NULL;
  kop_entry_t *e = memo_take(r);
  return e ? e : kop_find(s, r, r->hash);
}

void accel_kernel_state_destroy(accel_device_t *device, void *state) {
  (void)device;
  kop_state_t *s = state;
  if (!s) return;
  for (size_t i = 0; i < s->nbuckets; ++i)
    for (kop_entry_t *e = s->buckets[i], *n; e; e = n) {
      n = e->next;
      accel_keepalive_release(&e->keep);
    }
  free(s->buckets);
  pthread_mutex_destroy(&s->mu);
  free(s);
}
