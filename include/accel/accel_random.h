/*
 * accel random numbers: a counter-based generator (Philox4x32-10, as cuRAND and PyTorch use)
 * whose state lives in device memory, and the kernels built on it (docs/KERNELS.md, "Random
 * numbers"; docs/API.md, "Random numbers").
 *
 * A generator is a key (its 64-bit seed) and a 128-bit counter in device memory. Every launch
 * reads the counter on the device, draws its blocks from it and then moves it past them, in
 * stream order: a captured graph draws new numbers at every replay, the same numbers eager
 * calls would draw, and no call reads the counter back to the host. Block b of a launch is
 * philox4x32_10(counter + b as a 128-bit little-endian number, key = (seed low word, seed high
 * word)); seed 0 at counter 0 gives Random123's first known-answer block. The results are
 * bitwise identical on every backend (integer arithmetic, and fp32 +, -, *, / and sqrt only).
 *
 * A generator is used on one stream at a time (its counter is updated in stream order, so two
 * streams drawing from one generator at once race): fork a child per stream
 * (accel_generator_fork). Every call here may be captured or queued in lazy mode except
 * create, fork and release.
 */
#ifndef ACCEL_ACCEL_RANDOM_H
#define ACCEL_ACCEL_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct accel_generator accel_generator_t;
/* accel_kernels.h declares it in full. */
typedef struct accel_tensor accel_tensor_t;

/* A generator's state as it lies in device memory (get/set_state): the Philox key and the
 * counter of the next block, least significant word first. A fixed layout (it never grows). */
typedef struct accel_generator_state {
  uint32_t key[2];     /* seed low word, seed high word */
  uint32_t counter[4]; /* counter[3] is the stream of a forked generator (0 for a root) */
} accel_generator_state_t;

/* A generator on device with key = seed and counter 0 (written before this returns). It
 * allocates and copies like accel_malloc and accel_memcpy, so it is illegal where they are
 * (during a capture). */
ACCEL_API accel_status_t accel_generator_create(accel_device_t *device, uint64_t seed,
                                                accel_generator_t **out);
/* Drops the user's reference; graphs that captured launches of the generator keep its state
 * memory (a pin) and keep replaying. A second release is ACCEL_ERROR_INVALID_HANDLE. */
ACCEL_API accel_status_t accel_generator_release(accel_generator_t *gen);

/* A child generator for another stream: its key is the parent's key as stream reaches this
 * call (a copy in stream order), its counter (0, 0, 0, k) with k a stream number no other
 * generator of the same root (the one accel_generator_create made) has had, 1 <= k < 2^32.
 * Blocks of a generator advance counter words 0-2 only (2^96 blocks), so a child's blocks never
 * meet its parent's or a sibling's (set_state can break this: it writes any state). Refused
 * (ACCEL_ERROR_STATE) once 2^32 - 1 streams were given out. Not legal in a capture. */
ACCEL_API accel_status_t accel_generator_fork(accel_stream_t *stream, accel_generator_t *parent,
                                              accel_generator_t **child);

/* Stream-ordered copies of the state to / from state (device memory, or host memory that stays
 * valid until the stream reaches the copy, as for accel_memcpy_async). Legal in a capture:
 * a replay saves (or restores) the state as it is at that point of the replay. */
ACCEL_API accel_status_t accel_generator_get_state(accel_stream_t *stream, accel_generator_t *gen,
                                                   accel_generator_state_t *state);
ACCEL_API accel_status_t accel_generator_set_state(accel_stream_t *stream, accel_generator_t *gen,
                                                   const accel_generator_state_t *state);

/* out[0..n) (device memory, 4-byte aligned) = the words of blocks counter + 0, 1, ...:
 * out[4b + k] is word k of block b; the counter then advances by ceil(n / 4) blocks (0 for
 * n = 0). */
ACCEL_API accel_status_t accel_generator_raw(accel_stream_t *stream, accel_generator_t *gen,
                                             uint32_t *out, size_t n);

/* Element i of chunk c of the call (a chunk is ACCEL_RAND_CHUNK elements of one tensor, the
 * tensors' chunks in list order) takes word i % 4 of block counter + c * ACCEL_RAND_CHUNK / 4
 * + i / 4; the counter then advances by ACCEL_RAND_CHUNK / 4 blocks per chunk. */
#define ACCEL_RAND_CHUNK 65536u

/* Every element = low + (high - low) * u, u = (word >> 8) * 2^-24 in [0, 1), computed in fp32
 * and rounded to the tensor's dtype (F16 and BF16 may round up to high). low and high finite,
 * low <= high, high - low finite in fp32. */
ACCEL_API accel_status_t accel_rand_uniform(accel_stream_t *stream, accel_generator_t *gen,
                                            const accel_tensor_t *tensors, size_t n, float low,
                                            float high);
/* Every element = mean + std * z, z standard normal by Box-Muller on the element's block: words
 * (0, 1) give elements 0 (r cos t) and 1 (r sin t), words (2, 3) elements 2 and 3, with
 * r = sqrt(-2 ln u1), u1 = ((w >> 8) + 1) * 2^-24 in (0, 1], t = 2 pi (w' >> 8) * 2^-24;
 * ln, sin and cos are accel's own fp32 polynomials (KERNELS.md), so |z| <= 5.77. mean and std
 * finite, std >= 0. */
ACCEL_API accel_status_t accel_rand_normal(accel_stream_t *stream, accel_generator_t *gen,
                                           const accel_tensor_t *tensors, size_t n, float mean,
                                           float std);
/* dst[i] = src[i] * (1 / (1 - p)) where u >= p (u as for accel_rand_uniform), else 0
 * (torch.nn.functional.dropout in training mode); dst may be src (in place), its dtype is
 * src's. 0 <= p <= 1; p = 1 zeroes dst. */
ACCEL_API accel_status_t accel_dropout(accel_stream_t *stream, accel_generator_t *gen,
                                       const accel_tensor_t *src, const accel_tensor_t *dst,
                                       size_t n, float p);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_RANDOM_H */
