/*
 * Build-time check of vendor_nccl.h against the installed nccl.h: types, constants and every
 * entry point's prototype. Only compiled (into a static library nothing links), never run.
 * ncclCommSplit's config parameter is an ncclConfig_t * (the shim passes NULL as void *), so
 * that one is compared parameter by parameter except the last.
 */
#include <nccl.h>

#include "vendor_nccl.h"

#define SAME_TYPE(a, b) _Static_assert(__builtin_types_compatible_p(a, b), #a " differs from " #b)
#define SAME_VALUE(a, b) _Static_assert((a) == (b), #a " differs from " #b)

SAME_TYPE(ccl_result_t, ncclResult_t);
SAME_TYPE(ccl_datatype_t, ncclDataType_t);
SAME_TYPE(ccl_redop_t, ncclRedOp_t);
SAME_TYPE(ccl_comm_t, ncclComm_t);
SAME_TYPE(ccl_stream_t, cudaStream_t);
SAME_VALUE(CCL_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES);
_Static_assert(sizeof(ccl_unique_id_t) == sizeof(ncclUniqueId), "ncclUniqueId size");
SAME_VALUE(CCL_SUCCESS, ncclSuccess);
SAME_VALUE(CCL_SPLIT_NOCOLOR, NCCL_SPLIT_NOCOLOR);
SAME_VALUE(CCL_SUM, ncclSum);
SAME_VALUE(CCL_MAX, ncclMax);
SAME_VALUE(CCL_MIN, ncclMin);
SAME_VALUE(CCL_FLOAT16, ncclFloat16);
SAME_VALUE(CCL_FLOAT32, ncclFloat32);
SAME_VALUE(CCL_BFLOAT16, ncclBfloat16);

#define CCL_PFN(field, symbol, ret, params) typedef ret(*ccl_pfn_##field) params;
CCL_API_TABLE(CCL_PFN, CCL_PFN)
#undef CCL_PFN
/* ncclUniqueId is passed by value: compare through a shim-typed wrapper of the same shape */
#define SAME_PROTO(field, fn) SAME_TYPE(ccl_pfn_##field, __typeof__(&fn))
SAME_PROTO(GetVersion, ncclGetVersion);
SAME_PROTO(GetErrorString, ncclGetErrorString);
SAME_PROTO(CommDestroy, ncclCommDestroy);
SAME_PROTO(CommAbort, ncclCommAbort);
SAME_PROTO(CommCount, ncclCommCount);
SAME_PROTO(CommUserRank, ncclCommUserRank);
SAME_PROTO(CommGetAsyncError, ncclCommGetAsyncError);
SAME_PROTO(AllReduce, ncclAllReduce);
SAME_PROTO(ReduceScatter, ncclReduceScatter);
SAME_PROTO(AllGather, ncclAllGather);
SAME_PROTO(Broadcast, ncclBroadcast);
SAME_PROTO(Send, ncclSend);
SAME_PROTO(Recv, ncclRecv);
SAME_PROTO(GroupStart, ncclGroupStart);
SAME_PROTO(GroupEnd, ncclGroupEnd);
/* the two that take ncclUniqueId (a distinct struct type of the same layout) */
SAME_TYPE(__typeof__(&ncclGetUniqueId), ccl_result_t (*)(ncclUniqueId *));
SAME_TYPE(__typeof__(&ncclCommInitRank), ccl_result_t (*)(ccl_comm_t *, int, ncclUniqueId, int));
SAME_TYPE(__typeof__(&ncclCommSplit),
          ccl_result_t (*)(ccl_comm_t, int, int, ccl_comm_t *, ncclConfig_t *));
