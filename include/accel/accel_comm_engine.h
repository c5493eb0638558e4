/*
 * accel collective-engine plugin ABI (MPI, NCCL, RCCL, oneCCL). See docs/DISTRIBUTED.md.
 *
 * An engine is a shared object named libaccelcomm-<name>.so, searched like the backend plugins
 * (ACCEL_PLUGIN_PATH, the installed plugin dir, the directory of libaccel), exporting one
 * symbol:
 *
 *   ACCEL_PLUGIN_EXPORT accel_status_t accel_comm_engine_query(
 *       uint32_t host_abi, const accel_host_api_t *host, const accel_comm_engine_vtable_t **out);
 *
 * which ACCEL_COMM_ENGINE_DEFINE_QUERY(vtable, "name") (below) defines for a static vtable.
 *
 * The vtable starts with {abi_version, struct_size} and only grows at its end, like the backend
 * vtable: the core reads a field only when struct_size covers it. The core validates every
 * argument, owns the communicator handle (reference counts, the failed state, stream order,
 * capture and lazy queues) and calls the engine with valid arguments only.
 *
 * Two kinds of engines:
 *  - host engines (MPI): `run` performs one collective synchronously on host-accessible memory;
 *    the core calls it in stream order, from a host function on the stream's thread or, on an
 *    idle CPU stream, on the thread that issues the collective (docs/DISTRIBUTED.md), so it
 *    must be thread-safe (MPI_THREAD_MULTIPLE) and must return within timeout_s seconds (an
 *    error then, never a hang).
 *  - stream engines (NCCL, RCCL, oneCCL): `enqueue` issues the collective on the backend's
 *    native stream (accel_stream_native) and returns without waiting.
 */
#ifndef ACCEL_ACCEL_COMM_ENGINE_H
#define ACCEL_ACCEL_COMM_ENGINE_H

#include <stddef.h>

#include "accel_comm.h"
#include "accel_interop.h"
#include "accel_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL_COMM_ENGINE_ABI_VERSION 1u
#define ACCEL_COMM_ENGINE_QUERY_SYMBOL "accel_comm_engine_query"

typedef void accel_ce_comm_t; /* the engine's communicator */

typedef enum accel_comm_op_kind {
  ACCEL_COMM_ALL_REDUCE = 0,
  ACCEL_COMM_REDUCE_SCATTER = 1,
  ACCEL_COMM_ALL_GATHER = 2, /* send == NULL: in place (recv block `rank` holds the data) */
  ACCEL_COMM_BROADCAST = 3,  /* recv is the buffer; send unused */
  ACCEL_COMM_SEND = 4,       /* send, peer */
  ACCEL_COMM_RECV = 5,       /* recv, peer */
  /* send (count elements) to peer and recv (recv_count) from recv_peer, progressing together
   * (accel_sendrecv): an engine must not finish one before the other has started. */
  ACCEL_COMM_SENDRECV = 6
} accel_comm_op_kind_t;

/* One collective. count is per rank as in the public call (all_reduce: elements; reduce_scatter
 * and all_gather: the per-rank block). send == recv for in-place all_reduce. */
typedef struct accel_comm_op {
  uint32_t kind;   /* accel_comm_op_kind_t */
  uint32_t dtype;  /* accel_dtype_t */
  uint32_t reduce; /* accel_reduce_op_t */
  int32_t peer;    /* broadcast root, send/recv peer */
  const void *send;
  void *recv;
  size_t count;
  /* ACCEL_COMM_SENDRECV only (appended: engines that predate it never see that kind): the
   * receive's source rank and element count. */
  int32_t recv_peer;
  uint32_t reserved;
  size_t recv_count;
} accel_comm_op_t;

/* What a stream engine needs to bootstrap over the host communicator (MPI): this process's
 * rank, the size, and an all-gather of host bytes (each rank contributes bytes bytes; recv
 * holds size * bytes). */
typedef struct accel_comm_bootstrap {
  int rank;
  int size;
  void *ctx;
  accel_status_t (*all_gather)(void *ctx, const void *send, void *recv, size_t bytes);
} accel_comm_bootstrap_t;

typedef struct accel_comm_engine_vtable {
  uint32_t abi_version; /* ACCEL_COMM_ENGINE_ABI_VERSION */
  uint32_t struct_size; /* sizeof(accel_comm_engine_vtable_t) as the engine was built */
  const char *name;     /* "mpi", "nccl", ... lowercase, the file's <name> */
  const char *description;
  /* 1: host engine (`run`), 0: stream engine (`enqueue`). */
  uint32_t host_engine;
  uint32_t reserved;
  /* Loads the engine's runtime (dlopen for the vendor ones). UNAVAILABLE with the reason when
   * it is absent; called once, before anything else. */
  accel_status_t (*engine_init)(const accel_host_api_t *host);

  /* Host engines: a communicator over a duplicate of *(MPI_Comm *)mpi_comm (NULL: world). */
  accel_status_t (*comm_create_mpi)(const void *mpi_comm, accel_ce_comm_t **out, int *rank,
                                    int *size);
  /* Stream engines: a communicator of boot->size ranks on the device whose native handles are
   * given (accel_device_native). */
  accel_status_t (*comm_create_bootstrap)(const accel_comm_bootstrap_t *boot,
                                          const accel_native_t *device, accel_ce_comm_t **out);
  /* Collective split: color >= 0 (the core handles the no-group case by passing
   * a color the engine may map to its "undefined"; *out NULL then). */
  accel_status_t (*comm_split)(accel_ce_comm_t *comm, int color, int key, accel_ce_comm_t **out,
                               int *rank, int *size);
  /* Frees the engine's communicator (no collective on it is pending). */
  void (*comm_destroy)(accel_ce_comm_t *comm);
  /* Host engines: runs op to completion or fails within timeout_s seconds. */
  accel_status_t (*run)(accel_ce_comm_t *comm, const accel_comm_op_t *op, double timeout_s);
  /* Stream engines: issues op on the native stream. */
  accel_status_t (*enqueue)(accel_ce_comm_t *comm, const accel_comm_op_t *op,
                            const accel_native_t *stream);
  /* Ends the job (MPI_Abort, ncclCommAbort + exit). */
  void (*abort)(accel_ce_comm_t *comm, int errorcode);
  /* Host engines: all-gather of host bytes (bootstrap of stream engines, split bookkeeping). */
  accel_status_t (*host_all_gather)(accel_ce_comm_t *comm, const void *send, void *recv,
                                    size_t bytes, double timeout_s);

  /* Host engines, optional (NULL, or a struct_size that does not cover them: not supported).
   * A collective recorded in a graph is replayed with the same arguments every time; the core
   * asks for a persistent form of it (MPI-4 persistent collectives, MPI_Send_init...) at its
   * first replay, on the stream's thread in stream order, and runs that form on later replays.
   * Creating one may be collective (MPI-4): every rank reaches it in the same order because
   * every rank replays the same sequence. prepare: ACCEL_OK with *handle NULL when the engine
   * keeps op on `run` (not supported for this op, or switched off). */
  accel_status_t (*prepare)(accel_ce_comm_t *comm, const accel_comm_op_t *op, void **handle);
  /* Runs a prepared op to completion or fails within timeout_s seconds, as `run`. */
  accel_status_t (*run_prepared)(void *handle, double timeout_s);
  /* Frees a prepared op (not running; its communicator is still alive). */
  void (*release_prepared)(void *handle);

  /* --- added later: optional, read only when struct_size covers them ---------------------- */
  /* Stream engines: ACCEL_OK, or the error (with host->set_error) that a collective of comm
   * hit asynchronously (ncclCommGetAsyncError). Polled by the core's watchdog thread while
   * eager collectives are in flight (ACCEL_COMM_TIMEOUT, docs/DISTRIBUTED.md). */
  accel_status_t (*comm_async_error)(accel_ce_comm_t *comm);
  /* Stream engines: makes comm's pending work return without ending the process
   * (ncclCommAbort). Called at most once, from the watchdog thread, when an eager collective
   * passed ACCEL_COMM_TIMEOUT or comm_async_error reported a failure; the core issues nothing on
   * comm afterwards, and comm_destroy (still called) must free only what is left. */
  void (*comm_cancel)(accel_ce_comm_t *comm);
} accel_comm_engine_vtable_t;

/* The vtable size of engines built before the optional slots (prepare onwards): still
 * accepted; the core reads the slots they predate as NULL. */
#define ACCEL_COMM_ENGINE_VTABLE_MIN_SIZE offsetof(accel_comm_engine_vtable_t, prepare)

typedef accel_status_t (*accel_comm_engine_query_fn)(uint32_t host_abi,
                                                     const accel_host_api_t *host,
                                                     const accel_comm_engine_vtable_t **out);

/* Defines the exported accel_comm_engine_query: *out = &vt, or ACCEL_ERROR_PLUGIN naming the
 * engine (name, a string literal) when the host's ABI differs. */
#define ACCEL_COMM_ENGINE_DEFINE_QUERY(vt, name)                                            \
  ACCEL_PLUGIN_EXPORT accel_status_t accel_comm_engine_query(                               \
      uint32_t host_abi, const accel_host_api_t *h, const accel_comm_engine_vtable_t **out) { \
    if (host_abi != ACCEL_COMM_ENGINE_ABI_VERSION)                                          \
      return h->set_error(ACCEL_ERROR_PLUGIN, name " engine: ABI %u, host has %u",          \
                          ACCEL_COMM_ENGINE_ABI_VERSION, host_abi);                         \
    *out = &(vt);                                                                           \
    return ACCEL_OK;                                                                        \
  }

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_COMM_ENGINE_H */
