/*
 * Validation of the tensor operations, driven by the kernel table (kernels/accel_kernel_list.h):
 * the table's rows become the descriptors below, and every rule (dtypes, aliasing, which lists
 * and scalars are written, which scalars are required) is checked here from them, for every
 * operation, so a new kernel needs no validation code of its own.
 *
 * There is one path (kop_prepare in kernel_ops.c drives it; this file calls nothing of the
 * chunk-table cache): a call whose lists match a cached chunk table (the usual case, the same
 * lists every step) runs the same checks, minus what the cache entry proves. The entry exists
 * only for lists that passed the full validation with the same key (addresses, sizes, dtypes,
 * operation, written lists), so the per-tensor rules hold again; the allocator lookups are
 * skipped while no memory was freed since (the free generation); the tensor-vs-tensor sweep is
 * replaced by a binary search of the scalars in the entry's spans.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_ops_internal.h"

/* The public dtype enum and block size are the kernels' codes (one ABI on every target). */
_Static_assert(ACCEL_F32 == ACC_DT_F32 && ACCEL_F16 == ACC_DT_F16 && ACCEL_BF16 == ACC_DT_BF16 &&
                   ACCEL_U8 == ACC_DT_U8,
               "accel_dtype_t and the kernels' ACC_DT_* codes differ");
_Static_assert(ACC_BLOCK == ACCEL_KERNEL_BLOCK, "ACC_BLOCK and ACCEL_KERNEL_BLOCK differ");
_Static_assert(sizeof(accel_adam_args_t) == sizeof(acc_adam_args_t) &&
                   offsetof(accel_adam_args_t, found_inf) == offsetof(acc_adam_args_t, found_inf),
               "accel_adam_args_t and acc_adam_args_t differ");
_Static_assert(sizeof(accel_loss_scaler_t) == sizeof(acc_amp_scaler_t) &&
                   offsetof(accel_loss_scaler_t, inv_scale) == offsetof(acc_amp_scaler_t, inv_scale) &&
                   offsetof(accel_loss_scaler_t, growth_tracker) ==
                       offsetof(acc_amp_scaler_t, growth_tracker) &&
                   offsetof(accel_loss_scaler_t, growth_interval) ==
                       offsetof(acc_amp_scaler_t, growth_interval) &&
                   offsetof(accel_loss_scaler_t, backoff_factor) ==
                       offsetof(acc_amp_scaler_t, backoff_factor),
               "accel_loss_scaler_t and acc_amp_scaler_t differ");

size_t accel_dtype_size(accel_dtype_t dtype) {
  switch (dtype) {
  case ACCEL_F32: return 4;
  case ACCEL_F16: return 2;
  case ACCEL_BF16: return 2;
  case ACCEL_U8: return 1;
  }
  return 0;
}

const char *accel_dtype_name(accel_dtype_t dtype) {
  switch (dtype) {
  case ACCEL_F32: return "F32";
  case ACCEL_F16: return "F16";
  case ACCEL_BF16: return "BF16";
  case ACCEL_U8: return "U8";
  }
  return "unknown";
}

/* ---------------------------------------------------------------------------------------------
 * The descriptors, generated from the kernel table
 * ------------------------------------------------------------------------------------------- */

/* A list: {name, mode, mode with the flag, flag, aliasing rule, optional, dtype rule (and
 * elements per row)}. */
#define ACC_IO(m) ACC_MODE_##m, ACC_MODE_##m, 0u
#define ACC_IO_IF(field, flag, m, m_flag) ACC_MODE_##m, ACC_MODE_##m_flag, (flag)
#define ACC_ANY_DT(field) .dtype = KOP_DT_ANY
#define ACC_STATE_DT(field) .dtype = KOP_DT_STATE
#define ACC_F32_DT .dtype = KOP_DT_F32
#define ACC_F32_PER_ROW(k) .dtype = KOP_DT_F32, .per_row = (k)
#define ACC_SAME_DT(k) .dtype = (k)
#define ACC_NO_ALIAS KOP_NO_ALIAS
#define ACC_ALIAS(k) (k)
#define ACC_LIST(name, access, dt, al) {name, access, .alias = (al), .optional = 0, dt}
#define ACC_OPT_LIST(name, access, dt, al) {name, access, .alias = (al), .optional = 1, dt}
/* A scalar: {name, bytes, mode, required, per tensor}; scratch is internal, not the caller's
 * to validate. */
#define ACC_SCALAR(name, field, size, mode, need, blocks) \
  {name, (size), ACC_MODE_##mode, need, KOP_PER_TENSOR_##blocks}
#define KOP_PER_TENSOR_ACC_ALL_BLOCKS 0
#define KOP_PER_TENSOR_ACC_BLOCK0 0
#define KOP_PER_TENSOR_ACC_PER_TENSOR 1
#define ACC_SCRATCH(member, size, mode, blocks)
/* A host value is passed by value, nothing to validate (last in a row: no entry of its own). */
#define ACC_VALUE(name, field)
/* The op: (table user, public function, per-stream table). */
#define ACC_OP(fn, table) (1, fn, table)
#define ACC_NO_OP (0, NULL, 0)
#define KOP_OP_USER_(user, fn, table) user
#define KOP_OP_FN_(user, fn, table) fn
#define KOP_OP_TABLE_(user, fn, table) table
#define KOP_MEMO_1(id) ACCEL_KERNEL_USER_##id
#define KOP_MEMO_0(id) (-1)
/* Entries of a generated initializer list (GNU C: an empty one counts 0). */
#define KOP_COUNT(T, ...) ((int)(sizeof((T[]){__VA_ARGS__}) / sizeof(T)))

const kop_desc_t accel_kop_descs[ACCEL_KERNEL_COUNT] = {
#define ACCEL_KERNEL(id, name, T, op, lists_, scalars_)                                        \
  [ACCEL_KERNEL_##id] = {.fn = KOP_OP_FN_ op,                                                  \
                         .per_stream = KOP_OP_TABLE_ op,                                       \
                         .memo = ACC_CAT(KOP_MEMO_, KOP_OP_USER_ op)(id),                      \
                         .nl = KOP_COUNT(kop_list_desc_t, ACC_UNPAREN lists_),                  \
                         .ns = KOP_COUNT(kop_scalar_desc_t, ACC_UNPAREN scalars_),              \
                         .lists = {ACC_UNPAREN lists_},                                         \
                         .scalars = {ACC_UNPAREN scalars_}},
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
};
_Static_assert(KOP_MAX_LISTS <= 32, "present and written lists are 32-bit masks");

/* ---------------------------------------------------------------------------------------------
 * The rules
 * ------------------------------------------------------------------------------------------- */

static unsigned list_mode(const kop_req_t *r, int l) {
  const kop_list_desc_t *d = &r->desc->lists[l];
  return (r->flags & d->flag) ? d->mode_flag : d->mode;
}

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

static accel_status_t not_live_error(const kop_req_t *r, int l, size_t i) {
  const accel_tensor_t *t = &r->lists[l][i];
  const size_t bytes = t->numel * accel_dtype_size(t->dtype);
  if (accel_device_range_is_valid(r->dev, t->data, bytes)) /* then it failed as written */
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] [%p, +%zu bytes) is written but lies in a read-only "
                           "registration", r->fn, r->desc->lists[l].name, i, t->data, bytes);
  return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: %s[%zu] [%p, +%zu bytes) is not inside a live allocation of the "
                         "stream's device", r->fn, r->desc->lists[l].name, i, t->data,
                         t->numel * accel_dtype_size(t->dtype));
}

/* The table's rules for tensor i of list l (everything but the allocator lookup); *bytes gets
 * its size. */
static accel_status_t check_tensor_rules(const kop_req_t *r, int l, size_t i,
                                         accel_dtype_t list_dtype, size_t *bytes) {
  const kop_list_desc_t *L = &r->desc->lists[l];
  const accel_tensor_t *t = &r->lists[l][i];
  const size_t es = accel_dtype_size(t->dtype);
  if (es == 0)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu] has unknown dtype %d",
                           r->fn, L->name, i, (int)t->dtype);
  if (t->dtype != list_dtype)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] is %s but %s[0] is %s (one dtype per list)", r->fn,
                           L->name, i, accel_dtype_name(t->dtype), L->name,
                           accel_dtype_name(list_dtype));
  if (L->dtype == KOP_DT_F32 && t->dtype != ACCEL_F32)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu] must be F32, not %s",
                           r->fn, L->name, i, accel_dtype_name(t->dtype));
  if (L->dtype == KOP_DT_STATE && t->dtype == ACCEL_F16)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] is F16: the moments (the state format) are F32, BF16 or "
                           "U8", r->fn, L->name, i);
  if (L->dtype != KOP_DT_STATE && L->dtype < 0 && t->dtype == ACCEL_U8)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] is U8: only the moments of the 8-bit state format are "
                           "(accel_adam_step_update)", r->fn, L->name, i);
  if (L->dtype >= 0 && kop_has_list(r, L->dtype) && t->dtype != r->lists[L->dtype][i].dtype)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] is %s but %s[%zu] is %s (same dtype required)", r->fn,
                           L->name, i, accel_dtype_name(t->dtype),
                           r->desc->lists[L->dtype].name, i,
                           accel_dtype_name(r->lists[L->dtype][i].dtype));
  const size_t n0 = r->lists[0][i].numel;
  if (l > 0 && L->per_row && t->numel != L->per_row * (n0 / ACC_BLOCK + (n0 % ACC_BLOCK != 0)))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] has %zu elements but %s[%zu] has %zu: it needs %u per "
                           "block of %u", r->fn, L->name, i, t->numel, r->desc->lists[0].name, i,
                           n0, (unsigned)L->per_row, ACC_BLOCK);
  if (l > 0 && !L->per_row && t->numel != n0)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu] has %zu elements but %s[%zu] has %zu", r->fn, L->name, i,
                           t->numel, r->desc->lists[0].name, i, n0);
  if (t->numel > SIZE_MAX / es)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu]: %zu elements overflow",
                           r->fn, L->name, i, t->numel);
  *bytes = t->numel * es;
  if (t->numel == 0) return ACCEL_OK; /* nothing is accessed */
  if (!t->data)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu].data is NULL with %zu elements", r->fn, L->name, i,
                           t->numel);
  if ((uintptr_t)t->data % es)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s[%zu].data %p is not %zu-byte aligned", r->fn, L->name, i,
                           t->data, es);
  if ((uintptr_t)t->data > UINTPTR_MAX - *bytes)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s[%zu] wraps the address space",
                           r->fn, L->name, i);
  return ACCEL_OK;
}

/* Scalar s of the call, when given: aligned and inside a live allocation. */
static accel_status_t check_scalar(const kop_req_t *r, int s) {
  const kop_scalar_desc_t *S = &r->desc->scalars[s];
  const void *p = r->scalars[s];
  const size_t size = kop_scalar_size(r, s);
  if (!p || size == 0) return ACCEL_OK; /* an array for no tensors: nothing is accessed */
  if ((uintptr_t)p % 4)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s %p is not 4-byte aligned",
                           r->fn, S->name, p);
  if (!accel_device_range_is_valid(r->dev, p, size))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s %p (%zu bytes%s) is not inside a live allocation of the "
                           "stream's device", r->fn, S->name, p, size,
                           S->per_tensor ? ", one element per tensor" : "");
  if ((S->mode & ACC_MODE_W) && accel_device_range_is_read_only(r->dev, p, size))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %s %p is written but lies in a read-only registration", r->fn,
                           S->name, p);
  return ACCEL_OK;
}

/* Appends the given scalars to iv (they go through the same sweep as the tensors). */
static size_t scalar_intervals(const kop_req_t *r, kop_interval_t *iv, size_t count) {
  for (int s = 0; s < r->desc->ns; ++s)
    if (r->scalars[s] && kop_scalar_size(r, s) > 0)
      iv[count++] = (kop_interval_t){(uintptr_t)r->scalars[s],
                                     (uintptr_t)r->scalars[s] + kop_scalar_size(r, s),
                                     r->desc->scalars[s].name, SIZE_MAX,
                                     (r->desc->scalars[s].mode & ACC_MODE_W) != 0};
  return count;
}

/* 1 when tensor i of list l is exactly tensor i of the list it may alias (then it is that
 * interval, not one of its own). */
static int is_alias(const kop_req_t *r, int l, size_t i) {
  const int k = r->desc->lists[l].alias;
  return k >= 0 && kop_has_list(r, l) && kop_has_list(r, k) &&
         r->lists[l][i].data == r->lists[k][i].data &&
         r->lists[l][i].numel * accel_dtype_size(r->lists[l][i].dtype) ==
             r->lists[k][i].numel * accel_dtype_size(r->lists[k][i].dtype);
}

/* kernel_ops_internal.h */
accel_status_t kop_check_call(kop_req_t *r) {
  const kop_desc_t *d = r->desc;
  r->fn = d->fn;
  r->present = 0;
  r->written = 0;
  for (int l = 0; l < d->nl; ++l) {
    if (!r->lists[l]) continue;
    r->present |= 1u << l;
    if (list_mode(r, l) & ACC_MODE_W) r->written |= 1u << l;
  }
  /* r->dev set: the caller checked the stream already (accel_launch) */
  accel_status_t st = r->dev ? ACCEL_OK : accel_stream_check(r->stream, r->fn, &r->dev);
  if (st != ACCEL_OK) return st;
  for (int s = 0; s < d->ns; ++s)
    if (d->scalars[s].required && !r->scalars[s])
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", r->fn,
                             d->scalars[s].name);
  for (int l = 0; l < d->nl; ++l)
    if (r->n > 0 && !r->lists[l] && !d->lists[l].optional)
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL with n = %zu", r->fn,
                             d->lists[l].name, r->n);
  if (r->n > SIZE_MAX / sizeof(kop_interval_t) / 5)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: n = %zu is too large", r->fn, r->n);
  return ACCEL_OK;
}

accel_status_t kop_check_scalars(const kop_req_t *r) {
  accel_status_t st = ACCEL_OK;
  for (int s = 0; s < r->desc->ns && st == ACCEL_OK; ++s) st = check_scalar(r, s);
  return st;
}

accel_status_t kop_validate_all(kop_req_t *r, kop_interval_t **out, size_t *out_count) {
  const kop_desc_t *d = r->desc;
  accel_status_t st = kop_check_scalars(r);
  if (st != ACCEL_OK) return st;
  kop_interval_t *iv = malloc(((size_t)d->nl * r->n + (size_t)d->ns) * sizeof *iv + 1);
  if (!iv) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", r->fn);
  size_t count = 0;
  uint64_t chunks = 0;
  for (int l = 0; l < d->nl; ++l) {
    if (!kop_has_list(r, l)) continue;
    const accel_dtype_t list_dtype = r->n ? r->lists[l][0].dtype : ACCEL_F32;
    for (size_t i = 0; i < r->n; ++i) {
      size_t bytes = 0;
      st = check_tensor_rules(r, l, i, list_dtype, &bytes);
      if (st == ACCEL_OK && bytes &&
          !accel_device_range_is_valid(r->dev, r->lists[l][i].data, bytes))
        st = not_live_error(r, l, i);
      if (st == ACCEL_OK && bytes && ((r->written >> l) & 1) &&
          accel_device_range_is_read_only(r->dev, r->lists[l][i].data, bytes))
        st = not_live_error(r, l, i);
      if (st != ACCEL_OK) {
        free(iv);
        return st;
      }
      if (bytes == 0) continue;
      if (l == 0) chunks += (r->lists[0][i].numel + ACC_CHUNK - 1) / ACC_CHUNK;
      if (is_alias(r, l, i)) continue;
      int written = (r->written >> l) & 1;
      for (int a = l + 1; a < d->nl; ++a) /* written in place through a list aliasing it */
        if (d->lists[a].alias == l && is_alias(r, a, i)) written |= (r->written >> a) & 1;
      iv[count++] = (kop_interval_t){(uintptr_t)r->lists[l][i].data,
                                     (uintptr_t)r->lists[l][i].data + bytes, d->lists[l].name,
                                     i, written};
    }
  }
  count = scalar_intervals(r, iv, count);
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

/* 1 when [b, end) meets one of the entry's spans (sorted, disjoint): a binary search. */
static int touches_spans(const kop_entry_t *en, uintptr_t b, uintptr_t end) {
  size_t lo = 0, hi = en->nspans; /* first span ending after b */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (en->spans[mid].end <= b) lo = mid + 1;
    else hi = mid;
  }
  return lo < en->nspans && en->spans[lo].begin < end;
}

/* kop_validate_all for a call whose key matches the cached entry e (validated with the same
 * lists and written lists): the tensor rules and the tensor-vs-tensor sweep hold again; what
 * can have changed is whether the tensors are still live (the cache looks them up only when
 * something was freed since e last saw them: dead) and everything about the scalars, which get
 * the same checks (kop_check_scalars, before), with the tensors' side of the sweep answered by
 * the entry's spans. */
int kop_validate_hit(kop_req_t *r, const kop_entry_t *e, size_t dead, accel_status_t *st) {
  if (dead != SIZE_MAX) {
    *st = not_live_error(r, (int)(dead / r->n), dead % r->n);
    return 1;
  }
  kop_interval_t iv[KOP_MAX_SCALARS];
  const size_t count = scalar_intervals(r, iv, 0);
  for (size_t k = 0; k < count; ++k)
    if (iv[k].end <= iv[k].begin || touches_spans(e, iv[k].begin, iv[k].end)) return 0;
  *st = check_overlaps(r, iv, count);
  if (*st == ACCEL_OK) r->num_chunks = e->num_chunks;
  return 1;
}
