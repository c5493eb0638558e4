/*
 * Kernels on the fake driver (see fake_driver.c): the module must be the plugin's real kernel
 * image (by its magic), a function is found by its symbol name in the kernel table,
 * and a launch runs the kernel's CPU build (kernels/cpu: the same bodies, the same bits as
 * every backend) on the stream's thread, in stream order and in captured graphs. So the CTS's
 * kernel cases check the plugin's launch path (parameter blocks, chunk tables, device scalars,
 * grid clamping, capture) against the references; they say nothing of the GPU code itself.
 *
 * Rules enforced beyond the driver's own: accel's kernels are 1-D with blocks of
 * ACCEL_KERNEL_BLOCK lanes and no dynamic shared memory (the reduction order depends on it),
 * and take two arguments, the parameter struct, copied when the launch is made, and the
 * predicate of conditional regions (NULL, or an int read when the kernel runs: 0 runs no
 * block). The predication kernels (kernels/predicate.h: accel_k_pred_enter, _copy, _fill)
 * have C stand-ins here, run on the stream's thread like the others.
 */
#include <string.h>

#include "fake_driver.h"

/* The image the plugin embeds: an nvcc fatbin, or a clang offload bundle of code objects. */
#if GPU_VENDOR_HIP
static const char image_magic[] = "__CLANG_OFFLOAD_BUNDLE__";
#define IMAGE_MAGIC_SIZE (sizeof image_magic - 1)
#else
static const unsigned char image_magic[] = {0x50, 0xed, 0x55, 0xba};
#define IMAGE_MAGIC_SIZE sizeof image_magic
#endif

struct CUmod_st { int loaded; };
static struct CUmod_st the_module;

struct CUfunc_st { accel_kernel_id_t id; };
/* the table's kernels, then the predication kernels (ids from ACCEL_KERNEL_COUNT) */
enum { PRED_ENTER = ACCEL_KERNEL_COUNT, PRED_COPY, PRED_FILL, FAKE_FUNCTIONS };
static struct CUfunc_st functions[FAKE_FUNCTIONS];
static const char *const pred_names[] = {"accel_k_pred_enter", "accel_k_pred_copy",
                                         "accel_k_pred_fill"};

/* The predication kernels' arguments, as the launch passed them. */
typedef struct pred_args {
  int32_t *out;
  const int32_t *in, *flag, *pred;
  uint8_t *dst;
  const uint8_t *src;
  uint64_t n;
  uint32_t value, words;
} pred_args_t;
_Static_assert(sizeof(pred_args_t) <= sizeof(fake_kernel_params_t), "pred_args_t too large");

static int pred_runs(const int32_t *pred) {
  return !pred || __atomic_load_n(pred, __ATOMIC_SEQ_CST) != 0;
}

static void pred_enter(const void *p, acc_u32 b0, acc_u32 b1) {
  const pred_args_t *a = p;
  (void)b0, (void)b1;
  *a->out = pred_runs(a->in) && *a->flag != 0;
}

static void pred_copy(const void *p, acc_u32 b0, acc_u32 b1) {
  const pred_args_t *a = p;
  (void)b0, (void)b1;
  if (pred_runs(a->pred)) memmove(a->dst, a->src, a->words ? a->n / 4u * 4u : a->n);
}

static void pred_fill(const void *p, acc_u32 b0, acc_u32 b1) {
  const pred_args_t *a = p;
  (void)b0, (void)b1;
  if (pred_runs(a->pred)) memset(a->dst, (int)(a->value & 0xffu), a->words ? a->n / 4u * 4u : a->n);
}

/* The op of a predication kernel's launch: its arguments in order (predicate.h). */
static gpuError_t pred_op(int k, void **params, op_t *op) {
  pred_args_t *a = (pred_args_t *)&op->params;
  if (!params[0] || !params[1] || !params[2]) return E_INVALID_VALUE;
  if (k == PRED_ENTER) {
    op->kernel = pred_enter;
    a->out = *(int32_t **)params[0];
    a->in = *(const int32_t **)params[1];
    a->flag = *(const int32_t **)params[2];
    return a->out && a->flag ? GPU_SUCCESS : E_INVALID_VALUE;
  }
  if (!params[3] || !params[4]) return E_INVALID_VALUE;
  op->kernel = k == PRED_COPY ? pred_copy : pred_fill;
  a->pred = *(const int32_t **)params[0];
  a->dst = *(uint8_t **)params[1];
  if (k == PRED_COPY) a->src = *(const uint8_t **)params[2];
  else a->value = *(const uint32_t *)params[2];
  a->n = *(const uint64_t *)params[3];
  a->words = *(const uint32_t *)params[4];
  return GPU_SUCCESS;
}

static const size_t params_size[ACCEL_KERNEL_COUNT] = {
#define ACCEL_KERNEL(id, name, T, ...) [ACCEL_KERNEL_##id] = sizeof(T),
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
};

gpuError_t fake_ModuleLoadData(gpuModule_t *m, const void *image) {
  NEED_CONTEXT();
  if (!m || !image) return E_INVALID_VALUE;
  if (memcmp(image, image_magic, IMAGE_MAGIC_SIZE) != 0) return E_INVALID_IMAGE;
  __atomic_add_fetch(&the_module.loaded, 1, __ATOMIC_SEQ_CST);
  *m = &the_module;
  return GPU_SUCCESS;
}

gpuError_t fake_ModuleUnload(gpuModule_t m) {
  NEED_CONTEXT();
  if (m != &the_module || __atomic_sub_fetch(&m->loaded, 1, __ATOMIC_SEQ_CST) < 0)
    return E_INVALID_HANDLE;
  return GPU_SUCCESS;
}

gpuError_t fake_ModuleGetFunction(gpuFunction_t *f, gpuModule_t m, const char *name) {
  NEED_CONTEXT();
  if (!f || !name) return E_INVALID_VALUE;
  if (m != &the_module || __atomic_load_n(&m->loaded, __ATOMIC_SEQ_CST) <= 0)
    return E_INVALID_HANDLE;
  for (int k = 0; k < ACCEL_KERNEL_COUNT; k++)
    if (strcmp(accel_kernel_names[k], name) == 0 && accel_cpu_kernel_lookup((uint32_t)k)) {
      functions[k].id = (accel_kernel_id_t)k;
      *f = &functions[k];
      return GPU_SUCCESS;
    }
  for (int k = PRED_ENTER; k < FAKE_FUNCTIONS; k++)
    if (strcmp(pred_names[k - PRED_ENTER], name) == 0) {
      functions[k].id = (accel_kernel_id_t)k;
      *f = &functions[k];
      return GPU_SUCCESS;
    }
  return E_NOT_FOUND;
}

gpuError_t fake_LaunchKernel(gpuFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared, gpuStream_t s,
                             void **params, void **extra) {
  NEED_CONTEXT();
  if (f < functions || f >= functions + FAKE_FUNCTIONS || !s) return E_INVALID_HANDLE;
  if (gx == 0 || gy != 1 || gz != 1 || bx != ACC_BLOCK || by != 1 || bz != 1 || shared != 0 ||
      !params || !params[0] || extra)
    return E_INVALID_VALUE;
  op_t op = {.kind = OP_KERNEL};
  if ((int)f->id >= PRED_ENTER) {
    gpuError_t r = pred_op((int)f->id, params, &op);
    return r != GPU_SUCCESS ? r : fake_submit(s, op);
  }
  if (!params[1]) return E_INVALID_VALUE; /* the predicate argument (prelude_gpu.h) */
  op.kernel = accel_cpu_kernel_lookup(f->id);
  op.pred = *(const int32_t *const *)params[1];
  memcpy(&op.params, params[0], params_size[f->id]);
  return fake_submit(s, op);
}

/* Any grid covers the same logical blocks: each kernel strides over [0, n) by the grid size,
 * so the CPU build runs them all at once (the same bits for any split, kernels/cpu). */
void fake_run_kernel(const op_t *o) {
  if (pred_runs(o->pred)) o->kernel(&o->params, 0, UINT32_MAX);
}
