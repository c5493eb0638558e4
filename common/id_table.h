/*
 * Launch ids of user kernels (ACCEL_KERNEL_ID_USER_BASE and up, accel_plugin.h) -> a backend's
 * object for each (a vendor function, a kernel handle), grown on demand, and the modules they
 * come from. Not locked: the caller's lock guards them. Used by the CUDA/HIP (gpu_user.c) and
 * Level Zero (ze_user.c) plugins.
 */
#ifndef ACCEL_COMMON_ID_TABLE_H
#define ACCEL_COMMON_ID_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct accel_id_table {
  void **slots; /* [id - ACCEL_KERNEL_ID_USER_BASE]; NULL: none */
  size_t cap;
} accel_id_table_t;

/* Stores value for id (>= ACCEL_KERNEL_ID_USER_BASE); 0 without memory (t unchanged). */
int accel_id_table_set(accel_id_table_t *t, uint32_t id, void *value);
/* The value for id; NULL when none. */
void *accel_id_table_get(const accel_id_table_t *t, uint32_t id);
/* Frees the slots (not the values). */
void accel_id_table_free(accel_id_table_t *t);

/* A device's user kernels: its loaded modules (a vendor's module handles) and the object of
 * each launch id. */
typedef struct accel_user_kernels {
  void **modules;
  size_t nmodules;
  accel_id_table_t ids;
} accel_user_kernels_t;

/* Keeps module and binds objs[k] to first_id + k (k < n); 0 without memory (then nothing is
 * kept or bound). */
int accel_user_kernels_add(accel_user_kernels_t *u, void *module, uint32_t first_id,
                           void *const *objs, uint32_t n);
/* Frees the lists (the modules and objects are the caller's to release first). */
void accel_user_kernels_free(accel_user_kernels_t *u);

#endif
