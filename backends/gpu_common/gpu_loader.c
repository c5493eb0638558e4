/*
 * Loads the vendor runtime with dlopen and resolves GPU_API_TABLE.
 *
 * CUDA: only cuGetProcAddress_v2 is looked up with dlsym; every other entry point comes from
 * it, pinned to GPU_API_VERSION with CU_GET_PROC_ADDRESS_LEGACY_STREAM, so that base names
 * resolve to the variant that version defines (cuMemAlloc -> cuMemAlloc_v2, never a _ptsz
 * per-thread-default-stream variant). HIP: every entry point is looked up with dlsym under its
 * exported name.
 *
 * The library is never dlclose'd: vendor runtimes keep threads and atexit handlers that must
 * not outlive their code, and the plugin itself stays loaded for the life of the process.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpu_backend.h"

const gpu_api_names_t gpu_api_names = {
#define GPU_API_NAME(field, lookup, display, ret, params) .field = display,
    GPU_API_TABLE(GPU_API_NAME, GPU_API_NAME)
#undef GPU_API_NAME
};

static void append(char *buf, size_t size, const char *fmt, const char *a, const char *b) {
  size_t len = strlen(buf);
  if (len < size) snprintf(buf + len, size - len, fmt, a, b);
}

#ifdef GPU_PROC_ADDRESS_SYMBOL
typedef gpuError_t (*gpu_proc_address_fn)(const char *symbol, void **fn, int version,
                                          unsigned long long flags, int *status);

/* Keeps the first failure's result and symbol status for the error message. */
static int resolve(gpu_proc_address_fn proc, const char *name, void **fn, char *why,
                   size_t why_size) {
  int status = -1;
  *fn = NULL;
  gpuError_t err = proc(name, fn, GPU_API_VERSION, GPU_PROC_ADDRESS_LEGACY_STREAM, &status);
  if (err == GPU_SUCCESS && status == GPU_PROC_ADDRESS_SUCCESS && *fn) return 1;
  if (!why[0])
    snprintf(why, why_size, " (%s(\"%s\", %d) returned %u, symbol status %d)",
             GPU_PROC_ADDRESS_SYMBOL, name, GPU_API_VERSION, (unsigned)err, status);
  return 0;
}
#endif

accel_status_t gpu_loader_open(gpu_backend_t *backend) {
  static const char *const names[] = GPU_LIBRARY_NAMES;
  char tried[1024] = "";
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      snprintf(backend->library_path, sizeof backend->library_path, "%s", names[i]);
    } else {
      const char *err = dlerror();
      append(tried, sizeof tried, "%s%s", tried[0] ? "; " : "", err ? err : names[i]);
    }
  }
  if (!lib)
    return gpu_host->set_error(ACCEL_ERROR_UNAVAILABLE,
                               "%s runtime not found (dlopen tried: %s)", GPU_BACKEND_NAME, tried);

  char why[160] = ""; /* why lookups failed, when the vendor says */
#ifdef GPU_PROC_ADDRESS_SYMBOL
  gpu_proc_address_fn proc = (gpu_proc_address_fn)dlsym(lib, GPU_PROC_ADDRESS_SYMBOL);
  if (!proc)
    return gpu_host->set_error(ACCEL_ERROR_UNAVAILABLE,
                               "%s: no %s (driver older than CUDA %d.%d)",
                               backend->library_path, GPU_PROC_ADDRESS_SYMBOL,
                               GPU_API_VERSION / 1000, GPU_API_VERSION % 1000 / 10);
#define GPU_LOOKUP(lookup, slot) (resolve(proc, lookup, (void **)&(slot), why, sizeof why))
#else
#define GPU_LOOKUP(lookup, slot) ((*(void **)&(slot) = dlsym(lib, lookup)) != NULL)
#endif

  char missing[512] = "";
#define GPU_REQUIRED(field, lookup, display, ret, params) \
  if (!GPU_LOOKUP(lookup, backend->api.field))            \
    append(missing, sizeof missing, "%s%s", missing[0] ? ", " : "", display);
#define GPU_OPTIONAL(field, lookup, display, ret, params) \
  if (!GPU_LOOKUP(lookup, backend->api.field)) backend->api.field = NULL;
  GPU_API_TABLE(GPU_REQUIRED, GPU_OPTIONAL)
#undef GPU_REQUIRED
#undef GPU_OPTIONAL
#undef GPU_LOOKUP
  if (missing[0])
    return gpu_host->set_error(ACCEL_ERROR_UNAVAILABLE, "%s lacks required entry points%s: %s",
                               backend->library_path, why, missing);
  backend->library = lib;
  return ACCEL_OK;
}
