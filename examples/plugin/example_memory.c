/*
 * Raw allocations. The core's caching allocator sits on top of mem_alloc/mem_free: it asks for
 * large segments, splits them into blocks, reuses freed blocks in stream order and calls
 * mem_free only when a segment is unused (accel_empty_cache, device close, or a retry after an
 * allocation failed). A plugin never sees accel_malloc's small requests.
 */
#include <stdlib.h>

#include "example_internal.h"

/* Device allocations are aligned like cudaMalloc's (the ABI asks for at least 256 bytes). */
#define EXAMPLE_ALIGNMENT 256u

static accel_status_t aligned_host_memory(const char *what, size_t size, void **ptr) {
  size_t rounded = (size + EXAMPLE_ALIGNMENT - 1) & ~(size_t)(EXAMPLE_ALIGNMENT - 1);
  /* aligned_alloc wants a multiple of the alignment; rounded < size means size overflowed */
  void *p = rounded >= size ? aligned_alloc(EXAMPLE_ALIGNMENT, rounded) : NULL;
  if (!p)
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": aligned_alloc(%u, %zu) for %s failed",
                                   EXAMPLE_ALIGNMENT, size, what);
  *ptr = p;
  return ACCEL_OK;
}

accel_status_t example_mem_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  (void)device;
  /* The fault-injection hook lets the CTS exercise the core's out-of-memory paths on this
   * backend too (ACCEL_FAULT_INJECT=alloc:N). */
  if (EXAMPLE_HOST_HAS(example_host, fault_should_fail) &&
      example_host->fault_should_fail(ACCEL_FAULT_ALLOC))
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": device allocation of %zu bytes failed "
                                   "(injected fault)", size);
  return aligned_host_memory("device memory", size, ptr);
}

void example_mem_free(accel_be_device_t *device, void *ptr) {
  (void)device;
  free(ptr);
}

accel_status_t example_host_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  (void)device;
  /* A vendor plugin returns page-locked memory here (cuMemHostAlloc, hipHostMalloc, ...). */
  return aligned_host_memory("host memory", size, ptr);
}

void example_host_free(accel_be_device_t *device, void *ptr) {
  (void)device;
  free(ptr);
}
