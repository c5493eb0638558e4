/* Helpers for the standalone kernel tests: chunk tables over host memory (the CPU kernels and
 * PoCL's fine-grained SVM both take host addresses) and seeded data. */
#ifndef ACCEL_KT_COMMON_H
#define ACCEL_KT_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_kernel_abi_host.h"

/* Splits lists[0..nl)[0..n) (addresses + numel, element sizes es[]) into chunks. */
static inline uint32_t kt_chunks(acc_chunk_t *out, int nl, void *const *const *lists,
                                 const size_t *es, const size_t *numel, size_t n) {
  uint32_t c = 0;
  for (size_t t = 0; t < n; ++t)
    for (size_t off = 0; off < numel[t]; off += ACC_CHUNK) {
      acc_chunk_t ch;
      memset(&ch, 0, sizeof ch);
      for (int l = 0; l < nl; ++l)
        ch.ptr[l] = (acc_u64)(uintptr_t)((char *)lists[l][t] + off * es[l]);
      ch.count = (acc_u32)(numel[t] - off < ACC_CHUNK ? numel[t] - off : ACC_CHUNK);
      ch.tensor = (acc_u32)t;
      out[c++] = ch;
    }
  return c;
}

static inline uint64_t kt_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static inline float kt_uniform(uint64_t *s) { return (float)((kt_rand(s) >> 40) * 0x1p-24) * 2.0f - 1.0f; }

extern int kt_failures; /* defined once per test program */
#define KT_CHECK(cond, ...)                                  \
  do {                                                       \
    if (!(cond)) {                                           \
      fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);        \
      fprintf(stderr, __VA_ARGS__);                          \
      fputc('\n', stderr);                                   \
      ++kt_failures;                                         \
    }                                                        \
  } while (0)

#endif
