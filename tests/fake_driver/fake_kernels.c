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
 * and take one argument, the parameter struct, copied when the launch is made.
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
static struct CUfunc_st functions[ACCEL_KERNEL_COUNT];

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
  return E_NOT_FOUND;
}

gpuError_t fake_LaunchKernel(gpuFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared, gpuStream_t s,
                             void **params, void **extra) {
  NEED_CONTEXT();
  if (f < functions || f >= functions + ACCEL_KERNEL_COUNT || !s) return E_INVALID_HANDLE;
  if (gx == 0 || gy != 1 || gz != 1 || bx != ACC_BLOCK || by != 1 || bz != 1 || shared != 0 ||
      !params || !params[0] || extra)
    return E_INVALID_VALUE;
  op_t op = {.kind = OP_KERNEL, .kernel = accel_cpu_kernel_lookup(f->id)};
  memcpy(&op.params, params[0], params_size[f->id]);
  return fake_submit(s, op);
}

/* Any grid covers the same logical blocks: each kernel strides over [0, n) by the grid size,
 * so the CPU build runs them all at once (the same bits for any split, kernels/cpu). */
void fake_run_kernel(const op_t *o) { o->kernel(&o->params, 0, UINT32_MAX); }
