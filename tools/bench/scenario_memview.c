/*
 * memview (issue 36, docs/MEMORY.md): what memory you can see costs.
 *  - alloc+free of 4 KiB with no memory tag vs inside accel_memory_tag_push, paired rounds
 *    (the untagged pair is the one `accel-bench overhead` measures; compare that scenario
 *    between builds with scripts/bench-ab for "unchanged with tags and tracing off");
 *  - accel_memory_snapshot of --ops live blocks (default 10 000), JSON size included;
 *  - accel_memory_stats_ex over the same blocks (it walks every segment).
 */
#include <stdlib.h>

#include "bench.h"

#define PAIRS 20000

typedef struct alloc_ctx {
  accel_device_t *dev;
  int tagged;
} alloc_ctx_t;

static double alloc_pairs(void *arg) {
  alloc_ctx_t *c = arg;
  if (c->tagged && accel_memory_tag_push("bench") != ACCEL_OK) return -1;
  uint64_t t0 = bench_now_ns();
  int ok = 1;
  for (int i = 0; i < PAIRS && ok; i++) {
    void *p = NULL;
    ok = accel_malloc(c->dev, 4096, &p) == ACCEL_OK && accel_free(c->dev, p) == ACCEL_OK;
  }
  uint64_t t1 = bench_now_ns();
  if (c->tagged) accel_memory_tag_pop(); /* also after a failure: the thread's tags stay even */
  if (!ok) return bench_fail(ACCEL_ERROR_BACKEND, "alloc+free"), -1;
  return (double)(t1 - t0) / 1e6;
}

typedef struct snap_ctx {
  accel_device_t *dev;
  size_t bytes;
} snap_ctx_t;

static double snapshot_once(void *arg) {
  snap_ctx_t *c = arg;
  char *json = NULL;
  uint64_t t0 = bench_now_ns();
  if (accel_memory_snapshot(c->dev, &json, &c->bytes) != ACCEL_OK)
    return bench_fail(ACCEL_ERROR_BACKEND, "accel_memory_snapshot"), -1;
  accel_memory_snapshot_free(json);
  return (double)(bench_now_ns() - t0) / 1e6;
}

static double stats_ex_once(void *arg) {
  snap_ctx_t *c = arg;
  accel_memory_stats_ex_t ex = {.struct_size = sizeof ex};
  uint64_t t0 = bench_now_ns();
  if (accel_memory_stats_ex(c->dev, &ex) != ACCEL_OK)
    return bench_fail(ACCEL_ERROR_BACKEND, "accel_memory_stats_ex"), -1;
  return (double)(bench_now_ns() - t0) / 1e6;
}

/* Every other block freed: the snapshot lists live and free blocks alike. */
static int fill_blocks(accel_device_t *dev, void **blocks, size_t n) {
  static const char *tags[] = {"params", "grads", "optimizer", "activations"};
  for (size_t i = 0; i < n; i++) {
    if (i % 1000 == 0 && (i == 0 || accel_memory_tag_pop() == ACCEL_OK))
      accel_memory_tag_push(tags[(i / 1000) % 4]);
    if (accel_malloc(dev, 4096 + 512 * (i % 7), &blocks[i]) != ACCEL_OK)
      return bench_fail(ACCEL_ERROR_OUT_OF_MEMORY, "accel_malloc");
  }
  if (n) accel_memory_tag_pop();
  for (size_t i = 1; i < n; i += 2) accel_free(dev, blocks[i]), blocks[i] = NULL;
  return 0;
}

int bench_memview(const bench_opts_t *o) {
  const int rounds = o->repeat ? o->repeat : 15;
  const size_t nblocks = o->ops ? o->ops : 10000;
  accel_device_t *dev = NULL;
  if (bench_open_device(o, &dev)) return 1;
  double *ms = calloc(4 * (size_t)rounds, sizeof *ms), *tmp = calloc((size_t)rounds, sizeof *tmp);
  void **blocks = calloc(nblocks ? nblocks : 1, sizeof *blocks);
  int rc = 1;
  if (!ms || !tmp || !blocks) goto done;
  alloc_ctx_t plain = {dev, 0}, tagged = {dev, 1};
  bench_sample_fn afn[] = {alloc_pairs, alloc_pairs};
  void *actx[] = {&plain, &tagged};
  if (bench_rounds(rounds, 2, afn, actx, ms)) goto done;
  if (fill_blocks(dev, blocks, nblocks)) goto done;
  snap_ctx_t sc = {dev, 0};
  bench_sample_fn sfn[] = {snapshot_once, stats_ex_once};
  void *sctx[] = {&sc, &sc};
  if (bench_rounds(rounds, 2, sfn, sctx, ms + 2 * rounds)) goto done;
  bench_stats_t untag = bench_stats_copy(ms, rounds, tmp);
  bench_stats_t tag = bench_stats_copy(ms + rounds, rounds, tmp);
  bench_stats_t ratio = bench_ratio_stats(ms + rounds, ms, rounds, 1.0, tmp);
  bench_stats_t snap = bench_stats_copy(ms + 2 * rounds, rounds, tmp);
  bench_stats_t sex = bench_stats_copy(ms + 3 * rounds, rounds, tmp);
  bench_machine_t m;
  FILE *f = bench_report_begin(o, dev, &m);
  const double per = 1e6 / PAIRS;
  fprintf(f, "memview: %d paired rounds; medians [min..max]\n", rounds);
  fprintf(f, "alloc+free 4 KiB, no tag   %8.1f ns [%.1f..%.1f]\n", untag.median * per,
          untag.min * per, untag.max * per);
  fprintf(f, "alloc+free 4 KiB, tagged   %8.1f ns [%.1f..%.1f]  tagged/untagged %.3f "
             "[%.3f..%.3f]\n", tag.median * per, tag.min * per, tag.max * per, ratio.median,
          ratio.min, ratio.max);
  fprintf(f, "snapshot of %zu blocks     %8.3f ms [%.3f..%.3f], %zu bytes of JSON\n",
          nblocks, snap.median, snap.min, snap.max, sc.bytes);
  fprintf(f, "accel_memory_stats_ex      %8.3f ms [%.3f..%.3f]\n", sex.median, sex.min,
          sex.max);
  bench_json_t j;
  bench_json_begin_report(&j, o, "memview", &m);
  bench_json_int(&j, "rounds", rounds);
  bench_json_int(&j, "blocks", (long long)nblocks);
  bench_json_stats(&j, "alloc_free_ms_per_20000", &untag);
  bench_json_stats(&j, "alloc_free_tagged_ms_per_20000", &tag);
  bench_json_stats(&j, "tagged_over_untagged", &ratio);
  bench_json_stats(&j, "snapshot_ms", &snap);
  bench_json_int(&j, "snapshot_bytes", (long long)sc.bytes);
  bench_json_stats(&j, "stats_ex_ms", &sex);
  bench_json_end_object(&j);
  rc = 0;
done:
  for (size_t i = 0; blocks && i < nblocks; i++)
    if (blocks[i]) accel_free(dev, blocks[i]);
  free(blocks);
  free(ms);
  free(tmp);
  accel_device_close(dev);
  return rc;
}
