/*
 * accel_interop.h declares the DLPack structs itself; this file only compiles when they have
 * DLPack's layout. DLTensor, DLManagedTensor, DLDevice, DLDataType and the enum values are
 * checked against dlpack.h as installed (Debian's libdlpack-dev, DLPack 0.6). 0.6 has no
 * DLManagedTensorVersioned: it is checked against the 1.x layout written out below from the
 * DLPack 1.0 specification (dlpack.h v1.0: DLPackVersion, DLManagedTensorVersioned and the
 * DLPACK_FLAG_BITMASK_* flags), whose DLTensor member is the same DLTensor as 0.6's.
 */
#include <stddef.h>

#include <dlpack/dlpack.h>

#include "accel/accel_interop.h"

#define SAME_FIELD(a, fa, b, fb)                                                              \
  _Static_assert(offsetof(a, fa) == offsetof(b, fb) &&                                        \
                     sizeof(((a *)0)->fa) == sizeof(((b *)0)->fb),                            \
                 #a "." #fa " is not laid out as " #b "." #fb)
#define SAME_SIZE(a, b)                                                                       \
  _Static_assert(sizeof(a) == sizeof(b) && _Alignof(a) == _Alignof(b),                        \
                 #a " and " #b " differ in size or alignment")

#define SAME_VALUE(a, b) _Static_assert((long)(a) == (long)(b), #a " is not " #b)

SAME_SIZE(accel_dl_device_t, DLDevice);
SAME_FIELD(accel_dl_device_t, device_type, DLDevice, device_type);
SAME_FIELD(accel_dl_device_t, device_id, DLDevice, device_id);

SAME_SIZE(accel_dl_dtype_t, DLDataType);
SAME_FIELD(accel_dl_dtype_t, code, DLDataType, code);
SAME_FIELD(accel_dl_dtype_t, bits, DLDataType, bits);
SAME_FIELD(accel_dl_dtype_t, lanes, DLDataType, lanes);

SAME_SIZE(accel_dl_tensor_t, DLTensor);
SAME_FIELD(accel_dl_tensor_t, data, DLTensor, data);
SAME_FIELD(accel_dl_tensor_t, device, DLTensor, device);
SAME_FIELD(accel_dl_tensor_t, ndim, DLTensor, ndim);
SAME_FIELD(accel_dl_tensor_t, dtype, DLTensor, dtype);
SAME_FIELD(accel_dl_tensor_t, shape, DLTensor, shape);
SAME_FIELD(accel_dl_tensor_t, strides, DLTensor, strides);
SAME_FIELD(accel_dl_tensor_t, byte_offset, DLTensor, byte_offset);

SAME_SIZE(accel_dl_managed_tensor_t, DLManagedTensor);
SAME_FIELD(accel_dl_managed_tensor_t, dl_tensor, DLManagedTensor, dl_tensor);
SAME_FIELD(accel_dl_managed_tensor_t, manager_ctx, DLManagedTensor, manager_ctx);
SAME_FIELD(accel_dl_managed_tensor_t, deleter, DLManagedTensor, deleter);

/* DLDeviceType and DLDataTypeCode (0.6 has neither kDLOneAPI nor kDLBool) */
SAME_VALUE(ACCEL_DL_CPU, kDLCPU);
SAME_VALUE(ACCEL_DL_CUDA, kDLCUDA);
SAME_VALUE(ACCEL_DL_CUDA_HOST, kDLCUDAHost);
SAME_VALUE(ACCEL_DL_OPENCL, kDLOpenCL);
SAME_VALUE(ACCEL_DL_VULKAN, kDLVulkan);
SAME_VALUE(ACCEL_DL_METAL, kDLMetal);
SAME_VALUE(ACCEL_DL_VPI, kDLVPI);
SAME_VALUE(ACCEL_DL_ROCM, kDLROCM);
SAME_VALUE(ACCEL_DL_ROCM_HOST, kDLROCMHost);
SAME_VALUE(ACCEL_DL_EXT_DEV, kDLExtDev);
SAME_VALUE(ACCEL_DL_CUDA_MANAGED, kDLCUDAManaged);
SAME_VALUE(ACCEL_DL_INT, kDLInt);
SAME_VALUE(ACCEL_DL_UINT, kDLUInt);
SAME_VALUE(ACCEL_DL_FLOAT, kDLFloat);
SAME_VALUE(ACCEL_DL_OPAQUE_HANDLE, kDLOpaqueHandle);
SAME_VALUE(ACCEL_DL_BFLOAT, kDLBfloat);
SAME_VALUE(ACCEL_DL_COMPLEX, kDLComplex);

/* DLPack 1.0 (not in 0.6): the versioned managed tensor, as the specification lays it out. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} spec_DLPackVersion;
typedef struct spec_DLManagedTensorVersioned {
  spec_DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct spec_DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} spec_DLManagedTensorVersioned;
#define SPEC_DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define SPEC_DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

SAME_SIZE(accel_dl_version_t, spec_DLPackVersion);
SAME_FIELD(accel_dl_version_t, major, spec_DLPackVersion, major);
SAME_FIELD(accel_dl_version_t, minor, spec_DLPackVersion, minor);
SAME_SIZE(accel_dl_managed_tensor_versioned_t, spec_DLManagedTensorVersioned);
SAME_FIELD(accel_dl_managed_tensor_versioned_t, version, spec_DLManagedTensorVersioned, version);
SAME_FIELD(accel_dl_managed_tensor_versioned_t, manager_ctx, spec_DLManagedTensorVersioned,
           manager_ctx);
SAME_FIELD(accel_dl_managed_tensor_versioned_t, deleter, spec_DLManagedTensorVersioned, deleter);
SAME_FIELD(accel_dl_managed_tensor_versioned_t, flags, spec_DLManagedTensorVersioned, flags);
SAME_FIELD(accel_dl_managed_tensor_versioned_t, dl_tensor, spec_DLManagedTensorVersioned,
           dl_tensor);
_Static_assert(ACCEL_DL_FLAG_READ_ONLY == SPEC_DLPACK_FLAG_BITMASK_READ_ONLY &&
                   ACCEL_DL_FLAG_IS_COPIED == SPEC_DLPACK_FLAG_BITMASK_IS_COPIED,
               "DLPack flag bits differ");
_Static_assert(ACCEL_DLPACK_MAJOR_VERSION == 1, "accel speaks DLPack 1.x");

int main(void) {
  /* everything was checked by the compiler; a run says so */
  return 0;
}
