/* Internal to the fake driver (fake_driver.c, fake_mem.c, fake_kernels.c); see fake_driver.c. */
#ifndef ACCEL_FAKE_DRIVER_H
#define ACCEL_FAKE_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "accel_cpu_kernels.h"
#include "accel_kernel_abi_host.h"
#include "accel_kernel_ids.h"

/* Built twice, as the plugins are: with vendor_cuda.h (libcuda.so.1) or vendor_hip.h
 * (libamdhip64.so.7) force-included (meson.build). */
#ifndef GPU_BACKEND_NAME
#error "compile with -include vendor_cuda.h or -include vendor_hip.h"
#endif

#define EXPORT __attribute__((visibility("default")))
/* What accel-info and the tests see (fake_open.h looks for its end). */
#define FAKE_DEVICE_NAME "fake " GPU_BACKEND_NAME " device (tests/fake_driver)"
/* Every entry point of the plugin's table is fake_FIELD with the table's prototype (a drift
 * fails to compile). The CUDA plugin gets them from cuGetProcAddress_v2 (fake_cuda.c); the HIP
 * plugin looks them up by name, so there each is exported under HIP's name. */
#if GPU_VENDOR_HIP
/* HIP has no context to make current: the fake's stands for the current device. */
typedef struct CUctx_st *gpuContext_t;
/* The fake's handles are CUDA's struct tags; HIP's shim names them so. */
#define CUstream_st ihipStream_t
#define CUevent_st ihipEvent_t
#define CUmod_st ihipModule_t
#define CUfunc_st ihipModuleSymbol_t
#define CUgraphExec_st hipGraphExec
#define E_NOT_PERMITTED 801u /* hipErrorNotSupported: ROCm 5.2 has no NOT_PERMITTED */
#define FAKE_DRIVER_VERSION 60342134 /* hipDriverGetVersion of ROCm 6.3 */
#define FAKE_DECLARE(field, lookup, display, ret, params) \
  EXPORT ret fake_##field params __asm__(lookup);
#else
#define E_NOT_PERMITTED 800u
#define FAKE_DRIVER_VERSION 13000 /* CUDA 13.0 */
#define FAKE_DECLARE(field, lookup, display, ret, params) ret fake_##field params;
#endif
GPU_API_TABLE(FAKE_DECLARE, FAKE_DECLARE)
#undef FAKE_DECLARE
#define E_INVALID_VALUE 1u
#define E_OUT_OF_MEMORY 2u
#define E_NOT_INITIALIZED 3u
#define E_INVALID_CONTEXT 201u
#define E_INVALID_HANDLE 400u
#define E_NOT_FOUND 500u
#define E_NOT_SUPPORTED 801u
#define E_INVALID_IMAGE 200u

struct CUctx_st { int device; };
extern struct CUctx_st fake_primary; /* the one device's context */
extern _Thread_local gpuContext_t fake_current; /* cuCtxSetCurrent's, per thread */
extern _Thread_local int fake_in_callback;      /* inside a host function */
extern int fake_initialized;                    /* cuInit was called */
extern int fake_not_permitted;

/* Every entry point: no driver call from a host function (cuda.h, cuLaunchHostFunc). */
#define ENTER()                                                            \
  do {                                                                     \
    if (fake_in_callback) {                                                \
      __atomic_add_fetch(&fake_not_permitted, 1, __ATOMIC_SEQ_CST);   \
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
  const int32_t *pred;        /* OP_KERNEL: the predicate argument; 0 there: no block runs */
  struct op *next;
} op_t;

/* Entry points shared by both vendors with one prototype (fake_driver.c). */
gpuError_t fake_StreamWaitValue32Eq(gpuStream_t s, void *addr, uint32_t value);

/* Queues a copy of proto on s, or records it into the capture s belongs to (fake_driver.c). */
gpuError_t fake_submit(gpuStream_t s, op_t proto);
/* Runs an OP_KERNEL on the stream's thread (fake_kernels.c). */
void fake_run_kernel(const op_t *o);

/* 1 when p lies in memory cuMemAlloc or cuMemHostAlloc gave (not pageable host memory). */
int fake_known_memory(const void *p);

#endif
