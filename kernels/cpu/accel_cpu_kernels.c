/* The CPU form of the shared kernels: the kernel bodies (kernels/ *.h) compiled with the C prelude. */
#include "accel_cpu_kernels.h"

#include <stddef.h>

#include "../prelude_c.h"
#include "../accel_kernels_all.h"
#include "../accel_kernel_ids.h"

static const accel_cpu_kernel_fn kernel_table[ACCEL_KERNEL_COUNT] = {
#define ACCEL_KERNEL(id, name, ...) [ACCEL_KERNEL_##id] = name,
#include "../accel_kernel_list.h"
#undef ACCEL_KERNEL
};

accel_cpu_kernel_fn accel_cpu_kernel_lookup(uint32_t kernel_id) {
  return kernel_id < ACCEL_KERNEL_COUNT ? kernel_table[kernel_id] : NULL;
}

static void set_chunks(accel_cpu_kernel_access_t *a, acc_u64 chunks, acc_u32 num_chunks) {
  a->chunks = (const void *)(uintptr_t)chunks;
  a->num_chunks = num_chunks;
}

static void set_slot(accel_cpu_kernel_access_t *a, unsigned slot, uint64_t bytes,
                     unsigned per_row, unsigned mode) {
  a->elem_bytes[slot] = (uint8_t)bytes;
  a->per_row[slot] = (uint8_t)per_row;
  a->slot_mode[slot] = (uint8_t)mode;
}

/* A scalar at address 0 is not accessed (an optional one left out, or one another launch of
 * the operation uses: ACC_NO_FIELD). A per-tensor array (ACC_PER_TENSOR) is `size` bytes for
 * each tensor of the chunk table: tensors come in order, the last chunk's is the last. */
static void add_scalar(accel_cpu_kernel_access_t *a, acc_u64 addr, uint32_t size, unsigned mode,
                       uint32_t block, uint32_t stride, int per_tensor) {
  if (per_tensor) {
    const acc_chunk_t *chunks = a->chunks;
    size *= a->num_chunks ? chunks[a->num_chunks - 1u].tensor + 1u : 0u;
  }
  if (addr == 0u || size == 0u) return;
  a->scalars[a->num_scalars++] = (accel_cpu_kernel_scalar_t){
      .addr = addr, .size = size, .stride = stride, .block = block,
      .write = (mode & ACCEL_CPU_SLOT_WRITE) != 0u};
}

enum { R = ACCEL_CPU_SLOT_READ, W = ACCEL_CPU_SLOT_WRITE };
_Static_assert(ACCEL_CPU_MAX_SLOTS == ACC_MAX_LISTS, "a slot per list of acc_chunk_t");
_Static_assert(ACC_MODE_R == ACCEL_CPU_SLOT_READ && ACC_MODE_W == ACCEL_CPU_SLOT_WRITE &&
                   ACC_MODE_RW == (ACCEL_CPU_SLOT_READ | ACCEL_CPU_SLOT_WRITE),
               "the table's access modes are the CPU slot modes");

/* The access table, generated from the kernel table: a case per row that walks a chunk table
 * (rows with an ACC_OP); the others (NORM_FINAL reads every partial: a reduction over all
 * blocks) are not chunk-wise and never fused. List k is chunk slot k. A row's lists and
 * scalars become comma expressions (the table separates them with commas). */
#define ACC_IO(m) ACC_MODE_##m
#define ACC_IO_IF(field, flag, m, m_flag) \
  ((p.field & (flag)) != 0u ? ACC_MODE_##m_flag : ACC_MODE_##m)
#define ACC_ANY_DT(field) acc_dt_bytes(p.field), 0u
#define ACC_STATE_DT(field) acc_dt_bytes(p.field), 0u
#define ACC_F32_DT 4u, 0u
#define ACC_F32_PER_ROW(k) 4u * (k), 1u
#define ACC_SAME_DT(k) out->elem_bytes[k], 0u
#define ACC_NO_ALIAS
#define ACC_ALIAS(k)
#define ACC_LIST(name, mode, bytes, alias) set_slot(out, slot++, bytes, mode)
#define ACC_OPT_LIST(name, mode, bytes, alias) set_slot(out, slot++, bytes, mode)
#define ACC_FIELD(member) p.member
#define ACC_NO_FIELD 0u
#define ACC_ALL_BLOCKS ACCEL_CPU_ALL_BLOCKS, 0u, 0
#define ACC_BLOCK0 0u, 0u, 0
#define ACC_PER_BLOCK(stride) ACCEL_CPU_ALL_BLOCKS, (stride), 0
#define ACC_PER_TENSOR ACCEL_CPU_ALL_BLOCKS, 0u, 1
#define ACC_SCALAR(name, addr, size, mode, need, blocks) \
  add_scalar(out, addr, (uint32_t)(size), ACC_MODE_##mode, blocks)
#define ACC_SCRATCH(member, size, mode, blocks) \
  add_scalar(out, p.member, (uint32_t)(size), ACC_MODE_##mode, blocks)
#define ACC_VALUE(name, field) (void)0 /* a host value: no memory */
#define ACC_OP(fn, table) 1
#define ACC_NO_OP 0
#define ACC_ACCESS_CASE_0(id, T, lists, scalars)
#define ACC_ACCESS_CASE_1(id, T, lists, scalars) \
  case ACCEL_KERNEL_##id: {                      \
    T p;                                         \
    unsigned slot = 0;                           \
    memcpy(&p, params, sizeof p);                \
    set_chunks(out, p.chunks, p.num_chunks);     \
    ACC_UNPAREN lists;                           \
    ACC_UNPAREN scalars;                         \
    (void)slot;                                  \
    break;                                       \
  }

void accel_cpu_kernel_access(uint32_t kernel_id, const void *params,
                             accel_cpu_kernel_access_t *out) {
  /* the slots, not the scalars past num_scalars: a graph update decodes every launch, and a
   * `rep stos` over the whole struct was most of this function's time there */
  memset(out, 0, offsetof(accel_cpu_kernel_access_t, scalars));
  out->num_scalars = 0;
  switch (kernel_id) {
#define ACCEL_KERNEL(id, name, T, op, lists, scalars) \
  ACC_CAT(ACC_ACCESS_CASE_, op)(id, T, lists, scalars)
#include "../accel_kernel_list.h"
#undef ACCEL_KERNEL
  default:
    break;
  }
}

uint64_t accel_cpu_kernel_block_bytes(uint32_t kernel_id, const void *params) {
  /* Bytes read + written by one full chunk (the last chunk of a tensor may be shorter). */
  if (kernel_id == ACCEL_KERNEL_NORM_FINAL) {
    acc_norm_final_params_t p;
    memcpy(&p, params, sizeof p);
    return 4u * (uint64_t)p.num_partials;
  }
  accel_cpu_kernel_access_t a;
  accel_cpu_kernel_access(kernel_id, params, &a);
  uint64_t bytes = 0;
  for (unsigned k = 0; k < ACCEL_CPU_MAX_SLOTS; ++k) {
    const unsigned passes = ((a.slot_mode[k] & R) != 0u) + ((a.slot_mode[k] & W) != 0u);
    bytes += (a.per_row[k] ? ACC_CHUNK / ACC_BLOCK : ACC_CHUNK) * a.elem_bytes[k] * passes;
  }
  return bytes;
}
