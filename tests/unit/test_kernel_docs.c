/*
 * docs/KERNELS.md lists exactly the kernels of the kernel table (kernels/accel_kernel_list.h):
 * every row of its kernel-table section ("| `accel_k_...` |") names a kernel of the table, in
 * table order, and every kernel has a row.
 *
 *   test_kernel_docs docs/KERNELS.md
 */
#include <stdio.h>
#include <string.h>

#include "accel_kernel_ids.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_kernel_docs KERNELS.md\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "r");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  char line[1024];
  int k = 0, failures = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "| `accel_k_", 11) != 0) continue;
    const char *name = line + 3;
    const size_t len = strcspn(name, "`");
    if (k >= ACCEL_KERNEL_COUNT) {
      fprintf(stderr, "test_kernel_docs: %s lists %.*s, which is not in the kernel table\n",
              argv[1], (int)len, name);
      ++failures;
    } else if (strlen(accel_kernel_names[k]) != len ||
               strncmp(name, accel_kernel_names[k], len) != 0) {
      fprintf(stderr, "test_kernel_docs: %s lists %.*s where the table has %s (kernel %d)\n",
              argv[1], (int)len, name, accel_kernel_names[k], k);
      ++failures;
    }
    ++k;
  }
  fclose(f);
  for (; k < ACCEL_KERNEL_COUNT; ++k, ++failures)
    fprintf(stderr, "test_kernel_docs: %s does not list %s\n", argv[1], accel_kernel_names[k]);
  if (failures) return 1;
  printf("test_kernel_docs: %d kernels, as in the table\n", (int)ACCEL_KERNEL_COUNT);
  return 0;
}
