/*
 * The HIP face of the fake driver (libamdhip64.so.7; see fake_driver.c): the current device
 * instead of contexts (device 0 until hipSetDevice), HIP's error names, and the shapes of
 * HIP's calls that differ from CUDA's. Entry points are exported under HIP's names
 * (fake_driver.h), as the plugin looks them up with dlsym.
 */
#include <stddef.h>

#include "fake_driver.h"

gpuError_t fake_SetDevice(int ordinal) {
  ENTER();
  if (ordinal != 0) return 101u; /* hipErrorInvalidDevice */
  fake_current = &fake_primary;
  return GPU_SUCCESS;
}

gpuError_t fake_GetDevice(int *ordinal) {
  ENTER();
  if (!ordinal) return E_INVALID_VALUE;
  *ordinal = fake_current->device;
  return GPU_SUCCESS;
}

gpuError_t fake_StreamWaitValue32(gpuStream_t s, void *ptr, uint32_t value, unsigned flags,
                                  uint32_t mask) {
  /* only what the plugin uses */
  if (flags != GPU_WAIT_VALUE_EQ || mask != 0xffffffffu) return E_NOT_SUPPORTED;
  return fake_StreamWaitValue32Eq(s, ptr, value);
}

const char *fake_GetErrorName(gpuError_t err) {
  static const struct { gpuError_t e; const char *n; } names[] = {
      {0, "hipSuccess"}, {1, "hipErrorInvalidValue"}, {2, "hipErrorOutOfMemory"},
      {3, "hipErrorNotInitialized"}, {101, "hipErrorInvalidDevice"},
      {200, "hipErrorInvalidImage"}, {400, "hipErrorInvalidHandle"}, {500, "hipErrorNotFound"},
      {600, "hipErrorNotReady"}, {801, "hipErrorNotSupported"},
      {900, "hipErrorStreamCaptureUnsupported"}, {901, "hipErrorStreamCaptureInvalidated"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].e == err) return names[i].n;
  return "hipErrorUnknown";
}
