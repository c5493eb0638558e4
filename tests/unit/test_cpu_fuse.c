/*
 * Unit test of the CPU backend's graph fusion planner (backends/cpu/cpu_fuse.c): which
 * consecutive kernel launches it may run tile by tile, from their declared accesses, and which
 * fills it folds into the update_hp_grads launch after them (cpu_fuse_fold). The
 * launches are never executed here; the addresses are made up. Execution of fused graphs is
 * covered by the CTS in graph and lazy mode (bitwise against eager, including
 * kernels_cross_block_order, which a wrong plan would break).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "accel_kernel_abi_host.h"
#include "accel_kernel_ids.h"
#include "check.h"
#include "cpu_fuse.h"

enum { MAX_OPS = 40, BLOCKS = 4 };

/* Made-up device addresses: tensor t of a list starts at base + t * 1 MiB. */
#define MIB 0x100000ull

typedef struct list {
  acc_chunk_t chunks[BLOCKS];
} list_t;

/* BLOCKS chunks of `count` elements, slot k of chunk b at base[k] + order[b] * MIB. */
static void make_list(list_t *l, const uint64_t base[4], const unsigned order[BLOCKS],
                      uint32_t count) {
  memset(l, 0, sizeof *l);
  for (unsigned b = 0; b < BLOCKS; ++b) {
    for (unsigned k = 0; k < 4; ++k)
      l->chunks[b].ptr[k] = base[k] ? base[k] + order[b] * MIB : 0;
    l->chunks[b].count = count;
    l->chunks[b].tensor = b;
  }
}

static cpu_op_t kernel_op(uint32_t id, const void *params, uint32_t blocks) {
  return (cpu_op_t){.type = CPU_OP_KERNEL,
                    .u.kernel = {.fn = accel_cpu_kernel_lookup(id), .params = params,
                                 .kernel_id = id, .num_blocks = blocks}};
}

static uint64_t addr(const void *p) { return (uint64_t)(uintptr_t)p; }

static const unsigned IDENTITY[BLOCKS] = {0, 1, 2, 3};
static const unsigned SWAPPED[BLOCKS] = {1, 0, 3, 2};

/* Plans ops and checks the shape: sizes[i] launches in step i (1: the op itself). */
static void expect_plan(const char *what, const cpu_op_t *ops, size_t n, unsigned threads,
                        const unsigned *sizes, size_t nsteps) {
  cpu_op_t steps[MAX_OPS];
  size_t got = cpu_fuse_plan(ops, n, threads, steps);
  CHECK(got == nsteps, "%s: %zu steps, want %zu", what, got, nsteps);
  if (got != nsteps) return;
  size_t at = 0;
  for (size_t i = 0; i < got; ++i) {
    unsigned size = steps[i].type == CPU_OP_FUSED ? steps[i].u.fused.count : 1u;
    CHECK(size == sizes[i], "%s: step %zu has %u launches, want %u", what, i, size, sizes[i]);
    if (steps[i].type == CPU_OP_FUSED) {
      CHECK(steps[i].u.fused.ops == &ops[at], "%s: step %zu starts at the wrong op", what, i);
      CHECK(size > 1u && steps[i].u.fused.tile_blocks >= 1u &&
                steps[i].u.fused.tile_blocks <= steps[i].u.fused.num_blocks &&
                steps[i].u.fused.parts >= 1u && steps[i].u.fused.parts <= threads,
            "%s: step %zu: tile %u parts %u", what, i, steps[i].u.fused.tile_blocks,
            steps[i].u.fused.parts);
    } else {
      CHECK(steps[i].type == ops[at].type &&
                (ops[at].type != CPU_OP_KERNEL ||
                 steps[i].u.kernel.params == ops[at].u.kernel.params),
            "%s: step %zu is not op %zu", what, i, at);
    }
    at += size;
  }
}

int main(void) {
  static float scalars[16]; /* device scalars: only their addresses matter */
  static acc_adam_args_t args;
  const uint64_t hp_base[4] = {0x20000000ull, 0, 0, 0};
  const uint64_t lphp_base[4] = {0x10000000ull, 0x20000000ull, 0, 0};
  const uint64_t adam_base[4] = {0x30000000ull, 0x20000000ull, 0x40000000ull, 0x50000000ull};
  const uint32_t count = 60000;
  list_t hp, lphp, adam, hp_swapped, lphp_swapped;
  make_list(&hp, hp_base, IDENTITY, count);
  make_list(&lphp, lphp_base, IDENTITY, count);
  make_list(&adam, adam_base, IDENTITY, count);
  make_list(&hp_swapped, hp_base, SWAPPED, count);
  make_list(&lphp_swapped, lphp_base, SWAPPED, count);

  /* The optimizer step: [fill, update_hp, unscale, norm partials] norm final [clip, adam]. */
  acc_fill_params_t fill = {addr(hp.chunks), BLOCKS, ACC_DT_F32, 0.0f, 0};
  acc_update_hp_params_t upd = {addr(lphp.chunks), BLOCKS, ACC_DT_BF16, ACC_HP_ZERO_LP, 0.0f};
  acc_unscale_params_t unscale = {addr(hp.chunks), addr(&scalars[0]), addr(&scalars[1]), BLOCKS,
                                  ACC_DT_F32};
  acc_norm_partial_params_t partial = {addr(hp.chunks), addr(&scalars[4]), BLOCKS, ACC_DT_F32,
                                       ACC_NORM_L2, 2.0f};
  acc_norm_final_params_t final = {addr(&scalars[4]), addr(&scalars[2]), BLOCKS, ACC_NORM_L2,
                                   2.0f, 0};
  acc_clip_params_t clip = {addr(hp.chunks), addr(&scalars[2]), addr(&scalars[3]), BLOCKS,
                            ACC_DT_F32, 1.0f, 1e-6f};
  acc_adam_params_t adam_p = {addr(adam.chunks), addr(&args), BLOCKS, ACC_DT_F32};
  {
    cpu_op_t ops[] = {
        (cpu_op_t){.type = CPU_OP_MEMCPY,
                   .u.copy = {.dst = (void *)(uintptr_t)0x10000000ull, .src = scalars,
                              .size = 64}},
        kernel_op(ACCEL_KERNEL_FILL, &fill, BLOCKS),
        kernel_op(ACCEL_KERNEL_UPDATE_HP, &upd, BLOCKS),
        kernel_op(ACCEL_KERNEL_UNSCALE, &unscale, BLOCKS),
        kernel_op(ACCEL_KERNEL_NORM_PARTIAL, &partial, BLOCKS),
        kernel_op(ACCEL_KERNEL_NORM_FINAL, &final, 1),
        kernel_op(ACCEL_KERNEL_CLIP, &clip, BLOCKS),
        kernel_op(ACCEL_KERNEL_ADAM, &adam_p, BLOCKS),
    };
    const unsigned want[] = {1, 4, 1, 2};
    expect_plan("optimizer step", ops, 8, 2, want, 4);
    cpu_op_t steps[MAX_OPS];
    cpu_fuse_plan(ops, 8, 2, steps);
    /* 4 blocks of 60000 elements over fill+update_hp+unscale+norm: ~5 MB, split in 2 parts. */
    CHECK(steps[1].u.fused.parts == 2u && steps[1].u.fused.tile_blocks == 1u,
          "parts %u tile %u", steps[1].u.fused.parts, steps[1].u.fused.tile_blocks);
    cpu_fuse_plan(ops, 8, 1, steps);
    CHECK(steps[1].u.fused.parts == 1u, "one thread: parts %u", steps[1].u.fused.parts);
  }
  {
    /* Adam reads the found_inf that unscale writes (inside its args): not fused. */
    acc_unscale_params_t into_args = unscale;
    into_args.found_inf = addr(&args.found_inf);
    cpu_op_t ops[] = {kernel_op(ACCEL_KERNEL_UNSCALE, &into_args, BLOCKS),
                      kernel_op(ACCEL_KERNEL_ADAM, &adam_p, BLOCKS)};
    const unsigned split[] = {1, 1};
    expect_plan("scalar written then read", ops, 2, 2, split, 2);
    const unsigned fused[] = {2};
    ops[0] = kernel_op(ACCEL_KERNEL_UNSCALE, &unscale, BLOCKS);
    expect_plan("scalar elsewhere", ops, 2, 2, fused, 1);
  }
  {
    /* Block b of the second launch reads what block b^1 of the first writes: not fused. */
    acc_update_hp_params_t upd_swapped = {addr(lphp_swapped.chunks), BLOCKS, ACC_DT_BF16,
                                          ACC_HP_ZERO_LP, 0.0f};
    acc_scale_params_t scale_swapped = {addr(hp_swapped.chunks), addr(&scalars[5]), BLOCKS,
                                        ACC_DT_F32};
    acc_norm_partial_params_t partial_swapped = partial;
    partial_swapped.chunks = addr(hp_swapped.chunks);
    cpu_op_t ops[] = {kernel_op(ACCEL_KERNEL_UPDATE_HP, &upd, BLOCKS),
                      kernel_op(ACCEL_KERNEL_UPDATE_HP, &upd_swapped, BLOCKS)};
    const unsigned split[] = {1, 1};
    expect_plan("cross-block write/write", ops, 2, 2, split, 2);
    ops[1] = kernel_op(ACCEL_KERNEL_SCALE, &scale_swapped, BLOCKS);
    expect_plan("cross-block write/read", ops, 2, 2, split, 2);
    /* Two readers of the same memory in a different block order do not conflict. */
    ops[0] = kernel_op(ACCEL_KERNEL_NORM_PARTIAL, &partial, BLOCKS);
    acc_norm_partial_params_t partial2 = partial_swapped;
    partial2.partials = addr(&scalars[8]);
    ops[1] = kernel_op(ACCEL_KERNEL_NORM_PARTIAL, &partial2, BLOCKS);
    const unsigned fused[] = {2};
    expect_plan("cross-block read/read", ops, 2, 2, fused, 1);
    /* Both write partials[b] from block b: the later launch still writes last. */
    ops[1] = kernel_op(ACCEL_KERNEL_NORM_PARTIAL, &partial_swapped, BLOCKS);
    expect_plan("same partial slots", ops, 2, 2, fused, 1);
    /* Partials one slot apart: block b of the second writes what block b+1 of the first does. */
    partial2.partials = addr(&scalars[5]);
    ops[1] = kernel_op(ACCEL_KERNEL_NORM_PARTIAL, &partial2, BLOCKS);
    expect_plan("shifted partial slots", ops, 2, 2, split, 2);
  }
  {
    /* A partial overlap between blocks: the second list starts half a tensor later. */
    list_t shifted = hp;
    for (unsigned b = 0; b < BLOCKS; ++b) shifted.chunks[b].ptr[0] += count * 2u;
    acc_fill_params_t fill_shifted = {addr(shifted.chunks), BLOCKS, ACC_DT_F32, 1.0f, 0};
    cpu_op_t ops[] = {kernel_op(ACCEL_KERNEL_FILL, &fill, BLOCKS),
                      kernel_op(ACCEL_KERNEL_FILL, &fill_shifted, BLOCKS)};
    const unsigned fused[] = {2}; /* chunk b overlaps only chunk b of the other list */
    expect_plan("overlap within the same block", ops, 2, 2, fused, 1);
    for (unsigned b = 0; b < BLOCKS; ++b) shifted.chunks[b].ptr[0] = hp.chunks[b].ptr[0] + MIB - 8u;
    const unsigned split[] = {1, 1}; /* chunk b now also overlaps chunk b+1 */
    expect_plan("overlap into the next block", ops, 2, 2, split, 2);
  }
  {
    /* Different block counts, a non-kernel op and the launch cap end a group. */
    acc_fill_params_t fill3 = fill;
    fill3.num_chunks = 3;
    cpu_op_t ops[MAX_OPS];
    ops[0] = kernel_op(ACCEL_KERNEL_FILL, &fill, BLOCKS);
    ops[1] = kernel_op(ACCEL_KERNEL_FILL, &fill3, 3);
    const unsigned split[] = {1, 1};
    expect_plan("block counts differ", ops, 2, 2, split, 2);
    ops[1] = (cpu_op_t){.type = CPU_OP_MEMSET,
                        .u.fill = {.dst = (void *)(uintptr_t)0x90000000ull, .size = 8}};
    ops[2] = kernel_op(ACCEL_KERNEL_FILL, &fill, BLOCKS);
    const unsigned around[] = {1, 1, 1};
    expect_plan("memset between", ops, 3, 2, around, 3);
    for (unsigned i = 0; i < 20; ++i) ops[i] = kernel_op(ACCEL_KERNEL_FILL, &fill, BLOCKS);
    const unsigned capped[] = {CPU_FUSE_MAX_OPS, 20 - CPU_FUSE_MAX_OPS};
    expect_plan("launch cap", ops, 20, 2, capped, 2);
    /* A clip with no chunks runs one block that only stores the coefficient: never fused. */
    acc_clip_params_t clip0 = clip;
    clip0.num_chunks = 0;
    ops[0] = kernel_op(ACCEL_KERNEL_CLIP, &clip0, 1);
    acc_fill_params_t fill1 = fill;
    fill1.num_chunks = 1;
    ops[1] = kernel_op(ACCEL_KERNEL_FILL, &fill1, 1);
    expect_plan("clip without chunks", ops, 2, 2, split, 2);
  }
  {
    /* A fill of hp that the next launch accumulates into folds into it (ACC_HP_ASSIGN). */
    acc_fill_params_t f = {addr(hp.chunks), BLOCKS, ACC_DT_F32, -0.0f, 0};
    acc_update_hp_params_t u = upd;
    cpu_op_t ops[] = {kernel_op(ACCEL_KERNEL_FILL, &f, BLOCKS),
                      kernel_op(ACCEL_KERNEL_UPDATE_HP, &u, BLOCKS),
                      kernel_op(ACCEL_KERNEL_UNSCALE, &unscale, BLOCKS),
                      kernel_op(ACCEL_KERNEL_NORM_PARTIAL, &partial, BLOCKS)};
    uint32_t folds[2] = {99, 99};
    size_t n = cpu_fuse_fold(ops, 4, folds);
    CHECK(n == 3 && folds[0] == 0u && folds[1] == 99u &&
              ops[0].u.kernel.kernel_id == ACCEL_KERNEL_UPDATE_HP &&
              ops[0].u.kernel.params == &u && ops[1].u.kernel.params == &unscale &&
              ops[2].u.kernel.params == &partial,
          "fold: %zu ops", n);
    CHECK(u.flags == (ACC_HP_ZERO_LP | ACC_HP_ASSIGN) && u.init == 0.0f && signbit(u.init) &&
              u.chunks == upd.chunks && u.num_chunks == BLOCKS && u.lp_dtype == ACC_DT_BF16,
          "fold: flags %u init %g", u.flags, (double)u.init);
    const unsigned fused[] = {3};
    expect_plan("folded step", ops, n, 2, fused, 1);

    /* Not folded: the update's hp in another block order, a bf16 fill, other block counts, a
     * launch between them, an update that already assigns, chunks of other lengths. */
    acc_update_hp_params_t swapped = upd;
    swapped.chunks = addr(lphp_swapped.chunks);
    acc_fill_params_t bf16_fill = f, f3 = f, short_fill = f;
    bf16_fill.dtype = ACC_DT_BF16;
    f3.num_chunks = 3;
    list_t hp_short;
    make_list(&hp_short, hp_base, IDENTITY, count - 1u);
    short_fill.chunks = addr(hp_short.chunks);
    acc_update_hp_params_t assigning = upd;
    assigning.flags |= ACC_HP_ASSIGN;
    const struct {
      const char *what;
      cpu_op_t a, b;
    } keep[] = {
        {"other block order", kernel_op(ACCEL_KERNEL_FILL, &f, BLOCKS),
         kernel_op(ACCEL_KERNEL_UPDATE_HP, &swapped, BLOCKS)},
        {"bf16 fill", kernel_op(ACCEL_KERNEL_FILL, &bf16_fill, BLOCKS),
         kernel_op(ACCEL_KERNEL_UPDATE_HP, &upd, BLOCKS)},
        {"block counts", kernel_op(ACCEL_KERNEL_FILL, &f3, 3),
         kernel_op(ACCEL_KERNEL_UPDATE_HP, &upd, BLOCKS)},
        {"update first", kernel_op(ACCEL_KERNEL_UPDATE_HP, &upd, BLOCKS),
         kernel_op(ACCEL_KERNEL_FILL, &f, BLOCKS)},
        {"already assigns", kernel_op(ACCEL_KERNEL_FILL, &f, BLOCKS),
         kernel_op(ACCEL_KERNEL_UPDATE_HP, &assigning, BLOCKS)},
        {"shorter chunks", kernel_op(ACCEL_KERNEL_FILL, &short_fill, BLOCKS),
         kernel_op(ACCEL_KERNEL_UPDATE_HP, &upd, BLOCKS)},
    };
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; ++k) {
      const acc_update_hp_params_t before = upd, before_assigning = assigning;
      cpu_op_t pair[2] = {keep[k].a, keep[k].b};
      CHECK(cpu_fuse_fold(pair, 2, NULL) == 2 &&
                pair[0].u.kernel.params == keep[k].a.u.kernel.params,
            "%s: folded", keep[k].what);
      CHECK(memcmp(&before, &upd, sizeof upd) == 0 &&
                memcmp(&before_assigning, &assigning, sizeof assigning) == 0,
            "%s: parameters changed", keep[k].what);
    }
    cpu_op_t apart[] = {kernel_op(ACCEL_KERNEL_FILL, &f, BLOCKS),
                        kernel_op(ACCEL_KERNEL_UNSCALE, &unscale, BLOCKS),
                        kernel_op(ACCEL_KERNEL_UPDATE_HP, &upd, BLOCKS)};
    CHECK(cpu_fuse_fold(apart, 3, NULL) == 3 && upd.flags == ACC_HP_ZERO_LP,
          "launch between: folded");
  }
  {
    /* An update's new arguments: the plan stands while its groups stay free of hazards (tiles
     * from the new sizes, single ops copied anew); a hazard inside a group refuses it. */
    list_t other = hp, shorter;
    for (unsigned b = 0; b < BLOCKS; ++b) other.chunks[b].ptr[0] += count * 2u;
    make_list(&shorter, adam_base, IDENTITY, count / 16u);
    acc_fill_params_t first = fill, second = fill;
    second.chunks = addr(other.chunks);
    cpu_op_t ops[] = {(cpu_op_t){.type = CPU_OP_MEMSET,
                                 .u.fill = {.dst = (void *)(uintptr_t)0x90000000ull, .size = 8}},
                      kernel_op(ACCEL_KERNEL_FILL, &first, BLOCKS),
                      kernel_op(ACCEL_KERNEL_FILL, &second, BLOCKS)};
    cpu_op_t steps[MAX_OPS];
    size_t count_steps = cpu_fuse_plan(ops, 3, 2, steps);
    CHECK(count_steps == 2 && steps[1].type == CPU_OP_FUSED && steps[1].u.fused.tile_blocks == 2u,
          "before: %zu steps, tile %u", count_steps, steps[1].u.fused.tile_blocks);
    ops[0].u.fill.size = 16;
    CHECK(cpu_fuse_recheck(ops, 3, 2, steps, count_steps) && steps[0].u.fill.size == 16u &&
              steps[1].type == CPU_OP_FUSED && steps[1].u.fused.ops == &ops[1] &&
              steps[1].u.fused.tile_blocks == 2u,
          "same addresses: the plan stands");
    first.chunks = addr(shorter.chunks); /* one sixteenth of the bytes: every block in a tile */
    CHECK(cpu_fuse_recheck(ops, 3, 2, steps, count_steps) &&
              steps[1].u.fused.tile_blocks == BLOCKS,
          "shorter tensors: tile %u", steps[1].u.fused.tile_blocks);
    for (unsigned b = 0; b < BLOCKS; ++b) other.chunks[b].ptr[0] = shorter.chunks[b].ptr[0] + MIB;
    CHECK(!cpu_fuse_recheck(ops, 3, 2, steps, count_steps),
          "chunk b of the second fill is chunk b+1 of the first: the group must be refused");
    other = hp;
    second.num_chunks = 3;
    ops[2].u.kernel.num_blocks = 3;
    CHECK(!cpu_fuse_recheck(ops, 3, 2, steps, count_steps), "block counts differ: refused");
    CHECK(!cpu_fuse_recheck(ops, 2, 2, steps, count_steps), "fewer ops than planned: refused");
  }
  if (failures == 0) printf("cpu fusion planner: all checks passed\n");
  return failures != 0;
}
