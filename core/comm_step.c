/*
 * The fused optimizer step across ranks (accel_comm.h): the norm sweep of every rank, then the
 * global norm and overflow flag as accel_comm_global_norm and accel_comm_overflow_reduce make
 * them. Built from public calls only, so it is stream-ordered, capturable and lazy like them.
 */
#include <string.h>

#include "accel/accel_comm.h"

accel_status_t accel_comm_adam_step_norm(accel_comm_t *c, accel_stream_t *s,
                                         const accel_adam_step_t *step) {
  int rank, size;
  accel_status_t st = accel_comm_rank(c, &rank);
  if (st == ACCEL_OK) st = accel_comm_size(c, &size);
  if (st != ACCEL_OK) return st;
  /* the local sweep validates the descriptor and the lists before any collective is issued */
  if (size == 1 || !step || step->struct_size < ACCEL_ADAM_STEP_SIZE_MIN || !step->norm_dev) {
    st = accel_adam_step_norm(s, step);
    if (st == ACCEL_OK && size > 1 && step->found_inf_dev)
      st = accel_comm_overflow_reduce(c, s, step->found_inf_dev);
    return st;
  }
  /* local norm at gathered[rank], gathered in place, then the norm of the size values */
  float *gathered = NULL;
  st = accel_malloc_async(s, (size_t)size * sizeof(float), (void **)&gathered);
  if (st != ACCEL_OK) return st;
  /* the caller's descriptor may be shorter than this one: what it has, the rest absent */
  accel_adam_step_t local;
  memset(&local, 0, sizeof local);
  memcpy(&local, step, step->struct_size < sizeof local ? step->struct_size : sizeof local);
  local.norm_dev = gathered + rank;
  st = accel_adam_step_norm(s, &local);
  if (st == ACCEL_OK) st = accel_all_gather(c, s, gathered + rank, gathered, 1, ACCEL_F32);
  const accel_tensor_t all = {gathered, (size_t)size, ACCEL_F32};
  if (st == ACCEL_OK) st = accel_multi_tensor_norm(s, &all, 1, step->norm_type, step->norm_dev);
  if (st == ACCEL_OK && step->found_inf_dev)
    st = accel_comm_overflow_reduce(c, s, step->found_inf_dev);
  const accel_status_t fst = accel_free_async(s, gathered);
  return st != ACCEL_OK ? st : fst;
}
