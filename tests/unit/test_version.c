/* The version libaccel reports (accel_version_string()) and the one the headers declare
 * (ACCEL_VERSION_MAJOR/MINOR/PATCH) are both the project version meson passes as argv[1]. */
#include <stdio.h>
#include <string.h>

#include "accel/accel.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PROJECT_VERSION\n", argv[0]);
    return 2;
  }
  const char *want = argv[1];
  const char *lib = accel_version_string();
  char header[64];
  snprintf(header, sizeof header, "%d.%d.%d", ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR,
           ACCEL_VERSION_PATCH);
  int failed = 0;
  if (!lib || strcmp(lib, want) != 0) {
    fprintf(stderr, "FAIL: accel_version_string() is \"%s\", project version \"%s\"\n",
            lib ? lib : "(null)", want);
    failed = 1;
  }
  if (strcmp(header, want) != 0) {
    fprintf(stderr, "FAIL: headers declare %s, project version %s\n", header, want);
    failed = 1;
  }
  if (!failed) printf("ok: version %s\n", want);
  return failed;
}
