/* See vendor_lib.h. */
#include "vendor_lib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void append(char *buf, size_t size, const char *sep, const char *text) {
  size_t len = strlen(buf);
  if (len + 1 < size) snprintf(buf + len, size - len, "%s%s", len ? sep : "", text);
}

void *accel_vendor_open(const char *const *names, size_t n, const char **chosen, char *tried,
                        size_t tried_size) {
  return accel_vendor_open_flags(names, n, RTLD_NOW | RTLD_LOCAL, chosen, tried, tried_size);
}

void *accel_vendor_open_flags(const char *const *names, size_t n, int flags, const char **chosen,
                              char *tried, size_t tried_size) {
  tried[0] = '\0';
  for (size_t i = 0; i < n; ++i) {
    void *lib = dlopen(names[i], flags);
    if (lib) {
      *chosen = names[i];
      return lib;
    }
    const char *err = dlerror();
    append(tried, tried_size, "; ", err ? err : names[i]);
  }
  return NULL;
}

size_t accel_vendor_resolve(void *lib, accel_vendor_lookup_fn lookup, void *ctx,
                            const accel_vendor_symbol_t *syms, size_t n, char *missing,
                            size_t missing_size) {
  size_t nmissing = 0;
  missing[0] = '\0';
  for (size_t i = 0; i < n; ++i) {
    void *fn = NULL;
    int found = lookup ? lookup(ctx, syms[i].lookup, &fn)
                       : (fn = dlsym(lib, syms[i].lookup)) != NULL;
    *syms[i].slot = found ? fn : NULL;
    if (!found && syms[i].required) {
      append(missing, missing_size, ", ", syms[i].display);
      nmissing++;
    }
  }
  return nmissing;
}
