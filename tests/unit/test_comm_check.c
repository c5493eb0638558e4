/*
 * Unit test of the collective check (core/comm_check.c) over a fake two-rank host engine whose
 * host_all_gather counts its calls and answers with a scripted peer fingerprint:
 *  - default ("pattern"): a loop of one repeated collective agrees on its first calls only
 *    (then exchanges nothing: the cost claim of docs/DISTRIBUTED.md), a loop of a period of
 *    four different collectives after its first period and three more; a change agrees again;
 *  - a peer that differs (count, dtype F16 against BF16 of the same size, op) is
 *    INVALID_ARGUMENT naming both sides; an agreement that times out where the table
 *    predicted another collective names the prediction;
 *  - "1" agrees on every collective, "0" on none; send/recv and one-rank communicators never.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "comm_internal.h"

#define TRUE(c) CHECK(c, "%s", #c)

/* What comm_check.c takes from the rest of core. */
static char last_error[1024];
accel_status_t accel_set_error(accel_status_t status, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  memcpy(last_error, buf, sizeof buf);
  return status;
}
const char *accel_last_error(void) { return last_error; } /* (libaccel's is another buffer) */
const char *accel_env(const char *name) { return getenv(name); }
void accel_log(accel_log_level_t level, const char *domain, const char *fmt, ...) {
  (void)level, (void)domain, (void)fmt;
}

/* The fake engine: the peer (rank 1) answers with the caller's fingerprint unless told to
 * differ (a different 32-byte fingerprint) or to time out. */
static int gathers;
static enum { PEER_SAME, PEER_OTHER, PEER_TIMEOUT } peer;
static unsigned char other[64];

static accel_status_t fake_all_gather(accel_ce_comm_t *c, const void *send, void *recv,
                                      size_t bytes, double timeout_s) {
  (void)c, (void)timeout_s;
  gathers++;
  if (peer == PEER_TIMEOUT)
    return accel_set_error(ACCEL_ERROR_BACKEND, "MPI_Iallgather did not complete");
  memcpy(recv, send, bytes);
  memcpy((char *)recv + bytes, peer == PEER_OTHER ? other : send, bytes);
  return ACCEL_OK;
}

static const accel_comm_engine_vtable_t engine = {.name = "fake", .host_engine = 1,
                                                  .host_all_gather = fake_all_gather};

static accel_comm_op_t all_reduce(size_t count, accel_dtype_t dtype, accel_reduce_op_t op) {
  return (accel_comm_op_t){.kind = ACCEL_COMM_ALL_REDUCE, .dtype = dtype, .reduce = op,
                           .count = count};
}

/* Runs op n times; the number of agreements they made. */
static int agreements(accel_comm_checker_t *k, const accel_comm_op_t *op, int n) {
  const int before = gathers;
  for (int i = 0; i < n; ++i) TRUE(accel_comm_checker_run(k, op) == ACCEL_OK);
  return gathers - before;
}

/* The fingerprint the peer reports: what op's would be at sequence number seq (the layout
 * comm_check.c gathers: seq, count, kind, dtype, reduce, root). */
static void peer_reports(const accel_comm_op_t *op, uint64_t seq) {
  const uint64_t words[2] = {seq, op->count};
  const uint32_t small[4] = {op->kind, op->dtype, op->reduce, 0};
  memcpy(other, words, sizeof words);
  memcpy(other + sizeof words, small, sizeof small);
  peer = PEER_OTHER;
}

static void test_pattern(void) {
  accel_comm_checker_t k;
  accel_comm_checker_init(&k, ACCEL_COMM_CHECK_PATTERN, &engine, NULL, 0, 2, 1.0);
  const accel_comm_op_t a = all_reduce(1024, ACCEL_F32, ACCEL_REDUCE_SUM);
  /* one collective repeated: agreed on until three of it predict the fourth */
  TRUE(agreements(&k, &a, ACCEL_COMM_PATTERN_HISTORY + 1) == ACCEL_COMM_PATTERN_HISTORY + 1);
  TRUE(agreements(&k, &a, 1000) == 0);
  /* a period of four: agreed on for its first period and three more, then nothing */
  accel_comm_op_t loop[4] = {all_reduce(64, ACCEL_BF16, ACCEL_REDUCE_SUM),
                             all_reduce(1, ACCEL_F32, ACCEL_REDUCE_MAX),
                             {.kind = ACCEL_COMM_ALL_GATHER, .dtype = ACCEL_F32, .count = 1},
                             {.kind = ACCEL_COMM_BROADCAST, .dtype = ACCEL_F16, .count = 8}};
  int first = 0, later = 0;
  for (int step = 0; step < 50; ++step)
    for (int i = 0; i < 4; ++i) *(step < 2 ? &first : &later) += agreements(&k, &loop[i], 1);
  TRUE(first >= 4 && first <= 4 + ACCEL_COMM_PATTERN_HISTORY);
  TRUE(later == 0);
  /* a change of the loop is agreed on again */
  TRUE(agreements(&k, &a, 1) == 1);
  /* send/recv are not fingerprinted and leave the history alone */
  const accel_comm_op_t send = {.kind = ACCEL_COMM_SEND, .dtype = ACCEL_F32, .count = 3};
  TRUE(agreements(&k, &send, 5) == 0);
}

static void test_mismatch(void) {
  accel_comm_checker_t k;
  accel_comm_checker_init(&k, ACCEL_COMM_CHECK_PATTERN, &engine, NULL, 0, 2, 1.0);
  const accel_comm_op_t f16 = all_reduce(64, ACCEL_F16, ACCEL_REDUCE_SUM);
  const accel_comm_op_t bf16 = all_reduce(64, ACCEL_BF16, ACCEL_REDUCE_SUM);
  peer_reports(&bf16, 0); /* same bytes, another dtype */
  TRUE(accel_comm_checker_run(&k, &f16) == ACCEL_ERROR_INVALID_ARGUMENT);
  TRUE(strstr(last_error, "collective check: ranks issued different collectives") != NULL);
  TRUE(strstr(last_error, "F16") && strstr(last_error, "BF16"));
  const accel_comm_op_t shorter = all_reduce(63, ACCEL_F16, ACCEL_REDUCE_SUM);
  peer_reports(&shorter, 1);
  TRUE(accel_comm_checker_run(&k, &f16) == ACCEL_ERROR_INVALID_ARGUMENT);
  TRUE(strstr(last_error, "count 63") != NULL);
  /* a pattern learnt, then broken by this rank while the peer follows it (never joins) */
  peer = PEER_SAME;
  accel_comm_checker_init(&k, ACCEL_COMM_CHECK_PATTERN, &engine, NULL, 0, 2, 1.0);
  agreements(&k, &f16, 20);
  peer = PEER_TIMEOUT;
  TRUE(accel_comm_checker_run(&k, &shorter) == ACCEL_ERROR_BACKEND);
  TRUE(strstr(last_error, "predicted collective #") != NULL);
  TRUE(strstr(last_error, "did not complete") != NULL);
  peer = PEER_SAME;
}

static void test_modes(void) {
  accel_comm_checker_t k;
  const accel_comm_op_t a = all_reduce(16, ACCEL_F32, ACCEL_REDUCE_SUM);
  accel_comm_checker_init(&k, ACCEL_COMM_CHECK_EVERY, &engine, NULL, 0, 2, 1.0);
  TRUE(agreements(&k, &a, 100) == 100);
  peer_reports(&a, 7); /* the peer is at another collective: the sequence number says so */
  TRUE(accel_comm_checker_run(&k, &a) == ACCEL_ERROR_INVALID_ARGUMENT);
  TRUE(strstr(last_error, "ACCEL_COMM_CHECK: ranks issued different collectives") != NULL);
  peer = PEER_SAME;
  accel_comm_checker_init(&k, ACCEL_COMM_CHECK_OFF, &engine, NULL, 0, 2, 1.0);
  TRUE(agreements(&k, &a, 100) == 0);
  accel_comm_checker_init(&k, ACCEL_COMM_CHECK_EVERY, &engine, NULL, 0, 1, 1.0); /* one rank */
  TRUE(agreements(&k, &a, 10) == 0);
  /* the environment */
  unsetenv("ACCEL_COMM_CHECK");
  TRUE(accel_comm_check_mode() == ACCEL_COMM_CHECK_PATTERN);
  setenv("ACCEL_COMM_CHECK", "0", 1);
  TRUE(accel_comm_check_mode() == ACCEL_COMM_CHECK_OFF);
  setenv("ACCEL_COMM_CHECK", "1", 1);
  TRUE(accel_comm_check_mode() == ACCEL_COMM_CHECK_EVERY);
  unsetenv("ACCEL_COMM_CHECK");
}

int main(void) {
  test_pattern();
  test_mismatch();
  test_modes();
  printf("comm check: %s (%d failures)\n", failures ? "FAIL" : "ok", failures);
  return failures ? 1 : 0;
}
