/*
 * Conditional regions by predication on CUDA and HIP (docs/GRAPHS.md, "Branches on a device
 * flag"; ACCEL_ATTR_CONDITIONALS = ACCEL_CONDITIONALS_PREDICATED), the OpenCL plugin's scheme
 * (common/cond_walk.c walks the list) with the vendor's calls:
 *
 *   COND_BEGIN(flag)  ->  accel_k_pred_enter: slot[d + 1] = slot[d] && *flag != 0
 *   a kernel          ->  the kernel with slot[d + 1] as its second argument (ACC_FOR_BLOCKS
 *                         runs no block when it is 0)
 *   a copy / a fill   ->  accel_k_pred_copy / accel_k_pred_fill on the slot (both ends must be
 *                         memory the device reaches: its own, or pinned host memory)
 *   a host function   ->  the plugin's worker runs it iff the slot reads nonzero
 *
 * The slots are pinned host memory (ACCEL_COND_MAX_DEPTH + 1 ints, the same address on the
 * device under unified addressing) so that the worker reads a slot directly once the stream
 * reached the host function; a stream has its own, and so does a graph (the driver serialises
 * the replays of one executable graph). The same walk serves a batch, a graph's capture and a
 * graph launched into a runtime's capture. CUDA's conditional nodes are not used.
 */
#include "cond_walk.h"
#include "gpu_backend.h"

#define GPU_PRED_SLOT_BYTES ((ACCEL_COND_MAX_DEPTH + 1u) * sizeof(int32_t))

static const char *const pred_names[GPU_PRED_KERNELS] = {"accel_k_pred_enter",
                                                         "accel_k_pred_copy",
                                                         "accel_k_pred_fill"};

void gpu_pred_slots_free(gpu_device_t *d, int32_t *slots) {
  if (slots) GPU_WARN(d->backend, HostFree, slots);
}

void gpu_pred_functions_load(gpu_device_t *d) {
  for (int k = 0; k < GPU_PRED_KERNELS; k++)
    if (d->backend->api.ModuleGetFunction(&d->pred_functions[k], d->module, pred_names[k]) !=
        GPU_SUCCESS) {
      d->pred_functions[k] = NULL;
      gpu_host->log(ACCEL_LOG_WARN, GPU_BACKEND_NAME, "kernel %s missing from the image: "
                    "conditional regions will be refused", pred_names[k]);
    }
}

/* The kernel k of the device's image (gpu_pred_functions_load). */
static accel_status_t pred_function(gpu_device_t *d, int k, gpuFunction_t *fn) {
  *fn = d->module ? d->pred_functions[k] : NULL;
  if (*fn) return ACCEL_OK;
  return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s: no %s in the kernel image: no "
                             "conditional regions", GPU_BACKEND_NAME, pred_names[k]);
}

/* Launches predication kernel k over items work-items (blocks of ACCEL_KERNEL_BLOCK). */
static accel_status_t pred_launch(gpu_device_t *d, gpuStream_t stream, int k, uint64_t items,
                                  void **args) {
  gpuFunction_t fn = NULL;
  accel_status_t st = pred_function(d, k, &fn);
  if (st != ACCEL_OK) return st;
  uint64_t blocks = (items + ACCEL_KERNEL_BLOCK - 1u) / ACCEL_KERNEL_BLOCK;
  unsigned grid = blocks == 0 ? 1u : blocks < d->max_grid ? (unsigned)blocks : d->max_grid;
  return GPU_TRY(d->backend, LaunchKernel, fn, grid, 1u, 1u, ACCEL_KERNEL_BLOCK, 1u, 1u, 0u,
                 stream, args, NULL);
}

static gpuStream_t stream_of(const gpu_pred_walk_t *w, const accel_cmd_t *cmd) {
  return w->streams[cmd->stream_slot];
}

accel_status_t gpu_pred_slots_ensure(gpu_device_t *d, int32_t **slots) {
  if (*slots) return ACCEL_OK;
  return GPU_TRY(d->backend, HostAlloc, (void **)slots, GPU_PRED_SLOT_BYTES,
                 GPU_HOST_ALLOC_PORTABLE);
}

static accel_status_t enter(void *ctx, const accel_cmd_t *begin, uint32_t depth, int first) {
  gpu_pred_walk_t *w = ctx;
  gpu_device_t *d = w->device;
  if (!*w->slots) /* the callers allocate them first: an allocation would end a capture */
    return gpu_host->set_error(ACCEL_ERROR_STATE, "%s: no predicate slots", GPU_BACKEND_NAME);
  int32_t *out = *w->slots + depth;
  const int32_t *in = first ? (depth > 1 ? out - 1 : NULL) : out;
  const int32_t *flag = begin->u.cond.flag;
  void *args[3] = {&out, &in, &flag};
  return pred_launch(d, stream_of(w, begin), GPU_PRED_ENTER, 1, args);
}

/* Whether the device reaches [ptr, ptr + size) (the predication kernels dereference it). */
static accel_status_t reachable(gpu_device_t *d, const void *ptr, const char *what) {
  gpu_backend_t *be = d->backend;
  gpuDevicePtr_t dev = 0;
  if (be->api.PointerGetAttribute &&
      be->api.PointerGetAttribute(&dev, GPU_POINTER_ATTR_DEVICE_POINTER, GPU_DPTR(ptr)) ==
          GPU_SUCCESS &&
      GPU_VPTR(dev) == ptr)
    return ACCEL_OK;
  return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                             "%s: a %s inside a conditional region runs as a predicated kernel, "
                             "which cannot reach %p (not device or pinned memory of this "
                             "device)", GPU_BACKEND_NAME, what, ptr);
}

static accel_status_t pred_copy(gpu_device_t *d, gpuStream_t s, const int32_t *pred,
                                const accel_cmd_t *c) {
  void *dst = c->u.memcpy.dst;
  const void *src = c->u.memcpy.src;
  uint64_t n = c->u.memcpy.size;
  if (n == 0) return ACCEL_OK;
  accel_status_t st = reachable(d, dst, "copy");
  if (st == ACCEL_OK) st = reachable(d, src, "copy");
  if (st != ACCEL_OK) return st;
  uint32_t words = ((uintptr_t)dst | (uintptr_t)src | n) % 4u == 0u;
  void *args[5] = {&pred, &dst, &src, &n, &words};
  return pred_launch(d, s, GPU_PRED_COPY, words ? n / 4u : n, args);
}

static accel_status_t pred_fill(gpu_device_t *d, gpuStream_t s, const int32_t *pred,
                                const accel_cmd_t *c) {
  void *dst = c->u.memset.dst;
  uint64_t n = c->u.memset.size;
  uint32_t value = c->u.memset.value & 0xffu;
  if (n == 0) return ACCEL_OK;
  accel_status_t st = reachable(d, dst, "fill");
  if (st != ACCEL_OK) return st;
  uint32_t words = ((uintptr_t)dst | n) % 4u == 0u;
  void *args[5] = {&pred, &dst, &value, &n, &words};
  return pred_launch(d, s, GPU_PRED_FILL, words ? n / 4u : n, args);
}

static accel_status_t issue(void *ctx, const accel_cmd_t *c, uint32_t depth) {
  gpu_pred_walk_t *w = ctx;
  if (depth == 0) return w->issue(w->ctx, c, NULL);
  gpu_device_t *d = w->device;
  gpuStream_t s = stream_of(w, c);
  const int32_t *pred = *w->slots + depth;
  switch (c->type) {
    case ACCEL_CMD_KERNEL: return gpu_launch(d, s, &c->u.kernel, pred);
    case ACCEL_CMD_MEMCPY: return pred_copy(d, s, pred, c);
    case ACCEL_CMD_MEMSET: return pred_fill(d, s, pred, c);
    case ACCEL_CMD_HOST_FUNC: return w->issue(w->ctx, c, pred);
    default:
      return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                 "%s: command type %u cannot be predicated inside a conditional "
                                 "region", GPU_BACKEND_NAME, c->type);
  }
}

accel_status_t gpu_pred_run(gpu_pred_walk_t *w, const accel_cmd_t *cmds, size_t n) {
  const accel_cond_walk_t walk = {gpu_host, GPU_BACKEND_NAME, w, enter, issue};
  return accel_cond_walk(&walk, cmds, n);
}
