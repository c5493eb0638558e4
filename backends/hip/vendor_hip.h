/*
 * Vendor shim: maps the gpu_* vocabulary of backends/gpu_common onto the HIP runtime API.
 *
 * Force-included (-include) into every gpu_common source when building libaccel-hip.so. It
 * declares only what the backend uses, so the plugin neither includes hip_runtime_api.h nor
 * links libamdhip64: the runtime is dlopen'ed and entry points are looked up with dlsym by
 * their exported names. backends/hip/vendor_abi_check.c compares every value and prototype
 * below with the installed hip_runtime_api.h at build time.
 */
#ifndef ACCEL_VENDOR_HIP_H
#define ACCEL_VENDOR_HIP_H

#include <stddef.h>
#include <stdint.h>

#define GPU_VENDOR_HIP 1
#define GPU_BACKEND_NAME "hip"
#define GPU_COMM_ENGINE "rccl" /* the vtable's comm_engine: collectives on HIP streams */
#define GPU_BACKEND_DESCRIPTION "AMD GPUs through the HIP runtime (dlopen libamdhip64)"
#define GPU_VENDOR_STRING "AMD"
#define GPU_VISIBLE_DEVICES_ENV "HIP_VISIBLE_DEVICES"
#define GPU_DLPACK_DEVICE_TYPE 10 /* kDLROCM (ACCEL_DL_ROCM) */
/* ROCm 7 ships only libamdhip64.so.7 (no unversioned link without the dev package). */
#define GPU_LIBRARY_NAMES \
  {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}
/* HIP has no primary-context API worth using: the device is made current on the calling
 * thread with hipSetDevice in every entry point. */
#define GPU_HAS_PRIMARY_CONTEXT 0

typedef unsigned gpuError_t;            /* hipError_t (an enum of unsigned int) */
typedef int gpuDevice_t;                /* hipDevice_t */
typedef void *gpuDevicePtr_t;           /* hipDeviceptr_t */
typedef struct ihipStream_t *gpuStream_t;
typedef struct ihipEvent_t *gpuEvent_t;
typedef struct ihipModule_t *gpuModule_t;
typedef struct ihipModuleSymbol_t *gpuFunction_t;
typedef struct ihipGraph *gpuGraph_t;
typedef struct hipGraphExec *gpuGraphExec_t;
typedef void (*gpuHostFn_t)(void *user);
typedef struct hipGraphNode *gpuGraphNode_t;

#define GPU_SUCCESS 0                    /* hipSuccess */
#define GPU_ERROR_OUT_OF_MEMORY 2        /* hipErrorOutOfMemory */
#define GPU_ERROR_NOT_READY 600          /* hipErrorNotReady */
/* hipErrorStreamCaptureUnsupported .. hipErrorStreamCaptureWrongThread; 901 is
 * hipErrorStreamCaptureInvalidated (gpu_error.c maps them to accel's capture statuses) */
#define GPU_ERROR_CAPTURE_FIRST 900
#define GPU_ERROR_CAPTURE_INVALIDATED 901
#define GPU_ERROR_CAPTURE_LAST 908
#define GPU_STREAM_NON_BLOCKING 0x1u     /* hipStreamNonBlocking */
#define GPU_EVENT_DEFAULT 0x0u           /* hipEventDefault */
#define GPU_EVENT_DISABLE_TIMING 0x2u    /* hipEventDisableTiming */
#define GPU_HOST_ALLOC_PORTABLE 0x1u     /* hipHostMallocPortable */
#define GPU_CAPTURE_MODE_THREAD_LOCAL 1  /* hipStreamCaptureModeThreadLocal */
#define GPU_MEMCPY_DEFAULT 4             /* hipMemcpyDefault: direction from unified addressing */
#define GPU_ATTR_MULTIPROCESSOR_COUNT 63 /* hipDeviceAttributeMultiprocessorCount */
#define GPU_ATTR_CC_MAJOR 23             /* hipDeviceAttributeComputeCapabilityMajor */
#define GPU_ATTR_CC_MINOR 61             /* hipDeviceAttributeComputeCapabilityMinor */
/* Pointer attributes (accel_memory_register): hipPointer_attribute, CUDA's numbering. HIP has
 * no CONTEXT attribute ("not supported in HIP"): the device ordinal is checked instead. */
#define GPU_POINTER_ATTR_DEVICE_POINTER 3   /* HIP_POINTER_ATTRIBUTE_DEVICE_POINTER */
#define GPU_POINTER_ATTR_DEVICE_ORDINAL 9   /* HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
#define GPU_POINTER_ATTR_RANGE_START 11     /* HIP_POINTER_ATTRIBUTE_RANGE_START_ADDR */
#define GPU_POINTER_ATTR_RANGE_SIZE 12      /* HIP_POINTER_ATTRIBUTE_RANGE_SIZE */
#define GPU_CAPTURE_STATUS_ACTIVE 1      /* hipStreamCaptureStatusActive */
#define GPU_WAIT_VALUE_EQ 0x1u           /* hipStreamWaitValueEq */

/*
 * Entry points: X(field, lookup name, name in messages, return type, parameters).
 * REQ entries must resolve; OPT entries may be missing (the field stays NULL).
 */
#define GPU_API_TABLE(REQ, OPT)                                                                  \
  REQ(DriverGetVersion, "hipDriverGetVersion", "hipDriverGetVersion", gpuError_t, (int *version))\
  REQ(DeviceGetCount, "hipGetDeviceCount", "hipGetDeviceCount", gpuError_t, (int *count))        \
  REQ(DeviceGet, "hipDeviceGet", "hipDeviceGet", gpuError_t, (gpuDevice_t * dev, int ordinal))   \
  REQ(DeviceGetName, "hipDeviceGetName", "hipDeviceGetName", gpuError_t,                         \
      (char *name, int len, gpuDevice_t dev))                                                    \
  REQ(DeviceGetAttribute, "hipDeviceGetAttribute", "hipDeviceGetAttribute", gpuError_t,         \
      (int *value, unsigned attribute, int dev))                                                      \
  REQ(DeviceTotalMem, "hipDeviceTotalMem", "hipDeviceTotalMem", gpuError_t,                      \
      (size_t * bytes, gpuDevice_t dev))                                                         \
  REQ(SetDevice, "hipSetDevice", "hipSetDevice", gpuError_t, (int ordinal))                      \
  /* the caller's device, put back after each call (gpu_device.c); without it, not restored */  \
  OPT(GetDevice, "hipGetDevice", "hipGetDevice", gpuError_t, (int *ordinal))                     \
  REQ(DeviceSynchronize, "hipDeviceSynchronize", "hipDeviceSynchronize", gpuError_t, (void))     \
  REQ(MemGetInfo, "hipMemGetInfo", "hipMemGetInfo", gpuError_t,                                  \
      (size_t * free_bytes, size_t *total_bytes))                                                \
  REQ(MemAlloc, "hipMalloc", "hipMalloc", gpuError_t, (void **ptr, size_t size))                 \
  REQ(MemFree, "hipFree", "hipFree", gpuError_t, (void *ptr))                                    \
  REQ(HostAlloc, "hipHostMalloc", "hipHostMalloc", gpuError_t,                                   \
      (void **ptr, size_t size, unsigned flags))                                                 \
  REQ(HostFree, "hipHostFree", "hipHostFree", gpuError_t, (void *ptr))                           \
  REQ(StreamCreate, "hipStreamCreateWithFlags", "hipStreamCreateWithFlags", gpuError_t,          \
      (gpuStream_t * stream, unsigned flags))                                                    \
  REQ(StreamDestroy, "hipStreamDestroy", "hipStreamDestroy", gpuError_t, (gpuStream_t stream))   \
  REQ(StreamSynchronize, "hipStreamSynchronize", "hipStreamSynchronize", gpuError_t,             \
      (gpuStream_t stream))                                                                      \
  REQ(StreamQuery, "hipStreamQuery", "hipStreamQuery", gpuError_t, (gpuStream_t stream))         \
  REQ(StreamWaitEvent, "hipStreamWaitEvent", "hipStreamWaitEvent", gpuError_t,                   \
      (gpuStream_t stream, gpuEvent_t event, unsigned flags))                                    \
  REQ(EventCreate, "hipEventCreateWithFlags", "hipEventCreateWithFlags", gpuError_t,             \
      (gpuEvent_t * event, unsigned flags))                                                      \
  REQ(EventDestroy, "hipEventDestroy", "hipEventDestroy", gpuError_t, (gpuEvent_t event))        \
  REQ(EventRecord, "hipEventRecord", "hipEventRecord", gpuError_t,                               \
      (gpuEvent_t event, gpuStream_t stream))                                                    \
  REQ(EventSynchronize, "hipEventSynchronize", "hipEventSynchronize", gpuError_t,                \
      (gpuEvent_t event))                                                                        \
  REQ(EventQuery, "hipEventQuery", "hipEventQuery", gpuError_t, (gpuEvent_t event))              \
  REQ(EventElapsedTime, "hipEventElapsedTime", "hipEventElapsedTime", gpuError_t,                \
      (float *ms, gpuEvent_t start, gpuEvent_t end))                                             \
  REQ(MemcpyAsync, "hipMemcpyAsync", "hipMemcpyAsync", gpuError_t,                               \
      (void *dst, const void *src, size_t size, unsigned kind, gpuStream_t stream))                   \
  REQ(MemsetD8Async, "hipMemsetD8Async", "hipMemsetD8Async", gpuError_t,                         \
      (gpuDevicePtr_t dst, unsigned char value, size_t size, gpuStream_t stream))                \
  /* Exported from ROCm 5.3 on; without it host functions report UNSUPPORTED. */            \
  OPT(LaunchHostFunc, "hipLaunchHostFunc", "hipLaunchHostFunc", gpuError_t,                      \
      (gpuStream_t stream, gpuHostFn_t fn, void *user))                                          \
  REQ(ModuleLoadData, "hipModuleLoadData", "hipModuleLoadData", gpuError_t,                      \
      (gpuModule_t * module, const void *image))                                                 \
  REQ(ModuleUnload, "hipModuleUnload", "hipModuleUnload", gpuError_t, (gpuModule_t module))      \
  REQ(ModuleGetFunction, "hipModuleGetFunction", "hipModuleGetFunction", gpuError_t,             \
      (gpuFunction_t * fn, gpuModule_t module, const char *name))                                \
  REQ(LaunchKernel, "hipModuleLaunchKernel", "hipModuleLaunchKernel", gpuError_t,                \
      (gpuFunction_t fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,        \
       unsigned bz, unsigned shared_bytes, gpuStream_t stream, void **params, void **extra))     \
  REQ(StreamBeginCapture, "hipStreamBeginCapture", "hipStreamBeginCapture", gpuError_t,          \
      (gpuStream_t stream, unsigned mode))                                                            \
  REQ(StreamEndCapture, "hipStreamEndCapture", "hipStreamEndCapture", gpuError_t,                \
      (gpuStream_t stream, gpuGraph_t * graph))                                                  \
  REQ(GraphInstantiate, "hipGraphInstantiateWithFlags", "hipGraphInstantiateWithFlags",          \
      gpuError_t, (gpuGraphExec_t * exec, gpuGraph_t graph, unsigned long long flags))           \
  REQ(GraphLaunch, "hipGraphLaunch", "hipGraphLaunch", gpuError_t,                               \
      (gpuGraphExec_t exec, gpuStream_t stream))                                                 \
  REQ(GraphExecDestroy, "hipGraphExecDestroy", "hipGraphExecDestroy", gpuError_t,                \
      (gpuGraphExec_t exec))                                                                     \
  REQ(GraphDestroy, "hipGraphDestroy", "hipGraphDestroy", gpuError_t, (gpuGraph_t graph))        \
  /* in-place update (gpu_graph_update) */                                                      \
  OPT(GraphExecUpdate, "hipGraphExecUpdate", "hipGraphExecUpdate", gpuError_t,                   \
      (gpuGraphExec_t exec, gpuGraph_t graph, gpuGraphNode_t * error_node, unsigned *result))    \
  OPT(GetErrorName, "hipGetErrorName", "hipGetErrorName", const char *, (gpuError_t error))     \
  OPT(PointerGetAttribute, "hipPointerGetAttribute", "hipPointerGetAttribute", gpuError_t,      \
      (void *data, unsigned attribute, gpuDevicePtr_t ptr))                                      \
  /* Native handles (gpu_native.c): a wrapped stream may be under the runtime's capture. */    \
  OPT(StreamIsCapturing, "hipStreamIsCapturing", "hipStreamIsCapturing", gpuError_t,             \
      (gpuStream_t stream, unsigned *status))                                                    \
  /* Host functions on the plugin's thread (gpu_hostfn.c); capturable stream memory ops. */     \
  OPT(StreamWaitValue32, "hipStreamWaitValue32", "hipStreamWaitValue32", gpuError_t,             \
      (gpuStream_t stream, void *ptr, uint32_t value, unsigned flags, uint32_t mask))           \
  OPT(StreamWriteValue32, "hipStreamWriteValue32", "hipStreamWriteValue32", gpuError_t,          \
      (gpuStream_t stream, void *ptr, uint32_t value, unsigned flags))

/* Calls whose shape differs between vendors. */
#define GPU_DPTR(p) ((gpuDevicePtr_t)(uintptr_t)(p))
#define GPU_VPTR(d) ((void *)(d))
#define GPU_MEMCPY_ASYNC(api, dst, src, size, stream) \
  (api)->MemcpyAsync((dst), (src), (size), GPU_MEMCPY_DEFAULT, (stream))
#define GPU_GRAPH_EXEC_UPDATE(api, exec, graph) \
  (api)->GraphExecUpdate((exec), (graph), &(gpuGraphNode_t){NULL}, &(unsigned){0})
#define GPU_STREAM_WAIT_VALUE32(api, stream, ptr, value) \
  (api)->StreamWaitValue32((stream), (ptr), (value), GPU_WAIT_VALUE_EQ, 0xffffffffu)
#define GPU_STREAM_WRITE_VALUE32(api, stream, ptr, value) \
  (api)->StreamWriteValue32((stream), (ptr), (value), 0u)
/* Stores the error's name in *name (NULL when unknown). */
#define GPU_ERROR_NAME(api, err, name) \
  (*(name) = (api)->GetErrorName ? (api)->GetErrorName(err) : NULL)
#define GPU_FORMAT_DRIVER_VERSION(buf, size, v) snprintf((buf), (size), "HIP %d", (v))

/*
 * The run-time compiler of user kernels (gpu_rtc.c): hiprtc, dlopen'ed at the first module
 * build. ROCm 5.3 and later ship it as libhiprtc; up to 5.2 its entry points are in
 * libamdhip64. RTC(...) as GPU_API_TABLE; vendor_abi_check.c compares them with hiprtc.h.
 */
#define GPU_RTC_NAME "hiprtc"
#define GPU_RTC_LIBRARY_NAMES \
  {"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5", "libhiprtc.so", "libamdhip64.so.5"}
#define GPU_RTC_ENV "ACCEL_HIPRTC" /* a library to open instead (a path or a name; gpu_rtc.c) */
#define GPU_RTC_SUCCESS 0 /* HIPRTC_SUCCESS */
typedef unsigned gpuRtcResult_t;               /* hiprtcResult (an enum of unsigned int) */
typedef struct _hiprtcProgram *gpuRtcProgram_t; /* hiprtcProgram */
/* The numerics of the shared kernels (backends/hip/meson.build, hipcc): no contraction;
 * division and square root are correctly rounded by default. */
#define GPU_RTC_FIXED_OPTIONS {"-O3", "-ffp-contract=off"}
#define GPU_RTC_TARGET_OPTION "--offload-arch=" /* followed by gpu_rtc_target's answer */
#define GPU_RTC_TABLE(REQ, OPT)                                                                  \
  REQ(Version, "hiprtcVersion", "hiprtcVersion", gpuRtcResult_t, (int *major, int *minor))      \
  REQ(GetErrorString, "hiprtcGetErrorString", "hiprtcGetErrorString", const char *,              \
      (gpuRtcResult_t result))                                                                   \
  REQ(CreateProgram, "hiprtcCreateProgram", "hiprtcCreateProgram", gpuRtcResult_t,               \
      (gpuRtcProgram_t * prog, const char *src, const char *name, int nheaders,                  \
       const char **headers, const char **include_names))                                        \
  REQ(DestroyProgram, "hiprtcDestroyProgram", "hiprtcDestroyProgram", gpuRtcResult_t,            \
      (gpuRtcProgram_t * prog))                                                                  \
  REQ(CompileProgram, "hiprtcCompileProgram", "hiprtcCompileProgram", gpuRtcResult_t,            \
      (gpuRtcProgram_t prog, int noptions, const char **options))                                \
  REQ(GetProgramLogSize, "hiprtcGetProgramLogSize", "hiprtcGetProgramLogSize", gpuRtcResult_t,   \
      (gpuRtcProgram_t prog, size_t *size))                                                      \
  REQ(GetProgramLog, "hiprtcGetProgramLog", "hiprtcGetProgramLog", gpuRtcResult_t,               \
      (gpuRtcProgram_t prog, char *log))                                                         \
  /* the code object for the target (--offload-arch, else the current device's) */             \
  REQ(GetCodeSize, "hiprtcGetCodeSize", "hiprtcGetCodeSize", gpuRtcResult_t,                     \
      (gpuRtcProgram_t prog, size_t *size))                                                      \
  REQ(GetCode, "hiprtcGetCode", "hiprtcGetCode", gpuRtcResult_t,                                 \
      (gpuRtcProgram_t prog, char *code))

#endif /* ACCEL_VENDOR_HIP_H */
