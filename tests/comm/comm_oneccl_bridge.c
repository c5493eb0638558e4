/*
 * The oneCCL engine's load chain where its SYCL bridge is built (-Doneccl_sdk). The engine
 * finds libaccel_oneccl_sycl.so beside itself, loads "libccl.so.1" (from LD_LIBRARY_PATH) with
 * RTLD_GLOBAL, then the bridge, then calls ccl::init through it. Two modes:
 *  - no argument: libccl.so.1 is a stub without oneCCL's symbols; the bridge's libsycl
 *    dependency resolves and its ccl:: imports do not: UNAVAILABLE naming the bridge and a
 *    missing ccl:: symbol.
 *  - "real": libccl.so.1 is linked from oneccl-devel's libccl.a; every ccl:: import resolves
 *    and ccl::init runs. Without an Intel GPU stack it either throws (UNAVAILABLE with
 *    "ccl::init: " and oneCCL's exception text) or succeeds, and then the core refuses the CPU
 *    device (UNSUPPORTED: no native device).
 * Either way never a crash, and the same answer on a second attempt.
 */
#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <stdio.h>
#include <string.h>

#include "../common/check.h"

int main(int argc, char **argv) {
  const int real = argc > 1 && strcmp(argv[1], "real") == 0;
  accel_device_t *dev = NULL;
  if (accel_device_open("cpu", &dev) != ACCEL_OK) {
    fprintf(stderr, "cpu device: %s\n", accel_last_error());
    return 1;
  }
  accel_status_t first = ACCEL_OK;
  for (int attempt = 0; attempt < 2; ++attempt) {
    accel_comm_t *c = NULL;
    accel_status_t st = accel_comm_create_mpi(dev, NULL, "oneccl", &c);
    const char *msg = accel_last_error();
    printf("attempt %d: %s: %s\n", attempt, accel_status_name(st), msg);
    CHECK(c == NULL, "output set on failure");
    CHECK(strstr(msg, "oneccl") != NULL, "message does not name the engine: %s", msg);
    if (attempt == 0) first = st;
    CHECK(st == first, "second attempt %s, first %s", accel_status_name(st),
          accel_status_name(first));
    if (!real) {
      CHECK(st == ACCEL_ERROR_UNAVAILABLE, "status %s", accel_status_name(st));
      CHECK(strstr(msg, "SYCL bridge") != NULL, "the bridge was not reached: %s", msg);
      CHECK(strstr(msg, "undefined symbol: _ZN") != NULL && strstr(msg, "3ccl") != NULL,
            "not failing on a ccl:: symbol (libsycl unresolved?): %s", msg);
    } else {
      CHECK(strstr(msg, "undefined symbol") == NULL, "the bridge did not load: %s", msg);
      CHECK((st == ACCEL_ERROR_UNAVAILABLE && strstr(msg, "ccl::init: ") != NULL) ||
                (st == ACCEL_ERROR_UNSUPPORTED && strstr(msg, "native device") != NULL),
            "ccl::init was not reached: %s %s", accel_status_name(st), msg);
    }
  }
  accel_device_close(dev);
  return failures ? 1 : 0;
}
