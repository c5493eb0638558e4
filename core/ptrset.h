/* A set of pointers (open addressing, backward-shift deletion); not thread-safe. */
#ifndef ACCEL_CORE_PTRSET_H
#define ACCEL_CORE_PTRSET_H

#include <stdbool.h>
#include <stddef.h>

typedef struct accel_ptrset {
  const void **slots;
  size_t cap, count;
} accel_ptrset_t;

bool accel_ptrset_insert(accel_ptrset_t *s, const void *p); /* false: out of memory */
bool accel_ptrset_remove(accel_ptrset_t *s, const void *p); /* false: not present */
void accel_ptrset_free(accel_ptrset_t *s);

#endif
