/*
 * The oneCCL engine's load chain where its SYCL bridge is built (-Doneccl_sdk): the engine
 * finds libaccel_oneccl_sycl.so beside itself, loads "libccl.so.1" (here a stub without
 * oneCCL's symbols, through LD_LIBRARY_PATH) with RTLD_GLOBAL, then the bridge, whose libsycl
 * dependency resolves and whose ccl:: imports do not: UNAVAILABLE naming the bridge and the
 * first missing ccl:: symbol, never a crash, the same answer on a second attempt.
 */
#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <stdio.h>
#include <string.h>

#include "../common/check.h"

int main(void) {
  accel_device_t *dev = NULL;
  if (accel_device_open("cpu", &dev) != ACCEL_OK) {
    fprintf(stderr, "cpu device: %s\n", accel_last_error());
    return 1;
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    accel_comm_t *c = NULL;
    accel_status_t st = accel_comm_create_mpi(dev, NULL, "oneccl", &c);
    const char *msg = accel_last_error();
    printf("attempt %d: %s: %s\n", attempt, accel_status_name(st), msg);
    CHECK(st == ACCEL_ERROR_UNAVAILABLE, "status %s", accel_status_name(st));
    CHECK(c == NULL, "output set on failure");
    CHECK(strstr(msg, "SYCL bridge") != NULL, "the bridge was not reached: %s", msg);
    CHECK(strstr(msg, "undefined symbol: _ZN") != NULL && strstr(msg, "3ccl") != NULL,
          "not failing on a ccl:: symbol (libsycl unresolved?): %s", msg);
  }
  accel_device_close(dev);
  return failures ? 1 : 0;
}
