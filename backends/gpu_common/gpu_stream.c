/* Streams and the commands issued on them. */
#include <stdlib.h>

#include "cond_walk.h"
#include "gpu_backend.h"

accel_status_t gpu_stream_create(accel_be_device_t *device, accel_be_stream_t **out) {
  gpu_device_t *d = device;
  gpu_stream_t *s = calloc(1, sizeof *s);
  if (!s) return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: stream", GPU_BACKEND_NAME);
  s->device = d;
  /* Non-blocking: no implicit synchronisation with the legacy NULL stream, which other code
   * in the process may use (and which cannot take part in a capture). */
  GPU_ENTER(st, d);
  if (st == ACCEL_OK) st = GPU_TRY(d->backend, StreamCreate, &s->handle, GPU_STREAM_NON_BLOCKING);
  if (st != ACCEL_OK) {
    free(s);
    return st;
  }
  *out = s;
  return ACCEL_OK;
}

/* The core has synchronized the stream: nothing waits on its host-function flag any more. */
void gpu_stream_destroy(accel_be_stream_t *stream) {
  gpu_stream_t *s = stream;
  GPU_ENTER_OR_WARN(current, s->device);
  if (current) {
    if (!s->borrowed) GPU_WARN(s->device->backend, StreamDestroy, s->handle);
    gpu_hostfn_flag_free(s->device, s->hostfn_flag);
    gpu_pred_slots_free(s->device, s->pred_slots);
  }
  free(s);
}

accel_status_t gpu_stream_synchronize(accel_be_stream_t *stream) {
  gpu_stream_t *s = stream;
  GPU_ENTER(st, s->device);
  return st != ACCEL_OK ? st : GPU_TRY(s->device->backend, StreamSynchronize, s->handle);
}

accel_status_t gpu_stream_query(accel_be_stream_t *stream) {
  gpu_stream_t *s = stream;
  GPU_ENTER(st, s->device);
  if (st != ACCEL_OK) return st;
  gpuError_t err = s->device->backend->api.StreamQuery(s->handle);
  if (err == GPU_ERROR_NOT_READY) return ACCEL_ERROR_NOT_READY;
  return gpu_check(s->device->backend, err, gpu_api_names.StreamQuery);
}

accel_status_t gpu_stream_wait_event(accel_be_stream_t *stream, accel_be_event_t *event) {
  gpu_stream_t *s = stream;
  gpu_event_t *e = event;
  GPU_ENTER(st, s->device);
  return st != ACCEL_OK ? st
                        : GPU_TRY(s->device->backend, StreamWaitEvent, s->handle, e->handle, 0u);
}

accel_status_t gpu_launch(gpu_device_t *d, gpuStream_t stream,
                          const accel_kernel_launch_t *launch, const int32_t *pred) {
  gpuFunction_t fn = NULL;
  accel_status_t st = gpu_module_function(d, launch, &fn);
  if (st != ACCEL_OK) return st;
  unsigned grid = launch->num_blocks < d->max_grid ? launch->num_blocks : d->max_grid;
  /* The kernel's arguments are the by-value parameter struct and the predicate
   * (prelude_gpu.h); the driver copies both before the call returns (also when capturing). */
  void *args[2] = {(void *)launch->params, (void *)&pred};
  return GPU_TRY(d->backend, LaunchKernel, fn, grid, 1u, 1u, ACCEL_KERNEL_BLOCK, 1u, 1u, 0u,
                 stream, args, NULL);
}

accel_status_t gpu_issue(gpu_device_t *d, gpuStream_t stream, const accel_cmd_t *cmd,
                         uint32_t *flag, gpu_hostfn_job_t *job) {
  gpu_backend_t *be = d->backend;
  switch ((accel_cmd_type_t)cmd->type) {
    case ACCEL_CMD_KERNEL:
      return gpu_launch(d, stream, &cmd->u.kernel, NULL);
    case ACCEL_CMD_MEMCPY:
      /* Unified addressing: the runtime infers the direction from the pointers. */
      return gpu_check(be,
                       GPU_MEMCPY_ASYNC(&be->api, cmd->u.memcpy.dst, cmd->u.memcpy.src,
                                        cmd->u.memcpy.size, stream),
                       gpu_api_names.MemcpyAsync);
    case ACCEL_CMD_MEMSET:
      return GPU_TRY(be, MemsetD8Async, GPU_DPTR(cmd->u.memset.dst),
                     (unsigned char)cmd->u.memset.value, cmd->u.memset.size, stream);
    case ACCEL_CMD_HOST_FUNC:
      return gpu_hostfn_issue(d, stream, cmd->u.host_func.fn, cmd->u.host_func.user, flag, job);
    case ACCEL_CMD_NATIVE: {
      /* a stream engine's collective; inside gpu_graph_instantiate `stream` is capturing, so
       * the vendor library's kernels become nodes of the graph (NCCL >= 2.9, RCCL) */
      accel_native_t native = {.struct_size = sizeof native, .queue = stream};
      return cmd->u.native.enqueue(cmd->u.native.ctx, &native);
    }
    case ACCEL_CMD_EVENT_RECORD:
    case ACCEL_CMD_EVENT_WAIT:
    case ACCEL_CMD_COND_BEGIN: /* walked by gpu_pred_run (gpu_predicate.c) */
    case ACCEL_CMD_COND_END:
      break;
  }
  return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: command type %u not valid here",
                             GPU_BACKEND_NAME, cmd->type);
}

/* memcpy, memset and host functions are issued as a batch of one command. */
accel_status_t gpu_memcpy_async(accel_be_stream_t *stream, void *dst, const void *src,
                                size_t size, accel_copy_kind_t kind) {
  accel_cmd_t cmd = {.type = ACCEL_CMD_MEMCPY};
  cmd.u.memcpy.dst = dst;
  cmd.u.memcpy.src = src;
  cmd.u.memcpy.size = size;
  cmd.u.memcpy.kind = (uint32_t)kind;
  return gpu_submit_batch(stream, &cmd, 1);
}

accel_status_t gpu_memset_async(accel_be_stream_t *stream, void *dst, uint8_t value,
                                size_t size) {
  accel_cmd_t cmd = {.type = ACCEL_CMD_MEMSET};
  cmd.u.memset.dst = dst;
  cmd.u.memset.size = size;
  cmd.u.memset.value = value;
  return gpu_submit_batch(stream, &cmd, 1);
}

accel_status_t gpu_launch_host_func(accel_be_stream_t *stream, accel_host_fn_t fn, void *user) {
  accel_cmd_t cmd = {.type = ACCEL_CMD_HOST_FUNC};
  cmd.u.host_func.fn = fn;
  cmd.u.host_func.user = user;
  return gpu_submit_batch(stream, &cmd, 1);
}

accel_status_t gpu_launch_kernel(accel_be_stream_t *stream, const accel_kernel_launch_t *launch) {
  gpu_stream_t *s = stream;
  GPU_ENTER(st, s->device);
  return st != ACCEL_OK ? st : gpu_launch(s->device, s->handle, launch, NULL);
}

/* One command of a batch outside regions, or a host function inside one (on pred). The
 * stream's host-function flag is allocated with its first host function. */
static accel_status_t batch_issue(void *ctx, const accel_cmd_t *cmd, const int32_t *pred) {
  gpu_stream_t *s = ctx;
  if (cmd->type != ACCEL_CMD_HOST_FUNC)
    return gpu_issue(s->device, s->handle, cmd, s->hostfn_flag, NULL);
  accel_status_t st = ACCEL_OK;
  if (!s->hostfn_flag && gpu_hostfn_has_flags(s->device->backend))
    st = gpu_hostfn_flag_alloc(s->device, &s->hostfn_flag);
  return st != ACCEL_OK ? st
                        : gpu_hostfn_issue_pred(s->device, s->handle, cmd->u.host_func.fn,
                                                cmd->u.host_func.user, s->hostfn_flag, NULL,
                                                pred);
}

/* Vendor streams already queue asynchronously, so a batch is the commands in order (regions
 * predicated: gpu_predicate.c; their slots allocated by the first batch with one). */
accel_status_t gpu_submit_batch(accel_be_stream_t *stream, const accel_cmd_t *cmds, size_t n) {
  gpu_stream_t *s = stream;
  GPU_ENTER(st, s->device);
  if (st == ACCEL_OK && accel_cond_any(cmds, n))
    st = gpu_pred_slots_ensure(s->device, &s->pred_slots);
  gpu_pred_walk_t walk = {s->device, &s->handle, &s->pred_slots, batch_issue, s};
  return st != ACCEL_OK ? st : gpu_pred_run(&walk, cmds, n);
}
