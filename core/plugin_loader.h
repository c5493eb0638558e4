/*
 * The one plugin loader of core (core/plugin_loader.c), used for backends (core/loader.c,
 * libaccel-*.so) and collective engines (core/comm_loader.c, libaccelcomm-*.so): where plugin
 * files are searched, and how one file is opened and checked. What differs between the two kinds
 * (entry symbol, ABI version, required slots) is a accel_plugin_kind_t; every check on the file
 * and on the vtable's header is the same for both.
 */
#ifndef ACCEL_CORE_PLUGIN_LOADER_H
#define ACCEL_CORE_PLUGIN_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_plugin.h"

/* The fields every plugin vtable starts with (accel_backend_vtable_t,
 * accel_comm_engine_vtable_t): after struct_size, every field is pointer-sized. */
typedef struct accel_plugin_header {
  uint32_t abi_version;
  uint32_t struct_size;
  const char *name;
} accel_plugin_header_t;

/* One kind of plugin. */
typedef struct accel_plugin_kind {
  const char *query_symbol; /* the one exported entry point */
  uint32_t abi_version;     /* the host's: required of the vtable */
  /* Calls the entry point (query_symbol's address) with its own type: the host's ABI version
   * and accel_host_api; *vtable gets what it returns. */
  accel_status_t (*query)(void *entry, const void **vtable);
  size_t min_size;          /* struct_size covers at least this (the required slots) */
  size_t name_size;         /* a name is shorter than this */
  /* The kind's own checks of a vtable whose header passed (required slots, ...): NULL when
   * acceptable, else why (possibly written into buf). ctx: accel_plugin_open's. */
  const char *(*check)(const void *vtable, void *ctx, char *buf, size_t len);
} accel_plugin_kind_t;

/* A plugin file opened by accel_plugin_open. */
typedef struct accel_plugin_file {
  void *dl;             /* the dlopen handle (ACCEL_OK only; never closed while in use) */
  const void *vtable;   /* the plugin's own vtable (ACCEL_OK only); copy what struct_size has */
  char name[64];        /* the vtable's name, when the query got that far ("" otherwise) */
  char why[512];        /* why it was refused (not ACCEL_OK) */
} accel_plugin_file_t;

/* Opens path as a plugin of kind, refusing (with the reason in f->why, the file closed):
 *  - anything but a regular file (stat follows links): opening a FIFO blocks until a writer
 *    appears, and dlopen and the ELF check both open the file;
 *  - a 64-bit ELF file that dlopen would crash on or misreport (truncated segments: SIGBUS in
 *    glibc's relocation; another machine or class: "No such file or directory");
 *  - what dlopen (RTLD_NOW | RTLD_LOCAL) refuses, with dlerror;
 *  - a file without kind->query_symbol, with dlerror; a query that fails or gives no vtable;
 *  - a vtable of another ABI version (both versions named), a struct_size short of
 *    kind->min_size or not a whole number of pointers (a copy would take half of a function
 *    pointer), no valid name, and whatever kind->check refuses.
 * ACCEL_OK: f->dl and f->vtable are set. ACCEL_ERROR_PLUGIN otherwise (nothing of the file is
 * loaded). The thread's last error is cleared before the query (its message is the plugin's). */
accel_status_t accel_plugin_open(const accel_plugin_kind_t *kind, const char *path, void *ctx,
                                 accel_plugin_file_t *f);

/* The plugin directories in search order: ACCEL_PLUGIN_PATH (':'-separated), the installed
 * plugin dir (<libdir>/accel), the directory of libaccel itself (so a build tree works
 * uninstalled). visit(dir, ctx) is called for each until it returns nonzero (then 1 is
 * returned; 0 when every directory was visited). searched gets the directories visited,
 * ", "-separated, for messages. */
int accel_plugin_search(int (*visit)(const char *dir, void *ctx), void *ctx, char *searched,
                        size_t searched_size);

#endif
