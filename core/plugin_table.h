/*
 * The plugins this build knows, from a table the build generates outside core
 * (backends/plugin_table.c.in, filled in by meson.build from the backend folders; IREE's
 * drivers/init.c idea): core names no backend and no engine, so adding one needs no core edit.
 */
#ifndef ACCEL_CORE_PLUGIN_TABLE_H
#define ACCEL_CORE_PLUGIN_TABLE_H

#include <stddef.h>

#include "accel/accel_plugin.h"

typedef const accel_backend_vtable_t *(*accel_builtin_backend_fn)(void);

/* A backend plugin the project ships. */
typedef struct accel_known_plugin {
  const char *name;
} accel_known_plugin_t;

typedef struct accel_plugin_table {
  /* Backends linked into libaccel, registered first, in this order (no file to load). */
  const accel_builtin_backend_fn *builtin;
  size_t builtin_count;
  /* Backend plugins the project ships: one that is not found gets a NOT_FOUND report. */
  const accel_known_plugin_t *known;
  size_t known_count;
  /* The collective engine that runs on the host: the one a backend gets that names none
   * (vtable comm_engine), and the one that bootstraps stream engines over MPI. */
  const char *host_engine;
} accel_plugin_table_t;

extern const accel_plugin_table_t accel_plugin_table;

#endif
