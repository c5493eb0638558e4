/*
 * accel_memory_register on the CUDA plugin over the fake driver (fake_mem.c): memory that
 * no context owns, as PyTorch's cudaMallocAsync pools and expandable segments (cuMemMap) hand
 * out, is accepted when it is the device's and mapped (cuPointerGetAttribute(CONTEXT) is
 * CUDA_ERROR_INVALID_VALUE for it, which the plugin used to refuse); a range that runs into the
 * reserved but unmapped part of a mapping is refused although it lies inside RANGE_SIZE.
 * 77 when the cuda device is not the fake one (LD_LIBRARY_PATH must name it).
 */
#include <dlfcn.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_interop.h"
#include "check.h"
#include "fake_open.h"

typedef void *(*alloc_fn)(size_t size, size_t mapped);
typedef void (*free_fn)(void *p);

int main(int argc, char **argv) {
  accel_device_t *dev = NULL;
  void *drv = NULL;
  const int skip = fake_open_driver(argc, argv, &dev, &drv);
  if (skip) return skip;
  alloc_fn unowned = drv ? (alloc_fn)dlsym(drv, "fake_alloc_unowned") : NULL;
  free_fn release = drv ? (free_fn)dlsym(drv, "fake_free_unowned") : NULL;
  CHECK(unowned && release, "fake_alloc_unowned / fake_free_unowned not found");
  const size_t mib = 1u << 20;
  /* a stream-ordered allocation: no context, fully mapped */
  char *pool = unowned(mib, mib);
  void *dp = NULL;
  CHECK(pool != NULL, "fake allocation");
  OK(accel_memory_register(dev, pool + 4096, 8192, 0, &dp));
  CHECK(dp == pool + 4096, "device pointer %p, expected %p", dp, (void *)(pool + 4096));
  OK(accel_memory_unregister(dev, pool + 4096));

  /* a cuMemMap reservation of 1 MiB with its first 64 KiB mapped */
  char *vmm = unowned(mib, 65536);
  CHECK(vmm != NULL, "fake reservation");
  accel_status_t st = accel_memory_register(dev, vmm, mib, 0, &dp);
  CHECK(st == ACCEL_ERROR_UNSUPPORTED, "a range past the mapped part: %s (%s)",
        accel_status_name(st), accel_last_error());
  CHECK(strstr(accel_last_error(), "not mapped") != NULL, "message: %s", accel_last_error());
  OK(accel_memory_register(dev, vmm, 65536, 0, &dp));
  OK(accel_memory_unregister(dev, vmm));

  release(pool);
  release(vmm);
  accel_device_close(dev);
  printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures ? 1 : 0;
}
