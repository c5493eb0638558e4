/* Internal to the fake driver (fake_cuda.c, fake_cuda_mem.c); see fake_cuda.c. */
#ifndef ACCEL_FAKE_CUDA_H
#define ACCEL_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "vendor_cuda.h"
#include "accel_cpu_kernels.h"
#include "accel_kernel_abi_host.h"
#include "accel_kernel_ids.h"

#define EXPORT __attribute__((visibility("default")))
#define E_INVALID_VALUE 1u
#define E_OUT_OF_MEMORY 2u
#define E_NOT_INITIALIZED 3u
#define E_INVALID_CONTEXT 201u
#define E_INVALID_HANDLE 400u
#define E_NOT_FOUND 500u
#define E_NOT_PERMITTED 800u
#define E_NOT_SUPPORTED 801u
#define E_INVALID_IMAGE 200u

extern _Thread_local gpuContext_t fake_current; /* cuCtxSetCurrent's, per thread */
extern _Thread_local int fake_in_callback;      /* inside a host function */
extern int fake_initialized;                    /* cuInit was called */
extern int fake_cuda_not_permitted;

/* Every entry point: no CUDA call from a host function (cuda.h, cuLaunchHostFunc). */
#define ENTER()                                                            \
  do {                                                                     \
    if (fake_in_callback) {                                                \
      __atomic_add_fetch(&fake_cuda_not_permitted, 1, __ATOMIC_SEQ_CST);   \
      return E_NOT_PERMITTED;                                              \
    }                                                                      \
  } while (0)
/* Context-bound entry points: a context must be current on the calling thread. */
#define NEED_CONTEXT()                                                     \
  do {                                                                     \
    ENTER();                                                               \
    if (!fake_initialized) return E_NOT_INITIALIZED;                       \
    if (!fake_current) return E_INVALID_CONTEXT;                           \
  } while (0)

/* Room for the parameter struct of any kernel (the driver copies it at the launch). */
typedef union fake_kernel_params {
#define ACCEL_KERNEL(id, name, T, ...) T id;
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
} fake_kernel_params_t;

/* One command of a stream or of a captured graph (copied by value into each replay). */
typedef enum {
  OP_HOSTFN, OP_COPY, OP_SET, OP_RECORD, OP_WAIT_EVENT, OP_WAIT32, OP_WRITE32, OP_KERNEL
} op_kind_t;
typedef struct op {
  op_kind_t kind;
  void (*fn)(void *);
  void *user, *dst;
  const void *src;
  size_t size;
  uint32_t value;
  struct CUevent_st *event;
  uint64_t seq;
  accel_cpu_kernel_fn kernel; /* OP_KERNEL: its CPU build, run over params */
  fake_kernel_params_t params;
  struct op *next;
} op_t;

/* Queues a copy of proto on s, or records it into the capture s belongs to (fake_cuda.c). */
gpuError_t fake_submit(gpuStream_t s, op_t proto);
/* Runs an OP_KERNEL on the stream's thread (fake_kernels.c). */
void fake_run_kernel(const op_t *o);

/* 1 when p lies in memory cuMemAlloc or cuMemHostAlloc gave (not pageable host memory). */
int fake_known_memory(const void *p);

gpuError_t fake_MemGetInfo(size_t *free_bytes, size_t *total);
gpuError_t fake_ModuleLoadData(gpuModule_t *m, const void *image);
gpuError_t fake_ModuleUnload(gpuModule_t m);
gpuError_t fake_ModuleGetFunction(gpuFunction_t *f, gpuModule_t m, const char *name);
gpuError_t fake_LaunchKernel(gpuFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared, gpuStream_t s,
                             void **params, void **extra);
gpuError_t fake_MemAlloc(gpuDevicePtr_t *ptr, size_t size);
gpuError_t fake_MemFree(gpuDevicePtr_t ptr);
gpuError_t fake_HostAlloc(void **ptr, size_t size, unsigned flags);
gpuError_t fake_HostFree(void *ptr);
gpuError_t fake_PointerGetAttribute(void *data, unsigned attribute, gpuDevicePtr_t ptr);
gpuError_t fake_MemGetAddressRange(gpuDevicePtr_t *base, size_t *size, gpuDevicePtr_t ptr);

#endif
