/*
 * Build-time check of vendor_cuda.h against the installed cuda.h: every type, constant and
 * entry-point prototype the shim declares must match the real header. This file is only
 * compiled (into a static library nothing links), never run; a mismatch fails the build.
 */
#include <cuda.h>
#include <stddef.h>

#include "vendor_cuda.h"

#define SAME_TYPE(a, b) _Static_assert(__builtin_types_compatible_p(a, b), #a " differs from " #b)
#define SAME_VALUE(a, b) _Static_assert((a) == (b), #a " differs from " #b)

SAME_TYPE(gpuError_t, CUresult);
SAME_TYPE(gpuDevice_t, CUdevice);
SAME_TYPE(gpuDevicePtr_t, CUdeviceptr);
SAME_TYPE(gpuContext_t, CUcontext);
SAME_TYPE(gpuStream_t, CUstream);
SAME_TYPE(gpuEvent_t, CUevent);
SAME_TYPE(gpuModule_t, CUmodule);
SAME_TYPE(gpuFunction_t, CUfunction);
SAME_TYPE(gpuGraph_t, CUgraph);
SAME_TYPE(gpuGraphExec_t, CUgraphExec);
SAME_TYPE(gpuHostFn_t, CUhostFn);

SAME_VALUE(GPU_SUCCESS, CUDA_SUCCESS);
SAME_VALUE(GPU_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME_VALUE(GPU_ERROR_NOT_READY, CUDA_ERROR_NOT_READY);
SAME_VALUE(GPU_ERROR_CAPTURE_FIRST, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
SAME_VALUE(GPU_ERROR_CAPTURE_INVALIDATED, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
SAME_VALUE(GPU_ERROR_CAPTURE_LAST, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
SAME_VALUE(GPU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME_VALUE(GPU_EVENT_DEFAULT, CU_EVENT_DEFAULT);
SAME_VALUE(GPU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
SAME_VALUE(GPU_HOST_ALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE);
SAME_VALUE(GPU_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
SAME_VALUE(GPU_ATTR_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME_VALUE(GPU_ATTR_CC_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME_VALUE(GPU_ATTR_CC_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME_VALUE(GPU_POINTER_ATTR_CONTEXT, CU_POINTER_ATTRIBUTE_CONTEXT);
SAME_VALUE(GPU_POINTER_ATTR_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_DEVICE_POINTER);
SAME_VALUE(GPU_POINTER_ATTR_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
SAME_VALUE(GPU_POINTER_ATTR_RANGE_START, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
SAME_VALUE(GPU_POINTER_ATTR_RANGE_SIZE, CU_POINTER_ATTRIBUTE_RANGE_SIZE);
SAME_VALUE(GPU_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_ACTIVE);
SAME_VALUE(GPU_WAIT_VALUE_EQ, CU_STREAM_WAIT_VALUE_EQ);
SAME_VALUE(GPU_WRITE_VALUE_DEFAULT, CU_STREAM_WRITE_VALUE_DEFAULT);
SAME_VALUE(GPU_PROC_ADDRESS_LEGACY_STREAM, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
SAME_VALUE(GPU_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);

/* Prototypes: the shim's pointer type of each entry vs the header's declaration. */
#define GPU_PFN(field, lookup, display, ret, params) typedef ret(*gpu_pfn_##field) params;
GPU_API_TABLE(GPU_PFN, GPU_PFN)
#undef GPU_PFN
#define SAME_PROTO(field, fn) SAME_TYPE(gpu_pfn_##field, __typeof__(&fn))

SAME_PROTO(Init, cuInit);
SAME_PROTO(DriverGetVersion, cuDriverGetVersion);
SAME_PROTO(DeviceGetCount, cuDeviceGetCount);
SAME_PROTO(DeviceGet, cuDeviceGet);
SAME_PROTO(DeviceGetName, cuDeviceGetName);
SAME_PROTO(DeviceGetAttribute, cuDeviceGetAttribute);
SAME_PROTO(DeviceTotalMem, cuDeviceTotalMem_v2);
SAME_PROTO(PrimaryCtxRetain, cuDevicePrimaryCtxRetain);
SAME_PROTO(PrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);
SAME_PROTO(CtxSetCurrent, cuCtxSetCurrent);
SAME_PROTO(DeviceSynchronize, cuCtxSynchronize);
SAME_PROTO(MemGetInfo, cuMemGetInfo_v2);
SAME_PROTO(MemAlloc, cuMemAlloc_v2);
SAME_PROTO(MemFree, cuMemFree_v2);
SAME_PROTO(HostAlloc, cuMemHostAlloc);
SAME_PROTO(HostFree, cuMemFreeHost);
SAME_PROTO(StreamCreate, cuStreamCreate);
SAME_PROTO(StreamDestroy, cuStreamDestroy_v2);
SAME_PROTO(StreamSynchronize, cuStreamSynchronize);
SAME_PROTO(StreamQuery, cuStreamQuery);
SAME_PROTO(StreamWaitEvent, cuStreamWaitEvent);
SAME_PROTO(EventCreate, cuEventCreate);
SAME_PROTO(EventDestroy, cuEventDestroy_v2);
SAME_PROTO(EventRecord, cuEventRecord);
SAME_PROTO(EventSynchronize, cuEventSynchronize);
SAME_PROTO(EventQuery, cuEventQuery);
SAME_PROTO(EventElapsedTime, cuEventElapsedTime);
SAME_PROTO(MemcpyAsync, cuMemcpyAsync);
SAME_PROTO(MemsetD8Async, cuMemsetD8Async);
SAME_PROTO(LaunchHostFunc, cuLaunchHostFunc);
SAME_PROTO(ModuleLoadData, cuModuleLoadData);
SAME_PROTO(ModuleUnload, cuModuleUnload);
SAME_PROTO(ModuleGetFunction, cuModuleGetFunction);
SAME_PROTO(LaunchKernel, cuLaunchKernel);
SAME_PROTO(StreamBeginCapture, cuStreamBeginCapture_v2);
SAME_PROTO(StreamEndCapture, cuStreamEndCapture);
SAME_PROTO(GraphInstantiate, cuGraphInstantiateWithFlags);
SAME_PROTO(GraphLaunch, cuGraphLaunch);
SAME_PROTO(GraphExecDestroy, cuGraphExecDestroy);
SAME_PROTO(GraphDestroy, cuGraphDestroy);
/* cuGraphExecUpdate's result info is the shim's own struct of the same layout. */
SAME_TYPE(gpuGraphNode_t, CUgraphNode);
SAME_TYPE(gpu_pfn_GraphExecUpdate, gpuError_t (*)(CUgraphExec, CUgraph, gpuGraphExecUpdateInfo_t *));
SAME_TYPE(__typeof__(&cuGraphExecUpdate),
          CUresult (*)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *));
SAME_VALUE(sizeof(gpuGraphExecUpdateInfo_t), sizeof(CUgraphExecUpdateResultInfo));
SAME_VALUE(offsetof(gpuGraphExecUpdateInfo_t, result),
           offsetof(CUgraphExecUpdateResultInfo, result));
SAME_VALUE(offsetof(gpuGraphExecUpdateInfo_t, error_node),
           offsetof(CUgraphExecUpdateResultInfo, errorNode));
SAME_VALUE(offsetof(gpuGraphExecUpdateInfo_t, error_from_node),
           offsetof(CUgraphExecUpdateResultInfo, errorFromNode));
SAME_VALUE(sizeof(((gpuGraphExecUpdateInfo_t *)0)->result),
           sizeof(((CUgraphExecUpdateResultInfo *)0)->result));
SAME_PROTO(GetErrorName, cuGetErrorName);
SAME_PROTO(CtxGetDevice, cuCtxGetDevice);
SAME_PROTO(PrimaryCtxGetState, cuDevicePrimaryCtxGetState);
SAME_PROTO(StreamGetCtx, cuStreamGetCtx);
SAME_PROTO(StreamIsCapturing, cuStreamIsCapturing);
SAME_PROTO(CtxGetCurrent, cuCtxGetCurrent);
SAME_PROTO(MemGetAddressRange, cuMemGetAddressRange);
SAME_PROTO(StreamWaitValue32, cuStreamWaitValue32);
SAME_PROTO(StreamWriteValue32, cuStreamWriteValue32);

/* cuGetProcAddress_v2 itself (resolved with dlsym). */
SAME_TYPE(CUresult (*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *),
          __typeof__(&cuGetProcAddress_v2));

/* NVRTC (gpu_rtc.c): the shim's GPU_RTC_TABLE against nvrtc.h. */
#include <nvrtc.h>

SAME_TYPE(gpuRtcResult_t, nvrtcResult);
SAME_TYPE(gpuRtcProgram_t, nvrtcProgram);
SAME_VALUE(GPU_RTC_SUCCESS, NVRTC_SUCCESS);
#define GPU_RTC_PFN(field, lookup, display, ret, params) typedef ret(*gpu_rtc_pfn_##field) params;
GPU_RTC_TABLE(GPU_RTC_PFN, GPU_RTC_PFN)
#undef GPU_RTC_PFN
#define SAME_RTC_PROTO(field, fn) SAME_TYPE(gpu_rtc_pfn_##field, __typeof__(&fn))
SAME_RTC_PROTO(Version, nvrtcVersion);
SAME_RTC_PROTO(GetErrorString, nvrtcGetErrorString);
SAME_RTC_PROTO(CreateProgram, nvrtcCreateProgram);
SAME_RTC_PROTO(DestroyProgram, nvrtcDestroyProgram);
SAME_RTC_PROTO(CompileProgram, nvrtcCompileProgram);
SAME_RTC_PROTO(GetProgramLogSize, nvrtcGetProgramLogSize);
SAME_RTC_PROTO(GetProgramLog, nvrtcGetProgramLog);
SAME_RTC_PROTO(GetCodeSize, nvrtcGetCUBINSize);
SAME_RTC_PROTO(GetCode, nvrtcGetCUBIN);
SAME_RTC_PROTO(GetPTXSize, nvrtcGetPTXSize);
SAME_RTC_PROTO(GetPTX, nvrtcGetPTX);
SAME_RTC_PROTO(GetNumSupportedArchs, nvrtcGetNumSupportedArchs);
SAME_RTC_PROTO(GetSupportedArchs, nvrtcGetSupportedArchs);
