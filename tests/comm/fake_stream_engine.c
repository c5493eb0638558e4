/*
 * A test-only stream engine (libaccelcomm-fakestream.so): it bootstraps through the core's MPI
 * all-gather like NCCL does, and its enqueue only records what it was asked to issue and on
 * which native queue (fake_stream_calls / fake_stream_last_*), so that comm_native_op.c can
 * check where the core runs, records or refuses a stream engine's collective on backends
 * without a GPU. It moves no data. A collective of FAKE_STREAM_FAIL_COUNT elements fails, as
 * NCCL's enqueue does on an asynchronous error.
 */
#include <accel/accel_comm_engine.h>
#include <stdlib.h>

ACCEL_PLUGIN_EXPORT int fake_stream_calls;
ACCEL_PLUGIN_EXPORT void *fake_stream_last_queue;
ACCEL_PLUGIN_EXPORT accel_comm_op_t fake_stream_last_op;
/* the watchdog's slots: set fake_stream_async_fail to report an asynchronous error; every
 * comm_cancel counts */
ACCEL_PLUGIN_EXPORT int fake_stream_async_fail; /* both read and written with __atomic */
ACCEL_PLUGIN_EXPORT int fake_stream_cancels;
/* comm_async_error or enqueue on a communicator after its comm_cancel: NCCL's ncclCommAbort has
 * freed it by then, so each one would be a use after free (__atomic) */
ACCEL_PLUGIN_EXPORT int fake_stream_used_after_cancel;

#define FAKE_STREAM_FAIL_COUNT 13

/* Built with -DFAKE_STREAM_SIZE_SHORT=4 for the loader tests (tests/unit/test_plugin_files.c):
 * a struct_size that is not a whole number of pointers, which the loader must refuse. */
#ifndef FAKE_STREAM_SIZE_SHORT
#define FAKE_STREAM_SIZE_SHORT 0
#endif

static const accel_host_api_t *host;

typedef struct fake_comm {
  int rank, size;
  int cancelled; /* __atomic */
} fake_comm_t;

static void note_use(accel_ce_comm_t *cc) {
  if (__atomic_load_n(&((fake_comm_t *)cc)->cancelled, __ATOMIC_SEQ_CST))
    __atomic_add_fetch(&fake_stream_used_after_cancel, 1, __ATOMIC_SEQ_CST);
}

static accel_status_t fake_init(const accel_host_api_t *h) {
  host = h;
  return ACCEL_OK;
}

/* Every rank learns every rank's number, as an NCCL id exchange would; a wrong gather fails. */
static accel_status_t fake_create(const accel_comm_bootstrap_t *boot, const accel_native_t *dev,
                                  accel_ce_comm_t **out) {
  (void)dev;
  int *ranks = calloc((size_t)boot->size, sizeof *ranks);
  fake_comm_t *c = calloc(1, sizeof *c);
  accel_status_t st = ranks && c ? ACCEL_OK
                                 : host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "fakestream: oom");
  if (st == ACCEL_OK) st = boot->all_gather(boot->ctx, &boot->rank, ranks, sizeof(int));
  for (int i = 0; st == ACCEL_OK && i < boot->size; ++i)
    if (ranks[i] != i)
      st = host->set_error(ACCEL_ERROR_BACKEND, "fakestream: bootstrap slot %d holds %d", i,
                           ranks[i]);
  free(ranks);
  if (st != ACCEL_OK) {
    free(c);
    return st;
  }
  c->rank = boot->rank;
  c->size = boot->size;
  *out = c;
  return ACCEL_OK;
}

static accel_status_t fake_split(accel_ce_comm_t *cc, int color, int key, accel_ce_comm_t **out,
                                 int *rank, int *size) {
  (void)cc, (void)color, (void)key, (void)out, (void)rank, (void)size;
  return host->set_error(ACCEL_ERROR_UNSUPPORTED, "fakestream: no split");
}

static void fake_destroy(accel_ce_comm_t *cc) { free(cc); }

static accel_status_t fake_enqueue(accel_ce_comm_t *cc, const accel_comm_op_t *op,
                                   const accel_native_t *stream) {
  note_use(cc);
  fake_stream_calls++;
  if (op->count == FAKE_STREAM_FAIL_COUNT)
    return host->set_error(ACCEL_ERROR_BACKEND, "fakestream: injected enqueue failure");
  fake_stream_last_queue = stream->queue;
  fake_stream_last_op = *op;
  return ACCEL_OK;
}

static accel_status_t fake_async_error(accel_ce_comm_t *cc) {
  note_use(cc);
  return __atomic_load_n(&fake_stream_async_fail, __ATOMIC_SEQ_CST)
             ? host->set_error(ACCEL_ERROR_BACKEND, "fakestream: injected async error")
             : ACCEL_OK;
}

static void fake_cancel(accel_ce_comm_t *cc) {
  __atomic_store_n(&((fake_comm_t *)cc)->cancelled, 1, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&fake_stream_cancels, 1, __ATOMIC_SEQ_CST);
}

static void fake_abort(accel_ce_comm_t *cc, int code) {
  (void)cc;
  exit(code);
}

static const accel_comm_engine_vtable_t vtable = {
    .abi_version = ACCEL_COMM_ENGINE_ABI_VERSION,
    .struct_size = sizeof(accel_comm_engine_vtable_t) - FAKE_STREAM_SIZE_SHORT,
    .name = "fakestream",
    .description = "test stream engine: records enqueues, moves no data",
    .host_engine = 0,
    .engine_init = fake_init,
    .comm_create_bootstrap = fake_create,
    .comm_split = fake_split,
    .comm_destroy = fake_destroy,
    .enqueue = fake_enqueue,
    .abort = fake_abort,
    .comm_async_error = fake_async_error,
    .comm_cancel = fake_cancel,
};

ACCEL_COMM_ENGINE_DEFINE_QUERY(vtable, "fakestream")
