/*
 * Build-time check of vendor_hip.h against the installed hip_runtime_api.h: every type,
 * constant and entry-point prototype the shim declares must match the real header. This file
 * is only compiled (into a static library nothing links), never run; a mismatch fails the build.
 */
#define __HIP_PLATFORM_AMD__ 1
#include <hip/hip_runtime_api.h>

#include "vendor_hip.h"

#define SAME_TYPE(a, b) _Static_assert(__builtin_types_compatible_p(a, b), #a " differs from " #b)
#define SAME_VALUE(a, b) _Static_assert((a) == (b), #a " differs from " #b)

SAME_TYPE(gpuError_t, hipError_t);
SAME_TYPE(gpuDevice_t, hipDevice_t);
SAME_TYPE(gpuDevicePtr_t, hipDeviceptr_t);
SAME_TYPE(gpuStream_t, hipStream_t);
SAME_TYPE(gpuEvent_t, hipEvent_t);
SAME_TYPE(gpuModule_t, hipModule_t);
SAME_TYPE(gpuFunction_t, hipFunction_t);
SAME_TYPE(gpuGraph_t, hipGraph_t);
SAME_TYPE(gpuGraphExec_t, hipGraphExec_t);
SAME_TYPE(gpuHostFn_t, hipHostFn_t);

SAME_VALUE(GPU_SUCCESS, hipSuccess);
SAME_VALUE(GPU_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory);
SAME_VALUE(GPU_ERROR_NOT_READY, hipErrorNotReady);
SAME_VALUE(GPU_ERROR_CAPTURE_FIRST, hipErrorStreamCaptureUnsupported);
SAME_VALUE(GPU_ERROR_CAPTURE_INVALIDATED, hipErrorStreamCaptureInvalidated);
SAME_VALUE(GPU_ERROR_CAPTURE_LAST, hipErrorStreamCaptureWrongThread);
SAME_VALUE(GPU_STREAM_NON_BLOCKING, hipStreamNonBlocking);
SAME_VALUE(GPU_EVENT_DEFAULT, hipEventDefault);
SAME_VALUE(GPU_EVENT_DISABLE_TIMING, hipEventDisableTiming);
SAME_VALUE(GPU_HOST_ALLOC_PORTABLE, hipHostMallocPortable);
SAME_VALUE(GPU_CAPTURE_MODE_THREAD_LOCAL, hipStreamCaptureModeThreadLocal);
SAME_VALUE(GPU_MEMCPY_DEFAULT, hipMemcpyDefault);
SAME_VALUE(GPU_ATTR_MULTIPROCESSOR_COUNT, hipDeviceAttributeMultiprocessorCount);
SAME_VALUE(GPU_ATTR_CC_MAJOR, hipDeviceAttributeComputeCapabilityMajor);
SAME_VALUE(GPU_ATTR_CC_MINOR, hipDeviceAttributeComputeCapabilityMinor);
SAME_VALUE(GPU_POINTER_ATTR_DEVICE_POINTER, HIP_POINTER_ATTRIBUTE_DEVICE_POINTER);
SAME_VALUE(GPU_POINTER_ATTR_DEVICE_ORDINAL, HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
SAME_VALUE(GPU_POINTER_ATTR_RANGE_START, HIP_POINTER_ATTRIBUTE_RANGE_START_ADDR);
SAME_VALUE(GPU_POINTER_ATTR_RANGE_SIZE, HIP_POINTER_ATTRIBUTE_RANGE_SIZE);
SAME_VALUE(GPU_CAPTURE_STATUS_ACTIVE, hipStreamCaptureStatusActive);
SAME_VALUE(GPU_WAIT_VALUE_EQ, hipStreamWaitValueEq);

/* Prototypes: the shim's pointer type of each entry vs the header's declaration. */
#define GPU_PFN(field, lookup, display, ret, params) typedef ret(*gpu_pfn_##field) params;
GPU_API_TABLE(GPU_PFN, GPU_PFN)
#undef GPU_PFN
#define SAME_PROTO(field, fn) SAME_TYPE(gpu_pfn_##field, __typeof__(&fn))

SAME_PROTO(DriverGetVersion, hipDriverGetVersion);
SAME_PROTO(DeviceGetCount, hipGetDeviceCount);
SAME_PROTO(DeviceGet, hipDeviceGet);
SAME_PROTO(DeviceGetName, hipDeviceGetName);
SAME_PROTO(DeviceGetAttribute, hipDeviceGetAttribute);
SAME_PROTO(DeviceTotalMem, hipDeviceTotalMem);
SAME_PROTO(SetDevice, hipSetDevice);
SAME_PROTO(DeviceSynchronize, hipDeviceSynchronize);
SAME_PROTO(MemGetInfo, hipMemGetInfo);
SAME_PROTO(MemAlloc, hipMalloc);
SAME_PROTO(MemFree, hipFree);
SAME_PROTO(HostAlloc, hipHostMalloc);
SAME_PROTO(HostFree, hipHostFree);
SAME_PROTO(StreamCreate, hipStreamCreateWithFlags);
SAME_PROTO(StreamDestroy, hipStreamDestroy);
SAME_PROTO(StreamSynchronize, hipStreamSynchronize);
SAME_PROTO(StreamQuery, hipStreamQuery);
SAME_PROTO(StreamWaitEvent, hipStreamWaitEvent);
SAME_PROTO(EventCreate, hipEventCreateWithFlags);
SAME_PROTO(EventDestroy, hipEventDestroy);
SAME_PROTO(EventRecord, hipEventRecord);
SAME_PROTO(EventSynchronize, hipEventSynchronize);
SAME_PROTO(EventQuery, hipEventQuery);
SAME_PROTO(EventElapsedTime, hipEventElapsedTime);
SAME_PROTO(MemcpyAsync, hipMemcpyAsync);
SAME_PROTO(MemsetD8Async, hipMemsetD8Async);
SAME_PROTO(LaunchHostFunc, hipLaunchHostFunc);
SAME_PROTO(ModuleLoadData, hipModuleLoadData);
SAME_PROTO(ModuleUnload, hipModuleUnload);
SAME_PROTO(ModuleGetFunction, hipModuleGetFunction);
SAME_PROTO(LaunchKernel, hipModuleLaunchKernel);
SAME_PROTO(StreamBeginCapture, hipStreamBeginCapture);
SAME_PROTO(StreamEndCapture, hipStreamEndCapture);
SAME_PROTO(GraphInstantiate, hipGraphInstantiateWithFlags);
SAME_PROTO(GraphLaunch, hipGraphLaunch);
SAME_PROTO(GraphExecDestroy, hipGraphExecDestroy);
SAME_PROTO(GraphDestroy, hipGraphDestroy);
SAME_TYPE(gpuGraphNode_t, hipGraphNode_t);
SAME_PROTO(GraphExecUpdate, hipGraphExecUpdate);
SAME_PROTO(GetErrorName, hipGetErrorName);
SAME_PROTO(StreamIsCapturing, hipStreamIsCapturing);
SAME_PROTO(GetDevice, hipGetDevice);
SAME_PROTO(StreamWaitValue32, hipStreamWaitValue32);
SAME_PROTO(StreamWriteValue32, hipStreamWriteValue32);

/* hiprtc (gpu_rtc.c): the shim's GPU_RTC_TABLE against hiprtc.h. */
#include <hip/hiprtc.h>

SAME_TYPE(gpuRtcResult_t, hiprtcResult);
SAME_TYPE(gpuRtcProgram_t, hiprtcProgram);
SAME_VALUE(GPU_RTC_SUCCESS, HIPRTC_SUCCESS);
#define GPU_RTC_PFN(field, lookup, display, ret, params) typedef ret(*gpu_rtc_pfn_##field) params;
GPU_RTC_TABLE(GPU_RTC_PFN, GPU_RTC_PFN)
#undef GPU_RTC_PFN
#define SAME_RTC_PROTO(field, fn) SAME_TYPE(gpu_rtc_pfn_##field, __typeof__(&fn))
SAME_RTC_PROTO(Version, hiprtcVersion);
SAME_RTC_PROTO(GetErrorString, hiprtcGetErrorString);
SAME_RTC_PROTO(CreateProgram, hiprtcCreateProgram);
SAME_RTC_PROTO(DestroyProgram, hiprtcDestroyProgram);
SAME_RTC_PROTO(CompileProgram, hiprtcCompileProgram);
SAME_RTC_PROTO(GetProgramLogSize, hiprtcGetProgramLogSize);
SAME_RTC_PROTO(GetProgramLog, hiprtcGetProgramLog);
SAME_RTC_PROTO(GetCodeSize, hiprtcGetCodeSize);
SAME_RTC_PROTO(GetCode, hiprtcGetCode);
