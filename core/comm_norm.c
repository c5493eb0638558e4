/*
 * The distributed norms (include/accel/accel_comm.h): the global norm of tensors spread over
 * the ranks, bitwise identical on every rank and independent of the engine's reduction order
 * (each rank's local norm is all-gathered, then every rank folds the same values the same
 * way), the clip built on it, and the overflow flag's MAX. Every check runs before anything is
 * issued, so that a refusal leaves the ranks in step.
 */
#include "accel/accel_kernels.h"
#include "comm_internal.h"
#include "core_util.h"
#include "kernel_ops_internal.h"

accel_status_t accel_comm_overflow_reduce(accel_comm_t *c, accel_stream_t *s,
                                          float *found_inf_dev) {
  return accel_all_reduce(c, s, found_inf_dev, found_inf_dev, 1, ACCEL_F32, ACCEL_REDUCE_MAX);
}

/* The local norm into out_dev (one rank), or the all-gathered norm: every check first, so that
 * a refusal issues nothing (the other ranks, refusing the same call, stay in step). */
static accel_status_t global_norm(accel_comm_t *c, accel_stream_t *s, const char *fn,
                                  const accel_tensor_t *tensors, size_t n, float norm_type,
                                  float *out_dev) {
  /* one rank: the local norm is the norm (bitwise the single-process one for every p) */
  if (c->size == 1) return accel_multi_tensor_norm(s, tensors, n, norm_type, out_dev);
  /* local norm at gathered[rank], gathered in place, then the norm of the size values */
  float *gathered = NULL;
  accel_status_t st = accel_malloc_async(s, (size_t)c->size * sizeof(float), (void **)&gathered);
  if (st != ACCEL_OK) return st;
  st = accel_multi_tensor_norm(s, tensors, n, norm_type, gathered + c->rank);
  if (st == ACCEL_OK)
    st = accel_all_gather(c, s, gathered + c->rank, gathered, 1, ACCEL_F32);
  accel_tensor_t all = {gathered, (size_t)c->size, ACCEL_F32};
  if (st == ACCEL_OK) st = accel_multi_tensor_norm(s, &all, 1, norm_type, out_dev);
  accel_status_t fst = accel_free_async(s, gathered);
  if (st != ACCEL_OK) accel_set_error(st, "%s: %s", fn, accel_last_error());
  return st != ACCEL_OK ? st : fst;
}

/* What every distributed norm checks before anything is issued: the communicator, the stream
 * (on its device), and the norm as the single-device kernel checks it. */
static accel_status_t global_norm_check(accel_comm_t *c, accel_stream_t *s, const char *fn,
                                        const accel_tensor_t *tensors, size_t n,
                                        float norm_type, float *out_dev) {
  size_t es = 0;
  accel_status_t st = accel_comm_check_args(c, s, ACCEL_F32, fn, &es);
  if (st == ACCEL_OK) st = accel_multi_tensor_norm_check(s, tensors, n, norm_type, out_dev);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", fn, accel_last_error());
  return ACCEL_OK;
}

accel_status_t accel_comm_global_norm(accel_comm_t *c, accel_stream_t *s,
                                      const accel_tensor_t *tensors, size_t n, float norm_type,
                                      float *out_dev) {
  ACCEL_REQUIRE_ARG(out_dev, __func__, "out_dev is NULL");
  accel_status_t st = global_norm_check(c, s, __func__, tensors, n, norm_type, out_dev);
  if (st != ACCEL_OK) return st;
  return global_norm(c, s, __func__, tensors, n, norm_type, out_dev);
}

accel_status_t accel_comm_clip_by_global_norm(accel_comm_t *c, accel_stream_t *s,
                                              const accel_tensor_t *tensors, size_t n,
                                              float max_norm, float norm_type, float eps,
                                              float *total_norm_out_dev, float *coef_out_dev) {
  ACCEL_REQUIRE_ARG(total_norm_out_dev, __func__, "total_norm_out_dev is NULL");
  /* the clip's checks too (its norm output inside the clipped tensors...) before the norm's
   * all-gather is issued */
  accel_status_t st = global_norm_check(c, s, __func__, tensors, n, norm_type,
                                        total_norm_out_dev);
  if (st != ACCEL_OK) return st;
  st = accel_clip_by_global_norm_check(s, tensors, n, total_norm_out_dev, coef_out_dev);
  if (st != ACCEL_OK) return accel_set_error(st, "%s: %s", __func__, accel_last_error());
  st = global_norm(c, s, __func__, tensors, n, norm_type, total_norm_out_dev);
  if (st != ACCEL_OK) return st;
  return accel_clip_by_global_norm(s, tensors, n, max_norm, total_norm_out_dev, eps,
                                   coef_out_dev);
}
