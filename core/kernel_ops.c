/*
 * The tensor operations of accel_kernels.h: validation, chunk tables, launches.
 *
 * Every operation is a constant number of launches of the shared kernels (the bodies in kernels/) over a
 * chunk table: one entry per ACC_CHUNK elements of every non-empty tensor, holding the element
 * addresses of every list of the operation. Tables live in internal device memory and are
 * cached per device, keyed by the exact list contents (addresses, sizes, dtypes, operation; and
 * the stream for norms, whose table carries the partials scratch), so repeated calls and
 * captured graphs reuse them. A launch passes its table as keepalive, so graphs and lazy
 * queues keep it alive; the cache evicts only entries nobody else holds and frees them only
 * after a fence on every stream (eager work may still read them; see core/retire.c).
 */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_kernels.h"
#include "accel_kernel_abi_host.h"
#include "accel_kernel_ids.h"
#include "hashtab.h"
#include "kernel_support.h"

_Static_assert(sizeof(accel_adam_args_t) == sizeof(acc_adam_args_t) &&
                   offsetof(accel_adam_args_t, found_inf) == offsetof(acc_adam_args_t, found_inf),
               "accel_adam_args_t and acc_adam_args_t differ");

/* Entries kept per device before unused ones are evicted. Per-tensor loops over a large model
 * create one entry per (op, tensor), so the cache holds many; an eviction records a fence on
 * every stream, so it frees a quarter of the cache at once to keep evictions rare. */
#define KOP_CACHE_MAX 65536u
#define KOP_CACHE_AFTER_EVICT (KOP_CACHE_MAX / 4u * 3u)

size_t accel_dtype_size(accel_dtype_t dtype) {
  switch (dtype) {
  case ACCEL_F32: return 4;
  case ACCEL_F16: return 2;
  case ACCEL_BF16: return 2;
  }
  return 0;
}

const char *accel_dtype_name(accel_dtype_t dtype) {
  switch (dtype) {
  case ACCEL_F32: return "F32";
  case ACCEL_F16: return "F16";
  case ACCEL_BF16: return "BF16";
  }
  return "unknown";
}

/* ---------------------------------------------------------------------------------------------
 * Requests: the lists and device scalars of one call, validated together
 * ------------------------------------------------------------------------------------------- */

typedef struct kop_entry kop_entry_t;

typedef struct kop_list {
  const accel_tensor_t *t;
  const char *name;
  int written;    /* the kernel stores to it */
  int require_f32;
} kop_list_t;

typedef struct kop_scalar {
  const void *ptr; /* NULL: absent (allowed only when not required) */
  size_t size;
  const char *name;
  int written;
  int required;
} kop_scalar_t;

typedef struct kop_req {
  const char *fn;
  accel_stream_t *stream;
  accel_device_t *dev;
  uint32_t op;    /* kernel id of the table's user */
  int nl;
  kop_list_t lists[4];
  size_t n;
  int ns;
  kop_scalar_t scalars[3];
  int per_stream; /* the table carries this stream's scratch (norm partials) */
  /* filled by validation */
  uint64_t hash;  /* kop_hash of the call: its chunk-table cache key */
  uint64_t free_gen; /* the device's free generation when validation began */
  uint64_t num_chunks;
  kop_entry_t *entry; /* the chunk table, with a reference, when num_chunks > 0 */
} kop_req_t;

typedef struct kop_interval {
  uintptr_t begin, end;
  const char *name;
  size_t index; /* tensor index, or SIZE_MAX for a scalar */
  int written;
} kop_interval_t;

static int interval_cmp(const void *a, const void *b) {
  const kop_interval_t *x = a, *y = b;
  return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static accel_status_t overlap_error(const kop_req_t *r, const kop_interval_t *a,
                                    const kop_interval_t *b) {
  char an[64], bn[64];
  if (a->index == SIZE_MAX) snprintf(an, sizeof an, "%s", a->name);
  else snprintf(an, sizeof an, "%s[%zu]", a->name, a->index);
  if (b->index == SIZE_MAX) snprintf(bn, sizeof bn, "%s", b->name);
  else snprintf(bn, sizeof bn, "%s[%zu]", b->name, b->index);
  return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s overlaps %s", r->fn, an, bn);
}

/* Any two intervals that overlap where at least one is written is an error. Sorted by start,
 * a sweep keeps the farthest end of any interval and of any written interval seen so far:
 * an interval overlaps an earlier written one iff it starts before the written end, and a
 * written interval overlaps any earlier one iff it starts before the overall end. */
static accel_status_t check_overlaps(const kop_req_t *r, kop_interval_t *iv, size_t count) {
  /* lists carved from one flat buffer arrive in address order: sort only when they do not */
  for (size_t k = 1; k < count; ++k)
    if (iv[k].begin < iv[k - 1].begin) {
      qsort(iv, count, sizeof *iv, interval_cmp);
      break;
    }
  const kop_interval_t *far_any = NULL, *far_written = NULL;
  for (size_t k = 0; k < count; ++k) {
    const kop_interval_t *c = &iv[k];
    if (far_written && c->begin < far_written->end) return overlap_error(r, far_written, c);
    if (c->written && far_any && c->begin < far_any->end) return overlap_error(r, far_any, c);
    if (!far_any || c->end > far_any->end) far_any = c;
    if (c->written && (!far_written || c->end > far_written->end)) far_written = c;
  }
  return ACCEL_OK;
}

static accel_status_t check_tensor(kop_req_t *r, int l, size_t i, accel_dtype_t list_dtype,
                                   size_t *bytes) {
  const kop_list_t *L = &r->lists[l];
  const accel_tensor_t *t = &L->t[i];
  const size_t es = accel_dtype_size(t->dtype);
  if (es == 0)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu] has unknown dtype %d",
                           r->fn, L->name, i, (int)t->dtype);
  if (t->dtype != list_dtype)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] is %s but %s[0] is %s (one dtype per list)", r->fn,
                           L->name, i, accel_dtype_name(t->dtype), L->name,
                           accel_dtype_name(list_dtype));
  if (L->require_f32 && t->dtype != ACCEL_F32)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu] must be F32, not %s",
                           r->fn, L->name, i, accel_dtype_name(t->dtype));
  if (l > 0 && t->numel != r->lists[0].t[i].numel)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] has %zu elements but %s[%zu] has %zu", r->fn, L->name, i,
                           t->numel, r->lists[0].name, i, r->lists[0].t[i].numel);
  if (t->numel > SIZE_MAX / es)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu]: %zu elements overflow",
                           r->fn, L->name, i, t->numel);
  *bytes = t->numel * es;
  if (t->numel == 0) return ACCEL_OK; /* nothing is accessed */
  if (!t->data)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu].data is NULL with %zu elements",
                           r->fn, L->name, i, t->numel);
  if ((uintptr_t)t->data % es)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu].data %p is not %zu-byte aligned",
                           r->fn, L->name, i, t->data, es);
  if ((uintptr_t)t->data > UINTPTR_MAX - *bytes)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu] wraps the address space",
                           r->fn, L->name, i);
  if (!accel_device_range_is_valid(r->dev, t->data, *bytes))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] [%p, +%zu bytes) is not inside a live allocation of the "
                           "stream's device", r->fn, L->name, i, t->data, *bytes);
  return ACCEL_OK;
}

/* The checks that do not look at the tensors: stream, NULL lists and scalars, n. */
static accel_status_t check_call(kop_req_t *r) {
  accel_status_t st = accel_stream_check(r->stream, r->fn, &r->dev);
  if (st != ACCEL_OK) return st;
  for (int s = 0; s < r->ns; ++s)
    if (r->scalars[s].required && !r->scalars[s].ptr)
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", r->fn,
                             r->scalars[s].name);
  for (int l = 0; l < r->nl; ++l)
    if (r->n > 0 && !r->lists[l].t)
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL with n = %zu", r->fn,
                             r->lists[l].name, r->n);
  if (r->n > SIZE_MAX / sizeof(kop_interval_t) / 5)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: n = %zu is too large", r->fn, r->n);
  return ACCEL_OK;
}

/* Validates every tensor and scalar of r and counts the chunks. On success *out holds the
 * *count intervals sorted by address (free() them). */
static accel_status_t validate_all(kop_req_t *r, kop_interval_t **out, size_t *out_count) {
  accel_status_t st = ACCEL_OK;
  for (int s = 0; s < r->ns; ++s) {
    const kop_scalar_t *S = &r->scalars[s];
    if (!S->ptr) continue;
    if ((uintptr_t)S->ptr % 4)
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s %p is not 4-byte aligned",
                             r->fn, S->name, S->ptr);
    if (!accel_device_range_is_valid(r->dev, S->ptr, S->size))
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                             "%s: %s %p (%zu bytes) is not inside a live allocation of the "
                             "stream's device", r->fn, S->name, S->ptr, S->size);
  }
  kop_interval_t *iv = malloc(((size_t)r->nl * r->n + (size_t)r->ns) * sizeof *iv + 1);
  if (!iv) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", r->fn);
  size_t count = 0;
  uint64_t chunks = 0;
  for (int l = 0; l < r->nl; ++l) {
    const accel_dtype_t list_dtype = r->n ? r->lists[l].t[0].dtype : ACCEL_F32;
    for (size_t i = 0; i < r->n; ++i) {
      size_t bytes = 0;
      st = check_tensor(r, l, i, list_dtype, &bytes);
      if (st != ACCEL_OK) {
        free(iv);
        return st;
      }
      if (bytes == 0) continue;
      if (l == 0) chunks += (r->lists[0].t[i].numel + ACC_CHUNK - 1) / ACC_CHUNK;
      iv[count++] = (kop_interval_t){(uintptr_t)r->lists[l].t[i].data,
                                     (uintptr_t)r->lists[l].t[i].data + bytes,
                                     r->lists[l].name, i, r->lists[l].written};
    }
  }
  for (int s = 0; s < r->ns; ++s)
    if (r->scalars[s].ptr)
      iv[count++] = (kop_interval_t){(uintptr_t)r->scalars[s].ptr,
                                     (uintptr_t)r->scalars[s].ptr + r->scalars[s].size,
                                     r->scalars[s].name, SIZE_MAX, r->scalars[s].written};
  st = check_overlaps(r, iv, count);
  if (st == ACCEL_OK && chunks > UINT32_MAX)
    st = accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %llu chunks exceed one launch",
                         r->fn, (unsigned long long)chunks);
  if (st != ACCEL_OK) {
    free(iv);
    return st;
  }
  r->num_chunks = chunks;
  *out = iv;
  *out_count = count;
  return ACCEL_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Chunk-table cache
 * ------------------------------------------------------------------------------------------- */

typedef struct kop_key_elem {
  uintptr_t data;
  size_t numel;
  uint64_t dtype;
} kop_key_elem_t;

/* [begin, end) address spans covered by a list's tensors, merged and sorted. */
typedef struct kop_span {
  uintptr_t begin, end;
} kop_span_t;

struct kop_entry {
  accel_keepalive_t keep; /* first: the keepalive is the entry */
  accel_device_t *dev;
  struct kop_entry *next; /* hash-bucket chain */
  uint64_t hash;
  uint64_t last_use;
  uint32_t op;
  uint32_t written;   /* bit l: list l is written (the overlap rules depend on it) */
  const void *stream; /* NULL unless the table carries per-stream scratch */
  kop_key_elem_t *key;
  size_t key_len;
  kop_span_t *spans;  /* what the validated tensors cover, for the scalar check of a hit */
  size_t nspans;
  /* atomic: a free generation at which the tensors were seen in live allocations (a hit at
   * the same generation needs no new look; UINT64_MAX: none yet) */
  uint64_t ranges_gen;
  void *mem;          /* chunk table, then partials */
  uint32_t num_chunks;
  uint64_t chunks_addr;
  uint64_t partials_addr;
};

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
static void kop_entry_release(accel_keepalive_t *k) { kop_entry_free((kop_entry_t *)k); }

static uint32_t written_mask(const kop_req_t *r) {
  uint32_t m = 0;
  for (int l = 0; l < r->nl; ++l)
    if (r->lists[l].written) m |= 1u << l;
  return m;
}

static const void *stream_key(const kop_req_t *r) {
  return r->per_stream ? (const void *)r->stream : NULL;
}

/* Hash of the call's cache key. Two independent fold chains (addresses; sizes and dtypes)
 * and a final fold: a 2000-tensor list hashes in a few microseconds. */
static uint64_t kop_hash(const kop_req_t *r) {
  uint64_t a = 1, b = 2;
  for (int l = 0; l < r->nl; ++l)
    for (size_t i = 0; i < r->n; ++i) {
      const accel_tensor_t *t = &r->lists[l].t[i];
      a = accel_hash_fold(a, (uintptr_t)t->data);
      b = accel_hash_fold(b, (uint64_t)t->numel ^ (uint64_t)t->dtype << 58);
    }
  uint64_t h = accel_hash_fold(a, b);
  h = accel_hash_fold(h, (uint64_t)r->op | (uint64_t)written_mask(r) << 32);
  return accel_hash_fold(h, (uintptr_t)stream_key(r));
}

static int key_matches(const kop_entry_t *e, const kop_req_t *r) {
  if (e->key_len != (size_t)r->nl * r->n) return 0;
  const kop_key_elem_t *k = e->key;
  for (int l = 0; l < r->nl; ++l)
    for (size_t i = 0; i < r->n; ++i, ++k) {
      const accel_tensor_t *t = &r->lists[l].t[i];
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
  *len = (size_t)r->nl * r->n;
  kop_key_elem_t *key = calloc(*len + 1, sizeof *key);
  if (!key) return NULL;
  for (int l = 0; l < r->nl; ++l)
    for (size_t i = 0; i < r->n; ++i) {
      const accel_tensor_t *t = &r->lists[l].t[i];
      key[(size_t)l * r->n + i] = (kop_key_elem_t){(uintptr_t)t->data, t->numel, (uint64_t)t->dtype};
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
    const size_t numel = r->lists[0].t[i].numel;
    for (size_t off = 0; off < numel; off += ACC_CHUNK) {
      for (int l = 0; l < r->nl; ++l) {
        const accel_tensor_t *t = &r->lists[l].t[i];
        host[c].ptr[l] = (acc_u64)((uintptr_t)t->data + off * accel_dtype_size(t->dtype));
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

/* The cached table for the validated r (built on a miss, with the spans of its sorted
 * intervals iv), with a reference for the caller. */
static accel_status_t kop_table(const kop_req_t *r, const kop_interval_t *iv, size_t count,
                                kop_entry_t **out) {
  kop_state_t *s = kop_state(r->dev);
  if (!s) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", r->fn);
  const uint64_t h = r->hash;
  kop_entry_t *e = kop_find(s, r, h);
  if (e) {
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
  accel_status_t st = kop_build(r, r->per_stream, e);
  if (st != ACCEL_OK) {
    free(e->key);
    free(e->spans);
    free(e);
    return st;
  }
  e->ranges_gen = UINT64_MAX; /* kop_validate records the validation's generation */
  e->keep.refcount = 2; /* the cache's and the caller's */
  e->keep.release = kop_entry_release;
  e->dev = r->dev;
  e->hash = h;
  e->op = r->op;
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

/* 1 when [b, e) meets a span of the entry. */
static int touches_spans(const kop_entry_t *en, uintptr_t b, uintptr_t e) {
  size_t lo = 0, hi = en->nspans; /* first span ending after b */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (en->spans[mid].end <= b) lo = mid + 1;
    else hi = mid;
  }
  return lo < en->nspans && en->spans[lo].begin < e;
}

static int tensor_range(void *ctx, size_t k, const void **ptr, size_t *size) {
  const kop_req_t *r = ctx;
  const accel_tensor_t *t = &r->lists[k / r->n].t[k % r->n];
  *ptr = t->data;
  *size = t->numel * accel_dtype_size(t->dtype);
  return t->numel != 0;
}

_Static_assert(ACCEL_KERNEL_COUNT <= ACCEL_KOP_MEMO_SLOTS, "a memo slot per table user");

/* The stream's memo slot for r's operation (a void *: the values are entries). */
static void **memo_slot(const kop_req_t *r) { return &accel_stream_kop_memo(r->stream)[r->op]; }

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

/* Gives the call's reference to e to the memo (dropping the one it replaces). */
static void memo_put(const kop_req_t *r, kop_entry_t *e) {
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
static int validate_cached(kop_req_t *r) {
  kop_state_t *s = kop_state(r->dev);
  if (!s || r->n == 0) return 0;
  kop_entry_t *e = memo_take(r);
  if (!e) e = kop_find(s, r, r->hash);
  if (!e) return 0;
  int ok = 1;
  for (int i = 0; i < r->ns && ok; ++i) {
    const kop_scalar_t *S = &r->scalars[i];
    if (!S->ptr) continue;
    const uintptr_t b = (uintptr_t)S->ptr, end = b + S->size;
    ok = b % 4 == 0 && end > b && !touches_spans(e, b, end) &&
         accel_device_range_is_valid(r->dev, S->ptr, S->size);
    for (int j = 0; j < i && ok; ++j)
      if (r->scalars[j].ptr)
        ok = end <= (uintptr_t)r->scalars[j].ptr ||
             (uintptr_t)r->scalars[j].ptr + r->scalars[j].size <= b;
  }
  if (ok && __atomic_load_n(&e->ranges_gen, __ATOMIC_RELAXED) != r->free_gen) {
    ok = accel_device_ranges_valid(r->dev, (size_t)r->nl * r->n, tensor_range, r) == SIZE_MAX;
    if (ok) __atomic_store_n(&e->ranges_gen, r->free_gen, __ATOMIC_RELAXED);
  }
  if (!ok) {
    accel_keepalive_release(&e->keep);
    return 0;
  }
  r->entry = e;
  r->num_chunks = e->num_chunks;
  return 1;
}

/* Validates the stream, every list and every scalar of r, counts the chunks and, when there
 * are any, gets the chunk table (r->entry, a reference kop_run hands to the stream's memo). */
static accel_status_t kop_validate(kop_req_t *r) {
  accel_status_t st = check_call(r);
  if (st != ACCEL_OK) return st;
  r->hash = kop_hash(r);
  /* Read before any range is looked at: a free after this point changes it, so a generation
   * stored below never vouches for ranges freed after they were checked. */
  r->free_gen = accel_device_free_generation(r->dev);
  if (validate_cached(r)) return ACCEL_OK;
  kop_interval_t *iv = NULL;
  size_t count = 0;
  st = validate_all(r, &iv, &count);
  if (st == ACCEL_OK && r->num_chunks > 0) st = kop_table(r, iv, count, &r->entry);
  if (st == ACCEL_OK && r->entry)
    __atomic_store_n(&r->entry->ranges_gen, r->free_gen, __ATOMIC_RELAXED);
  free(iv);
  return st;
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

/* ---------------------------------------------------------------------------------------------
 * Launches
 * ------------------------------------------------------------------------------------------- */

typedef struct kop_launch_ranges {
  const kop_req_t *r;
  const kop_entry_t *e;
} kop_launch_ranges_t;

/* Range i of a launch: the table's tensor spans, then the device scalars. */
static int launch_range(void *ctx, size_t i, const void **ptr, size_t *size) {
  const kop_launch_ranges_t *lr = ctx;
  const size_t nspans = lr->e ? lr->e->nspans : 0;
  if (i < nspans) {
    *ptr = (const void *)lr->e->spans[i].begin;
    *size = lr->e->spans[i].end - lr->e->spans[i].begin;
    return 1;
  }
  const kop_scalar_t *sc = &lr->r->scalars[i - nspans];
  *ptr = sc->ptr;
  *size = sc->size;
  return sc->ptr != NULL;
}

static accel_status_t kop_launch(const kop_req_t *r, uint32_t id, uint32_t num_blocks,
                                 const void *params, uint32_t size, kop_entry_t *e) {
  const accel_kernel_launch_t launch = {id, num_blocks, accel_kernel_names[id], params, size, 0};
  kop_launch_ranges_t lr = {r, e};
  return accel_enqueue_kernel(r->stream, &launch, e ? &e->keep : NULL, launch_range, &lr,
                              (e ? e->nspans : 0) + (size_t)r->ns);
}

/* Runs body(r, table, user) for the validated r; the call's table reference then goes to the
 * stream's memo (launches that were recorded hold their own). */
typedef accel_status_t (*kop_body_fn)(const kop_req_t *r, kop_entry_t *e, const void *user);

static accel_status_t kop_run(kop_req_t *r, kop_body_fn body, const void *user) {
  accel_status_t st = body(r, r->entry, user);
  if (r->entry) memo_put(r, r->entry);
  r->entry = NULL;
  return st;
}

#define ADDR(p) ((acc_u64)(uintptr_t)(p))

/* ---------------------------------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------------------------------- */

typedef struct norm_args {
  uint32_t kind;
  float p;
  float *out;
} norm_args_t;

static accel_status_t norm_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const norm_args_t *a = user;
  const uint32_t nc = e ? e->num_chunks : 0;
  if (nc > 0) {
    const acc_norm_partial_params_t pp = {e->chunks_addr, e->partials_addr, nc,
                                          (acc_u32)r->lists[0].t[0].dtype, a->kind, a->p};
    accel_status_t st = kop_launch(r, ACCEL_KERNEL_NORM_PARTIAL, nc, &pp, sizeof pp, e);
    if (st != ACCEL_OK) return st;
  }
  /* With no partials the final kernel stores 0. */
  const acc_norm_final_params_t fp = {e ? e->partials_addr : 0, ADDR(a->out), nc, a->kind, a->p, 0};
  return kop_launch(r, ACCEL_KERNEL_NORM_FINAL, 1, &fp, sizeof fp, e);
}

accel_status_t accel_multi_tensor_norm(accel_stream_t *stream, const accel_tensor_t *tensors,
                                       size_t n, float norm_type, float *out_dev) {
  const char *fn = "accel_multi_tensor_norm";
  kop_req_t r = {.fn = fn, .stream = stream, .op = ACCEL_KERNEL_NORM_PARTIAL, .nl = 1,
                 .lists = {{tensors, "tensors", 0, 0}}, .n = n, .ns = 1,
                 .scalars = {{out_dev, sizeof(float), "out_dev", 1, 1}},
                 .per_stream = 1 /* the table carries this stream's partials scratch */};
  accel_status_t st = kop_validate(&r);
  if (st != ACCEL_OK) return st;
  if (!(norm_type > 0.0f)) { /* also rejects NaN */
    if (r.entry) accel_keepalive_release(&r.entry->keep);
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: norm_type %g is not supported (want p > 0 or INFINITY)", fn,
                           (double)norm_type);
  }
  norm_args_t a = {ACC_NORM_P, norm_type, out_dev};
  if (isinf(norm_type)) a.kind = ACC_NORM_INF;
  else if (norm_type == 1.0f) a.kind = ACC_NORM_L1;
  else if (norm_type == 2.0f) a.kind = ACC_NORM_L2;
  return kop_run(&r, norm_body, &a);
}

typedef struct clip_args {
  float max_norm, eps;
  const float *total;
  float *coef_out;
} clip_args_t;

static accel_status_t clip_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const clip_args_t *a = user;
  const uint32_t nc = e ? e->num_chunks : 0;
  if (nc == 0 && !a->coef_out) return ACCEL_OK;
  const acc_clip_params_t p = {e ? e->chunks_addr : 0, ADDR(a->total), ADDR(a->coef_out), nc,
                               nc ? (acc_u32)r->lists[0].t[0].dtype : 0, a->max_norm, a->eps};
  /* with no chunks one block still stores the coefficient */
  return kop_launch(r, ACCEL_KERNEL_CLIP, nc ? nc : 1, &p, sizeof p, e);
}

accel_status_t accel_clip_by_global_norm(accel_stream_t *stream, const accel_tensor_t *tensors,
                                         size_t n, float max_norm, const float *total_norm_dev,
                                         float eps, float *coef_out_dev) {
  kop_req_t r = {.fn = "accel_clip_by_global_norm", .stream = stream, .op = ACCEL_KERNEL_CLIP,
                 .nl = 1, .lists = {{tensors, "tensors", 1, 0}}, .n = n, .ns = 2,
                 .scalars = {{total_norm_dev, sizeof(float), "total_norm_dev", 0, 1},
                             {coef_out_dev, sizeof(float), "coef_out_dev", 1, 0}}};
  accel_status_t st = kop_validate(&r);
  if (st != ACCEL_OK) return st;
  const clip_args_t a = {max_norm, eps, total_norm_dev, coef_out_dev};
  return kop_run(&r, clip_body, &a);
}

static accel_status_t update_hp_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const acc_update_hp_params_t p = {e->chunks_addr, e->num_chunks,
                                    (acc_u32)r->lists[0].t[0].dtype,
                                    *(const int *)user ? ACC_HP_ZERO_LP : 0u, 0.0f};
  return kop_launch(r, ACCEL_KERNEL_UPDATE_HP, e->num_chunks, &p, sizeof p, e);
}

accel_status_t accel_update_hp_grads(accel_stream_t *stream, const accel_tensor_t *lp_grads,
                                     const accel_tensor_t *hp_grads, size_t n, int zero_lp) {
  kop_req_t r = {.fn = "accel_update_hp_grads", .stream = stream, .op = ACCEL_KERNEL_UPDATE_HP,
                 .nl = 2, .lists = {{lp_grads, "lp_grads", zero_lp != 0, 0},
                                    {hp_grads, "hp_grads", 1, 1}}, .n = n};
  accel_status_t st = kop_validate(&r);
  if (st != ACCEL_OK || r.num_chunks == 0) return st;
  return kop_run(&r, update_hp_body, &zero_lp);
}

typedef struct unscale_args {
  const float *inv_scale;
  float *found_inf;
} unscale_args_t;

static accel_status_t unscale_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const unscale_args_t *a = user;
  const acc_unscale_params_t p = {e->chunks_addr, ADDR(a->inv_scale), ADDR(a->found_inf),
                                  e->num_chunks, (acc_u32)r->lists[0].t[0].dtype};
  return kop_launch(r, ACCEL_KERNEL_UNSCALE, e->num_chunks, &p, sizeof p, e);
}

accel_status_t accel_unscale_and_check(accel_stream_t *stream, const accel_tensor_t *tensors,
                                       size_t n, const float *inv_scale_dev,
                                       float *found_inf_dev) {
  kop_req_t r = {.fn = "accel_unscale_and_check", .stream = stream, .op = ACCEL_KERNEL_UNSCALE,
                 .nl = 1, .lists = {{tensors, "tensors", 1, 0}}, .n = n, .ns = 2,
                 .scalars = {{inv_scale_dev, sizeof(float), "inv_scale_dev", 0, 1},
                             {found_inf_dev, sizeof(float), "found_inf_dev", 1, 1}}};
  accel_status_t st = kop_validate(&r);
  if (st != ACCEL_OK || r.num_chunks == 0) return st;
  const unscale_args_t a = {inv_scale_dev, found_inf_dev};
  return kop_run(&r, unscale_body, &a);
}

static accel_status_t adam_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const acc_adam_params_t p = {e->chunks_addr, ADDR(user), e->num_chunks,
                               (acc_u32)r->lists[1].t[0].dtype};
  return kop_launch(r, ACCEL_KERNEL_ADAM, e->num_chunks, &p, sizeof p, e);
}

accel_status_t accel_fused_adam(accel_stream_t *stream, const accel_tensor_t *params,
                                const accel_tensor_t *grads, const accel_tensor_t *exp_avg,
                                const accel_tensor_t *exp_avg_sq, size_t n,
                                const accel_adam_args_t *args_dev) {
  kop_req_t r = {.fn = "accel_fused_adam", .stream = stream, .op = ACCEL_KERNEL_ADAM, .nl = 4,
                 .lists = {{params, "params", 1, 1}, {grads, "grads", 0, 0},
                           {exp_avg, "exp_avg", 1, 1}, {exp_avg_sq, "exp_avg_sq", 1, 1}},
                 .n = n, .ns = 1,
                 .scalars = {{args_dev, sizeof(accel_adam_args_t), "args_dev", 0, 1}}};
  accel_status_t st = kop_validate(&r);
  if (st != ACCEL_OK || r.num_chunks == 0) return st;
  return kop_run(&r, adam_body, args_dev);
}

static accel_status_t fill_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const acc_fill_params_t p = {e->chunks_addr, e->num_chunks, (acc_u32)r->lists[0].t[0].dtype,
                               *(const float *)user, 0};
  return kop_launch(r, ACCEL_KERNEL_FILL, e->num_chunks, &p, sizeof p, e);
}

accel_status_t accel_fill(accel_stream_t *stream, const accel_tensor_t *tensors, size_t n,
                          float value) {
  kop_req_t r = {.fn = "accel_fill", .stream = stream, .op = ACCEL_KERNEL_FILL, .nl = 1,
                 .lists = {{tensors, "tensors", 1, 0}}, .n = n};
  accel_status_t st = kop_validate(&r);
  if (st != ACCEL_OK || r.num_chunks == 0) return st;
  return kop_run(&r, fill_body, &value);
}

static accel_status_t scale_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const acc_scale_params_t p = {e->chunks_addr, ADDR(user), e->num_chunks,
                                (acc_u32)r->lists[0].t[0].dtype};
  return kop_launch(r, ACCEL_KERNEL_SCALE, e->num_chunks, &p, sizeof p, e);
}

accel_status_t accel_scale(accel_stream_t *stream, const accel_tensor_t *tensors, size_t n,
                           const float *scale_dev) {
  kop_req_t r = {.fn = "accel_scale", .stream = stream, .op = ACCEL_KERNEL_SCALE, .nl = 1,
                 .lists = {{tensors, "tensors", 1, 0}}, .n = n, .ns = 1,
                 .scalars = {{scale_dev, sizeof(float), "scale_dev", 0, 1}}};
  accel_status_t st = kop_validate(&r);
  if (st != ACCEL_OK || r.num_chunks == 0) return st;
  return kop_run(&r, scale_body, scale_dev);
}
