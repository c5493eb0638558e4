/*
 * A test-only host engine (libaccelcomm-fuzzhost.so) for the API fuzzer: every communicator
 * has one rank and needs no MPI, so the fuzzer can issue collectives on a live communicator
 * (eager, on the calling thread of an idle CPU stream, queued, captured) and check them against
 * its model. A one-rank collective copies send to recv (all-reduce, reduce-scatter,
 * all-gather) or leaves the buffer as it is (broadcast, in place).
 */
#include <accel/accel_comm_engine.h>
#include <stdlib.h>
#include <string.h>

static const accel_host_api_t *host;

static accel_status_t fuzz_init(const accel_host_api_t *h) {
  host = h;
  return ACCEL_OK;
}

static accel_status_t fuzz_create(const void *mpi_comm, accel_ce_comm_t **out, int *rank,
                                  int *size) {
  (void)mpi_comm;
  *out = malloc(1);
  if (!*out) return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "fuzzhost: out of memory");
  *rank = 0;
  *size = 1;
  return ACCEL_OK;
}

static accel_status_t fuzz_split(accel_ce_comm_t *comm, int color, int key,
                                 accel_ce_comm_t **out, int *rank, int *size) {
  (void)comm, (void)color, (void)key;
  return fuzz_create(NULL, out, rank, size);
}

static void fuzz_destroy(accel_ce_comm_t *comm) { free(comm); }

static accel_status_t fuzz_run(accel_ce_comm_t *comm, const accel_comm_op_t *op,
                               double timeout_s) {
  (void)comm, (void)timeout_s;
  const size_t bytes = op->count * (op->dtype == ACCEL_F32 ? 4 : 2);
  if (op->kind != ACCEL_COMM_BROADCAST && op->send && op->send != op->recv)
    memmove(op->recv, op->send, bytes);
  return ACCEL_OK;
}

static void fuzz_abort(accel_ce_comm_t *comm, int code) {
  (void)comm;
  exit(code);
}

static accel_status_t fuzz_all_gather(accel_ce_comm_t *comm, const void *send, void *recv,
                                      size_t bytes, double timeout_s) {
  (void)comm, (void)timeout_s;
  memmove(recv, send, bytes);
  return ACCEL_OK;
}

static const accel_comm_engine_vtable_t vtable = {
    .abi_version = ACCEL_COMM_ENGINE_ABI_VERSION,
    .struct_size = sizeof(accel_comm_engine_vtable_t),
    .name = "fuzzhost",
    .description = "test-only one-rank host engine of the API fuzzer",
    .host_engine = 1,
    .engine_init = fuzz_init,
    .comm_create_mpi = fuzz_create,
    .comm_split = fuzz_split,
    .comm_destroy = fuzz_destroy,
    .run = fuzz_run,
    .abort = fuzz_abort,
    .host_all_gather = fuzz_all_gather,
};

ACCEL_COMM_ENGINE_DEFINE_QUERY(vtable, "fuzzhost")
