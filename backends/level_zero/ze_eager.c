/* Eager command slots (ACCEL_LAZY=0 or ACCEL_STREAM_EAGER): the stream's immediate list. */
#include "ze_internal.h"

accel_status_t accel_ze_memcpy_async(accel_be_stream_t *stream, void *dst, const void *src,
                                     size_t size, accel_copy_kind_t kind) {
  accel_cmd_t cmd = {.type = ACCEL_CMD_MEMCPY,
                     .u.memcpy = {.dst = dst, .src = src, .size = size, .kind = kind}};
  return accel_ze_stream_append_eager(stream, &cmd);
}

accel_status_t accel_ze_memset_async(accel_be_stream_t *stream, void *dst, uint8_t value,
                                     size_t size) {
  accel_cmd_t cmd = {.type = ACCEL_CMD_MEMSET,
                     .u.memset = {.dst = dst, .size = size, .value = value}};
  return accel_ze_stream_append_eager(stream, &cmd);
}

accel_status_t accel_ze_launch_kernel(accel_be_stream_t *stream,
                                      const accel_kernel_launch_t *launch) {
  accel_cmd_t cmd = {.type = ACCEL_CMD_KERNEL, .u.kernel = *launch};
  return accel_ze_stream_append_eager(stream, &cmd);
}

/* Host functions run at a submission boundary on the calling thread: wait for the stream's
 * earlier work, then call fn. Later work is appended only after fn returned, which gives the
 * required ordering without a helper thread. */
accel_status_t accel_ze_launch_host_func(accel_be_stream_t *stream, accel_host_fn_t fn,
                                         void *user) {
  accel_status_t st = accel_ze_stream_synchronize(stream);
  if (st != ACCEL_OK) return st;
  fn(user);
  return ACCEL_OK;
}
