/*
 * accel interop: memory, tensors, devices, streams and events that accel did not create.
 *
 * - External memory: accel_memory_register makes a range accel did not allocate a valid
 *   operand of kernels, copies and graphs, with every check an allocation gets (bounds, overlap,
 *   use after unregister).
 * - DLPack: tensors of other frameworks (DLPack 1.x DLManagedTensorVersioned and the legacy
 *   DLManagedTensor that PyTorch 1.13 and NumPy 1.24 export) become accel_tensor_t views, and
 *   accel allocations are exported as DLPack. The DLPack structs are declared here under accel_
 *   names (the DLPack ABI is public; accel does not ship dlpack.h), laid out exactly as dlpack.h,
 *   which a build-time test checks.
 * - Native handles: the backend's own device/context/queue/event objects out, and a runtime's
 *   own context and queue in (adopted, never destroyed by accel), so accel's kernels run in the
 *   runtime's stream order.
 *
 * Ownership follows docs/RELIABILITY.md: whatever a graph, capture or queued command uses is held
 * until it is done with; a call that would pull memory out from under a live graph is refused.
 * See docs/INTEROP.md for the rules per backend and complete examples.
 */
#ifndef ACCEL_ACCEL_INTEROP_H
#define ACCEL_ACCEL_INTEROP_H

#include <stdint.h>

#include "accel.h"
#include "accel_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * External memory
 * ------------------------------------------------------------------------------------------- */

enum {
  ACCEL_REGISTER_DEFAULT = 0,
  /* Kernels may only read the range: naming it in a written tensor list, or as the destination
   * of a copy or memset, is ACCEL_ERROR_INVALID_ARGUMENT. */
  ACCEL_REGISTER_READ_ONLY = 1u << 0
};

/* Makes [ptr, ptr + size) usable by kernels, copies and graphs on the device. What a backend
 * accepts: host memory on the CPU backend; a device pointer of the same context on CUDA/HIP; USM of
 * the device's context on Level Zero; SVM of the device's context (or host memory where the device
 * has fine-grained system SVM) on OpenCL. *device_ptr receives the address to pass to accel (equal
 * to ptr on every current backend). The range must not overlap an allocation or another
 * registration of the device. While registered, the range is the registration's: a free of memory
 * it covers (accel_host_free of an accel_host_alloc block, accel_free of another device's
 * allocation) is ACCEL_ERROR_STATE naming it. Errors: INVALID_ARGUMENT (NULL, size 0, overflow,
 * overlap, unknown flags), UNSUPPORTED (memory this backend cannot use, with the reason),
 * ILLEGAL_IN_CAPTURE (during a GLOBAL capture on the device). */
ACCEL_API accel_status_t accel_memory_register(accel_device_t *device, void *ptr, size_t size,
                                               unsigned flags, void **device_ptr);
/* Ends a registration (ptr: the pointer given to accel_memory_register). Waits until no queued
 * command of the device can touch the range, so the caller may free it on return; a waiting
 * call (not from a host function of a stream of this device). Refused with ACCEL_ERROR_STATE,
 * naming the holder, while a captured graph, an open capture or a DLPack import uses the range.
 * A second unregister, or a pointer never registered: INVALID_ARGUMENT. */
ACCEL_API accel_status_t accel_memory_unregister(accel_device_t *device, void *ptr);

/* ---------------------------------------------------------------------------------------------
 * DLPack (ABI of dlpack.h 1.x; accel_dl_* mirror DLDevice, DLDataType, DLTensor, ...)
 * ------------------------------------------------------------------------------------------- */

#define ACCEL_DLPACK_MAJOR_VERSION 1u
#define ACCEL_DLPACK_MINOR_VERSION 0u

enum { /* DLDeviceType */
  ACCEL_DL_CPU = 1,
  ACCEL_DL_CUDA = 2,
  ACCEL_DL_CUDA_HOST = 3,
  ACCEL_DL_OPENCL = 4,
  ACCEL_DL_VULKAN = 7,
  ACCEL_DL_METAL = 8,
  ACCEL_DL_VPI = 9,
  ACCEL_DL_ROCM = 10,
  ACCEL_DL_ROCM_HOST = 11,
  ACCEL_DL_EXT_DEV = 12,
  ACCEL_DL_CUDA_MANAGED = 13,
  ACCEL_DL_ONEAPI = 14
};

enum { /* DLDataTypeCode */
  ACCEL_DL_INT = 0,
  ACCEL_DL_UINT = 1,
  ACCEL_DL_FLOAT = 2,
  ACCEL_DL_OPAQUE_HANDLE = 3,
  ACCEL_DL_BFLOAT = 4,
  ACCEL_DL_COMPLEX = 5,
  ACCEL_DL_BOOL = 6
};

/* DLManagedTensorVersioned.flags */
#define ACCEL_DL_FLAG_READ_ONLY (UINT64_C(1) << 0)
#define ACCEL_DL_FLAG_IS_COPIED (UINT64_C(1) << 1)

typedef struct accel_dl_version { uint32_t major, minor; } accel_dl_version_t;
typedef struct accel_dl_device { int32_t device_type; int32_t device_id; } accel_dl_device_t;
typedef struct accel_dl_dtype { uint8_t code, bits; uint16_t lanes; } accel_dl_dtype_t;

typedef struct accel_dl_tensor { /* DLTensor */
  void *data;
  accel_dl_device_t device;
  int32_t ndim;
  accel_dl_dtype_t dtype;
  int64_t *shape;
  int64_t *strides;      /* NULL: compact row-major */
  uint64_t byte_offset;
} accel_dl_tensor_t;

typedef struct accel_dl_managed_tensor { /* DLManagedTensor (legacy, DLPack < 1.0) */
  accel_dl_tensor_t dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct accel_dl_managed_tensor *self);
} accel_dl_managed_tensor_t;

typedef struct accel_dl_managed_tensor_versioned { /* DLManagedTensorVersioned (1.x) */
  accel_dl_version_t version;
  void *manager_ctx;
  void (*deleter)(struct accel_dl_managed_tensor_versioned *self);
  uint64_t flags;
  accel_dl_tensor_t dl_tensor;
} accel_dl_managed_tensor_versioned_t;

/* The DLPack device of an accel device (e.g. {ACCEL_DL_CPU, 0}, {ACCEL_DL_CUDA, 1}). */
ACCEL_API accel_status_t accel_device_dlpack_device(accel_device_t *device,
                                                    accel_dl_device_t *out);

/* Borrowed view: checks a DLTensor against the device (device type and id, compact strides,
 * F32/F16/BF16 with one lane, data + byte_offset aligned to the element size, shape product
 * without overflow) and fills *out (data already offset, numel = product of shape). Registers
 * nothing: the memory must already be an allocation or a registration of the device when the
 * view is used. */
ACCEL_API accel_status_t accel_dlpack_view(accel_device_t *device, const accel_dl_tensor_t *t,
                                           accel_tensor_t *out);

typedef struct accel_dlpack_import accel_dlpack_import_t;

enum {
  ACCEL_DLPACK_IMPORT_DEFAULT = 0,
  /* Do not take ownership: the deleter is never called and the producer keeps the tensor alive
   * until accel_dlpack_release returns. */
  ACCEL_DLPACK_IMPORT_BORROW = 1u << 0
};

/* Imports a DLPack tensor: the checks of accel_dlpack_view, then its range is registered with the
 * device (READ_ONLY when the versioned flags say so) unless it already lies in an allocation or
 * registration. Imports of a range inside one an import registered share that registration: it ends
 * when the last of them was released and no graph uses it (a range that only partly overlaps it:
 * INVALID_ARGUMENT). *view gets the tensor to pass to kernels; *out a handle. On success accel owns
 * the managed tensor (unless BORROW) and calls its deleter exactly once, after accel_dlpack_release
 * and after every graph and queued command using it is done (in a shared registration: when that
 * ends), never inside a host function of the device: in accel_dlpack_release or accel_device_close
 * when the device is idle, else in the next accel_device_synchronize, accel_empty_cache or
 * accel_memory_unregister (docs/INTEROP.md). A deleter may call any accel function. On failure
 * ownership stays with the caller. A versioned tensor whose major version is not
 * ACCEL_DLPACK_MAJOR_VERSION is refused (UNSUPPORTED, both versions named). */
ACCEL_API accel_status_t accel_dlpack_import(accel_device_t *device,
                                             accel_dl_managed_tensor_versioned_t *managed,
                                             unsigned flags, accel_tensor_t *view,
                                             accel_dlpack_import_t **out);
ACCEL_API accel_status_t accel_dlpack_import_legacy(accel_device_t *device,
                                                    accel_dl_managed_tensor_t *managed,
                                                    unsigned flags, accel_tensor_t *view,
                                                    accel_dlpack_import_t **out);
/* Drops the user's reference of an import (a second release: INVALID_HANDLE). */
ACCEL_API accel_status_t accel_dlpack_release(accel_dlpack_import_t *import);

/* Exports tensor (inside one allocation of the device) as a 1-D DLPack tensor. The export holds
 * the device and the allocation: accel_free of it is deferred until the consumer calls the
 * deleter, which must be called exactly once. */
ACCEL_API accel_status_t accel_dlpack_export(accel_device_t *device, const accel_tensor_t *tensor,
                                             accel_dl_managed_tensor_versioned_t **out);
ACCEL_API accel_status_t accel_dlpack_export_legacy(accel_device_t *device,
                                                    const accel_tensor_t *tensor,
                                                    accel_dl_managed_tensor_t **out);

/* ---------------------------------------------------------------------------------------------
 * Native handles
 * ------------------------------------------------------------------------------------------- */

/* The backend's own objects. The caller sets struct_size = sizeof(accel_native_t); fields a
 * backend does not have are NULL.
 *   backend     platform             device               context       queue                 event
 *   cuda        NULL                 (CUdevice)(intptr_t) CUcontext     CUstream              CUevent
 *   hip         NULL                 (hipDevice_t)(intptr) NULL         hipStream_t           hipEvent_t
 *   opencl      cl_platform_id       cl_device_id         cl_context    cl_command_queue      cl_event
 *   level_zero  ze_driver_handle_t   ze_device_handle_t   ze_context_.. ze_command_list_handle_t (immediate)  ze_event_handle_t
 * The CPU backend has none: ACCEL_ERROR_UNSUPPORTED. */
typedef struct accel_native {
  uint32_t struct_size;
  uint32_t reserved;
  char backend[32];
  void *platform;
  void *device;
  void *context;
  void *queue;
  void *event;
} accel_native_t;

/* Fills backend, platform, device and context. The handles stay owned by accel and valid while
 * the device is open. */
ACCEL_API accel_status_t accel_device_native(accel_device_t *device, accel_native_t *out);
/* Also fills queue: the stream's own queue (a lazy stream is flushed first so that work
 * submitted natively after this call runs after accel's). */
ACCEL_API accel_status_t accel_stream_native(accel_stream_t *stream, accel_native_t *out);
/* The native event of the event's last record (NULL before the first record); valid until the
 * next record or destroy of the event. Native code may wait on it (clEnqueueBarrierWithWaitList,
 * cuStreamWaitEvent, ...). A record captured into a graph has none: ACCEL_ERROR_STATE, also after
 * the capture ended (until the event is recorded outside a capture again). */
ACCEL_API accel_status_t accel_event_native(accel_event_t *event, accel_native_t *out);
/* Makes the stream wait for a native event of its backend (not retained past the call's
 * effect: the backend enqueues the wait before returning). On a capturing stream:
 * ACCEL_ERROR_ILLEGAL_IN_CAPTURE, and the capture is invalidated (a replay would not wait). */
ACCEL_API accel_status_t accel_stream_wait_native_event(accel_stream_t *stream,
                                                        void *native_event);

/* Opens an accel device over a runtime's own context and device (backend: "opencl", "cuda", ...;
 * native: platform/device/context as in the table). accel allocates and builds its kernels in
 * that context; it retains what the vendor API lets it retain and destroys nothing it did not
 * create. The device is distinct from the one accel_device_open would give. */
ACCEL_API accel_status_t accel_device_wrap_native(const char *backend, const accel_native_t *native,
                                                  accel_device_t **out);
/* Adopts a runtime's stream or queue (native->queue) of the device's context. The stream is
 * eager (never lazy), accel_stream_destroy waits for it but never destroys the native object,
 * and accel's commands land in the queue's order between the runtime's own, so they are also
 * recorded by a capture the runtime runs on it (CUDA/HIP stream capture). accel_stream_query
 * on it covers at least the work accel enqueued (docs/INTEROP.md: per backend). */
ACCEL_API accel_status_t accel_stream_wrap_native(accel_device_t *device,
                                                  const accel_native_t *native,
                                                  accel_stream_t **out);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_INTEROP_H */
