/*
 * Layer 7, ops (docs/ARCHITECTURE.md, "Rooms and layers"): user kernels (accel_module.h).
 * module_row.c reads the kernel rows of a module source at run time (the subset
 * kernels/gen_kernel_rows.py reads for a generated row) into the validator's descriptors and
 * the generated parameter structs; module.c owns the module and kernel objects and launches.
 */
#ifndef ACCEL_CORE_MODULE_H
#define ACCEL_CORE_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_module.h"
#include "handle.h"
#include "kernel_ops_internal.h"

/* One row of a module source: its descriptor (validation), its parameter layout (the launch)
 * and its names. Strings are owned (module_rows_free) but desc.symbol. */
typedef struct module_row {
  kop_desc_t desc; /* desc.symbol: the ACC_KERNEL name (never freed: launches keep it as their
                      kernel_name), desc.fn: ACC_OP's name */
  kop_row_layout_t layout;
  char *id, *type;
  char *names[KOP_MAX_LISTS + KOP_MAX_SCALARS]; /* list, then scalar names */
} module_row_t;

typedef struct module_rows {
  size_t n;
  module_row_t *rows;
  char *params; /* the generated parameter structs, in the dialect */
} module_rows_t;

/* Reads every ACCEL_KERNEL row of source (comments and preprocessor lines ignored). On failure
 * the status with a message naming fn, the row and its line. */
accel_status_t module_rows_read(const char *source, const char *fn, module_rows_t *out);
void module_rows_free(module_rows_t *rows);

struct accel_kernel {
  accel_handle_t hdr;
  accel_module_t *module;
  const module_row_t *row;
  uint32_t id; /* launch id (ACCEL_KERNEL_ID_USER_BASE and up) */
};

#endif
