/* Opening the CUDA or HIP plugin's device over tests/fake_driver's runtime, shared by the tests
 * that run a plugin over the fake (argv[1]: the backend, "cuda" or "hip"). */
#ifndef ACCEL_TESTS_FAKE_OPEN_H
#define ACCEL_TESTS_FAKE_OPEN_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "accel/accel.h"

/* The fake runtime's file name for the backend (what its plugin dlopens first). */
static inline const char *fake_library(const char *backend) {
  return strcmp(backend, "hip") == 0 ? "libamdhip64.so.7" : "libcuda.so.1";
}

/* Opens the backend's device into *dev and returns 0 when it is the fake's; otherwise prints
 * why and returns 77 (the test is skipped: no such device, or a real one). */
static inline int fake_open(const char *backend, accel_device_t **dev) {
  *dev = NULL;
  if (accel_device_open(backend, dev) != ACCEL_OK) {
    printf("SKIP: no %s device: %s\n", backend, accel_last_error());
    return 77;
  }
  accel_device_info_t info;
  memset(&info, 0, sizeof info);
  if (accel_device_get_info(*dev, &info) != ACCEL_OK ||
      !strstr(info.name, "device (tests/fake_driver)")) {
    printf("SKIP: %s device '%s' is not tests/fake_driver's\n", backend, info.name);
    accel_device_close(*dev);
    *dev = NULL;
    return 77;
  }
  return 0;
}

/* The backend named on the command line (default "cuda"). */
static inline const char *fake_backend_arg(int argc, char **argv) {
  return argc > 1 ? argv[1] : "cuda";
}

/* fake_open for the backend on the command line, and *drv the fake runtime it loaded (for
 * dlsym of the fake's test hooks; NULL when not loaded). */
static inline int fake_open_driver(int argc, char **argv, accel_device_t **dev, void **drv) {
  const char *backend = fake_backend_arg(argc, argv);
  *drv = NULL;
  const int skip = fake_open(backend, dev);
  if (!skip) *drv = dlopen(fake_library(backend), RTLD_NOW | RTLD_NOLOAD);
  return skip;
}

#endif
