/*
 * accel collectives: communicators over existing engines (MPI here; NCCL, RCCL and oneCCL on
 * GPUs), stream-ordered like kernels. See docs/DISTRIBUTED.md.
 *
 * Model
 *  - A communicator joins the processes of an MPI communicator (as launched by mpirun/srun),
 *    one accel device per process. It is created collectively, can be split into groups
 *    (data-parallel and model-parallel groups) and is reference counted: a graph or lazy queue
 *    that holds a collective holds the communicator, so accel_comm_destroy never frees what
 *    recorded work still needs.
 *  - Every collective is a command of the stream it is issued on: it starts when earlier work on
 *    the stream finished, later work waits for it, events order it across streams, and it may
 *    be captured into a graph (replayed any number of times) or queued in lazy mode.
 *  - Capture rule (as NCCL's): collectives are matched by order. Every rank of a communicator
 *    must issue, capture and replay the same sequence of collectives on it, with the same
 *    counts, dtypes, operations and roots; a graph holding collectives must be replayed the same
 *    number of times on every rank.
 *  - Errors. Argument errors are returned by the call. A collective that fails when it runs
 *    (engine error, or not complete within ACCEL_COMM_TIMEOUT seconds, default 300: a dead or
 *    missing rank) marks the communicator failed: accel_comm_get_error returns the error and its
 *    message, and every later collective on it is skipped (its output left untouched) instead of
 *    waiting on ranks that are gone. The application then ends the job (accel_comm_abort).
 *    Collectives that differ across ranks (count, dtype, op, root, kind) fail on every rank
 *    with INVALID_ARGUMENT, without running, on host engines (MPI): the ranks agree on each
 *    collective the sequence so far does not predict (ACCEL_COMM_CHECK, docs/DISTRIBUTED.md);
 *    one that breaks a predicted pattern fails every rank at ACCEL_COMM_TIMEOUT.
 *  - Buffers are device memory of the communicator's device. Engines that run on the host (MPI)
 *    need a device whose memory the host can access (accel_device_info.host_accessible: the CPU
 *    backend, OpenCL SVM); NCCL/RCCL/oneCCL run on the native CUDA/HIP/Level Zero streams.
 */
#ifndef ACCEL_ACCEL_COMM_H
#define ACCEL_ACCEL_COMM_H

#include "accel.h"
#include "accel_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct accel_comm accel_comm_t;

typedef enum accel_reduce_op {
  ACCEL_REDUCE_SUM = 0,
  ACCEL_REDUCE_MAX = 1,
  ACCEL_REDUCE_MIN = 2
} accel_reduce_op_t;

/* Creates a communicator over the processes of an MPI communicator, collectively (every process
 * of it calls this). mpi_comm: the address of an MPI_Comm (MPI_Comm *), NULL for
 * MPI_COMM_WORLD; accel duplicates it, so the caller's communicator stays the caller's.
 * engine: "mpi", "nccl", "rccl", "oneccl", or NULL for ACCEL_COMM_ENGINE, else the engine of
 * the device's backend (cuda: nccl, hip: rccl, level_zero: oneccl, others: mpi). The engines
 * are plugins (libaccelcomm-<name>.so) searched like the backend plugins. An engine that is
 * absent, or whose runtime or device is absent, is ACCEL_ERROR_UNAVAILABLE with the reason.
 * MPI must provide MPI_THREAD_MULTIPLE (collectives run on the stream's thread): accel
 * initialises MPI with it when the application has not (and finalizes it at exit); an
 * application that initialised MPI itself must have asked for it (else UNSUPPORTED). At exit,
 * accel lets the streams with collectives finish before it finalizes MPI. Illegal while any
 * stream captures (ILLEGAL_IN_CAPTURE: it communicates now). */
ACCEL_API accel_status_t accel_comm_create_mpi(accel_device_t *device, const void *mpi_comm,
                                               const char *engine, accel_comm_t **out);
/* Splits comm into groups, collectively: processes with the same color form one communicator,
 * ranked by key (ties by rank in comm). color < 0: this process joins no group and *out is set
 * to NULL (ACCEL_OK). Illegal while any stream captures, in any mode (ILLEGAL_IN_CAPTURE, the
 * captures are invalidated: it communicates now). */
ACCEL_API accel_status_t accel_comm_split(accel_comm_t *comm, int color, int key,
                                          accel_comm_t **out);
/* Drops the user's reference; the engine's communicator is freed when recorded work (graphs,
 * lazy queues, queued collectives) no longer holds it. Not collective. */
ACCEL_API accel_status_t accel_comm_release(accel_comm_t *comm);
/* The old name of accel_comm_release (accel.h, "Lifetime verbs"). */
ACCEL_API accel_status_t accel_comm_destroy(accel_comm_t *comm);
ACCEL_API accel_status_t accel_comm_rank(accel_comm_t *comm, int *rank);
ACCEL_API accel_status_t accel_comm_size(accel_comm_t *comm, int *size);
/* Name of the engine ("mpi", "nccl", ...); NULL for an invalid handle. */
ACCEL_API const char *accel_comm_engine_name(accel_comm_t *comm);
/* ACCEL_OK while no collective on comm failed; else the first failure's status, with its
 * message (engine call, timeout) in accel_last_error(). Does not wait for queued work:
 * synchronize the streams first to see the failures of the collectives issued so far. */
ACCEL_API accel_status_t accel_comm_get_error(accel_comm_t *comm);
/* Ends every process of the job through the engine (MPI_Abort on the communicator) with
 * errorcode; for a failed communicator, whose peers may be gone. Returns only if the engine
 * could not abort. */
ACCEL_API accel_status_t accel_comm_abort(accel_comm_t *comm, int errorcode);

/* ---------------------------------------------------------------------------------------------
 * Collectives. Stream-ordered on device memory of comm's device; dtype F32, F16 or BF16
 * (reductions of F16/BF16 accumulate each pairwise step in fp32 and round to the dtype).
 * count = 0 is a valid no-op collective (still matched by order). Buffers must not overlap
 * except where "in place" is stated.
 * ------------------------------------------------------------------------------------------- */

/* recv[i] = op over ranks of send[i], i < count, on every rank. send == recv: in place. */
ACCEL_API accel_status_t accel_all_reduce(accel_comm_t *comm, accel_stream_t *stream,
                                          const void *send, void *recv, size_t count,
                                          accel_dtype_t dtype, accel_reduce_op_t op);
/* send holds size * recv_count elements; rank r receives the reduction of block r. */
ACCEL_API accel_status_t accel_reduce_scatter(accel_comm_t *comm, accel_stream_t *stream,
                                              const void *send, void *recv, size_t recv_count,
                                              accel_dtype_t dtype, accel_reduce_op_t op);
/* recv holds size * send_count elements: block r is rank r's send. In place when send ==
 * recv + rank * send_count elements. */
ACCEL_API accel_status_t accel_all_gather(accel_comm_t *comm, accel_stream_t *stream,
                                          const void *send, void *recv, size_t send_count,
                                          accel_dtype_t dtype);
/* buf on every rank = buf on root. */
ACCEL_API accel_status_t accel_broadcast(accel_comm_t *comm, accel_stream_t *stream, void *buf,
                                         size_t count, accel_dtype_t dtype, int root);
/* Point to point, matched in order per (sender, receiver) pair. A receive of a different count
 * than was sent is an error of the collective (the communicator is marked failed). */
ACCEL_API accel_status_t accel_send(accel_comm_t *comm, accel_stream_t *stream, const void *buf,
                                    size_t count, accel_dtype_t dtype, int peer);
ACCEL_API accel_status_t accel_recv(accel_comm_t *comm, accel_stream_t *stream, void *buf,
                                    size_t count, accel_dtype_t dtype, int peer);
/* One exchange: send_count elements of send_buf to dest and recv_count elements into recv_buf
 * from source, the two progressing together (MPI_Sendrecv; NCCL and RCCL: one ncclGroupStart/
 * End), so a pairwise or ring exchange in which every rank sends before it receives cannot
 * deadlock, as accel_send + accel_recv can once a message outgrows the transport's buffers.
 * Matched in order with the peers' accel_send / accel_recv / accel_sendrecv like those. dest
 * and source may be the same rank (not this one); the buffers must not overlap. */
ACCEL_API accel_status_t accel_sendrecv(accel_comm_t *comm, accel_stream_t *stream,
                                        const void *send_buf, size_t send_count, int dest,
                                        void *recv_buf, size_t recv_count, int source,
                                        accel_dtype_t dtype);

/* ---------------------------------------------------------------------------------------------
 * Distributed kernels: built from the single-device kernels and the collectives above, so they
 * are stream-ordered, capturable and lazy like them.
 * ------------------------------------------------------------------------------------------- */

/* out_dev[0] = the norm of the concatenation of every rank's tensors (norm_type 1, 2, finite
 * p > 0, or INFINITY), bitwise identical on every rank and independent of the engine's
 * reduction algorithm: each rank computes its local norm (accel_multi_tensor_norm), the local
 * norms are all-gathered (exact) and every rank computes the norm of that vector of size
 * values in rank order with the same kernel. p = inf equals the single-process norm bitwise; for
 * other p the grouping differs from one process's, so it agrees within rounding. Scratch comes
 * from accel_malloc_async on stream (the graph's pool when capturing). Arguments the norm
 * refuses (as accel_multi_tensor_norm would) are refused before anything is issued. */
ACCEL_API accel_status_t accel_comm_global_norm(accel_comm_t *comm, accel_stream_t *stream,
                                                const accel_tensor_t *tensors, size_t n,
                                                float norm_type, float *out_dev);
/* The overflow flag (CheckOverflow): found_inf_dev[0] = MAX over ranks, in place (F32). */
ACCEL_API accel_status_t accel_comm_overflow_reduce(accel_comm_t *comm, accel_stream_t *stream,
                                                    float *found_inf_dev);
/* Clips the tensors by the global norm: accel_comm_global_norm into total_norm_out_dev, then
 * accel_clip_by_global_norm with it (coef_out_dev may be NULL). Every rank applies the same
 * coefficient. The clip's checks (total_norm_out_dev outside the tensors...) come first too:
 * a refused call issues nothing. */
ACCEL_API accel_status_t accel_comm_clip_by_global_norm(accel_comm_t *comm,
                                                        accel_stream_t *stream,
                                                        const accel_tensor_t *tensors, size_t n,
                                                        float max_norm, float norm_type,
                                                        float eps, float *total_norm_out_dev,
                                                        float *coef_out_dev);
/* The norm sweep of the fused step (accel_adam_step_norm) over this rank's shard, then the
 * global norm into step->norm_dev as accel_comm_global_norm makes it (bitwise identical on every
 * rank) and step->found_inf_dev reduced with MAX as accel_comm_overflow_reduce: between it and
 * accel_adam_step_update every rank sees the same norm and the same overflow flag. Every rank
 * passes the same optional outputs (they decide which collectives run); a descriptor refused
 * here issues nothing. Scratch from accel_malloc_async on stream. */
ACCEL_API accel_status_t accel_comm_adam_step_norm(accel_comm_t *comm, accel_stream_t *stream,
                                                   const accel_adam_step_t *step);
/* All-gather of F32 shards that crosses the wire as recv_dtype (BF16 or F16): each rank's
 * send_count fp32 values are rounded to recv_dtype (nearest even, as the cast kernels) and the
 * rounded shards are gathered into recv (size * send_count elements of recv_dtype). */
ACCEL_API accel_status_t accel_all_gather_downcast(accel_comm_t *comm, accel_stream_t *stream,
                                                   const float *send, void *recv,
                                                   size_t send_count, accel_dtype_t recv_dtype);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_COMM_H */
