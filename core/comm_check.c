/*
 * ACCEL_COMM_CHECK=1: before each collective, the ranks all-gather a fingerprint of what they
 * are about to run (sequence number, kind, dtype, reduce op, root, count) and compare. A rank
 * that issued a different sequence, count, dtype, op or root makes the collective fail on
 * every rank with the same message, instead of corrupting memory or hanging until
 * ACCEL_COMM_TIMEOUT. Costs one extra small all-gather per collective: a debugging aid, like
 * torch.distributed's TORCH_DISTRIBUTED_DEBUG=DETAIL. Point-to-point send/recv are not
 * fingerprinted (only two ranks take part; the MPI engine checks a receive's count).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

typedef struct fingerprint {
  uint64_t seq;
  uint64_t count;
  uint32_t kind, dtype, reduce;
  int32_t root;
} fingerprint_t;

static const char *const kind_names[] = {"all_reduce", "reduce_scatter", "all_gather",
                                         "broadcast", "send", "recv"};
static const char *const reduce_names[] = {"sum", "max", "min"};

static int describe(char *buf, size_t size, const fingerprint_t *f) {
  const char *kind = f->kind < 6 ? kind_names[f->kind] : "?";
  int n = snprintf(buf, size, "collective #%" PRIu64 " %s %s count %" PRIu64, f->seq, kind,
                   accel_dtype_name((accel_dtype_t)f->dtype), f->count);
  if (f->kind == ACCEL_COMM_ALL_REDUCE || f->kind == ACCEL_COMM_REDUCE_SCATTER)
    n += snprintf(buf + n, size - (size_t)n, " %s", f->reduce < 3 ? reduce_names[f->reduce] : "?");
  if (f->kind == ACCEL_COMM_BROADCAST) n += snprintf(buf + n, size - (size_t)n, " root %d", f->root);
  return n;
}

bool accel_comm_check_enabled(void) { return accel_env_flag("ACCEL_COMM_CHECK", false); }

bool accel_comm_check_applies(const accel_comm_op_t *op) {
  return op->kind != ACCEL_COMM_SEND && op->kind != ACCEL_COMM_RECV;
}

accel_status_t accel_comm_check_fingerprints(const accel_comm_engine_vtable_t *ev,
                                             accel_ce_comm_t *impl, int rank, int size,
                                             uint64_t seq, const accel_comm_op_t *op,
                                             double timeout_s) {
  if (!ev->host_all_gather)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "ACCEL_COMM_CHECK: engine '%s' has no host all-gather", ev->name);
  const bool reduces = op->kind == ACCEL_COMM_ALL_REDUCE || op->kind == ACCEL_COMM_REDUCE_SCATTER;
  fingerprint_t mine = {.seq = seq, .count = op->count, .kind = op->kind, .dtype = op->dtype,
                        .reduce = reduces ? op->reduce : 0,
                        .root = op->kind == ACCEL_COMM_BROADCAST ? op->peer : 0};
  fingerprint_t *all = calloc((size_t)size, sizeof *all);
  if (!all) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "ACCEL_COMM_CHECK: out of memory");
  accel_status_t st = ev->host_all_gather(impl, &mine, all, sizeof mine, timeout_s);
  for (int r = 1; st == ACCEL_OK && r < size; ++r) {
    if (memcmp(&all[0], &all[r], sizeof mine) == 0) continue;
    char a[160], b[160];
    describe(a, sizeof a, &all[0]);
    describe(b, sizeof b, &all[r]);
    st = accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                         "ACCEL_COMM_CHECK: ranks issued different collectives: rank 0: %s; "
                         "rank %d: %s (seen on rank %d)", a, r, b, rank);
  }
  free(all);
  return st;
}
