/*
 * Loads the vendor runtime with dlopen and resolves GPU_API_TABLE.
 *
 * CUDA: only cuGetProcAddress_v2 is looked up with dlsym; every other entry point comes from
 * it, pinned to GPU_API_VERSION with CU_GET_PROC_ADDRESS_LEGACY_STREAM, so that base names
 * resolve to the variant that version defines (cuMemAlloc -> cuMemAlloc_v2, never a _ptsz
 * per-thread-default-stream variant). HIP: every entry point is looked up with dlsym under its
 * exported name. Opening and the symbol table: common/vendor_lib.h (never dlclose'd).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpu_backend.h"
#include "vendor_lib.h"

const gpu_api_names_t gpu_api_names = {
#define GPU_API_NAME(field, lookup, display, ret, params) .field = display,
    GPU_API_TABLE(GPU_API_NAME, GPU_API_NAME)
#undef GPU_API_NAME
};

#ifdef GPU_PROC_ADDRESS_SYMBOL
typedef gpuError_t (*gpu_proc_address_fn)(const char *symbol, void **fn, int version,
                                          unsigned long long flags, int *status);

typedef struct proc_lookup {
  gpu_proc_address_fn proc;
  char why[160]; /* the first failure's result and symbol status, for the error message */
} proc_lookup_t;

static int resolve(void *ctx, const char *name, void **fn) {
  proc_lookup_t *pl = ctx;
  int status = -1;
  *fn = NULL;
  gpuError_t err = pl->proc(name, fn, GPU_API_VERSION, GPU_PROC_ADDRESS_LEGACY_STREAM, &status);
  if (err == GPU_SUCCESS && status == GPU_PROC_ADDRESS_SUCCESS && *fn) return 1;
  if (!pl->why[0])
    snprintf(pl->why, sizeof pl->why, " (%s(\"%s\", %d) returned %u, symbol status %d)",
             GPU_PROC_ADDRESS_SYMBOL, name, GPU_API_VERSION, (unsigned)err, status);
  return 0;
}
#endif

accel_status_t gpu_loader_open(gpu_backend_t *backend) {
  static const char *const names[] = GPU_LIBRARY_NAMES;
  char tried[1024];
  const char *chosen = NULL;
  void *lib = accel_vendor_open(names, sizeof names / sizeof names[0], &chosen, tried,
                                sizeof tried);
  if (!lib)
    return gpu_host->set_error(ACCEL_ERROR_UNAVAILABLE,
                               "%s runtime not found (dlopen tried: %s)", GPU_BACKEND_NAME, tried);
  snprintf(backend->library_path, sizeof backend->library_path, "%s", chosen);

  const accel_vendor_symbol_t syms[] = {
#define GPU_SYMBOL(field, lookup, display, ret, params, required) \
  {lookup, display, (void **)&backend->api.field, required},
#define GPU_REQUIRED(field, lookup, display, ret, params) \
  GPU_SYMBOL(field, lookup, display, ret, params, 1)
#define GPU_OPTIONAL(field, lookup, display, ret, params) \
  GPU_SYMBOL(field, lookup, display, ret, params, 0)
      GPU_API_TABLE(GPU_REQUIRED, GPU_OPTIONAL)
#undef GPU_REQUIRED
#undef GPU_OPTIONAL
#undef GPU_SYMBOL
  };
  char missing[512];
  const char *why = "";
#ifdef GPU_PROC_ADDRESS_SYMBOL
  proc_lookup_t pl = {(gpu_proc_address_fn)dlsym(lib, GPU_PROC_ADDRESS_SYMBOL), ""};
  if (!pl.proc)
    return gpu_host->set_error(ACCEL_ERROR_UNAVAILABLE,
                               "%s: no %s (driver older than CUDA %d.%d)",
                               backend->library_path, GPU_PROC_ADDRESS_SYMBOL,
                               GPU_API_VERSION / 1000, GPU_API_VERSION % 1000 / 10);
  size_t nmissing = accel_vendor_resolve(lib, resolve, &pl, syms, sizeof syms / sizeof syms[0],
                                         missing, sizeof missing);
  why = pl.why;
#else
  size_t nmissing = accel_vendor_resolve(lib, NULL, NULL, syms, sizeof syms / sizeof syms[0],
                                         missing, sizeof missing);
#endif
  if (nmissing)
    return gpu_host->set_error(ACCEL_ERROR_UNAVAILABLE, "%s lacks required entry points%s: %s",
                               backend->library_path, why, missing);
  backend->library = lib;
  return ACCEL_OK;
}
