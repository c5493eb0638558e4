/*
 * The DeepSpeed peer of optstep (--peer deepspeed, issue 30): runs tools/deepspeed_peer.py,
 * which times accel (its Python package, on the same memory) and DeepSpeed 0.19.8's CPU Adam
 * in one process on the same buffers, in paired rounds with the AdamW bound loop of
 * bench_baseline.h (the module accel_bench_bound.so), and reads back every variant's
 * milliseconds per round. The statistics are taken here as for accel-bench's own variants:
 * medians and spreads, ratios within each round, % of the bound of the same and the
 * neighbouring rounds. Where DeepSpeed, torch or accel's Python package cannot be imported the
 * peer is reported skipped with the reason, never failed. docs/PERFORMANCE.md says how to build
 * the peer (scripts/peer-deepspeed-setup) and what the variants are.
 */
#ifndef ACCEL_BENCH_DEEPSPEED_H
#define ACCEL_BENCH_DEEPSPEED_H

#include <stdio.h>

#include "bench.h"

/* Runs the peer on sizes[0..n) for rounds rounds at o->torch_threads threads (default: every
 * CPU), writes member "deepspeed" of the open JSON object j and its table on f. *agree is
 * cleared when accel and DeepSpeed disagree beyond the peer's tolerances. Returns 0 (a skip
 * included), 1 when the peer ran but its result could not be read. */
int bench_deepspeed_run(const bench_opts_t *o, const size_t *sizes, size_t n, int rounds,
                        bench_json_t *j, FILE *f, int *agree);

#endif
