/*
 * The tensor operations of accel_kernels.h: each public function fills a request (its lists,
 * n, its scalars' pointers, its flags) for its row of the kernel table
 * (kernels/accel_kernel_list.h), which says what to check (core/kernel_validate.c), and runs a
 * constant number of launches of the shared kernels (the bodies in kernels/) over the request's
 * chunk table (core/chunk_table.c). kop_prepare drives lookup -> validate -> build over the
 * validator and the cache, which do not call each other.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "generator.h"
#include "kernel_ops_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Lookup -> validate -> build
 * ------------------------------------------------------------------------------------------- */

/* Validates the stream, every list and every scalar of r, counts the chunks and, when there are
 * any, gets the chunk table (r->entry, a reference kop_run hands to the stream's memo). There
 * is one path: a call whose lists match a cached table (the usual case, the same lists every
 * step; one lookup) gets the validator's checks minus what the entry proves, any other the full
 * validation, then the cache's table (built on a miss). */
accel_status_t kop_prepare(kop_req_t *r) {
  accel_status_t st = kop_check_call(r);
  if (st != ACCEL_OK) return st;
  r->hash = kop_hash(r);
  /* Read before any range is looked at: a free after this point changes it, so a generation
   * stored below never vouches for ranges freed after they were checked. */
  r->free_gen = accel_device_free_generation(r->dev);
  kop_entry_t *e = r->n ? kop_lookup(r) : NULL;
  if (e) {
    int decided = 1;
    st = kop_check_scalars(r);
    if (st == ACCEL_OK) decided = kop_validate_hit(r, e, kop_entry_dead_range(e, r), &st);
    if (decided) {
      if (st == ACCEL_OK) r->entry = e;
      else kop_entry_release(e);
      return st;
    }
    kop_entry_release(e);
  }
  kop_interval_t *iv = NULL;
  size_t count = 0;
  st = kop_validate_all(r, &iv, &count);
  if (st == ACCEL_OK && r->num_chunks > 0) st = kop_table(r, iv, count, &r->entry);
  free(iv);
  return st;
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
  *ptr = lr->r->scalars[i - nspans];
  *size = kop_scalar_size(lr->r, (int)(i - nspans));
  return *ptr != NULL && *size > 0;
}

accel_status_t kop_launch(const kop_req_t *r, uint32_t id, uint32_t num_blocks,
                          const void *params, uint32_t size, kop_entry_t *e) {
  /* a user kernel's id was bound by its module's build on this device's backend */
  accel_status_t st = r->desc->symbol ? ACCEL_OK : accel_device_check_kernel(r->dev, r->fn, id);
  if (st != ACCEL_OK) return st;
  const char *name = r->desc->symbol ? r->desc->symbol : accel_kernel_names[id];
  const accel_kernel_launch_t launch = {id, num_blocks, name, params, size, 0};
  kop_launch_ranges_t lr = {r, e};
  return accel_enqueue_kernel(r->stream, &launch, e ? &e->keep : NULL, launch_range, &lr,
                              (e ? e->nspans : 0) + (size_t)r->desc->ns);
}

accel_status_t kop_run(kop_req_t *r, kop_body_fn body, const void *user) {
  accel_status_t st = body(r, r->entry, user);
  if (r->entry) kop_memo_put(r, r->entry);
  r->entry = NULL;
  return st;
}


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
                                          (acc_u32)r->lists[0][0].dtype, a->kind, a->p};
    accel_status_t st = kop_launch(r, ACCEL_KERNEL_NORM_PARTIAL, nc, &pp, sizeof pp, e);
    if (st != ACCEL_OK) return st;
  }
  /* With no partials the final kernel stores 0. */
  const acc_norm_final_params_t fp = {e ? e->partials_addr : 0, ADDR(a->out), nc, a->kind, a->p, 0};
  return kop_launch(r, ACCEL_KERNEL_NORM_FINAL, 1, &fp, sizeof fp, e);
}

/* The norm kind of p for the validated r (on error its table reference is dropped). */
static accel_status_t norm_kind(kop_req_t *r, float norm_type, uint32_t *kind) {
  if (!(norm_type > 0.0f)) { /* also rejects NaN */
    if (r->entry) kop_entry_release(r->entry);
    r->entry = NULL;
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: norm_type %g is not supported (want p > 0 or INFINITY)", r->fn,
                           (double)norm_type);
  }
  *kind = isinf(norm_type)       ? ACC_NORM_INF
          : norm_type == 1.0f   ? ACC_NORM_L1
          : norm_type == 2.0f   ? ACC_NORM_L2
                                : ACC_NORM_P;
  return ACCEL_OK;
}

/* A validated request that launches nothing: its table reference is let go. */
static accel_status_t kop_checked(kop_req_t *r, accel_status_t st) {
  if (r->entry) kop_entry_release(r->entry);
  return st;
}

accel_status_t accel_multi_tensor_norm_check(accel_stream_t *stream,
                                             const accel_tensor_t *tensors, size_t n,
                                             float norm_type, float *out_dev) {
  kop_req_t r = {KOP_REQ(NORM_PARTIAL), .stream = stream, .lists = {tensors}, .n = n,
                 .scalars = {out_dev}};
  uint32_t kind;
  accel_status_t st = kop_prepare(&r);
  if (st == ACCEL_OK) st = norm_kind(&r, norm_type, &kind);
  return kop_checked(&r, st);
}

accel_status_t accel_multi_tensor_norm(accel_stream_t *stream, const accel_tensor_t *tensors,
                                       size_t n, float norm_type, float *out_dev) {
  kop_req_t r = {KOP_REQ(NORM_PARTIAL), .stream = stream, .lists = {tensors}, .n = n,
                 .scalars = {out_dev}};
  accel_status_t st = kop_prepare(&r);
  norm_args_t a = {0, norm_type, out_dev};
  if (st == ACCEL_OK) st = norm_kind(&r, norm_type, &a.kind);
  if (st != ACCEL_OK) return st;
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
                               nc ? (acc_u32)r->lists[0][0].dtype : 0, a->max_norm, a->eps};
  /* with no chunks one block still stores the coefficient */
  return kop_launch(r, ACCEL_KERNEL_CLIP, nc ? nc : 1, &p, sizeof p, e);
}

accel_status_t accel_clip_by_global_norm_check(accel_stream_t *stream,
                                               const accel_tensor_t *tensors, size_t n,
                                               const float *total_norm_dev, float *coef_out_dev) {
  kop_req_t r = {KOP_REQ(CLIP), .stream = stream, .lists = {tensors}, .n = n,
                 .scalars = {total_norm_dev, coef_out_dev}};
  return kop_checked(&r, kop_prepare(&r));
}

accel_status_t accel_clip_by_global_norm(accel_stream_t *stream, const accel_tensor_t *tensors,
                                         size_t n, float max_norm, const float *total_norm_dev,
                                         float eps, float *coef_out_dev) {
  kop_req_t r = {KOP_REQ(CLIP), .stream = stream, .lists = {tensors}, .n = n,
                 .scalars = {total_norm_dev, coef_out_dev}};
  accel_status_t st = kop_prepare(&r);
  if (st != ACCEL_OK) return st;
  const clip_args_t a = {max_norm, eps, total_norm_dev, coef_out_dev};
  return kop_run(&r, clip_body, &a);
}

static accel_status_t update_hp_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const acc_update_hp_params_t p = {e->chunks_addr, e->num_chunks,
                                    (acc_u32)r->lists[0][0].dtype,
                                    *(const int *)user ? ACC_HP_ZERO_LP : 0u, 0.0f};
  return kop_launch(r, ACCEL_KERNEL_UPDATE_HP, e->num_chunks, &p, sizeof p, e);
}

accel_status_t accel_update_hp_grads(accel_stream_t *stream, const accel_tensor_t *lp_grads,
                                     const accel_tensor_t *hp_grads, size_t n, int zero_lp) {
  kop_req_t r = {KOP_REQ(UPDATE_HP), .stream = stream, .lists = {lp_grads, hp_grads}, .n = n,
                 .flags = zero_lp ? ACC_HP_ZERO_LP : 0u};
  accel_status_t st = kop_prepare(&r);
  if (st != ACCEL_OK || r.num_chunks == 0) return st;
  return kop_run(&r, update_hp_body, &zero_lp);
}

/* ---------------------------------------------------------------------------------------------
 * The operations of generated rows and of the table's ACC_ROW_OP rows (gen_kernel_rows.py
 * writes their bodies), and of user kernels' rows (filled from the layout): one launch
 * ------------------------------------------------------------------------------------------- */

typedef struct row_call {
  const kop_row_layout_t *layout;
  const float *values; /* layout->nv of them */
} row_call_t;

static accel_status_t row_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const row_call_t *c = user;
  const kop_row_layout_t *l = c->layout;
  _Alignas(ACCEL_KERNEL_PARAMS_ALIGN) unsigned char p[KOP_ROW_PARAMS_MAX] = {0};
  const acc_u64 chunks = e->chunks_addr; /* a module's row has lists (module_row.c) */
  const acc_u32 num_chunks = e->num_chunks;
  memcpy(p + l->chunks, &chunks, sizeof chunks);
  memcpy(p + l->num_chunks, &num_chunks, sizeof num_chunks);
  for (int k = 0; k < r->desc->nl; ++k) {
    const acc_u32 dtype = kop_has_list(r, k) ? (acc_u32)r->lists[k][0].dtype : 0u;
    if (l->dtype[k] != KOP_ROW_NONE) memcpy(p + l->dtype[k], &dtype, sizeof dtype);
  }
  for (int s = 0; s < r->desc->ns; ++s) {
    const acc_u64 addr = ADDR(r->scalars[s]);
    memcpy(p + l->scalar[s], &addr, sizeof addr);
  }
  for (int v = 0; v < l->nv; ++v) memcpy(p + l->value[v], &c->values[v], sizeof(float));
  return kop_launch(r, r->op, num_chunks, p, l->size, e);
}

accel_status_t kop_row_call(kop_req_t *r, kop_body_fn body, const void *user) {
  accel_status_t st = kop_prepare(r);
  if (st != ACCEL_OK || (r->desc->nl > 0 && r->num_chunks == 0)) return st;
  return kop_run(r, body, user);
}

accel_status_t kop_row_run(const kop_desc_t *desc, uint32_t id, const kop_row_layout_t *layout,
                           accel_stream_t *stream, accel_device_t *dev,
                           const accel_tensor_t *const *lists, size_t n,
                           const void *const *scalars, const float *values) {
  kop_req_t r = {.desc = desc, .op = id, .stream = stream, .dev = dev, .n = n};
  if (r.desc->nl > 0) memcpy(r.lists, lists, (size_t)r.desc->nl * sizeof *lists);
  if (r.desc->ns > 0) memcpy(r.scalars, scalars, (size_t)r.desc->ns * sizeof *scalars);
  const row_call_t call = {layout, values};
  return kop_row_call(&r, row_body, &call);
}

/* ---------------------------------------------------------------------------------------------
 * The fused optimizer step
 * ------------------------------------------------------------------------------------------- */

_Static_assert(ACCEL_ADAM_STEP_ZERO_GRADS == ACC_STEP_ZERO_GRADS &&
                   ACCEL_ADAM_STEP_ACCUMULATE == ACC_STEP_ACCUMULATE &&
                   ACCEL_ADAM_STEP_MAXIMIZE == ACC_STEP_MAXIMIZE,
               "accel_adam_step_t flags and the kernels' ACC_STEP_* differ");
#define STEP_FLAGS                                                                     \
  (ACCEL_ADAM_STEP_ZERO_GRADS | ACCEL_ADAM_STEP_ACCUMULATE | ACCEL_ADAM_STEP_CLIP |    \
   ACCEL_ADAM_STEP_MAXIMIZE | ACCEL_ADAM_STEP_AMSGRAD)
/* A field after flags (ACCEL_ADAM_STEP_SIZE_MIN) that a caller's struct_size does not cover
 * whole reads as absent (NULL). */
#define STEP_HAS(st, field) \
  (offsetof(accel_adam_step_t, field) + sizeof((st)->field) <= (st)->struct_size)

/* The caller's descriptor in *out, every field past its struct_size absent, after the checks
 * of the stream and of the descriptor itself (the lists and scalars are the table's to check). */
static accel_status_t read_step(accel_stream_t *stream, const accel_adam_step_t *st,
                                const char *fn, accel_adam_step_t *out) {
  accel_device_t *dev;
  accel_status_t s = accel_stream_check(stream, fn, &dev);
  if (s != ACCEL_OK) return s;
  if (!st) return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: step is NULL", fn);
  if (st->struct_size < ACCEL_ADAM_STEP_SIZE_MIN)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: step->struct_size %zu ends before accel_adam_step_t.flags (%zu): "
                           "set it to sizeof(accel_adam_step_t)", fn, st->struct_size,
                           ACCEL_ADAM_STEP_SIZE_MIN);
  memset(out, 0, sizeof *out);
  memcpy(out, st, ACCEL_ADAM_STEP_SIZE_MIN);
  if (STEP_HAS(st, max_exp_avg_sq)) out->max_exp_avg_sq = st->max_exp_avg_sq;
  if (STEP_HAS(st, steps_dev)) out->steps_dev = st->steps_dev;
  if (STEP_HAS(st, has_grad_dev)) out->has_grad_dev = st->has_grad_dev;
  if (STEP_HAS(st, state_scales)) out->state_scales = st->state_scales;
  if (STEP_HAS(st, generator)) out->generator = st->generator;
  ACCEL_REQUIRE_FLAGS(out->flags, STEP_FLAGS, fn);
  if (!(out->flags & ACCEL_ADAM_STEP_ACCUMULATE) || out->n == 0) return ACCEL_OK;
  if (!out->hp_grads || !out->grads) /* a NULL grads is the table's to report */
    return out->grads ? accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                                        "%s: ACCEL_ADAM_STEP_ACCUMULATE needs hp_grads", fn)
                      : ACCEL_OK;
  /* hp may be the gradients themselves (in place), but then there is nothing to add to */
  for (size_t i = 0; i < out->n; ++i)
    if (out->hp_grads[i].data == out->grads[i].data && out->grads[i].numel > 0)
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                             "%s: ACCEL_ADAM_STEP_ACCUMULATE with hp_grads[%zu] = grads[%zu] "
                             "(in place: the gradient would be added to itself)", fn, i, i);
  return ACCEL_OK;
}

typedef struct grad_norm_args {
  const accel_adam_step_t *step;
  uint32_t kind;
} grad_norm_args_t;

static accel_status_t grad_norm_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const grad_norm_args_t *a = user;
  const accel_adam_step_t *st = a->step;
  const uint32_t nc = e ? e->num_chunks : 0;
  if (!st->norm_dev && !st->found_inf_dev) return ACCEL_OK; /* nothing asked for */
  if (nc > 0) {
    const acc_grad_norm_params_t pp = {e->chunks_addr, e->partials_addr, ADDR(st->inv_scale_dev),
                                       ADDR(st->found_inf_dev), ADDR(st->has_grad_dev), nc,
                                       (acc_u32)r->lists[0][0].dtype, a->kind, st->norm_type,
                                       r->flags, 0};
    accel_status_t s = kop_launch(r, ACCEL_KERNEL_GRAD_NORM_PARTIAL, nc, &pp, sizeof pp, e);
    if (s != ACCEL_OK || !st->norm_dev) return s;
  }
  if (!st->norm_dev) return ACCEL_OK;
  /* With no partials the final kernel stores 0. */
  const acc_norm_final_params_t fp = {e ? e->partials_addr : 0, ADDR(st->norm_dev), nc, a->kind,
                                      st->norm_type, 0};
  return kop_launch(r, ACCEL_KERNEL_NORM_FINAL, 1, &fp, sizeof fp, e);
}

accel_status_t accel_adam_step_norm(accel_stream_t *stream, const accel_adam_step_t *step) {
  accel_adam_step_t d;
  accel_status_t st = read_step(stream, step, "accel_adam_step_norm", &d);
  if (st != ACCEL_OK) return st;
  const int accumulate = (d.flags & ACCEL_ADAM_STEP_ACCUMULATE) != 0;
  kop_req_t r = {KOP_REQ(GRAD_NORM_PARTIAL), .stream = stream,
                 .lists = {d.grads, accumulate ? d.hp_grads : NULL}, .n = d.n,
                 .scalars = {d.norm_dev, d.inv_scale_dev, d.found_inf_dev, d.has_grad_dev},
                 .flags = accumulate ? ACC_STEP_ACCUMULATE : 0u};
  st = kop_prepare(&r);
  grad_norm_args_t a = {&d, 0};
  if (st == ACCEL_OK && d.norm_dev) st = norm_kind(&r, d.norm_type, &a.kind);
  if (st != ACCEL_OK) return st;
  return kop_run(&r, grad_norm_body, &a);
}

static accel_status_t adam_step_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const accel_adam_step_t *st = user;
  const int clip = (st->flags & ACCEL_ADAM_STEP_CLIP) != 0;
  const uint32_t nc = e ? e->num_chunks : 0;
  if (nc == 0 && !(clip && st->coef_out_dev)) return ACCEL_OK;
  const acc_adam_step_params_t p = {
      e ? e->chunks_addr : 0, ADDR(st->args_dev), ADDR(st->inv_scale_dev),
      clip ? ADDR(st->norm_dev) : 0, clip ? ADDR(st->coef_out_dev) : 0, ADDR(st->steps_dev),
      ADDR(st->has_grad_dev), st->generator ? ADDR(st->generator->state) : 0, nc,
      nc ? (acc_u32)r->lists[0][0].dtype : 0,
      nc && kop_has_list(r, 5) ? (acc_u32)r->lists[5][0].dtype : 0, r->flags, st->max_norm,
      st->clip_eps, nc ? (acc_u32)r->lists[3][0].dtype : 0,
      nc ? (acc_u32)r->lists[2][0].dtype : 0};
  /* with no chunks one block still stores the clip coefficient */
  accel_status_t s = kop_launch(r, ACCEL_KERNEL_ADAM_STEP, nc ? nc : 1, &p, sizeof p, e);
  if (s != ACCEL_OK || !st->generator || nc == 0) return s;
  /* the stochastic rounding's words: the counter moves past them (as accel_rand_uniform's) */
  return kop_rand_advance(r, st->generator->state, (uint64_t)nc * ACC_RAND_CHUNK_BLOCKS);
}

/* The master weights: F32, or BF16 (not with U8 moments); a generator only with BF16 ones
 * (the table checks the rest). A generator that is not live is refused before any list. */
static accel_status_t check_master(accel_stream_t *stream, const accel_adam_step_t *d,
                                   const char *fn) {
  accel_device_t *dev;
  if (d->generator) {
    accel_status_t s = accel_generator_check(d->generator, stream, fn, &dev);
    if (s != ACCEL_OK) return s;
  }
  if (d->n == 0 || !d->params || !d->exp_avg) return ACCEL_OK; /* the table's to report */
  const accel_dtype_t pdt = d->params[0].dtype, sdt = d->exp_avg[0].dtype;
  if (pdt == ACCEL_F16)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: params[0] is F16: the master weights are F32 or BF16", fn);
  if (pdt == ACCEL_BF16 && sdt == ACCEL_U8)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: BF16 params (master weights) take F32 or BF16 moments, not U8",
                           fn);
  if (pdt == ACCEL_BF16 && d->model_params)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: BF16 params are the model's weights: model_params must be NULL",
                           fn);
  if (pdt != ACCEL_BF16 && d->generator)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: a generator is given but params[0] is %s (only BF16 master "
                           "weights are rounded stochastically)", fn, accel_dtype_name(pdt));
  return ACCEL_OK;
}

/* U8 moments come with their scales and without AMSGrad; scales come with U8 moments only
 * (the table checks the rest: dtypes, the scales' size). */
static accel_status_t check_state_scales(const accel_adam_step_t *d, const char *fn) {
  if (d->n == 0 || !d->exp_avg) return ACCEL_OK; /* a NULL exp_avg is the table's to report */
  const accel_dtype_t sdt = d->exp_avg[0].dtype;
  if (sdt == ACCEL_U8 && !d->state_scales)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: exp_avg is U8 (the 8-bit state format) but state_scales is NULL",
                           fn);
  if (sdt == ACCEL_U8 && (d->flags & ACCEL_ADAM_STEP_AMSGRAD))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: ACCEL_ADAM_STEP_AMSGRAD takes F32 or BF16 moments, not U8", fn);
  if (sdt != ACCEL_U8 && d->state_scales)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: state_scales is given but exp_avg is %s (only U8 moments have "
                           "scales)", fn, accel_dtype_name(sdt));
  return ACCEL_OK;
}

accel_status_t accel_adam_step_update(accel_stream_t *stream, const accel_adam_step_t *step) {
  static const char fn[] = "accel_adam_step_update";
  accel_adam_step_t d;
  accel_status_t st = read_step(stream, step, fn, &d);
  if (st != ACCEL_OK) return st;
  const int clip = (d.flags & ACCEL_ADAM_STEP_CLIP) != 0;
  const int ams = (d.flags & ACCEL_ADAM_STEP_AMSGRAD) != 0;
  if (clip && !d.norm_dev)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: ACCEL_ADAM_STEP_CLIP needs norm_dev",
                           fn);
  if (ams != (d.max_exp_avg_sq != NULL) && d.n > 0)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           ams ? "%s: ACCEL_ADAM_STEP_AMSGRAD needs max_exp_avg_sq"
                               : "%s: max_exp_avg_sq is given without ACCEL_ADAM_STEP_AMSGRAD",
                           fn);
  st = check_master(stream, &d, fn);
  if (st == ACCEL_OK) st = check_state_scales(&d, fn);
  if (st != ACCEL_OK) return st;
  kop_req_t r = {KOP_REQ(ADAM_STEP), .stream = stream,
                 .lists = {d.grads, d.hp_grads, d.params, d.exp_avg, d.exp_avg_sq,
                           d.model_params, ams ? d.max_exp_avg_sq : NULL, d.state_scales},
                 .n = d.n,
                 .scalars = {d.args_dev, d.inv_scale_dev, clip ? d.norm_dev : NULL,
                             clip ? d.coef_out_dev : NULL, d.steps_dev, d.has_grad_dev,
                             d.generator ? d.generator->state : NULL},
                 .flags = d.flags & (ACC_STEP_ZERO_GRADS | ACC_STEP_ACCUMULATE |
                                     ACC_STEP_MAXIMIZE)};
  st = kop_prepare(&r);
  if (st != ACCEL_OK) return st;
  return kop_run(&r, adam_step_body, &d);
}

static accel_status_t step_counts_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  (void)e;
  (void)user;
  const acc_step_counts_params_t p = {0, ADDR(r->scalars[0]), ADDR(r->scalars[1]),
                                      ADDR(r->scalars[2]), 0, (acc_u32)r->n};
  return kop_launch(r, ACCEL_KERNEL_STEP_COUNTS, 1, &p, sizeof p, NULL);
}

accel_status_t accel_step_counts(accel_stream_t *stream, float *steps_dev,
                                 const uint32_t *has_grad_dev, size_t n,
                                 const float *skip_if_dev) {
  kop_req_t r = {KOP_REQ(STEP_COUNTS), .stream = stream, .n = n,
                 .scalars = {steps_dev, has_grad_dev, skip_if_dev}};
  accel_status_t st = kop_prepare(&r);
  if (st == ACCEL_OK && n > UINT32_MAX)
    st = accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                         "accel_step_counts: n = %zu exceeds one launch", n);
  if (st != ACCEL_OK || n == 0) return st;
  return kop_run(&r, step_counts_body, NULL);
}
