/* Opening the CUDA plugin's device over tests/fake_driver's libcuda.so.1, shared by the tests
 * that run the plugin over the fake. */
#ifndef ACCEL_TESTS_FAKE_OPEN_H
#define ACCEL_TESTS_FAKE_OPEN_H

#include <stdio.h>
#include <string.h>

#include "accel/accel.h"

/* Opens the "cuda" device into *dev and returns 0 when it is the fake's; otherwise prints why
 * and returns 77 (the test is skipped: no cuda device, or a real one). */
static inline int fake_cuda_open(accel_device_t **dev) {
  *dev = NULL;
  if (accel_device_open("cuda", dev) != ACCEL_OK) {
    printf("SKIP: no cuda device: %s\n", accel_last_error());
    return 77;
  }
  accel_device_info_t info;
  memset(&info, 0, sizeof info);
  if (accel_device_get_info(*dev, &info) != ACCEL_OK || !strstr(info.name, "fake CUDA device")) {
    printf("SKIP: cuda device '%s' is not tests/fake_driver's\n", info.name);
    accel_device_close(*dev);
    *dev = NULL;
    return 77;
  }
  return 0;
}

#endif
