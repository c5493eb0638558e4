/* Kernel ids for host code (C only). */
#ifndef ACCEL_KERNEL_IDS_H
#define ACCEL_KERNEL_IDS_H

typedef enum accel_kernel_id {
#define ACCEL_KERNEL(id, name) ACCEL_KERNEL_##id,
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
  ACCEL_KERNEL_COUNT
} accel_kernel_id_t;

/* Symbol name of each kernel, indexed by id. */
static const char *const accel_kernel_names[ACCEL_KERNEL_COUNT] = {
#define ACCEL_KERNEL(id, name) #name,
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
};

#endif
