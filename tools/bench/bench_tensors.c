#include "bench_tensors.h"

#include <stdlib.h>
#include <string.h>

#include "bench.h"

int bench_split_sizes(size_t total, size_t count, uint64_t seed, size_t *sizes) {
  if (count == 0 || total < count) return 0;
  double *w = malloc(count * sizeof *w);
  if (!w) return 0;
  double sum = 0;
  for (size_t i = 0; i < count; i++) {
    w[i] = 1.0 + 0.5 * (double)bench_rand_sym(&seed);
    sum += w[i];
  }
  size_t used = 0;
  for (size_t i = 0; i < count; i++) {
    size_t left = count - i - 1; /* tensors still to size, each needing >= 1 element */
    size_t s = (size_t)((double)(total - count) * w[i] / sum) + 1;
    if (i == count - 1 || used + s + left > total) s = total - used - left;
    sizes[i] = s;
    used += s;
  }
  free(w);
  return 1;
}

size_t bench_layout(const size_t *sizes, size_t n, size_t *offsets) {
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    offsets[i] = off;
    off += (sizes[i] + BENCH_TENSOR_ALIGN - 1) / BENCH_TENSOR_ALIGN * BENCH_TENSOR_ALIGN;
  }
  return off;
}

int bench_q8_scales(accel_device_t *dev, accel_stream_t *s, const size_t *sizes, size_t n,
                    void **buf, accel_tensor_t *list) {
  size_t *sc_sizes = calloc(2 * n, sizeof *sc_sizes), total = 0;
  int rc = 1;
  *buf = NULL;
  BENCH_ALLOCATED(sc_sizes);
  size_t *sc_offsets = sc_sizes + n;
  for (size_t i = 0; i < n; i++) {
    sc_sizes[i] = 2 * ((sizes[i] + 255) / 256);
    sc_offsets[i] = total;
    total += sc_sizes[i];
  }
  BENCH_TRY(accel_malloc(dev, total * 4, buf));
  BENCH_TRY(accel_memset_async(s, *buf, 0, total * 4));
  bench_make_list(*buf, ACCEL_F32, sc_sizes, sc_offsets, n, list);
  rc = 0;
fail:
  free(sc_sizes);
  return rc;
}

void bench_make_list(void *base, accel_dtype_t dtype, const size_t *sizes,
                     const size_t *offsets, size_t n, accel_tensor_t *list) {
  const size_t es = accel_dtype_size(dtype);
  for (size_t i = 0; i < n; i++)
    list[i] = (accel_tensor_t){(char *)base + offsets[i] * es, sizes[i], dtype};
}

accel_status_t bench_upload_random(accel_device_t *dev, void *dst, size_t count,
                                   accel_dtype_t dtype, float amp, uint64_t seed) {
  enum { STAGE = 1u << 22 }; /* elements per upload */
  const size_t es = dtype == ACCEL_BF16 ? 2 : 4;
  if (dtype != ACCEL_F32 && dtype != ACCEL_BF16) {
    fprintf(stderr, "accel-bench: bench_upload_random: unsupported dtype\n");
    return ACCEL_ERROR_INVALID_ARGUMENT;
  }
  unsigned char *stage = malloc((size_t)STAGE * es);
  if (!stage) {
    fprintf(stderr, "accel-bench: out of host memory for an upload stage\n");
    return ACCEL_ERROR_OUT_OF_MEMORY;
  }
  accel_status_t st = ACCEL_OK;
  for (size_t done = 0; done < count && st == ACCEL_OK; done += STAGE) {
    size_t m = count - done < STAGE ? count - done : STAGE;
    for (size_t i = 0; i < m; i++) {
      float v = amp * bench_rand_sym(&seed);
      if (es == 4) {
        memcpy(stage + i * 4, &v, 4);
      } else {
        uint16_t h = bench_f32_to_bf16(v);
        memcpy(stage + i * 2, &h, 2);
      }
    }
    st = accel_memcpy(dev, (char *)dst + done * es, stage, m * es);
  }
  free(stage);
  return st;
}
