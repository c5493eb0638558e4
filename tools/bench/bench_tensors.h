/*
 * Tensor lists for the benchmarks: deterministic size lists and their layout as views into one
 * flat device allocation per role (each tensor starts on a 64-byte boundary).
 */
#ifndef ACCEL_BENCH_TENSORS_H
#define ACCEL_BENCH_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_kernels.h"

/* Elements each tensor start is aligned to (64 bytes of the smallest dtype used, bf16). */
#define BENCH_TENSOR_ALIGN 32u

/* Splits total elements into count sizes (each >= 1, deterministic for a seed, varying by up
 * to +-50% around the mean); 0 when total < count. */
int bench_split_sizes(size_t total, size_t count, uint64_t seed, size_t *sizes);

/* Element offset of each tensor in a flat buffer and the flat length (padded). */
size_t bench_layout(const size_t *sizes, size_t n, size_t *offsets);

/* list[i] = {base + offsets[i] * dtype size, sizes[i], dtype}. */
void bench_make_list(void *base, accel_dtype_t dtype, const size_t *sizes,
                     const size_t *offsets, size_t n, accel_tensor_t *list);

/* The 8-bit state format's block scales for n tensors of sizes (accel_adam_step_t.state_scales:
 * 2 * ceil(size / 256) floats each, one tensor after another): a device buffer *buf, zeroed on
 * s (enqueued), and its list. Returns 0, or 1 after reporting a failure (*buf then NULL, or
 * the caller's to free). */
int bench_q8_scales(accel_device_t *dev, accel_stream_t *s, const size_t *sizes, size_t n,
                    void **buf, accel_tensor_t *list);

/* Fills a device buffer of count elements of dtype with values uniform in [-amp, amp),
 * deterministic for a seed, uploading through a host staging buffer. */
accel_status_t bench_upload_random(accel_device_t *dev, void *dst, size_t count,
                                   accel_dtype_t dtype, float amp, uint64_t seed);

#endif
