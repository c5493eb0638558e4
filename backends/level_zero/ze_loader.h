/*
 * The Level Zero loader, opened with dlopen: no link-time dependency on libze_loader, so the
 * plugin loads on machines without the oneAPI stack and reports UNAVAILABLE there.
 *
 * ze_api.h is used for types only. Each entry of ACCEL_ZE_SYMBOLS becomes a function pointer
 * member of accel_ze_api_t typed after the header's own declaration (no hand-written
 * prototypes to drift). Required entries must resolve; optional ones may stay NULL.
 */
#ifndef ACCEL_ZE_LOADER_H
#define ACCEL_ZE_LOADER_H

#include <level_zero/ze_api.h>
#include <stddef.h>

/* X(name, required) */
#define ACCEL_ZE_SYMBOLS(X)                    \
  X(zeInit, 1)                                 \
  X(zeDriverGet, 1)                            \
  X(zeDriverGetProperties, 1)                  \
  X(zeDriverGetExtensionProperties, 0)         \
  X(zeDriverGetExtensionFunctionAddress, 0)    \
  X(zeDeviceGet, 1)                            \
  X(zeDeviceGetProperties, 1)                  \
  X(zeDeviceGetComputeProperties, 1)           \
  X(zeDeviceGetMemoryProperties, 1)            \
  X(zeDeviceGetModuleProperties, 1)            \
  X(zeDeviceGetCommandQueueGroupProperties, 1) \
  X(zeContextCreate, 1)                        \
  X(zeContextDestroy, 1)                       \
  X(zeMemAllocDevice, 1)                       \
  X(zeMemAllocHost, 1)                         \
  X(zeMemFree, 1)                              \
  X(zeCommandQueueCreate, 1)                   \
  X(zeCommandQueueDestroy, 1)                  \
  X(zeCommandQueueExecuteCommandLists, 1)      \
  X(zeCommandQueueSynchronize, 1)              \
  X(zeCommandListCreate, 1)                    \
  X(zeCommandListCreateImmediate, 1)           \
  X(zeCommandListClose, 1)                     \
  X(zeCommandListReset, 1)                     \
  X(zeCommandListDestroy, 1)                   \
  X(zeCommandListAppendBarrier, 1)             \
  X(zeCommandListAppendMemoryCopy, 1)          \
  X(zeCommandListAppendMemoryFill, 1)          \
  X(zeCommandListAppendLaunchKernel, 1)        \
  X(zeCommandListAppendWaitOnEvents, 1)        \
  X(zeCommandListAppendEventReset, 1)          \
  X(zeFenceCreate, 1)                          \
  X(zeFenceDestroy, 1)                         \
  X(zeFenceHostSynchronize, 1)                 \
  X(zeFenceQueryStatus, 1)                     \
  X(zeFenceReset, 1)                           \
  X(zeEventPoolCreate, 1)                      \
  X(zeEventPoolDestroy, 1)                     \
  X(zeEventCreate, 1)                          \
  X(zeEventDestroy, 1)                         \
  X(zeEventHostSynchronize, 1)                 \
  X(zeEventQueryStatus, 1)                     \
  X(zeEventHostReset, 1)                       \
  X(zeEventQueryKernelTimestamp, 1)            \
  X(zeModuleCreate, 1)                         \
  X(zeModuleDestroy, 1)                        \
  X(zeModuleBuildLogGetString, 1)              \
  X(zeModuleBuildLogDestroy, 1)                \
  X(zeKernelCreate, 1)                         \
  X(zeKernelDestroy, 1)                        \
  X(zeKernelSetGroupSize, 1)                   \
  X(zeKernelSetArgumentValue, 1)               \
  X(zeKernelSetIndirectAccess, 1)              \
  X(zeMemGetAddressRange, 0)                   \
  X(zeMemGetAllocProperties, 0)

typedef struct accel_ze_api {
  void *lib; /* dlopen handle; never dlclose'd (drivers keep threads and atexit hooks) */
  const char *lib_name;
#define ACCEL_ZE_MEMBER(name, required) __typeof__(&name) name;
  ACCEL_ZE_SYMBOLS(ACCEL_ZE_MEMBER)
#undef ACCEL_ZE_MEMBER
} accel_ze_api_t;

/* Opens the loader ("libze_loader.so.1", then "libze_loader.so") and resolves the table.
 * On failure returns nonzero and writes every path tried with its dlerror() to why. */
int accel_ze_api_load(accel_ze_api_t *api, char *why, size_t why_size);

/* "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY" etc.; "ZE_RESULT_<unknown>" for other values. */
const char *accel_ze_result_name(ze_result_t r);

#endif
