/*
 * The part of NCCL's API (nccl.h) that the NCCL and RCCL engines use, declared here so the
 * engines build and load without the vendor headers; the library is dlopen'ed at run time.
 * RCCL has the same API on HIP streams. vendor_nccl_check.c compares every declaration with
 * the real nccl.h at build time where it is installed.
 */
#ifndef ACCEL_VENDOR_NCCL_H
#define ACCEL_VENDOR_NCCL_H

#include <stddef.h>

typedef unsigned ccl_result_t;   /* ncclResult_t (an enum of unsigned int) */
typedef unsigned ccl_datatype_t; /* ncclDataType_t */
typedef unsigned ccl_redop_t;    /* ncclRedOp_t */
typedef struct ncclComm *ccl_comm_t;
#ifdef ACCEL_CCL_RCCL
typedef struct ihipStream_t *ccl_stream_t; /* hipStream_t */
#else
typedef struct CUstream_st *ccl_stream_t;  /* cudaStream_t */
#endif

#define CCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[CCL_UNIQUE_ID_BYTES]; } ccl_unique_id_t;

#define CCL_SUCCESS 0u
#define CCL_SPLIT_NOCOLOR (-1)
#define CCL_SUM 0u
#define CCL_MAX 2u
#define CCL_MIN 3u
#define CCL_FLOAT16 6u
#define CCL_FLOAT32 7u
#define CCL_BFLOAT16 9u

/* REQ/OPT(field, symbol, return, parameters) */
#define CCL_API_TABLE(REQ, OPT)                                                                \
  REQ(GetVersion, "ncclGetVersion", ccl_result_t, (int *version))                              \
  REQ(GetErrorString, "ncclGetErrorString", const char *, (ccl_result_t result))               \
  REQ(GetUniqueId, "ncclGetUniqueId", ccl_result_t, (ccl_unique_id_t * id))                    \
  REQ(CommInitRank, "ncclCommInitRank", ccl_result_t,                                          \
      (ccl_comm_t * comm, int nranks, ccl_unique_id_t id, int rank))                           \
  REQ(CommDestroy, "ncclCommDestroy", ccl_result_t, (ccl_comm_t comm))                         \
  REQ(CommAbort, "ncclCommAbort", ccl_result_t, (ccl_comm_t comm))                             \
  REQ(CommCount, "ncclCommCount", ccl_result_t, (const ccl_comm_t comm, int *count))          \
  REQ(CommUserRank, "ncclCommUserRank", ccl_result_t, (const ccl_comm_t comm, int *rank))     \
  REQ(CommGetAsyncError, "ncclCommGetAsyncError", ccl_result_t,                                \
      (ccl_comm_t comm, ccl_result_t * error))                                                 \
  REQ(AllReduce, "ncclAllReduce", ccl_result_t,                                                \
      (const void *send, void *recv, size_t count, ccl_datatype_t dt, ccl_redop_t op,          \
       ccl_comm_t comm, ccl_stream_t stream))                                                  \
  REQ(ReduceScatter, "ncclReduceScatter", ccl_result_t,                                        \
      (const void *send, void *recv, size_t recvcount, ccl_datatype_t dt, ccl_redop_t op,      \
       ccl_comm_t comm, ccl_stream_t stream))                                                  \
  REQ(AllGather, "ncclAllGather", ccl_result_t,                                                \
      (const void *send, void *recv, size_t sendcount, ccl_datatype_t dt, ccl_comm_t comm,     \
       ccl_stream_t stream))                                                                   \
  REQ(Broadcast, "ncclBroadcast", ccl_result_t,                                                \
      (const void *send, void *recv, size_t count, ccl_datatype_t dt, int root,                \
       ccl_comm_t comm, ccl_stream_t stream))                                                  \
  REQ(Send, "ncclSend", ccl_result_t,                                                          \
      (const void *send, size_t count, ccl_datatype_t dt, int peer, ccl_comm_t comm,           \
       ccl_stream_t stream))                                                                   \
  REQ(Recv, "ncclRecv", ccl_result_t,                                                          \
      (void *recv, size_t count, ccl_datatype_t dt, int peer, ccl_comm_t comm,                 \
       ccl_stream_t stream))                                                                   \
  /* ncclSend + ncclRecv of accel_sendrecv progress together only inside one group */          \
  REQ(GroupStart, "ncclGroupStart", ccl_result_t, (void))                                      \
  REQ(GroupEnd, "ncclGroupEnd", ccl_result_t, (void))                                          \
  OPT(CommSplit, "ncclCommSplit", ccl_result_t,                                                \
      (ccl_comm_t comm, int color, int key, ccl_comm_t *newcomm, void *config))

#endif
