/*
 * The CUDA face of the fake driver (libcuda.so.1; see fake_driver.c): cuInit, primary
 * contexts and cuCtxSetCurrent (one current context per thread), CUDA's error names, and
 * cuGetProcAddress_v2, through which the plugin finds every entry point.
 */
#include <string.h>

#include "fake_driver.h"

gpuError_t fake_Init(unsigned flags) {
  ENTER();
  if (flags) return E_INVALID_VALUE;
  fake_initialized = 1;
  return GPU_SUCCESS;
}
gpuError_t fake_PrimaryCtxRetain(gpuContext_t *ctx, gpuDevice_t d) {
  ENTER();
  if (d != 0) return E_INVALID_VALUE;
  *ctx = &fake_primary;
  return GPU_SUCCESS;
}
gpuError_t fake_PrimaryCtxRelease(gpuDevice_t d) { ENTER(); (void)d; return GPU_SUCCESS; }
gpuError_t fake_CtxSetCurrent(gpuContext_t ctx) {
  ENTER();
  fake_current = ctx;
  return GPU_SUCCESS;
}
gpuError_t fake_CtxGetCurrent(gpuContext_t *ctx) {
  ENTER();
  *ctx = fake_current;
  return GPU_SUCCESS;
}
/* Also exported by name: the NCCL engine dlsyms them. */
EXPORT gpuError_t cuCtxSetCurrent(gpuContext_t ctx) { return fake_CtxSetCurrent(ctx); }
EXPORT gpuError_t cuCtxGetCurrent(gpuContext_t *ctx) { return fake_CtxGetCurrent(ctx); }
gpuError_t fake_StreamWaitValue32(gpuStream_t s, gpuDevicePtr_t addr, uint32_t value,
                                  unsigned flags) {
  if (flags != GPU_WAIT_VALUE_EQ) return E_NOT_SUPPORTED; /* only what the plugin uses */
  return fake_StreamWaitValue32Eq(s, GPU_VPTR(addr), value);
}
gpuError_t fake_GetErrorName(gpuError_t err, const char **name) {
  static const struct { gpuError_t e; const char *n; } names[] = {
      {0, "CUDA_SUCCESS"}, {1, "CUDA_ERROR_INVALID_VALUE"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"},
      {3, "CUDA_ERROR_NOT_INITIALIZED"}, {201, "CUDA_ERROR_INVALID_CONTEXT"},
      {400, "CUDA_ERROR_INVALID_HANDLE"}, {600, "CUDA_ERROR_NOT_READY"},
      {800, "CUDA_ERROR_NOT_PERMITTED"}, {801, "CUDA_ERROR_NOT_SUPPORTED"},
      {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
      {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].e == err) {
      *name = names[i].n;
      return GPU_SUCCESS;
    }
  *name = NULL;
  return E_INVALID_VALUE;
}
/* Native handles (gpu_native.c): one device, one context. */
gpuError_t fake_CtxGetDevice(gpuDevice_t *d) {
  NEED_CONTEXT();
  *d = 0;
  return GPU_SUCCESS;
}
gpuError_t fake_PrimaryCtxGetState(gpuDevice_t d, unsigned *flags, int *active) {
  ENTER();
  if (d != 0) return E_INVALID_VALUE;
  *flags = 0;
  *active = 1;
  return GPU_SUCCESS;
}
gpuError_t fake_StreamGetCtx(gpuStream_t s, gpuContext_t *ctx) {
  NEED_CONTEXT();
  (void)s;
  *ctx = &fake_primary; /* every stream of this fake is the primary context's */
  return GPU_SUCCESS;
}

/* cuGetProcAddress_v2: every entry point of the plugin's table. */
typedef struct entry { const char *name; void *fn; } entry_t;
#define FAKE_ENTRY(field, lookup, display, ret, params) {lookup, (void *)fake_##field},
static const entry_t entries[] = {GPU_API_TABLE(FAKE_ENTRY, FAKE_ENTRY)};

EXPORT gpuError_t cuGetProcAddress_v2(const char *symbol, void **fn, int version,
                                      unsigned long long flags, int *status) {
  (void)version, (void)flags;
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    if (strcmp(entries[i].name, symbol) == 0) {
      *fn = entries[i].fn;
      if (status) *status = 0;
      return GPU_SUCCESS;
    }
  *fn = NULL;
  if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return E_NOT_FOUND;
}
