/*
 * The GPU engines (nccl, rccl, oneccl) build, load and refuse cleanly on a machine without
 * GPUs: creating a communicator with them on the CPU device returns UNAVAILABLE (library or
 * runtime absent) or UNSUPPORTED (the library is there but the device has no native stream,
 * e.g. libnccl installed with the CUDA toolkit), with a message naming the engine; never a
 * crash or a hang. Unknown engines are UNAVAILABLE with the directories searched. No MPI
 * call is made on these paths (the engines refuse before bootstrapping).
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
  static const char *const engines[] = {"nccl", "rccl", "oneccl"};
  for (size_t i = 0; i < 3; ++i) {
    accel_comm_t *c = NULL;
    accel_status_t st = accel_comm_create_mpi(dev, NULL, engines[i], &c);
    printf("%-7s %s: %s\n", engines[i], accel_status_name(st), accel_last_error());
    CHECK(st == ACCEL_ERROR_UNAVAILABLE || st == ACCEL_ERROR_UNSUPPORTED,
          "%s: %s", engines[i], accel_status_name(st));
    CHECK(c == NULL, "%s: output set on failure", engines[i]);
    CHECK(strstr(accel_last_error(), engines[i]) != NULL, "%s: message does not name it",
          engines[i]);
    /* asking again gives the same answer (the engine is loaded once) */
    accel_status_t again = accel_comm_create_mpi(dev, NULL, engines[i], &c);
    CHECK(again == st, "%s: second attempt %s", engines[i], accel_status_name(again));
  }
  accel_comm_t *c = NULL;
  accel_status_t st = accel_comm_create_mpi(dev, NULL, "nosuch", &c);
  CHECK(st == ACCEL_ERROR_UNAVAILABLE && strstr(accel_last_error(), "libaccelcomm-nosuch.so"),
        "unknown engine: %s %s", accel_status_name(st), accel_last_error());
  accel_device_close(dev);
  return failures ? 1 : 0;
}
