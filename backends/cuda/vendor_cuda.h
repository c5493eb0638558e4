/*
 * Vendor shim: maps the gpu_* vocabulary of backends/gpu_common onto the CUDA driver API.
 *
 * Force-included (-include) into every gpu_common source when building libaccel-cuda.so. It
 * declares only the handful of types and constants the backend uses, so the plugin neither
 * includes cuda.h nor links libcuda: the driver is dlopen'ed and every entry point is fetched
 * with cuGetProcAddress_v2 pinned to GPU_API_VERSION, which selects the _v2 / _v3 variant each
 * base name had in that CUDA version. backends/cuda/vendor_abi_check.c compares every value and
 * prototype below with the real cuda.h at build time.
 */
#ifndef ACCEL_VENDOR_CUDA_H
#define ACCEL_VENDOR_CUDA_H

#include <stddef.h>
#include <stdint.h>

#define GPU_VENDOR_CUDA 1
#define GPU_BACKEND_NAME "cuda"
#define GPU_COMM_ENGINE "nccl" /* the vtable's comm_engine: collectives on CUDA streams */
#define GPU_BACKEND_DESCRIPTION "NVIDIA GPUs through the CUDA driver API (dlopen libcuda)"
#define GPU_VENDOR_STRING "NVIDIA"
#define GPU_VISIBLE_DEVICES_ENV "CUDA_VISIBLE_DEVICES"
#define GPU_DLPACK_DEVICE_TYPE 2 /* kDLCUDA (ACCEL_DL_CUDA) */
#define GPU_LIBRARY_NAMES {"libcuda.so.1", "libcuda.so"}
/* CUDA keeps one primary context per device; it is retained per open device and made current
 * on the calling thread in every entry point. */
#define GPU_HAS_PRIMARY_CONTEXT 1

/* The entry points are resolved through this symbol (dlsym), with the ABI of CUDA 12.0:
 * base names ("cuMemAlloc") then resolve to the version current in 12.0 ("cuMemAlloc_v2"). */
#define GPU_PROC_ADDRESS_SYMBOL "cuGetProcAddress_v2"
#define GPU_API_VERSION 12000
#define GPU_PROC_ADDRESS_LEGACY_STREAM 1ull /* CU_GET_PROC_ADDRESS_LEGACY_STREAM: no _ptsz */
#define GPU_PROC_ADDRESS_SUCCESS 0          /* CU_GET_PROC_ADDRESS_SUCCESS */

typedef unsigned gpuError_t;            /* CUresult (an enum of unsigned int) */
typedef int gpuDevice_t;                /* CUdevice */
typedef unsigned long long gpuDevicePtr_t; /* CUdeviceptr (64-bit) */
typedef struct CUctx_st *gpuContext_t;
typedef struct CUstream_st *gpuStream_t;
typedef struct CUevent_st *gpuEvent_t;
typedef struct CUmod_st *gpuModule_t;
typedef struct CUfunc_st *gpuFunction_t;
typedef struct CUgraph_st *gpuGraph_t;
typedef struct CUgraphExec_st *gpuGraphExec_t;
typedef void (*gpuHostFn_t)(void *user);
typedef struct CUgraphNode_st *gpuGraphNode_t;
/* CUgraphExecUpdateResultInfo (cuGraphExecUpdate since CUDA 12.0): same layout, checked by
 * vendor_abi_check.c (cuda.h's own struct cannot be named here). */
typedef struct gpu_graph_update_info {
  unsigned result; /* CUgraphExecUpdateResult */
  gpuGraphNode_t error_node, error_from_node;
} gpuGraphExecUpdateInfo_t;

#define GPU_SUCCESS 0                    /* CUDA_SUCCESS */
#define GPU_ERROR_OUT_OF_MEMORY 2        /* CUDA_ERROR_OUT_OF_MEMORY */
#define GPU_ERROR_NOT_READY 600          /* CUDA_ERROR_NOT_READY */
/* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED .. CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD; 901 is
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (gpu_error.c maps them to accel's capture statuses) */
#define GPU_ERROR_CAPTURE_FIRST 900
#define GPU_ERROR_CAPTURE_INVALIDATED 901
#define GPU_ERROR_CAPTURE_LAST 908
#define GPU_STREAM_NON_BLOCKING 0x1u     /* CU_STREAM_NON_BLOCKING */
#define GPU_EVENT_DEFAULT 0x0u           /* CU_EVENT_DEFAULT */
#define GPU_EVENT_DISABLE_TIMING 0x2u    /* CU_EVENT_DISABLE_TIMING */
#define GPU_HOST_ALLOC_PORTABLE 0x1u     /* CU_MEMHOSTALLOC_PORTABLE */
#define GPU_CAPTURE_MODE_THREAD_LOCAL 1  /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */
#define GPU_ATTR_MULTIPROCESSOR_COUNT 16 /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
#define GPU_ATTR_CC_MAJOR 75             /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define GPU_ATTR_CC_MINOR 76             /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */
/* Pointer attributes (accel_memory_register): CUpointer_attribute */
#define GPU_POINTER_ATTR_CONTEXT 1          /* CU_POINTER_ATTRIBUTE_CONTEXT */
#define GPU_POINTER_ATTR_DEVICE_POINTER 3   /* CU_POINTER_ATTRIBUTE_DEVICE_POINTER */
#define GPU_POINTER_ATTR_DEVICE_ORDINAL 9   /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
#define GPU_POINTER_ATTR_RANGE_START 11     /* CU_POINTER_ATTRIBUTE_RANGE_START_ADDR */
#define GPU_POINTER_ATTR_RANGE_SIZE 12      /* CU_POINTER_ATTRIBUTE_RANGE_SIZE */
#define GPU_CAPTURE_STATUS_ACTIVE 1      /* CU_STREAM_CAPTURE_STATUS_ACTIVE */
#define GPU_WAIT_VALUE_EQ 0x1u           /* CU_STREAM_WAIT_VALUE_EQ */
#define GPU_WRITE_VALUE_DEFAULT 0x0u     /* CU_STREAM_WRITE_VALUE_DEFAULT */

/*
 * Entry points: X(field, lookup name, name in messages, return type, parameters).
 * REQ entries must resolve; OPT entries may be missing (the field stays NULL).
 */
#define GPU_API_TABLE(REQ, OPT)                                                                  \
  REQ(Init, "cuInit", "cuInit", gpuError_t, (unsigned flags))                                    \
  REQ(DriverGetVersion, "cuDriverGetVersion", "cuDriverGetVersion", gpuError_t, (int *version))  \
  REQ(DeviceGetCount, "cuDeviceGetCount", "cuDeviceGetCount", gpuError_t, (int *count))          \
  REQ(DeviceGet, "cuDeviceGet", "cuDeviceGet", gpuError_t, (gpuDevice_t * dev, int ordinal))     \
  REQ(DeviceGetName, "cuDeviceGetName", "cuDeviceGetName", gpuError_t,                           \
      (char *name, int len, gpuDevice_t dev))                                                    \
  REQ(DeviceGetAttribute, "cuDeviceGetAttribute", "cuDeviceGetAttribute", gpuError_t,            \
      (int *value, unsigned attribute, gpuDevice_t dev))                                              \
  REQ(DeviceTotalMem, "cuDeviceTotalMem", "cuDeviceTotalMem_v2", gpuError_t,                     \
      (size_t * bytes, gpuDevice_t dev))                                                         \
  REQ(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", gpuError_t,      \
      (gpuContext_t * ctx, gpuDevice_t dev))                                                     \
  REQ(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2",            \
      gpuError_t, (gpuDevice_t dev))                                                             \
  REQ(CtxSetCurrent, "cuCtxSetCurrent", "cuCtxSetCurrent", gpuError_t, (gpuContext_t ctx))       \
  /* the caller's context, put back after each call (gpu_device.c); without it, not restored */ \
  OPT(CtxGetCurrent, "cuCtxGetCurrent", "cuCtxGetCurrent", gpuError_t, (gpuContext_t * ctx))    \
  REQ(DeviceSynchronize, "cuCtxSynchronize", "cuCtxSynchronize", gpuError_t, (void))             \
  REQ(MemGetInfo, "cuMemGetInfo", "cuMemGetInfo_v2", gpuError_t,                                 \
      (size_t * free_bytes, size_t *total_bytes))                                                \
  REQ(MemAlloc, "cuMemAlloc", "cuMemAlloc_v2", gpuError_t, (gpuDevicePtr_t * ptr, size_t size))  \
  REQ(MemFree, "cuMemFree", "cuMemFree_v2", gpuError_t, (gpuDevicePtr_t ptr))                    \
  REQ(HostAlloc, "cuMemHostAlloc", "cuMemHostAlloc", gpuError_t,                                 \
      (void **ptr, size_t size, unsigned flags))                                                 \
  REQ(HostFree, "cuMemFreeHost", "cuMemFreeHost", gpuError_t, (void *ptr))                       \
  REQ(StreamCreate, "cuStreamCreate", "cuStreamCreate", gpuError_t,                              \
      (gpuStream_t * stream, unsigned flags))                                                    \
  REQ(StreamDestroy, "cuStreamDestroy", "cuStreamDestroy_v2", gpuError_t, (gpuStream_t stream))  \
  REQ(StreamSynchronize, "cuStreamSynchronize", "cuStreamSynchronize", gpuError_t,               \
      (gpuStream_t stream))                                                                      \
  REQ(StreamQuery, "cuStreamQuery", "cuStreamQuery", gpuError_t, (gpuStream_t stream))           \
  REQ(StreamWaitEvent, "cuStreamWaitEvent", "cuStreamWaitEvent", gpuError_t,                     \
      (gpuStream_t stream, gpuEvent_t event, unsigned flags))                                    \
  REQ(EventCreate, "cuEventCreate", "cuEventCreate", gpuError_t,                                 \
      (gpuEvent_t * event, unsigned flags))                                                      \
  REQ(EventDestroy, "cuEventDestroy", "cuEventDestroy_v2", gpuError_t, (gpuEvent_t event))       \
  REQ(EventRecord, "cuEventRecord", "cuEventRecord", gpuError_t,                                 \
      (gpuEvent_t event, gpuStream_t stream))                                                    \
  REQ(EventSynchronize, "cuEventSynchronize", "cuEventSynchronize", gpuError_t,                  \
      (gpuEvent_t event))                                                                        \
  REQ(EventQuery, "cuEventQuery", "cuEventQuery", gpuError_t, (gpuEvent_t event))                \
  REQ(EventElapsedTime, "cuEventElapsedTime", "cuEventElapsedTime", gpuError_t,                  \
      (float *ms, gpuEvent_t start, gpuEvent_t end))                                             \
  REQ(MemcpyAsync, "cuMemcpyAsync", "cuMemcpyAsync", gpuError_t,                                 \
      (gpuDevicePtr_t dst, gpuDevicePtr_t src, size_t size, gpuStream_t stream))                 \
  REQ(MemsetD8Async, "cuMemsetD8Async", "cuMemsetD8Async", gpuError_t,                           \
      (gpuDevicePtr_t dst, unsigned char value, size_t size, gpuStream_t stream))                \
  REQ(LaunchHostFunc, "cuLaunchHostFunc", "cuLaunchHostFunc", gpuError_t,                        \
      (gpuStream_t stream, gpuHostFn_t fn, void *user))                                          \
  REQ(ModuleLoadData, "cuModuleLoadData", "cuModuleLoadData", gpuError_t,                        \
      (gpuModule_t * module, const void *image))                                                 \
  REQ(ModuleUnload, "cuModuleUnload", "cuModuleUnload", gpuError_t, (gpuModule_t module))        \
  REQ(ModuleGetFunction, "cuModuleGetFunction", "cuModuleGetFunction", gpuError_t,               \
      (gpuFunction_t * fn, gpuModule_t module, const char *name))                                \
  REQ(LaunchKernel, "cuLaunchKernel", "cuLaunchKernel", gpuError_t,                              \
      (gpuFunction_t fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,        \
       unsigned bz, unsigned shared_bytes, gpuStream_t stream, void **params, void **extra))     \
  REQ(StreamBeginCapture, "cuStreamBeginCapture", "cuStreamBeginCapture_v2", gpuError_t,         \
      (gpuStream_t stream, unsigned mode))                                                            \
  REQ(StreamEndCapture, "cuStreamEndCapture", "cuStreamEndCapture", gpuError_t,                  \
      (gpuStream_t stream, gpuGraph_t * graph))                                                  \
  REQ(GraphInstantiate, "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags",            \
      gpuError_t, (gpuGraphExec_t * exec, gpuGraph_t graph, unsigned long long flags))           \
  REQ(GraphLaunch, "cuGraphLaunch", "cuGraphLaunch", gpuError_t,                                 \
      (gpuGraphExec_t exec, gpuStream_t stream))                                                 \
  REQ(GraphExecDestroy, "cuGraphExecDestroy", "cuGraphExecDestroy", gpuError_t,                  \
      (gpuGraphExec_t exec))                                                                     \
  REQ(GraphDestroy, "cuGraphDestroy", "cuGraphDestroy", gpuError_t, (gpuGraph_t graph))          \
  /* in-place update (gpu_graph_update); 12.0's is the one with a result-info struct */         \
  OPT(GraphExecUpdate, "cuGraphExecUpdate", "cuGraphExecUpdate", gpuError_t,                     \
      (gpuGraphExec_t exec, gpuGraph_t graph, gpuGraphExecUpdateInfo_t * info))                  \
  OPT(GetErrorName, "cuGetErrorName", "cuGetErrorName", gpuError_t,                              \
      (gpuError_t error, const char **name))                                                     \
  OPT(PointerGetAttribute, "cuPointerGetAttribute", "cuPointerGetAttribute", gpuError_t,         \
      (void *data, unsigned attribute, gpuDevicePtr_t ptr))                                      \
  OPT(MemGetAddressRange, "cuMemGetAddressRange", "cuMemGetAddressRange_v2", gpuError_t,         \
      (gpuDevicePtr_t * base, size_t *size, gpuDevicePtr_t ptr))                                 \
  /* Native handles (gpu_native.c); without them the interop calls report UNSUPPORTED. */      \
  OPT(CtxGetDevice, "cuCtxGetDevice", "cuCtxGetDevice", gpuError_t, (gpuDevice_t * dev))         \
  OPT(PrimaryCtxGetState, "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxGetState",           \
      gpuError_t, (gpuDevice_t dev, unsigned *flags, int *active))                               \
  OPT(StreamGetCtx, "cuStreamGetCtx", "cuStreamGetCtx", gpuError_t,                              \
      (gpuStream_t stream, gpuContext_t * ctx))                                                  \
  OPT(StreamIsCapturing, "cuStreamIsCapturing", "cuStreamIsCapturing", gpuError_t,               \
      (gpuStream_t stream, unsigned *status))                                                    \
  /* Host functions on the plugin's thread (gpu_hostfn.c); capturable stream memory ops. */     \
  OPT(StreamWaitValue32, "cuStreamWaitValue32", "cuStreamWaitValue32_v2", gpuError_t,            \
      (gpuStream_t stream, gpuDevicePtr_t addr, uint32_t value, unsigned flags))                 \
  OPT(StreamWriteValue32, "cuStreamWriteValue32", "cuStreamWriteValue32_v2", gpuError_t,         \
      (gpuStream_t stream, gpuDevicePtr_t addr, uint32_t value, unsigned flags))

/* Calls whose shape differs between vendors. */
#define GPU_GRAPH_EXEC_UPDATE(api, exec, graph) \
  (api)->GraphExecUpdate((exec), (graph), &(gpuGraphExecUpdateInfo_t){0, NULL, NULL})
#define GPU_DPTR(p) ((gpuDevicePtr_t)(uintptr_t)(p))
#define GPU_VPTR(d) ((void *)(uintptr_t)(d))
#define GPU_MEMCPY_ASYNC(api, dst, src, size, stream) \
  (api)->MemcpyAsync(GPU_DPTR(dst), GPU_DPTR(src), (size), (stream))
/* Pinned host memory (cuMemHostAlloc) has the same address on the device under unified
 * addressing, which accel requires. */
#define GPU_STREAM_WAIT_VALUE32(api, stream, ptr, value) \
  (api)->StreamWaitValue32((stream), GPU_DPTR(ptr), (value), GPU_WAIT_VALUE_EQ)
#define GPU_STREAM_WRITE_VALUE32(api, stream, ptr, value) \
  (api)->StreamWriteValue32((stream), GPU_DPTR(ptr), (value), GPU_WRITE_VALUE_DEFAULT)
/* Stores the error's name in *name (NULL when unknown). */
#define GPU_ERROR_NAME(api, err, name)                                                    \
  do {                                                                                    \
    *(name) = NULL;                                                                       \
    if ((api)->GetErrorName && (api)->GetErrorName((err), (name)) != GPU_SUCCESS) *(name) = NULL; \
  } while (0)
/* "13.0" from 13000. */
#define GPU_FORMAT_DRIVER_VERSION(buf, size, v) \
  snprintf((buf), (size), "CUDA %d.%d", (v) / 1000, ((v) % 1000) / 10)

/*
 * The run-time compiler of user kernels (gpu_rtc.c): NVRTC, dlopen'ed at the first module build.
 * RTC(field, lookup, display, return type, parameters), as GPU_API_TABLE; looked up with dlsym.
 * vendor_abi_check.c compares them with nvrtc.h.
 */
#define GPU_RTC_NAME "NVRTC"
#define GPU_RTC_LIBRARY_NAMES \
  {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}
#define GPU_RTC_ENV "ACCEL_NVRTC" /* a library to open instead (a path or a name; gpu_rtc.c) */
#define GPU_RTC_SUCCESS 0 /* NVRTC_SUCCESS */
typedef unsigned gpuRtcResult_t;              /* nvrtcResult (an enum of unsigned int) */
typedef struct _nvrtcProgram *gpuRtcProgram_t; /* nvrtcProgram */
/* The numerics of the shared kernels (backends/cuda/meson.build, nvcc): no contraction,
 * correctly rounded division and square root, no flush to zero. */
#define GPU_RTC_FIXED_OPTIONS {"-fmad=false", "--prec-div=true", "--prec-sqrt=true", "--ftz=false"}
#define GPU_RTC_TARGET_OPTION "--gpu-architecture=" /* followed by gpu_rtc_target's answer */
#define GPU_RTC_TABLE(REQ, OPT)                                                                  \
  REQ(Version, "nvrtcVersion", "nvrtcVersion", gpuRtcResult_t, (int *major, int *minor))        \
  REQ(GetErrorString, "nvrtcGetErrorString", "nvrtcGetErrorString", const char *,                \
      (gpuRtcResult_t result))                                                                   \
  REQ(CreateProgram, "nvrtcCreateProgram", "nvrtcCreateProgram", gpuRtcResult_t,                 \
      (gpuRtcProgram_t * prog, const char *src, const char *name, int nheaders,                  \
       const char *const *headers, const char *const *include_names))                            \
  REQ(DestroyProgram, "nvrtcDestroyProgram", "nvrtcDestroyProgram", gpuRtcResult_t,              \
      (gpuRtcProgram_t * prog))                                                                  \
  REQ(CompileProgram, "nvrtcCompileProgram", "nvrtcCompileProgram", gpuRtcResult_t,              \
      (gpuRtcProgram_t prog, int noptions, const char *const *options))                          \
  REQ(GetProgramLogSize, "nvrtcGetProgramLogSize", "nvrtcGetProgramLogSize", gpuRtcResult_t,     \
      (gpuRtcProgram_t prog, size_t *size))                                                      \
  REQ(GetProgramLog, "nvrtcGetProgramLog", "nvrtcGetProgramLog", gpuRtcResult_t,                 \
      (gpuRtcProgram_t prog, char *log))                                                         \
  /* the device code: CUBIN for a real arch (sm_XX), PTX for a virtual one (compute_XX) */      \
  REQ(GetCodeSize, "nvrtcGetCUBINSize", "nvrtcGetCUBINSize", gpuRtcResult_t,                     \
      (gpuRtcProgram_t prog, size_t *size))                                                      \
  REQ(GetCode, "nvrtcGetCUBIN", "nvrtcGetCUBIN", gpuRtcResult_t,                                 \
      (gpuRtcProgram_t prog, char *code))                                                        \
  REQ(GetPTXSize, "nvrtcGetPTXSize", "nvrtcGetPTXSize", gpuRtcResult_t,                          \
      (gpuRtcProgram_t prog, size_t *size))                                                      \
  REQ(GetPTX, "nvrtcGetPTX", "nvrtcGetPTX", gpuRtcResult_t, (gpuRtcProgram_t prog, char *ptx))  \
  /* the real archs this NVRTC compiles for (CUDA 11.2+); without them: the device's own */    \
  OPT(GetNumSupportedArchs, "nvrtcGetNumSupportedArchs", "nvrtcGetNumSupportedArchs",            \
      gpuRtcResult_t, (int *n))                                                                  \
  OPT(GetSupportedArchs, "nvrtcGetSupportedArchs", "nvrtcGetSupportedArchs", gpuRtcResult_t,     \
      (int *archs))

#endif /* ACCEL_VENDOR_CUDA_H */
