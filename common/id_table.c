/* Launch ids of user kernels -> a backend's object, and their modules (id_table.h). */
#include "id_table.h"

#include <stdlib.h>
#include <string.h>

#include "accel/accel_plugin.h"

int accel_id_table_set(accel_id_table_t *t, uint32_t id, void *value) {
  const size_t k = id - ACCEL_KERNEL_ID_USER_BASE;
  if (k >= t->cap) {
    size_t cap = t->cap ? t->cap : 64;
    while (cap <= k) cap *= 2;
    void **grown = realloc(t->slots, cap * sizeof *grown);
    if (!grown) return 0;
    memset(grown + t->cap, 0, (cap - t->cap) * sizeof *grown);
    t->slots = grown;
    t->cap = cap;
  }
  t->slots[k] = value;
  return 1;
}

void *accel_id_table_get(const accel_id_table_t *t, uint32_t id) {
  const size_t k = id - ACCEL_KERNEL_ID_USER_BASE;
  return id >= ACCEL_KERNEL_ID_USER_BASE && k < t->cap ? t->slots[k] : NULL;
}

void accel_id_table_free(accel_id_table_t *t) {
  free(t->slots);
  t->slots = NULL;
  t->cap = 0;
}

int accel_user_kernels_add(accel_user_kernels_t *u, void *module, uint32_t first_id,
                           void *const *objs, uint32_t n) {
  void **grown = realloc(u->modules, (u->nmodules + 1) * sizeof *grown);
  if (!grown) return 0;
  u->modules = grown;
  uint32_t k = 0;
  while (k < n && accel_id_table_set(&u->ids, first_id + k, objs[k])) ++k;
  if (k < n) { /* out of memory: unbind what was bound */
    while (k-- > 0) accel_id_table_set(&u->ids, first_id + k, NULL);
    return 0;
  }
  u->modules[u->nmodules++] = module;
  return 1;
}

void accel_user_kernels_free(accel_user_kernels_t *u) {
  free(u->modules);
  u->modules = NULL;
  u->nmodules = 0;
  accel_id_table_free(&u->ids);
}
