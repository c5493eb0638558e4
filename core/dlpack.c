/*
 * DLPack (include/accel/accel_interop.h): views of DLTensors, imports of managed tensors (1.x
 * DLManagedTensorVersioned and the legacy DLManagedTensor) and exports of accel allocations.
 *
 * An import holds what its tensor lies in until no graph or queued command can use it: the
 * allocation or user registration it lies in, pinned (a free is deferred, an unregister
 * refused), or else a registration shared by the imports (allocator.h): the first import of a
 * range makes it, every later import of a range inside it joins it, and it ends when the last
 * of them was released and no graph uses it any more. An import's release is retired behind a
 * fence (retire.c); its deleter runs once nothing can use the tensor (in a shared
 * registration: when that ends), with no lock held and never inside a host function of the
 * device (device.h, "Releases that run user code"). An export pins its allocation until the
 * consumer calls the deleter.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_interop.h"
#include "core_util.h"
#include "device.h"
#include "external_memory.h"
#include "log.h"

typedef struct shared_reg shared_reg_t;

struct accel_dlpack_import {
  accel_handle_t hdr;
  accel_device_t *dev;                           /* a reference */
  accel_dl_managed_tensor_versioned_t *versioned; /* one of the two */
  accel_dl_managed_tensor_t *legacy;
  bool borrowed;                                 /* never call the deleter */
  accel_allocator_pins_t pins;                   /* what it lies in */
  shared_reg_t *shared;     /* that is a registration shared by imports, or NULL */
  accel_dlpack_import_t *next_waiting;
};

/* A registration shared by the imports of one range: the released ones wait for its end. */
struct shared_reg {
  accel_device_t *dev; /* its imports hold it */
  void *base;
  pthread_mutex_t lock;
  accel_dlpack_import_t *waiting;
};

/* ---------------------------------------------------------------------------------------- */
/* views */

static accel_status_t dl_dtype(const char *fn, accel_dl_dtype_t d, accel_dtype_t *out) {
  if (d.lanes != 1)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "%s: vector dtypes (%u lanes) are not supported; accel takes F32, "
                           "F16 and BF16 with one lane",
                           fn, (unsigned)d.lanes);
  if (d.code == ACCEL_DL_FLOAT && d.bits == 32) *out = ACCEL_F32;
  else if (d.code == ACCEL_DL_FLOAT && d.bits == 16) *out = ACCEL_F16;
  else if (d.code == ACCEL_DL_BFLOAT && d.bits == 16) *out = ACCEL_BF16;
  else if (d.code == ACCEL_DL_UINT && d.bits == 8) *out = ACCEL_U8; /* 8-bit state codes */
  else
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "%s: DLPack dtype code %u with %u bits is not supported; accel takes "
                           "float32, float16, bfloat16 and uint8 (8-bit state codes)",
                           fn, (unsigned)d.code, (unsigned)d.bits);
  return ACCEL_OK;
}

/* numel of shape[0..ndim), checking the shape and, when given, that strides are compact
 * row-major (dimensions of extent 1 may have any stride, as PyTorch gives them). */
static accel_status_t dl_extent(const char *fn, const accel_dl_tensor_t *t, size_t *numel) {
  if (t->ndim < 0)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: ndim %" PRId32 " is negative", fn,
                           t->ndim);
  if (t->ndim > 0 && !t->shape)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: shape is NULL with ndim %" PRId32,
                           fn, t->ndim);
  size_t n = 1;
  for (int32_t d = 0; d < t->ndim; ++d) {
    if (t->shape[d] < 0)
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                             "%s: shape[%" PRId32 "] = %" PRId64 " is negative", fn, d,
                             t->shape[d]);
    if ((uint64_t)t->shape[d] > SIZE_MAX || (t->shape[d] && n > SIZE_MAX / (size_t)t->shape[d]))
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                             "%s: the element count overflows at shape[%" PRId32 "]", fn, d);
    n *= (size_t)t->shape[d];
  }
  if (t->strides && n > 0) {
    int64_t expect = 1;
    for (int32_t d = t->ndim - 1; d >= 0; --d) {
      if (t->shape[d] != 1 && t->strides[d] != expect)
        return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                               "%s: strides are not compact row-major: dimension %" PRId32
                               " has stride %" PRId64 " where %" PRId64
                               " was expected (make the tensor contiguous first)",
                               fn, d, t->strides[d], expect);
      expect *= t->shape[d];
    }
  }
  *numel = n;
  return ACCEL_OK;
}

static accel_status_t dl_check_device(accel_device_t *dev, const char *fn,
                                      accel_dl_device_t have) {
  const int32_t type = dev->backend->vt->dlpack_device_type;
  if (type == 0)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED, "%s: the %s backend has no DLPack device "
                                                    "type", fn, dev->backend->name);
  if (have.device_type != type || have.device_id != dev->index)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the tensor is on DLPack device (%" PRId32 ", %" PRId32
                           ") but the accel device %s:%d is (%" PRId32 ", %d)",
                           fn, have.device_type, have.device_id, dev->backend->name, dev->index,
                           type, dev->index);
  return ACCEL_OK;
}

static accel_status_t view_of(accel_device_t *dev, const char *fn, const accel_dl_tensor_t *t,
                              accel_tensor_t *out) {
  accel_status_t st = dl_check_device(dev, fn, t->device);
  accel_dtype_t dtype = ACCEL_F32;
  size_t numel = 0;
  if (st == ACCEL_OK) st = dl_dtype(fn, t->dtype, &dtype);
  if (st == ACCEL_OK) st = dl_extent(fn, t, &numel);
  if (st != ACCEL_OK) return st;
  const size_t es = accel_dtype_size(dtype);
  if (numel > SIZE_MAX / es)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %zu elements overflow", fn, numel);
  const uintptr_t base = (uintptr_t)t->data;
  if (numel > 0 && !t->data)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: data is NULL with %zu elements",
                           fn, numel);
  if (t->byte_offset > UINTPTR_MAX - base || base + t->byte_offset > UINTPTR_MAX - numel * es)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: data %p + byte_offset %" PRIu64 " wraps the address space", fn,
                           t->data, t->byte_offset);
  const uintptr_t p = base + (uintptr_t)t->byte_offset;
  if (p % es)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: data %p + byte_offset %" PRIu64 " is not %zu-byte aligned for %s",
                           fn, t->data, t->byte_offset, es, accel_dtype_name(dtype));
  out->data = (void *)p;
  out->numel = numel;
  out->dtype = dtype;
  return ACCEL_OK;
}

accel_status_t accel_dlpack_view(accel_device_t *dev, const accel_dl_tensor_t *t,
                                 accel_tensor_t *out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(t, __func__, "t is NULL");
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  return view_of(dev, __func__, t, out);
}

/* ---------------------------------------------------------------------------------------- */
/* imports */

static void import_free(accel_dlpack_import_t *imp) {
  if (!imp->borrowed) {
    if (imp->versioned && imp->versioned->deleter) imp->versioned->deleter(imp->versioned);
    if (imp->legacy && imp->legacy->deleter) imp->legacy->deleter(imp->legacy);
  }
  accel_device_t *dev = imp->dev;
  free(imp);
  accel_device_release_ref(dev);
}

/* The deleters of a shared registration's imports, once it ended (a callback: retire.c). */
static void shared_reg_free(void *ctx) {
  shared_reg_t *r = ctx;
  accel_dlpack_import_t *list = r->waiting;
  pthread_mutex_destroy(&r->lock);
  free(r);
  for (accel_dlpack_import_t *imp = list, *next; imp; imp = next) {
    next = imp->next_waiting;
    import_free(imp);
  }
}

/* The last pin of a shared registration went (an import's or a graph's release). */
static void shared_reg_ended(void *ctx, void *device_ptr) {
  shared_reg_t *r = ctx;
  accel_external_finish(r->dev, r->base, device_ptr);
  accel_device_defer_callback(r->dev, shared_reg_free, r);
}

/* Retired release: no queued command uses the tensor any more. */
static void import_retired(void *ctx) {
  accel_dlpack_import_t *imp = ctx;
  shared_reg_t *r = imp->shared;
  accel_allocator_t *mem = imp->dev->mem;
  accel_allocator_pins_t pins = imp->pins;
  if (r) { /* its deleter waits for the registration's end (imp is not ours any more) */
    pthread_mutex_lock(&r->lock);
    imp->next_waiting = r->waiting;
    r->waiting = imp;
    pthread_mutex_unlock(&r->lock);
  }
  accel_allocator_unpin(mem, &pins); /* may be that end */
  if (!r) import_free(imp);
}

/* A registration of the tensor's range, shared by the imports of it; its first user's pin goes
 * to imp. */
static accel_status_t import_register(accel_device_t *dev, const char *fn, accel_tensor_t *v,
                                      size_t bytes, bool read_only, accel_dlpack_import_t *imp) {
  shared_reg_t *r = calloc(1, sizeof *r);
  if (!r) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  r->dev = dev;
  r->base = v->data;
  pthread_mutex_init(&r->lock, NULL);
  void *dptr = NULL;
  accel_status_t st = accel_external_register(dev, fn, v->data, bytes, read_only,
                                              shared_reg_ended, r, &imp->pins, &dptr);
  if (st != ACCEL_OK) {
    accel_allocator_unpin(dev->mem, &imp->pins); /* nothing pinned: frees the list's room */
    pthread_mutex_destroy(&r->lock);
    free(r);
    return st;
  }
  imp->shared = r;
  v->data = dptr;
  return ACCEL_OK;
}

/* The checks and the hold shared by both kinds of managed tensor. */
static accel_status_t import_tensor(accel_device_t *dev, const char *fn,
                                    const accel_dl_tensor_t *t, bool read_only, unsigned flags,
                                    accel_tensor_t *view, accel_dlpack_import_t *imp) {
  accel_tensor_t v;
  accel_status_t st = view_of(dev, fn, t, &v);
  if (st != ACCEL_OK) return st;
  const size_t bytes = v.numel * accel_dtype_size(v.dtype);
  imp->dev = dev;
  imp->borrowed = flags & ACCEL_DLPACK_IMPORT_BORROW;
  imp->pins.owner_kind = "DLPack import";
  imp->pins.owner = imp;
  /* inside an allocation or registration: hold it (joining a shared one); else register the
   * range (empty tensors access nothing and hold nothing) */
  if (bytes && accel_allocator_range_valid(dev->mem, v.data, bytes)) {
    void *shared = NULL;
    st = accel_allocator_pin_joining(dev->mem, v.data, bytes, &imp->pins, &shared);
    imp->shared = shared;
    if (st == ACCEL_OK && imp->pins.n == 0)
      st = accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: [%p, +%zu) lies in a graph pool's memory or was freed meanwhile; "
                           "import memory of accel_malloc, a registration or foreign memory",
                           fn, v.data, bytes);
    if (st != ACCEL_OK) accel_allocator_unpin(dev->mem, &imp->pins);
  } else if (bytes) {
    st = import_register(dev, fn, &v, bytes, read_only, imp);
  }
  if (st == ACCEL_OK) *view = v;
  return st;
}

static accel_status_t import_common(accel_device_t *dev, const char *fn, void *managed,
                                    unsigned flags, accel_tensor_t *view,
                                    accel_dlpack_import_t **out) {
  accel_status_t st = accel_device_check(dev, fn);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(managed, fn, "managed is NULL");
  ACCEL_REQUIRE_ARG(view, fn, "view is NULL");
  ACCEL_REQUIRE_ARG(out, fn, "out is NULL");
  ACCEL_REQUIRE_FLAGS(flags, ACCEL_DLPACK_IMPORT_BORROW, fn);
  return ACCEL_OK;
}

static accel_status_t import_finish(accel_device_t *dev, accel_dlpack_import_t *imp,
                                    accel_status_t st, accel_dlpack_import_t **out) {
  if (st != ACCEL_OK) {
    free(imp);
    return st;
  }
  accel_device_retain(dev);
  accel_handle_register(&imp->hdr, ACCEL_HANDLE_DLPACK_IMPORT, dev->backend->vt);
  *out = imp;
  return ACCEL_OK;
}

accel_status_t accel_dlpack_import(accel_device_t *dev,
                                   accel_dl_managed_tensor_versioned_t *managed, unsigned flags,
                                   accel_tensor_t *view, accel_dlpack_import_t **out) {
  accel_status_t st = import_common(dev, __func__, managed, flags, view, out);
  if (st != ACCEL_OK) return st;
  if (managed->version.major != ACCEL_DLPACK_MAJOR_VERSION)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "%s: the tensor is DLPack %" PRIu32 ".%" PRIu32
                           " but accel reads DLPack %u.x",
                           __func__, managed->version.major, managed->version.minor,
                           ACCEL_DLPACK_MAJOR_VERSION);
  accel_dlpack_import_t *imp = calloc(1, sizeof *imp);
  if (!imp) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", __func__);
  imp->versioned = managed;
  st = import_tensor(dev, __func__, &managed->dl_tensor,
                     (managed->flags & ACCEL_DL_FLAG_READ_ONLY) != 0, flags, view, imp);
  return import_finish(dev, imp, st, out);
}

accel_status_t accel_dlpack_import_legacy(accel_device_t *dev, accel_dl_managed_tensor_t *managed,
                                          unsigned flags, accel_tensor_t *view,
                                          accel_dlpack_import_t **out) {
  accel_status_t st = import_common(dev, __func__, managed, flags, view, out);
  if (st != ACCEL_OK) return st;
  accel_dlpack_import_t *imp = calloc(1, sizeof *imp);
  if (!imp) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", __func__);
  imp->legacy = managed;
  st = import_tensor(dev, __func__, &managed->dl_tensor, false, flags, view, imp);
  return import_finish(dev, imp, st, out);
}

accel_status_t accel_dlpack_release(accel_dlpack_import_t *imp) {
  accel_status_t st = accel_handle_drop_user(imp, ACCEL_HANDLE_DLPACK_IMPORT, __func__);
  if (st != ACCEL_OK) return st;
  accel_allocator_leave(imp->dev->mem, &imp->pins); /* the last import: invalid for new work */
  accel_allocator_pins_retiring(imp->dev->mem, &imp->pins); /* unregister waits for it now */
  /* after the work queued so far; at once when every stream is idle */
  accel_device_retire_callback(imp->dev, import_retired, imp);
  return ACCEL_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* exports */

/* What an export's manager_ctx points to: it holds the device and pins the allocation. The
 * managed tensor comes first (the deleters find the export at its address). */
typedef struct dl_export {
  union {
    accel_dl_managed_tensor_versioned_t versioned;
    accel_dl_managed_tensor_t legacy;
  } m;
  int64_t shape[1];
  accel_device_t *dev;
  accel_allocator_pins_t pins;
} dl_export_t;
_Static_assert(offsetof(dl_export_t, m) == 0, "the managed tensor starts the export");

/* Live exports, so that a deleter called twice (or on something accel did not export) is an
 * error in the log instead of a double free. */
static pthread_mutex_t exports_lock = PTHREAD_MUTEX_INITIALIZER;
static accel_hashtab_t exports;

static bool export_forget(const void *managed) {
  pthread_mutex_lock(&exports_lock);
  bool live = accel_hashtab_erase(&exports, (uintptr_t)managed);
  pthread_mutex_unlock(&exports_lock);
  return live;
}

static void export_free(dl_export_t *x) {
  accel_device_t *dev = x->dev;
  accel_allocator_unpin(dev->mem, &x->pins); /* completes an accel_free deferred by the export */
  free(x);
  accel_device_release_ref(dev);
}

/* The deleter of either form: self is the managed tensor at the start of its export (read
 * only once it is known to be live). */
static void export_delete(void *self) {
  if (!export_forget(self)) {
    accel_log(ACCEL_LOG_ERROR, "accel", "DLPack deleter called on %p, which is not a live accel "
                                        "export (called twice?); ignored", self);
    return;
  }
  export_free(self);
}

static void export_deleter_versioned(accel_dl_managed_tensor_versioned_t *self) {
  export_delete(self);
}

static void export_deleter_legacy(accel_dl_managed_tensor_t *self) { export_delete(self); }

/* The export of tensor: checks it, pins its allocation and describes it in the managed tensor
 * of the form asked for, whose address goes to *managed_out: an accel_dl_managed_tensor_
 * versioned_t ** when versioned is set, else an accel_dl_managed_tensor_t **. */
static accel_status_t export_new(accel_device_t *dev, const char *fn, const accel_tensor_t *t,
                                 void *managed_out, int versioned) {
  accel_status_t st = accel_device_check(dev, fn);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(t, fn, "tensor is NULL");
  ACCEL_REQUIRE_ARG(managed_out, fn, "out is NULL");
  const size_t es = accel_dtype_size(t->dtype);
  if (es == 0)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown dtype %d", fn,
                           (int)t->dtype);
  if (t->numel > (size_t)INT64_MAX / es)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %zu elements overflow", fn,
                           t->numel);
  const int32_t type = dev->backend->vt->dlpack_device_type;
  if (type == 0)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED, "%s: the %s backend has no DLPack device "
                                                    "type", fn, dev->backend->name);
  const size_t bytes = t->numel * es;
  /* an empty tensor still names an allocation to hold: one byte of it */
  const size_t held = bytes ? bytes : 1;
  if (!t->data || (uintptr_t)t->data % es || !accel_allocator_range_valid(dev->mem, t->data, held))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: [%p, +%zu) is not an aligned range inside one live allocation "
                           "of the device", fn, t->data, bytes);
  dl_export_t *x = calloc(1, sizeof *x);
  if (!x) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  x->pins.owner_kind = "DLPack export";
  x->pins.owner = x;
  st = accel_allocator_pin(dev->mem, t->data, held, &x->pins);
  if (st == ACCEL_OK && x->pins.n == 0)
    st = accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: %p lies in a graph pool; export memory of accel_malloc or a "
                         "registration", fn, t->data);
  pthread_mutex_lock(&exports_lock);
  if (st == ACCEL_OK && !accel_hashtab_insert(&exports, (uintptr_t)&x->m, NULL))
    st = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  pthread_mutex_unlock(&exports_lock);
  if (st != ACCEL_OK) {
    accel_allocator_unpin(dev->mem, &x->pins);
    free(x);
    return st;
  }
  accel_device_retain(dev);
  x->dev = dev;
  x->shape[0] = (int64_t)t->numel;
  const accel_dl_tensor_t dl = {
      .data = t->data,
      .device = {type, dev->index},
      .ndim = 1,
      .dtype = {t->dtype == ACCEL_BF16 ? ACCEL_DL_BFLOAT
                : t->dtype == ACCEL_U8 ? ACCEL_DL_UINT : ACCEL_DL_FLOAT,
                (uint8_t)(es * 8), 1},
      .shape = x->shape,
      .strides = NULL,
      .byte_offset = 0};
  if (versioned) {
    x->m.versioned = (accel_dl_managed_tensor_versioned_t){
        .version = {ACCEL_DLPACK_MAJOR_VERSION, ACCEL_DLPACK_MINOR_VERSION},
        .manager_ctx = x,
        .deleter = export_deleter_versioned,
        .flags = 0,
        .dl_tensor = dl};
    *(accel_dl_managed_tensor_versioned_t **)managed_out = &x->m.versioned;
  } else {
    x->m.legacy = (accel_dl_managed_tensor_t){
        .dl_tensor = dl, .manager_ctx = x, .deleter = export_deleter_legacy};
    *(accel_dl_managed_tensor_t **)managed_out = &x->m.legacy;
  }
  return ACCEL_OK;
}

accel_status_t accel_dlpack_export(accel_device_t *dev, const accel_tensor_t *tensor,
                                   accel_dl_managed_tensor_versioned_t **out) {
  return export_new(dev, __func__, tensor, out, 1);
}

accel_status_t accel_dlpack_export_legacy(accel_device_t *dev, const accel_tensor_t *tensor,
                                          accel_dl_managed_tensor_t **out) {
  return export_new(dev, __func__, tensor, out, 0);
}
