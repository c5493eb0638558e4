/*
 * The collective check: ranks that issued different collectives (count, dtype, reduce op,
 * root, kind, or an extra one) get the same INVALID_ARGUMENT on every rank, and the collective
 * does not run. MPI itself detects none of this reliably: Open MPI 4.1 corrupts its heap on an
 * all-reduce of 1024 floats against 1023 (a segfault), completes 8192 against 8191 on both
 * ranks with no error, and at 64 floats reports MPI_ERR_TRUNCATE on the shorter rank while the
 * longer one finishes with garbage; F16 against BF16 of one count looks the same to it. So the
 * ranks must agree before the data moves, and agreeing costs a message.
 *
 * ACCEL_COMM_CHECK selects how often they agree, by an all-gather of each rank's fingerprint
 * of the collective (sequence number, kind, dtype, reduce op, root, count) through the
 * engine's host_all_gather (on a communicator of its own: it never meets a data collective):
 *  - unset (the default), "pattern": only where the sequence so far does not predict the
 *    collective. Every communicator keeps a table: the fingerprints of the last three
 *    collectives -> the one that followed them, filled only with collectives the ranks agreed
 *    on (or that the table predicted), so it is the same on every rank. A collective the table
 *    predicts runs at once: a training loop's steps, after its first iterations, exchange no
 *    extra message (the check is a hash and a compare). One it does not predict is agreed on
 *    first. A rank that breaks a pattern the others follow agrees alone while they run the
 *    predicted collective: nothing is exchanged between the two, both wait until
 *    ACCEL_COMM_TIMEOUT, and every rank fails (the deviating one names the collective it issued
 *    and the predicted one); a rank is never left with a silent result.
 *  - "1": every collective is agreed on first (a debugging aid, TORCH_DISTRIBUTED_DEBUG style:
 *    every mismatch reported at once, at one extra small all-gather per collective).
 *  - "0": none (mismatches are then undefined behaviour of MPI).
 * Host engines only (MPI); send/recv are not fingerprinted (only two ranks take part; the MPI
 * engine checks a receive's count); a one-rank communicator has nothing to compare.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"
#include "core_util.h"
#include "hashtab.h"
#include "log.h"

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
  if (f->kind == ACCEL_COMM_BROADCAST)
    n += snprintf(buf + n, size - (size_t)n, " root %d", f->root);
  return n;
}

static fingerprint_t fingerprint_of(const accel_comm_op_t *op, uint64_t seq) {
  const bool reduces = op->kind == ACCEL_COMM_ALL_REDUCE || op->kind == ACCEL_COMM_REDUCE_SCATTER;
  return (fingerprint_t){.seq = seq, .count = op->count, .kind = op->kind, .dtype = op->dtype,
                         .reduce = reduces ? op->reduce : 0,
                         .root = op->kind == ACCEL_COMM_BROADCAST ? op->peer : 0};
}

/* The fingerprint but its sequence number, in one word (what the table predicts). */
static uint64_t packed(const fingerprint_t *f) {
  return (uint64_t)f->kind | (uint64_t)f->dtype << 8 | (uint64_t)f->reduce << 16 |
         (uint64_t)(uint32_t)f->root << 32;
}

static fingerprint_t unpacked(uint64_t meta, uint64_t count, uint64_t seq) {
  return (fingerprint_t){.seq = seq, .count = count, .kind = meta & 0xff,
                         .dtype = (meta >> 8) & 0xff, .reduce = (meta >> 16) & 0xff,
                         .root = (int32_t)(uint32_t)(meta >> 32)};
}

accel_comm_check_mode_t accel_comm_check_mode(void) {
  const char *e = accel_env("ACCEL_COMM_CHECK");
  if (!e || !*e || strcmp(e, "pattern") == 0) return ACCEL_COMM_CHECK_PATTERN;
  if (strcmp(e, "0") == 0) return ACCEL_COMM_CHECK_OFF;
  if (strcmp(e, "1") != 0)
    accel_log(ACCEL_LOG_WARN, "comm", "ACCEL_COMM_CHECK=%s is not 0, 1 or pattern; using 1", e);
  return ACCEL_COMM_CHECK_EVERY;
}

void accel_comm_checker_init(accel_comm_checker_t *k, accel_comm_check_mode_t mode,
                             const accel_comm_engine_vtable_t *ev, accel_ce_comm_t *impl,
                             int rank, int size, double timeout_s) {
  memset(k, 0, sizeof *k);
  k->mode = ev->host_engine && size > 1 ? mode : ACCEL_COMM_CHECK_OFF;
  k->ev = ev;
  k->impl = impl;
  k->rank = rank;
  k->size = size;
  k->timeout_s = timeout_s;
}

/* The agreement: every rank's fingerprint all-gathered and compared. */
static accel_status_t agree(const accel_comm_checker_t *k, const fingerprint_t *mine) {
  const char *what = k->mode == ACCEL_COMM_CHECK_EVERY ? "ACCEL_COMM_CHECK" : "collective check";
  if (!k->ev->host_all_gather)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED, "%s: engine '%s' has no host all-gather",
                           what, k->ev->name);
  fingerprint_t *all = calloc((size_t)k->size, sizeof *all);
  if (!all) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
  accel_status_t st = k->ev->host_all_gather(k->impl, mine, all, sizeof *mine, k->timeout_s);
  for (int r = 1; st == ACCEL_OK && r < k->size; ++r) {
    if (memcmp(&all[0], &all[r], sizeof *mine) == 0) continue;
    char a[160], b[160];
    describe(a, sizeof a, &all[0]);
    describe(b, sizeof b, &all[r]);
    st = accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: ranks issued different collectives: rank 0: %s; rank %d: %s (seen "
                         "on rank %d)", what, a, r, b, k->rank);
  }
  free(all);
  return st;
}

/* The table's slot for the current history, with its key. */
static accel_comm_pattern_slot_t *slot_of(accel_comm_checker_t *k, uint64_t *key) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < ACCEL_COMM_PATTERN_HISTORY; ++i)
    h = accel_hash_fold(h, __atomic_load_n(&k->history[i], __ATOMIC_RELAXED));
  *key = h | 1u; /* never 0: 0 marks an empty slot */
  return &k->slots[h % ACCEL_COMM_PATTERN_SLOTS];
}

/* A failed agreement of a collective the table predicted otherwise: most likely the other
 * ranks followed the prediction and never joined; say so. */
static accel_status_t broke_pattern(const accel_comm_checker_t *k, accel_status_t st,
                                    const fingerprint_t *mine, const fingerprint_t *predicted) {
  if (st == ACCEL_ERROR_INVALID_ARGUMENT) return st; /* the ranks met and differ: named */
  char a[160], b[160];
  describe(a, sizeof a, mine);
  describe(b, sizeof b, predicted);
  return accel_set_error(st, "collective check: rank %d issued %s where the collectives so far "
                             "predicted %s; ranks that followed the prediction run it and do not "
                             "join the check (ranks issued different collectives?): %s",
                         k->rank, a, b, accel_last_error());
}

accel_status_t accel_comm_checker_run(accel_comm_checker_t *k, const accel_comm_op_t *op) {
  if (k->mode == ACCEL_COMM_CHECK_OFF || op->kind >= ACCEL_COMM_SEND) /* point to point */
    return ACCEL_OK;
  /* one collective of a communicator at a time (MPI's rule): plain loads and stores, atomic
   * only so that an erroneous program overlapping two is no data race */
  const uint64_t seq = __atomic_load_n(&k->seq, __ATOMIC_RELAXED);
  __atomic_store_n(&k->seq, seq + 1, __ATOMIC_RELAXED);
  const fingerprint_t mine = fingerprint_of(op, seq);
  const uint64_t meta = packed(&mine);
  uint64_t key = 0;
  accel_comm_pattern_slot_t *slot = slot_of(k, &key);
  const bool known = __atomic_load_n(&slot->key, __ATOMIC_RELAXED) == key;
  const uint64_t pmeta = __atomic_load_n(&slot->meta, __ATOMIC_RELAXED);
  const uint64_t pcount = __atomic_load_n(&slot->count, __ATOMIC_RELAXED);
  if (k->mode == ACCEL_COMM_CHECK_EVERY || !known || pmeta != meta || pcount != mine.count) {
    accel_status_t st = agree(k, &mine);
    if (st != ACCEL_OK) {
      const fingerprint_t predicted = unpacked(pmeta, pcount, seq);
      return known ? broke_pattern(k, st, &mine, &predicted) : st;
    }
    __atomic_store_n(&slot->key, key, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->meta, meta, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->count, mine.count, __ATOMIC_RELAXED);
  }
  for (int i = ACCEL_COMM_PATTERN_HISTORY - 1; i > 0; --i)
    __atomic_store_n(&k->history[i], __atomic_load_n(&k->history[i - 1], __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
  __atomic_store_n(&k->history[0], accel_hash_fold(meta, mine.count), __ATOMIC_RELAXED);
  return ACCEL_OK;
}
