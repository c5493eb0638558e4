/*
 * Kernel ids for host code (C only), generated from the kernel table (accel_kernel_list.h),
 * and the helpers every other consumer of the table uses.
 */
#ifndef ACCEL_KERNEL_IDS_H
#define ACCEL_KERNEL_IDS_H

typedef enum accel_kernel_id {
#define ACCEL_KERNEL(id, name, ...) ACCEL_KERNEL_##id,
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
  ACCEL_KERNEL_COUNT
} accel_kernel_id_t;

/* Symbol name of each kernel, indexed by id. */
static const char *const accel_kernel_names[ACCEL_KERNEL_COUNT] = {
#define ACCEL_KERNEL(id, name, ...) #name,
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
};

/* Values used in the table's rows. */
#define ACC_TABLE_SHARED 0
#define ACC_TABLE_PER_STREAM 1 /* the chunk table carries the stream's scratch (norm partials) */
/* A row whose public function is generated from the row (kernels/gen_kernel_rows.py): to every
 * consumer of the table, the ACC_OP (as each defines it) of a shared chunk table. */
#define ACC_ROW_OP(fn) ACC_OP(fn, ACC_TABLE_SHARED)
#define ACC_REQUIRED 1
#define ACC_OPTIONAL 0
/* Access modes of lists and scalars (R / W / RW in the table). */
#define ACC_MODE_R 1u
#define ACC_MODE_W 2u
#define ACC_MODE_RW 3u

/* Helpers for consumers of the table. */
#define ACC_UNPAREN(...) __VA_ARGS__
#define ACC_CAT(a, b) ACC_CAT_(a, b)
#define ACC_CAT_(a, b) a##b

/* Table users (rows with an ACC_OP): ACCEL_KERNEL_USER_<ID> numbers them 0.. in table order
 * (the per-stream memo slot of the operation), ACCEL_KERNEL_TABLE_USERS counts them. */
#define ACC_USER_IF_1(id) ACCEL_KERNEL_USER_##id,
#define ACC_USER_IF_0(id)
#define ACC_OP(fn, table) 1
#define ACC_NO_OP 0
enum accel_kernel_user {
#define ACCEL_KERNEL(id, name, T, op, ...) ACC_CAT(ACC_USER_IF_, op)(id)
#include "accel_kernel_list.h"
#undef ACCEL_KERNEL
  ACCEL_KERNEL_TABLE_USERS
};
#undef ACC_OP
#undef ACC_NO_OP
#undef ACC_USER_IF_1
#undef ACC_USER_IF_0

#endif
