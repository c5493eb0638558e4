/* The enqueueing entry points of a CPU stream: copies, fills, host functions, kernels and
 * batches. Each fills one queue entry; nothing runs on the caller's thread. */
#include <stdlib.h>
#include <string.h>

#include "accel_kernel_ids.h"
#include "cpu_module.h"
#include "cpu_stream.h"

accel_status_t cpu_memcpy_async(accel_be_stream_t *stream, void *dst, const void *src,
                                size_t size, accel_copy_kind_t kind) {
  (void)kind; /* host and device memory are the same memory on the CPU */
  const cpu_op_t op = {.type = CPU_OP_MEMCPY, .u.copy = {.dst = dst, .src = src, .size = size}};
  return cpu_stream_enqueue(stream, "memcpy_async", &op, NULL);
}

accel_status_t cpu_memset_async(accel_be_stream_t *stream, void *dst, uint8_t value,
                                size_t size) {
  const cpu_op_t op = {.type = CPU_OP_MEMSET,
                       .u.fill = {.dst = dst, .size = size, .value = value}};
  return cpu_stream_enqueue(stream, "memset_async", &op, NULL);
}

accel_status_t cpu_launch_host_func(accel_be_stream_t *stream, accel_host_fn_t fn, void *user) {
  const cpu_op_t op = {.type = CPU_OP_HOST_FUNC, .u.host = {.fn = fn, .user = user}};
  return cpu_stream_enqueue(stream, "launch_host_func", &op, NULL);
}

/* The CPU function of a launch, or NULL with the error set. */
static accel_cpu_kernel_fn resolve_kernel(const accel_host_api_t *host, const char *what,
                                          const accel_kernel_launch_t *launch) {
  accel_cpu_kernel_fn fn = cpu_kernel_resolve(launch->kernel_id);
  if (fn == NULL)
    host->set_error(ACCEL_ERROR_UNSUPPORTED,
                    "cpu: %s: no CPU implementation of kernel id %u (%s; %u kernels known, and "
                    "the user kernels of loaded modules)",
                    what, launch->kernel_id,
                    launch->kernel_name != NULL ? launch->kernel_name : "unnamed",
                    (unsigned)ACCEL_KERNEL_COUNT);
  return fn;
}

static void set_kernel_op(cpu_op_t *op, accel_cpu_kernel_fn fn,
                          const accel_kernel_launch_t *launch, const void *params) {
  op->type = CPU_OP_KERNEL;
  op->u.kernel.fn = fn;
  op->u.kernel.params = params;
  op->u.kernel.kernel_id = launch->kernel_id;
  op->u.kernel.num_blocks = launch->num_blocks;
}

accel_status_t cpu_launch_kernel(accel_be_stream_t *stream, const accel_kernel_launch_t *launch) {
  cpu_stream_t *s = stream;
  const accel_host_api_t *host = s->device->host;
  accel_cpu_kernel_fn fn = resolve_kernel(host, "launch_kernel", launch);
  if (fn == NULL) return ACCEL_ERROR_UNSUPPORTED;
  cpu_entry_t *e = NULL;
  accel_status_t st = cpu_stream_reserve(s, "launch_kernel", &e);
  if (st != ACCEL_OK) return st;
  /* Execution is deferred: the parameter block is copied into the entry (or the heap). */
  void *params = e->params;
  e->heap = NULL;
  if (launch->params_size > CPU_PARAMS_INLINE) {
    params = e->heap = malloc(launch->params_size);
    if (params == NULL)
      return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                             "cpu: launch_kernel: malloc(%u) for the parameter block failed",
                             launch->params_size);
  }
  if (launch->params_size > 0) memcpy(params, launch->params, launch->params_size);
  set_kernel_op(&e->op, fn, launch, params);
  cpu_stream_submit(s);
  return ACCEL_OK;
}

/* Parameter blocks inside a batch's storage start on this alignment. */
#define BATCH_PARAMS_ALIGN 16u

static size_t align_up(size_t v) {
  return (v + BATCH_PARAMS_ALIGN - 1u) & ~(size_t)(BATCH_PARAMS_ALIGN - 1u);
}

/* Checks cmds[0, n) for cpu_ops_build and sizes its block: the op list and every kernel's
 * parameter block. Regions must balance and nest at most CPU_COND_DEPTH deep. */
static accel_status_t ops_check(const accel_host_api_t *host, const char *what,
                                const accel_cmd_t *cmds, size_t n, int skip_events,
                                size_t *bytes) {
  *bytes = align_up(n * sizeof(cpu_op_t));
  unsigned depth = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t type = cmds[i].type;
    if (type == ACCEL_CMD_KERNEL) {
      if (resolve_kernel(host, what, &cmds[i].u.kernel) == NULL) return ACCEL_ERROR_UNSUPPORTED;
      *bytes += align_up(cmds[i].u.kernel.params_size);
    } else if (type == ACCEL_CMD_COND_BEGIN || type == ACCEL_CMD_COND_END) {
      if (type == ACCEL_CMD_COND_END ? depth-- == 0 : ++depth > CPU_COND_DEPTH)
        return host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                               "cpu: %s: command %zu: %s", what, i,
                               type == ACCEL_CMD_COND_END ? "a region end without its start"
                                                          : "regions nest too deep");
    } else if (skip_events && (type == ACCEL_CMD_EVENT_RECORD || type == ACCEL_CMD_EVENT_WAIT)) {
      continue;
    } else if (type != ACCEL_CMD_MEMCPY && type != ACCEL_CMD_MEMSET &&
               type != ACCEL_CMD_HOST_FUNC) {
      return host->set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                             "cpu: %s: command %zu has type %u; only kernel, memcpy, memset, "
                             "host-function and region commands%s can run here", what, i, type,
                             skip_events ? " (and event edges)" : "");
    }
  }
  if (depth == 0) return ACCEL_OK;
  return host->set_error(ACCEL_ERROR_INVALID_ARGUMENT, "cpu: %s: %u region(s) without an end",
                         what, depth);
}

/* The op of command c (0: none, an event edge or a region end), its parameters at *params. */
static int cmd_op(const accel_cmd_t *c, cpu_op_t *op, unsigned char **params) {
  switch (c->type) {
    case ACCEL_CMD_KERNEL: {
      const accel_kernel_launch_t *k = &c->u.kernel;
      if (k->params_size > 0) memcpy(*params, k->params, k->params_size);
      set_kernel_op(op, cpu_kernel_resolve(k->kernel_id), k, *params);
      *params += align_up(k->params_size);
      return 1;
    }
    case ACCEL_CMD_MEMCPY:
      *op = (cpu_op_t){.type = CPU_OP_MEMCPY,
                       .u.copy = {.dst = c->u.memcpy.dst, .src = c->u.memcpy.src,
                                  .size = c->u.memcpy.size}};
      return 1;
    case ACCEL_CMD_MEMSET:
      *op = (cpu_op_t){.type = CPU_OP_MEMSET,
                       .u.fill = {.dst = c->u.memset.dst, .size = c->u.memset.size,
                                  .value = (uint8_t)c->u.memset.value}};
      return 1;
    case ACCEL_CMD_HOST_FUNC:
      *op = (cpu_op_t){.type = CPU_OP_HOST_FUNC,
                       .u.host = {.fn = c->u.host_func.fn, .user = c->u.host_func.user}};
      return 1;
    case ACCEL_CMD_COND_BEGIN: /* its count is set at its end */
      *op = (cpu_op_t){.type = CPU_OP_COND,
                       .u.cond = {.flag = c->u.cond.flag,
                                  .max_iterations = c->u.cond.max_iterations}};
      return 1;
    default: /* an event edge (skip_events): list order already satisfies it */
      return 0;
  }
}

accel_status_t cpu_ops_build(const accel_host_api_t *host, const char *what,
                             const accel_cmd_t *cmds, size_t n, int skip_events,
                             cpu_op_t **out_ops, size_t *out_count) {
  /* One allocation holds the op list followed by every kernel's parameter block. */
  size_t bytes = 0;
  accel_status_t st = ops_check(host, what, cmds, n, skip_events, &bytes);
  if (st != ACCEL_OK) return st;
  unsigned char *storage = malloc(bytes ? bytes : 1u); /* an empty graph is still a graph */
  if (storage == NULL)
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "cpu: %s: malloc(%zu) failed", what, bytes);
  cpu_op_t *ops = (cpu_op_t *)storage;
  unsigned char *params = storage + align_up(n * sizeof(cpu_op_t));
  size_t count = 0, open[CPU_COND_DEPTH]; /* the ops of the open regions (ops_check bounds) */
  unsigned depth = 0;
  for (size_t i = 0; i < n; ++i) {
    if (cmds[i].type == ACCEL_CMD_COND_END) {
      --depth;
      ops[open[depth]].u.cond.count = count - open[depth] - 1u;
    } else if (cmd_op(&cmds[i], &ops[count], &params)) {
      if (cmds[i].type == ACCEL_CMD_COND_BEGIN) open[depth++] = count;
      ++count;
    }
  }
  *out_ops = ops;
  *out_count = count;
  return ACCEL_OK;
}

accel_status_t cpu_submit_batch(accel_be_stream_t *stream, const accel_cmd_t *cmds, size_t n) {
  cpu_stream_t *s = stream;
  if (n == 0) return ACCEL_OK;
  cpu_op_t *ops = NULL;
  size_t count = 0;
  accel_status_t st = cpu_ops_build(s->device->host, "submit_batch", cmds, n, 0, &ops, &count);
  if (st != ACCEL_OK) return st;
  const cpu_op_t batch = {.type = CPU_OP_BATCH, .u.batch = {.ops = ops, .count = count}};
  st = cpu_stream_enqueue(s, "submit_batch", &batch, ops);
  if (st != ACCEL_OK) free(ops);
  return st;
}
