#include "cpu_fuse.h"

#include <stdlib.h>
#include <string.h>

#include "accel_kernel_abi_host.h"
#include "accel_kernel_ids.h"

/* One address range a launch of a candidate group touches. */
typedef struct fuse_range {
  uint64_t lo, hi;
  uint32_t op;    /* position of the launch in the group */
  uint32_t block; /* ACCEL_CPU_ALL_BLOCKS: touched by any block */
  uint32_t write;
} fuse_range_t;

typedef struct range_vec {
  fuse_range_t *v;
  size_t n, cap;
} range_vec_t;

/* A range that overlaps more than this many live ranges at once is not analysed further: the
 * launches are simply not fused (real groups overlap a handful: one tensor per launch). */
#define ACTIVE_MAX 64u

static int push(range_vec_t *r, uint64_t lo, uint64_t len, uint32_t op, uint32_t block,
                uint32_t write) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2u * r->cap : 256u;
    fuse_range_t *v = realloc(r->v, cap * sizeof *v);
    if (v == NULL) return 0;
    r->v = v;
    r->cap = cap;
  }
  uint64_t hi = lo + len;
  r->v[r->n++] = (fuse_range_t){lo, hi < lo ? UINT64_MAX : hi, op, block, write};
  return 1;
}

static int fusable(const cpu_op_t *op, accel_cpu_kernel_access_t *a) {
  if (op->type != CPU_OP_KERNEL) return 0;
  accel_cpu_kernel_access(op->u.kernel.kernel_id, op->u.kernel.params, a);
  return a->chunks != NULL && a->num_chunks > 0u && a->num_chunks == op->u.kernel.num_blocks;
}

/* Appends every range launch `pos` of the group touches; adds its tensor bytes to *bytes. */
static int collect(const accel_cpu_kernel_access_t *a, uint32_t pos, range_vec_t *r,
                   uint64_t *bytes) {
  const acc_chunk_t *chunks = a->chunks;
  for (uint32_t b = 0; b < a->num_chunks; ++b) {
    for (unsigned k = 0; k < ACCEL_CPU_MAX_SLOTS; ++k) {
      if (a->elem_bytes[k] == 0u || chunks[b].ptr[k] == 0u) continue;
      const uint64_t n = a->per_row[k] ? (chunks[b].count + ACC_BLOCK - 1u) / ACC_BLOCK
                                       : chunks[b].count;
      const uint64_t len = n * a->elem_bytes[k];
      const uint32_t write = (a->slot_mode[k] & ACCEL_CPU_SLOT_WRITE) != 0u;
      if (!push(r, chunks[b].ptr[k], len, pos, b, write)) return 0;
      *bytes += len;
    }
  }
  for (unsigned i = 0; i < a->num_scalars; ++i) {
    const accel_cpu_kernel_scalar_t *s = &a->scalars[i];
    if (s->stride == 0u) {
      if (!push(r, s->addr, s->size, pos, s->block, s->write)) return 0;
      continue;
    }
    for (uint32_t b = 0; b < a->num_chunks; ++b)
      if (!push(r, s->addr + (uint64_t)b * s->stride, s->size, pos, b, s->write)) return 0;
  }
  return 1;
}

static int by_lo(const void *x, const void *y) {
  const fuse_range_t *a = x, *b = y;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* out = merge of the sorted vectors a and b. */
static int merge(const range_vec_t *a, const range_vec_t *b, range_vec_t *out) {
  size_t n = a->n + b->n;
  if (out->cap < n) {
    fuse_range_t *v = realloc(out->v, n * sizeof *v);
    if (v == NULL) return 0;
    out->v = v;
    out->cap = n;
  }
  size_t i = 0, j = 0, k = 0;
  while (i < a->n && j < b->n) out->v[k++] = a->v[i].lo <= b->v[j].lo ? a->v[i++] : b->v[j++];
  while (i < a->n) out->v[k++] = a->v[i++];
  while (j < b->n) out->v[k++] = b->v[j++];
  out->n = n;
  return 1;
}

/* Two accesses of different launches that fusion could reorder: one of them writes, and they
 * are not made by the same block (block b of a later launch always runs after block b of an
 * earlier one; any other pair of blocks may run in either order or concurrently). */
static int hazard(const fuse_range_t *a, const fuse_range_t *b) {
  return a->op != b->op && (a->write || b->write) &&
         (a->block == ACCEL_CPU_ALL_BLOCKS || b->block == ACCEL_CPU_ALL_BLOCKS ||
          a->block != b->block);
}

/* 1 when a range of launch `pos` (the candidate) and an overlapping range of an earlier launch
 * of the sorted vector are a hazard, or it is too tangled to tell. Pairs of earlier launches
 * were checked when the later of the two joined the group, and the ranges of one launch are
 * never a hazard to each other: only pairs with the candidate are looked at (a group of k
 * launches over one tensor costs O(k^2), not O(k^3)). */
static size_t prune(const range_vec_t *r, size_t *active, size_t n, uint64_t lo) {
  size_t keep = 0;
  for (size_t k = 0; k < n; ++k)
    if (r->v[active[k]].hi > lo) active[keep++] = active[k];
  return keep;
}

static int has_hazard(const range_vec_t *r, uint32_t pos) {
  /* [0]: ranges of earlier launches, [1]: of the candidate; a side is pruned of the ranges that
   * end before x only when x is checked against it or it is full */
  size_t active[2][ACTIVE_MAX];
  size_t na[2] = {0, 0};
  for (size_t i = 0; i < r->n; ++i) {
    const fuse_range_t *x = &r->v[i];
    const int mine = x->op == pos;
    na[!mine] = prune(r, active[!mine], na[!mine], x->lo);
    for (size_t k = 0; k < na[!mine]; ++k)
      if (hazard(&r->v[active[!mine][k]], x)) return 1;
    if (na[mine] == ACTIVE_MAX) na[mine] = prune(r, active[mine], na[mine], x->lo);
    if (na[mine] == ACTIVE_MAX) return 1;
    active[mine][na[mine]++] = i;
  }
  return 0;
}

/* 1 when any two ranges of different launches in the sorted vector are a hazard, or it is too
 * tangled to tell (every pair, where has_hazard looks at the candidate's pairs only). */
static int any_hazard(const range_vec_t *r) {
  size_t active[ACTIVE_MAX], na = 0;
  for (size_t i = 0; i < r->n; ++i) {
    const fuse_range_t *x = &r->v[i];
    na = prune(r, active, na, x->lo);
    for (size_t k = 0; k < na; ++k)
      if (hazard(&r->v[active[k]], x)) return 1;
    if (na == ACTIVE_MAX) return 1;
    active[na++] = i;
  }
  return 0;
}

static cpu_op_t fused_op(const cpu_op_t *ops, size_t count, uint64_t bytes, unsigned threads) {
  const uint32_t blocks = ops[0].u.kernel.num_blocks;
  uint64_t tile = (uint64_t)blocks * CPU_FUSE_TILE_BYTES / (bytes ? bytes : 1u);
  tile = tile < 1u ? 1u : tile > blocks ? blocks : tile;
  unsigned parts =
      cpu_split_parts(threads, bytes, CPU_KERNEL_SPLIT_BYTES, CPU_KERNEL_PART_BYTES);
  if (parts > blocks) parts = blocks;
  return (cpu_op_t){.type = CPU_OP_FUSED,
                    .u.fused = {.ops = ops, .count = (uint32_t)count, .num_blocks = blocks,
                                .tile_blocks = (uint32_t)tile, .parts = (uint32_t)parts}};
}

/* 1 when `fill` sets f32 data that `update` (an UPDATE_HP launch that accumulates) then
 * accumulates into, chunk for chunk: the same hp ranges in the same blocks. Leaves both
 * parameter blocks in *f and *u. */
static int fill_feeds_update(const cpu_op_t *fill, const cpu_op_t *update, acc_fill_params_t *f,
                             acc_update_hp_params_t *u) {
  if (fill->type != CPU_OP_KERNEL || fill->u.kernel.kernel_id != ACCEL_KERNEL_FILL ||
      update->type != CPU_OP_KERNEL || update->u.kernel.kernel_id != ACCEL_KERNEL_UPDATE_HP ||
      fill->u.kernel.num_blocks != update->u.kernel.num_blocks)
    return 0;
  memcpy(f, fill->u.kernel.params, sizeof *f);
  memcpy(u, update->u.kernel.params, sizeof *u);
  if (f->dtype != ACC_DT_F32 || (u->flags & ACC_HP_ASSIGN) != 0u ||
      f->num_chunks != u->num_chunks || f->num_chunks != fill->u.kernel.num_blocks)
    return 0;
  const acc_chunk_t *fc = (const acc_chunk_t *)(uintptr_t)f->chunks;
  const acc_chunk_t *uc = (const acc_chunk_t *)(uintptr_t)u->chunks;
  for (uint32_t b = 0; b < f->num_chunks; ++b)
    if (fc[b].ptr[0] != uc[b].ptr[1] || fc[b].count != uc[b].count) return 0;
  return 1;
}

size_t cpu_fuse_fold(cpu_op_t *ops, size_t n, uint32_t *folds) {
  size_t out = 0, nfolds = 0;
  for (size_t i = 0; i < n; ++i) {
    acc_fill_params_t f;
    acc_update_hp_params_t u;
    if (i + 1u < n && fill_feeds_update(&ops[i], &ops[i + 1u], &f, &u)) {
      u.flags |= ACC_HP_ASSIGN;
      u.init = f.value;
      /* The parameter blocks are the graph's own copies (cpu_ops_build), writable. */
      memcpy((void *)(uintptr_t)ops[i + 1u].u.kernel.params, &u, sizeof u);
      if (folds) folds[nfolds++] = (uint32_t)i;
      ++i;
    }
    ops[out++] = ops[i];
  }
  return out;
}

size_t cpu_fuse_plan(const cpu_op_t *ops, size_t n, unsigned threads, cpu_op_t *steps) {
  range_vec_t group = {0}, next = {0}, merged = {0};
  accel_cpu_kernel_access_t access;
  int no_memory = 0;
  size_t out = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    uint64_t bytes = 0;
    if (!no_memory && fusable(&ops[i], &access)) {
      group.n = 0;
      no_memory = !collect(&access, 0, &group, &bytes);
      if (!no_memory) qsort(group.v, group.n, sizeof *group.v, by_lo);
      while (!no_memory && j < n && j - i < CPU_FUSE_MAX_OPS && fusable(&ops[j], &access) &&
             ops[j].u.kernel.num_blocks == ops[i].u.kernel.num_blocks) {
        uint64_t more = 0;
        next.n = 0;
        if (!collect(&access, (uint32_t)(j - i), &next, &more)) {
          no_memory = 1;
          break;
        }
        qsort(next.v, next.n, sizeof *next.v, by_lo);
        if (!merge(&group, &next, &merged)) {
          no_memory = 1;
          break;
        }
        if (has_hazard(&merged, (uint32_t)(j - i))) break;
        range_vec_t t = group;
        group = merged;
        merged = t;
        bytes += more;
        ++j;
      }
    }
    steps[out++] = j - i > 1u ? fused_op(&ops[i], j - i, bytes, threads) : ops[i];
    i = j;
  }
  free(group.v);
  free(next.v);
  free(merged.v);
  return out;
}

/* 1 when the launches ops[0, k) may still run as one fused op: each chunk-wise with the first's
 * block count, and no pair a hazard. Their ranges go to *r (one sort), their bytes to *bytes. */
static int group_holds(const cpu_op_t *ops, size_t k, range_vec_t *r, uint64_t *bytes) {
  accel_cpu_kernel_access_t access;
  r->n = 0;
  *bytes = 0;
  for (size_t j = 0; j < k; ++j)
    if (!fusable(&ops[j], &access) || ops[j].u.kernel.num_blocks != ops[0].u.kernel.num_blocks ||
        !collect(&access, (uint32_t)j, r, bytes))
      return 0;
  size_t sorted = 1;
  while (sorted < r->n && r->v[sorted - 1].lo <= r->v[sorted].lo) ++sorted;
  if (sorted < r->n) qsort(r->v, r->n, sizeof *r->v, by_lo); /* launches over distinct tensors
                                                              * in address order come sorted */
  return !any_hazard(r);
}

int cpu_fuse_recheck(const cpu_op_t *ops, size_t n, unsigned threads, cpu_op_t *steps,
                     size_t count) {
  range_vec_t r = {0};
  size_t at = 0, s = 0;
  for (; s < count && at < n; ++s) {
    if (steps[s].type != CPU_OP_FUSED) {
      steps[s] = ops[at++];
      continue;
    }
    const size_t k = steps[s].u.fused.count;
    uint64_t bytes = 0;
    if (k > n - at || !group_holds(&ops[at], k, &r, &bytes)) break;
    steps[s] = fused_op(&ops[at], k, bytes, threads);
    at += k;
  }
  free(r.v);
  return s == count && at == n;
}
