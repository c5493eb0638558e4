/*
 * Loading a vendor runtime with dlopen and a symbol table, shared by the plugins that need one
 * (backends: CUDA and HIP through backends/gpu_common, Level Zero; collective engines: NCCL,
 * RCCL, oneCCL), so that a plugin loads on a machine
 * without the vendor stack and reports UNAVAILABLE with what it tried. The library is never
 * dlclose'd: vendor runtimes keep threads and atexit handlers that must not outlive their
 * code, and the plugin itself stays loaded for the life of the process.
 */
#ifndef ACCEL_VENDOR_LIB_H
#define ACCEL_VENDOR_LIB_H

#include <stddef.h>

/* One entry point: the name looked up, the name shown in messages, where the address goes, and
 * whether the plugin cannot work without it (an optional one missing is left NULL). */
typedef struct accel_vendor_symbol {
  const char *lookup;
  const char *display;
  void **slot;
  int required;
} accel_vendor_symbol_t;

/* Resolves one name into *fn; nonzero on success. */
typedef int (*accel_vendor_lookup_fn)(void *ctx, const char *name, void **fn);

/* Opens the first of names[0..n) that loads (RTLD_NOW | RTLD_LOCAL) and sets *chosen to its
 * name; NULL when none does, with every name and its dlerror() in tried ("; "-separated). */
void *accel_vendor_open(const char *const *names, size_t n, const char **chosen, char *tried,
                        size_t tried_size);
/* The same with the given dlopen flags (RTLD_GLOBAL for a runtime whose symbols a library
 * loaded later resolves against). */
void *accel_vendor_open_flags(const char *const *names, size_t n, int flags, const char **chosen,
                              char *tried, size_t tried_size);

/* Resolves syms[0..n) with lookup(ctx, ...) (NULL: dlsym on lib). Returns how many required
 * entries are missing; their display names go to missing (", "-separated). */
size_t accel_vendor_resolve(void *lib, accel_vendor_lookup_fn lookup, void *ctx,
                            const accel_vendor_symbol_t *syms, size_t n, char *missing,
                            size_t missing_size);

#endif
