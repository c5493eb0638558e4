/*
 * The tensor operations' internals, shared by core/kernel_validate.c (the rules, generated from
 * the kernel table), core/chunk_table.c (the chunk-table cache and the per-stream memo) and
 * core/kernel_ops.c (the operations and their launches).
 */
#ifndef ACCEL_CORE_KERNEL_OPS_INTERNAL_H
#define ACCEL_CORE_KERNEL_OPS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_kernels.h"
#include "accel_kernel_abi_host.h"
#include "accel_kernel_ids.h"
#include "kernel_support.h"

#define KOP_MAX_LISTS ACC_MAX_LISTS /* acc_chunk_t.ptr */
#define KOP_MAX_SCALARS 8

/* dtype rule of a list: any float dtype, F32 only, or the dtype of list k (k >= 0). */
#define KOP_DT_ANY (-1)
#define KOP_DT_F32 (-2)
#define KOP_DT_STATE (-3) /* the state formats: F32, BF16 or U8 (ACC_STATE_DT) */
/* aliasing rule of a list: must not overlap, or may be exactly list k's tensor (k >= 0). */
#define KOP_NO_ALIAS (-1)

/* One tensor list of an operation, from its row of the kernel table. */
typedef struct kop_list_desc {
  const char *name;
  uint8_t mode;      /* ACC_MODE_*: access without the flag */
  uint8_t mode_flag; /* access when the call's flags have `flag` */
  uint32_t flag;
  int8_t dtype;      /* KOP_DT_ANY, KOP_DT_F32, KOP_DT_STATE or a list index */
  int8_t alias;      /* KOP_NO_ALIAS or a list index */
  uint8_t optional;  /* the call may leave the list out (NULL) */
  uint8_t per_row;   /* 0: an element per element of list 0; k: k F32 elements per row of
                        ACC_BLOCK elements of list 0 (ACC_F32_PER_ROW) */
} kop_list_desc_t;

typedef struct kop_scalar_desc {
  const char *name;
  uint32_t size;      /* bytes; per tensor of the call when per_tensor */
  uint8_t mode;
  uint8_t required;
  uint8_t per_tensor; /* an array of n elements of `size` bytes (ACC_PER_TENSOR) */
} kop_scalar_desc_t;

/* What the kernel table says about the operation using a kernel's chunk tables. */
typedef struct kop_desc {
  const char *fn; /* NULL: the kernel is not a table user */
  const char *symbol; /* a user kernel's ACC_KERNEL name (core/module.c); NULL: a table row */
  int per_stream; /* the table carries this stream's scratch (norm partials) */
  int memo;       /* the operation's per-stream memo slot (ACCEL_KERNEL_USER_*), or -1: a
                     user kernel, whose slot its launch id picks (chunk_table.c) */
  int nl, ns;
  kop_list_desc_t lists[KOP_MAX_LISTS]; /* a row with more does not compile */
  kop_scalar_desc_t scalars[KOP_MAX_SCALARS];
} kop_desc_t;

/* Indexed by kernel id (core/kernel_validate.c). */
extern const kop_desc_t accel_kop_descs[ACCEL_KERNEL_COUNT];

typedef struct kop_entry kop_entry_t;

/* One call: its operation's descriptor, and what the public function fills in: the stream, the
 * lists, n, the scalars' pointers (in the table's order) and the flags (ACC_IO_IF bits). */
typedef struct kop_req {
  const kop_desc_t *desc;
  accel_stream_t *stream;
  uint32_t op; /* kernel id of the table user */
  const accel_tensor_t *lists[KOP_MAX_LISTS];
  size_t n;
  const void *scalars[KOP_MAX_SCALARS]; /* NULL: absent (allowed only when not required) */
  uint32_t flags;
  /* filled by validation */
  const char *fn;
  accel_device_t *dev; /* set before validation: the caller checked the stream (kop_row_run) */
  uint32_t present; /* bit l: list l is given (optional lists may be NULL) */
  uint32_t written; /* bit l: list l is written by this call */
  uint64_t hash;    /* kop_hash of the call: its chunk-table cache key */
  uint64_t free_gen; /* the device's free generation when validation began */
  uint64_t num_chunks;
  kop_entry_t *entry; /* the chunk table, with a reference, when num_chunks > 0 */
} kop_req_t;

/* [begin, end) address ranges of one call, for the overlap sweep. */
typedef struct kop_interval {
  uintptr_t begin, end;
  const char *name;
  size_t index; /* tensor index, or SIZE_MAX for a scalar */
  int written;
} kop_interval_t;

/* [begin, end) address spans covered by a list's tensors, merged and sorted. */
typedef struct kop_span {
  uintptr_t begin, end;
} kop_span_t;

/* A cached chunk table (core/chunk_table.c). */
typedef struct kop_key_elem {
  uintptr_t data;
  size_t numel;
  uint64_t dtype;
} kop_key_elem_t;

/* [begin, end) address spans covered by a list's tensors, merged and sorted. */

struct kop_entry {
  accel_keepalive_t keep; /* first: the keepalive is the entry */
  accel_device_t *dev;
  struct kop_entry *next; /* hash-bucket chain */
  uint64_t hash;
  uint64_t last_use;
  uint32_t op;
  uint32_t present;   /* bit l: list l was given (the table has 0 addresses for the others) */
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

/* Bytes scalar s of the call spans. */
static inline size_t kop_scalar_size(const kop_req_t *r, int s) {
  const kop_scalar_desc_t *d = &r->desc->scalars[s];
  return d->per_tensor ? r->n * d->size : d->size;
}

/* 1 when the call gave list l (validation sets r->present). */
static inline int kop_has_list(const kop_req_t *r, int l) { return (int)((r->present >> l) & 1u); }

/* kernel_ops.c drives lookup -> validate -> build over two siblings that never call each
 * other: the validator (kernel_validate.c) and the chunk-table cache (chunk_table.c). */

/* kernel_validate.c, the validator */
/* The checks that do not look at the tensors: stream, NULL lists and scalars, n; sets the
 * function name, the device, the given and the written lists. */
accel_status_t kop_check_call(kop_req_t *r);
/* Every given scalar: aligned, inside a live allocation, writable when written. */
accel_status_t kop_check_scalars(const kop_req_t *r);
/* The rest of a call whose key matches the cached entry e, after kop_check_scalars: dead is
 * kop_entry_dead_range's answer (a tensor no longer live is refused); the scalars against the
 * entry's spans and each other. 1 when that decided (*st; r->num_chunks set on success), 0
 * when a scalar touches the tensors: kop_validate_all then finds the exact pair. */
int kop_validate_hit(kop_req_t *r, const kop_entry_t *e, size_t dead, accel_status_t *st);
/* Validates every tensor and scalar of r and counts the chunks (r->num_chunks). On success
 * *out holds the *count intervals sorted by address (free() them). */
accel_status_t kop_validate_all(kop_req_t *r, kop_interval_t **out, size_t *count);

/* chunk_table.c, the cache */
uint64_t kop_hash(const kop_req_t *r);
/* The entry for r (the stream's memo, else the cache) with a reference, or NULL. */
kop_entry_t *kop_lookup(const kop_req_t *r);
/* The cached table for the validated r (built on a miss, with the spans of its sorted
 * intervals iv), with a reference for the caller; it records r->free_gen (r's tensors were
 * just seen live). */
accel_status_t kop_table(const kop_req_t *r, const kop_interval_t *iv, size_t count,
                         kop_entry_t **out);
/* SIZE_MAX when the tensors of r (whose key matches e) lie in live allocations, else the index
 * l * n + i of the first that does not. Looked up only when something was freed since e last
 * saw them there (the free generation r->free_gen); the generation is then recorded. */
size_t kop_entry_dead_range(kop_entry_t *e, const kop_req_t *r);
/* Gives the call's reference to e to the stream's memo (dropping the one it replaces). */
void kop_memo_put(const kop_req_t *r, kop_entry_t *e);
void kop_entry_release(kop_entry_t *e);

/* kernel_ops.c, the driver (its operations, and generator_ops.c's) */
/* Validates the call r and gets its chunk table (r->entry) when it has chunks. */
accel_status_t kop_prepare(kop_req_t *r);
/* Launches kernel id of r's operation over num_blocks blocks with its parameter block; e (the
 * chunk table, or NULL) is kept alive by a recording and its spans, with r's scalars, are the
 * launch's ranges. */
accel_status_t kop_launch(const kop_req_t *r, uint32_t id, uint32_t num_blocks,
                          const void *params, uint32_t size, kop_entry_t *e);
/* Launches RAND_ADVANCE for r's operation, after the launch that drew from the generator state
 * `state`: its counter moves past those `blocks` in stream order (core/generator_ops.c). */
accel_status_t kop_rand_advance(const kop_req_t *r, void *state, uint64_t blocks);
/* Runs body(r, table, user) for the validated r; the call's table reference then goes to the
 * stream's memo (launches that were recorded hold their own). */
typedef accel_status_t (*kop_body_fn)(const kop_req_t *r, kop_entry_t *e, const void *user);
accel_status_t kop_run(kop_req_t *r, kop_body_fn body, const void *user);

#define ADDR(p) ((acc_u64)(uintptr_t)(p))
/* The request of the operation using kernel ID's chunk tables: its rules are that row's. */
#define KOP_REQ(ID) .desc = &accel_kop_descs[ACCEL_KERNEL_##ID], .op = ACCEL_KERNEL_##ID
/* Where the table-driven launch of a user kernel (kop_row_run) stores a call's values in the
 * parameter struct its row implies (offsets; KOP_ROW_NONE: no field). */
#define KOP_ROW_NONE UINT16_MAX
#define KOP_ROW_PARAMS_MAX 128u
#define KOP_ROW_MAX_VALUES 4
typedef struct kop_row_layout {
  uint16_t size, chunks, num_chunks;   /* sizeof, the acc_u64 chunks and acc_u32 num_chunks */
  uint16_t dtype[KOP_MAX_LISTS];       /* acc_u32: list l's dtype (ACC_ANY_DT's field) */
  uint16_t scalar[KOP_MAX_SCALARS];    /* acc_u64: scalar s's address (its ACC_FIELD) */
  uint16_t nv;                         /* host values (ACC_VALUE), after the scalars */
  uint16_t value[KOP_ROW_MAX_VALUES];  /* acc_f32: value v (its ACC_FIELD) */
} kop_row_layout_t;

/* The public function of a generated row (gen_kernel_rows.py writes it and body): r filled as
 * a hand-written launch fills it (KOP_REQ(ID), the stream, the lists in the row's order, n,
 * the scalars) is validated by the row, then body(r, entry, user) launches the kernel once,
 * one block per chunk (no entry and one block for a row without lists). */
accel_status_t kop_row_call(kop_req_t *r, kop_body_fn body, const void *user);
/* A user kernel's row (core/module.c), read at run time: kop_row_call with a body that fills
 * the parameters as layout says, values[0..layout->nv) included. desc: its descriptor, id: its
 * launch id, dev: the stream's device when the caller checked the stream already, else NULL. */
accel_status_t kop_row_run(const kop_desc_t *desc, uint32_t id, const kop_row_layout_t *layout,
                           accel_stream_t *stream, accel_device_t *dev,
                           const accel_tensor_t *const *lists, size_t n,
                           const void *const *scalars, const float *values);

/* The checks of accel_multi_tensor_norm and accel_clip_by_global_norm with nothing launched
 * (kernel_ops.c), for a distributed kernel that must refuse its arguments before it issues a
 * collective (comm.c). */
accel_status_t accel_multi_tensor_norm_check(accel_stream_t *stream,
                                             const accel_tensor_t *tensors, size_t n,
                                             float norm_type, float *out_dev);
accel_status_t accel_clip_by_global_norm_check(accel_stream_t *stream,
                                               const accel_tensor_t *tensors, size_t n,
                                               const float *total_norm_dev, float *coef_out_dev);

#endif
