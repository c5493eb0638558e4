/*
 * Conditional regions by predication (docs/GRAPHS.md, "Branches on a device flag";
 * ACCEL_ATTR_CONDITIONALS = ACCEL_CONDITIONALS_PREDICATED). OpenCL has no control flow between
 * commands, so submit_batch (common/cond_walk.c's walk) enqueues every command of a region's
 * body, each predicated on the region's slot in a small device array of the stream:
 *
 *   COND_BEGIN(flag)  ->  accel_k_pred_enter: slot[d + 1] = slot[d] && *flag != 0
 *   a kernel          ->  the kernel with slot[d + 1] as its predicate (ACC_FOR_BLOCKS runs
 *                         no block when it is 0)
 *   a copy / a fill   ->  accel_k_pred_copy / accel_k_pred_fill on the slot
 *   a host function   ->  the slot copied to the host in stream order; the function runs iff
 *                         it is nonzero
 *
 * A WHILE is unrolled to max_iterations passes; pass k > 0 enters with slot[d + 1] && *flag,
 * so the passes after the flag first reads 0 run nothing. The flag is only ever read on the
 * device, when the queue reaches the region. kernels/predicate.h has the kernels.
 */
#include <stdlib.h>

#include "acl_internal.h"

/* Depth 0 (outside every region) needs no slot: its commands get a NULL predicate. */
#define ACL_PRED_SLOTS (ACCEL_COND_MAX_DEPTH + 1)

struct acl_pred {
  int32_t *slots; /* SVM of the stream's device: slot d is depth d's predicate */
  cl_kernel enter, copy, fill;
};

void acl_pred_destroy(acl_device_t *dev, acl_pred_t *p) {
  if (!p) return;
  if (p->enter) clReleaseKernel(p->enter);
  if (p->copy) clReleaseKernel(p->copy);
  if (p->fill) clReleaseKernel(p->fill);
  if (p->slots) clSVMFree(dev->ctx, p->slots);
  free(p);
}

static accel_status_t pred_get(acl_stream_t *s, acl_pred_t **out) {
  if (s->pred) {
    *out = s->pred;
    return ACCEL_OK;
  }
  acl_device_t *dev = s->dev;
  acl_pred_t *p = calloc(1, sizeof *p);
  if (!p) return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "opencl: out of host memory");
  p->slots = clSVMAlloc(dev->ctx, dev->svm_flags, ACL_PRED_SLOTS * sizeof(int32_t), 0);
  accel_status_t st = p->slots ? ACCEL_OK
                               : acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                                     "opencl: clSVMAlloc of the stream's "
                                                     "predicate slots returned NULL");
  cl_program prog = NULL;
  if (st == ACCEL_OK) st = acl_program_get(dev, &prog);
  if (st == ACCEL_OK) st = acl_kernel_create(dev, prog, "accel_k_pred_enter", &p->enter);
  if (st == ACCEL_OK) st = acl_kernel_create(dev, prog, "accel_k_pred_copy", &p->copy);
  if (st == ACCEL_OK) st = acl_kernel_create(dev, prog, "accel_k_pred_fill", &p->fill);
  if (st != ACCEL_OK) {
    acl_pred_destroy(dev, p);
    return st;
  }
  s->pred = p;
  *out = p;
  return ACCEL_OK;
}

const int32_t *acl_pred_slot(acl_stream_t *s, uint32_t depth) {
  return depth > 0 && s->pred ? s->pred->slots + depth : NULL;
}

/* Sets argument i of k to the SVM pointer p, or to NULL. */
static cl_int set_ptr(cl_kernel k, cl_uint i, const void *p) {
  return p ? clSetKernelArgSVMPointer(k, i, p) : clSetKernelArg(k, i, sizeof(cl_mem), NULL);
}

static accel_status_t enqueue(acl_stream_t *s, cl_kernel k, cl_int err, uint64_t items) {
  if (err != CL_SUCCESS) return acl_fail("clSetKernelArg(predication kernel)", err);
  size_t global = 1, local = 1;
  if (items > 0) {
    const uint64_t blocks = (items + ACCEL_KERNEL_BLOCK - 1) / ACCEL_KERNEL_BLOCK;
    acc_cl_ndrange(s->dev->form, blocks < UINT32_MAX ? (uint32_t)blocks : UINT32_MAX,
                   s->dev->max_blocks, &global, &local);
  }
  err = clEnqueueNDRangeKernel(s->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
  if (err != CL_SUCCESS) return acl_fail("clEnqueueNDRangeKernel(predication kernel)", err);
  acl_stream_note(s);
  return ACCEL_OK;
}

accel_status_t acl_pred_enter(acl_stream_t *s, uint32_t depth, int first, const int32_t *flag) {
  acl_pred_t *p = NULL;
  accel_status_t st = pred_get(s, &p);
  if (st != ACCEL_OK) return st;
  int32_t *out = p->slots + depth;
  const int32_t *in = first ? acl_pred_slot(s, depth - 1) : out;
  cl_int err = set_ptr(p->enter, 0, out);
  if (err == CL_SUCCESS) err = set_ptr(p->enter, 1, in);
  if (err == CL_SUCCESS) err = set_ptr(p->enter, 2, flag);
  return enqueue(s, p->enter, err, 0);
}

/* Whether kernels can reach [ptr, ptr + size): an SVM allocation of the device, or any host
 * memory with fine-grained system SVM. */
static int reachable(acl_device_t *dev, const void *ptr, size_t size) {
  acl_alloc_t a;
  return dev->fine_grain_system || acl_alloc_lookup(dev, ptr, size, &a);
}

static accel_status_t unreachable(const void *ptr, const char *what) {
  return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                             "opencl: a %s inside a conditional region runs as a predicated "
                             "kernel, which cannot reach %p (not SVM memory of this device)",
                             what, ptr);
}

accel_status_t acl_pred_copy(acl_stream_t *s, const int32_t *pred, void *dst, const void *src,
                             size_t size) {
  if (!reachable(s->dev, dst, size)) return unreachable(dst, "copy");
  if (!reachable(s->dev, src, size)) return unreachable(src, "copy");
  acl_pred_t *p = NULL;
  accel_status_t st = pred_get(s, &p);
  if (st != ACCEL_OK) return st;
  const cl_uint words = ((uintptr_t)dst | (uintptr_t)src | size) % 4 == 0;
  const cl_ulong n = size;
  cl_int err = set_ptr(p->copy, 0, pred);
  if (err == CL_SUCCESS) err = set_ptr(p->copy, 1, dst);
  if (err == CL_SUCCESS) err = set_ptr(p->copy, 2, src);
  if (err == CL_SUCCESS) err = clSetKernelArg(p->copy, 3, sizeof n, &n);
  if (err == CL_SUCCESS) err = clSetKernelArg(p->copy, 4, sizeof words, &words);
  return enqueue(s, p->copy, err, words ? size / 4 : size);
}

accel_status_t acl_pred_fill(acl_stream_t *s, const int32_t *pred, void *dst, uint8_t value,
                             size_t size) {
  if (!reachable(s->dev, dst, size)) return unreachable(dst, "fill");
  acl_pred_t *p = NULL;
  accel_status_t st = pred_get(s, &p);
  if (st != ACCEL_OK) return st;
  const cl_uint words = ((uintptr_t)dst | size) % 4 == 0, v = value;
  const cl_ulong n = size;
  cl_int err = set_ptr(p->fill, 0, pred);
  if (err == CL_SUCCESS) err = set_ptr(p->fill, 1, dst);
  if (err == CL_SUCCESS) err = clSetKernelArg(p->fill, 2, sizeof v, &v);
  if (err == CL_SUCCESS) err = clSetKernelArg(p->fill, 3, sizeof n, &n);
  if (err == CL_SUCCESS) err = clSetKernelArg(p->fill, 4, sizeof words, &words);
  return enqueue(s, p->fill, err, words ? size / 4 : size);
}
