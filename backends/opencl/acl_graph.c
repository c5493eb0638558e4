/*
 * Native graphs through cl_khr_command_buffer (provisional 0.9.0, as shipped by PoCL 3.1).
 *
 * Used only when the device chose it (acl_wants_command_buffer: ACCEL_OPENCL_COMMAND_BUFFER=1);
 * otherwise graph_instantiate answers UNSUPPORTED and the core replays its recorded list
 * through submit_batch, which is faster on PoCL (see docs/backends/opencl.md).
 *
 * The list is recorded in list order (a valid topological order, so EVENT_RECORD/WAIT edges
 * need no translation), each command waiting on the previous one's sync point. 0.9.0 has no
 * SVM copy/fill commands, so copies and fills address their SVM allocations through cl_mem
 * objects created over them with CL_MEM_USE_HOST_PTR (the SVM memory is the buffer's storage,
 * OpenCL 2.0 clCreateBuffer). Host functions, conditional regions and copies touching non-SVM
 * host memory are not recorded: such lists get UNSUPPORTED and the core uses its own recorder.
 *
 * The command buffer belongs to a private queue of the graph; a launch orders it after the
 * stream's earlier work (marker) and makes the stream's later work wait for it (barrier).
 */
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

typedef struct acl_wrap {
  void *base;
  cl_mem mem;
} acl_wrap_t;

typedef struct acl_graph {
  acl_device_t *dev;
  cl_command_queue queue;
  cl_command_buffer_khr cb;
  /* One kernel object per recorded launch: PoCL 3.1's provisional command buffers read the
   * arguments at execution time, so launches sharing a cl_kernel all ran with the arguments
   * set last (a per-tensor step replayed wrong results). */
  acl_kernel_set_t *kernel_sets;
  size_t kernel_set_count, kernel_set_cap;
  acl_wrap_t *wraps;
  size_t wrap_count;
} acl_graph_t;

/* The cl_mem over the SVM allocation containing [ptr, ptr+size) and ptr's offset in it. */
static accel_status_t wrap_svm(acl_graph_t *g, const void *ptr, size_t size, cl_mem *mem,
                               size_t *offset) {
  acl_alloc_t a;
  if (!acl_alloc_lookup(g->dev, ptr, size, &a))
    return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "command buffer: %p is not SVM memory of this device (host "
                               "memory copies cannot be recorded)", ptr);
  *offset = (size_t)((uintptr_t)ptr - (uintptr_t)a.base);
  for (size_t i = 0; i < g->wrap_count; i++) {
    if (g->wraps[i].base == a.base) {
      *mem = g->wraps[i].mem;
      return ACCEL_OK;
    }
  }
  /* wraps has room for two per command (see instantiate). */
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(g->dev->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, a.span, a.base,
                            &err);
  if (err != CL_SUCCESS) return acl_fail("clCreateBuffer(CL_MEM_USE_HOST_PTR on SVM)", err);
  g->wraps[g->wrap_count++] = (acl_wrap_t){a.base, m};
  *mem = m;
  return ACCEL_OK;
}

static accel_status_t record(acl_graph_t *g, const accel_cmd_t *c, cl_uint nwait,
                             const cl_sync_point_khr *wait, cl_sync_point_khr *sp) {
  const acl_cmdbuf_fns_t *f = &g->dev->phys->cb;
  cl_int err;
  accel_status_t st;
  switch (c->type) {
    case ACCEL_CMD_KERNEL: {
      if (g->kernel_set_count == g->kernel_set_cap) {
        size_t cap = g->kernel_set_cap ? g->kernel_set_cap * 2 : 64;
        acl_kernel_set_t *n = realloc(g->kernel_sets, cap * sizeof *n);
        if (!n) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
        memset(n + g->kernel_set_cap, 0, (cap - g->kernel_set_cap) * sizeof *n);
        g->kernel_sets = n;
        g->kernel_set_cap = cap;
      }
      cl_kernel k;
      size_t global, local;
      st = acl_kernel_prepare(g->dev, &g->kernel_sets[g->kernel_set_count++], &c->u.kernel, NULL,
                              &k, &global, &local);
      if (st != ACCEL_OK) return st;
      err = f->ndrange(g->cb, NULL, NULL, k, 1, NULL, &global, &local, nwait, wait, sp, NULL);
      return err == CL_SUCCESS ? ACCEL_OK : acl_fail("clCommandNDRangeKernelKHR", err);
    }
    case ACCEL_CMD_MEMCPY: {
      cl_mem src, dst;
      size_t so, dof;
      if ((st = wrap_svm(g, c->u.memcpy.src, c->u.memcpy.size, &src, &so)) != ACCEL_OK ||
          (st = wrap_svm(g, c->u.memcpy.dst, c->u.memcpy.size, &dst, &dof)) != ACCEL_OK)
        return st;
      err = f->copy_buffer(g->cb, NULL, src, dst, so, dof, c->u.memcpy.size, nwait, wait, sp,
                           NULL);
      return err == CL_SUCCESS ? ACCEL_OK : acl_fail("clCommandCopyBufferKHR", err);
    }
    case ACCEL_CMD_MEMSET: {
      cl_mem dst;
      size_t off;
      uint8_t value = (uint8_t)c->u.memset.value;
      if ((st = wrap_svm(g, c->u.memset.dst, c->u.memset.size, &dst, &off)) != ACCEL_OK)
        return st;
      err = f->fill_buffer(g->cb, NULL, dst, &value, 1, off, c->u.memset.size, nwait, wait, sp,
                           NULL);
      return err == CL_SUCCESS ? ACCEL_OK : acl_fail("clCommandFillBufferKHR", err);
    }
    default:
      return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED, "command buffer: command type %u "
                                 "cannot be recorded", c->type);
  }
}

/* 1 when cmds[i] adds work to the command buffer. */
static int is_work(const accel_cmd_t *c) {
  switch (c->type) {
    case ACCEL_CMD_KERNEL: return 1;
    case ACCEL_CMD_MEMCPY: return c->u.memcpy.size > 0;
    case ACCEL_CMD_MEMSET: return c->u.memset.size > 0;
    default: return 0; /* event record/wait: list order already satisfies them */
  }
}

accel_status_t acl_graph_instantiate(accel_be_device_t *device, const accel_cmd_t *cmds,
                                     size_t n, accel_be_graph_t **out) {
  acl_device_t *dev = device;
  if (!dev->use_command_buffer)
    return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "%s: graphs replay through plain enqueue (command buffers not "
                               "chosen; ACCEL_OPENCL_COMMAND_BUFFER=1 selects them)",
                               dev->phys->name);
  for (size_t i = 0; i < n; i++)
    if (cmds[i].type == ACCEL_CMD_HOST_FUNC)
      return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                 "command buffer: host functions cannot be recorded");
  if (accel_cond_any(cmds, n)) /* predicated by submit_batch (acl_predicate.c) */
    return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "command buffer: conditional regions are not recorded");
  acl_graph_t *g = calloc(1, sizeof *g);
  if (g) g->wraps = calloc(2 * n + 1, sizeof *g->wraps);
  if (!g || !g->wraps) {
    free(g);
    return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "graph_instantiate: out of memory");
  }
  g->dev = dev;
  cl_int err = CL_SUCCESS;
  g->queue = clCreateCommandQueueWithProperties(dev->ctx, dev->phys->id, NULL, &err);
  accel_status_t st = err == CL_SUCCESS ? ACCEL_OK
                                        : acl_fail("clCreateCommandQueueWithProperties", err);
  if (st == ACCEL_OK) {
    cl_command_buffer_properties_khr props[] = {CL_COMMAND_BUFFER_FLAGS_KHR,
                                                CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
    g->cb = dev->phys->cb.create(1, &g->queue, props, &err);
    if (err != CL_SUCCESS) st = acl_fail("clCreateCommandBufferKHR", err);
  }
  cl_sync_point_khr prev = 0;
  int have_prev = 0;
  for (size_t i = 0; st == ACCEL_OK && i < n; i++) {
    if (!is_work(&cmds[i])) continue;
    cl_sync_point_khr sp = 0;
    st = record(g, &cmds[i], have_prev ? 1 : 0, have_prev ? &prev : NULL, &sp);
    prev = sp;
    have_prev = 1;
  }
  if (st == ACCEL_OK) {
    err = dev->phys->cb.finalize(g->cb);
    if (err != CL_SUCCESS) st = acl_fail("clFinalizeCommandBufferKHR", err);
  }
  if (st != ACCEL_OK) {
    acl_graph_destroy(g);
    return st;
  }
  acl_host->log(ACCEL_LOG_DEBUG, ACL_DOMAIN, "graph: command buffer of %zu commands, %zu SVM "
                "buffer wrappers", n, g->wrap_count);
  *out = g;
  return ACCEL_OK;
}

accel_status_t acl_graph_launch(accel_be_graph_t *graph, accel_be_stream_t *stream) {
  acl_graph_t *g = graph;
  acl_stream_t *s = stream;
  cl_event before = NULL, after = NULL, barrier = NULL;
  cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &before);
  if (err != CL_SUCCESS) return acl_fail("clEnqueueMarkerWithWaitList", err);
  /* Each step runs only when the one before succeeded; call names the one that failed. */
  const char *call = "clFlush";
  err = clFlush(s->queue); /* the command buffer's queue waits on before: submit it */
  if (err == CL_SUCCESS) {
    call = "clEnqueueCommandBufferKHR";
    err = g->dev->phys->cb.enqueue(0, NULL, g->cb, 1, &before, &after);
  }
  if (err == CL_SUCCESS) {
    call = "clEnqueueBarrierWithWaitList";
    err = clEnqueueBarrierWithWaitList(s->queue, 1, &after, &barrier);
  }
  if (err == CL_SUCCESS) {
    acl_stream_set_last(s, barrier);
    call = "clFlush";
    err = clFlush(g->queue);
  }
  clReleaseEvent(before);
  if (after) clReleaseEvent(after);
  if (err != CL_SUCCESS) return acl_fail(call, err);
  return acl_stream_flush(s, ACCEL_OK);
}

void acl_graph_destroy(accel_be_graph_t *graph) {
  acl_graph_t *g = graph;
  if (g->queue) clFinish(g->queue); /* replays still running keep their objects */
  if (g->cb) g->dev->phys->cb.release(g->cb);
  for (size_t i = 0; i < g->kernel_set_count; i++) acl_kernel_set_release(&g->kernel_sets[i]);
  free(g->kernel_sets);
  for (size_t i = 0; i < g->wrap_count; i++) clReleaseMemObject(g->wraps[i].mem);
  free(g->wraps);
  if (g->queue) clReleaseCommandQueue(g->queue);
  free(g);
}
