/*
 * Smallest program against an installed accel: the header and library versions agree, the CPU
 * device opens, and a host -> device -> host copy round-trips. Prints one line the install test
 * checks.
 */
#include <stdio.h>
#include <string.h>

#include <accel/accel.h>

int main(void) {
  char header_version[32];
  snprintf(header_version, sizeof header_version, "%d.%d.%d", ACCEL_VERSION_MAJOR,
           ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
  if (strcmp(header_version, accel_version_string()) != 0) {
    fprintf(stderr, "header version %s, library version %s\n", header_version,
            accel_version_string());
    return 1;
  }
  accel_device_t *dev = NULL;
  void *buf = NULL;
  const char in[] = "accel install test";
  char out[sizeof in] = {0};
  accel_status_t st = accel_device_open("cpu", &dev);
  if (st == ACCEL_OK) st = accel_malloc(dev, sizeof in, &buf);
  if (st == ACCEL_OK) st = accel_memcpy(dev, buf, in, sizeof in);
  if (st == ACCEL_OK) st = accel_memcpy(dev, out, buf, sizeof in);
  if (st != ACCEL_OK) fprintf(stderr, "%s: %s\n", accel_status_name(st), accel_last_error());
  if (buf) accel_free(dev, buf);
  if (dev) accel_device_close(dev);
  if (st != ACCEL_OK) return 1;
  if (memcmp(in, out, sizeof in) != 0) {
    fprintf(stderr, "round trip through cpu:0 changed the data\n");
    return 1;
  }
  printf("hello accel %s: cpu:0 round trip ok\n", accel_version_string());
  return 0;
}
