/*
 * The random kernels' launches (accel_random.h): each operation is its row of the kernel table
 * (RAND_RAW, RAND_UNIFORM, RAND_NORMAL, DROPOUT) validated and chunked like every tensor
 * operation (kernel_ops.c drives it), with the generator's state as the row's device scalar.
 * Two launches per call: the kernel, which only reads the state (any block may run first),
 * then RAND_ADVANCE (one block) moves the counter past the blocks the kernel used. Both are
 * stream-ordered device work, so a captured graph advances the counter at every replay and
 * never reads it back to the host.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "core_util.h"
#include "generator.h"
#include "kernel_ops_internal.h"

typedef struct rand_args {
  const accel_generator_t *gen;
  float a, b;
  uint64_t raw_words; /* RAND_RAW: the words asked for (the blocks used); else unused */
  char bad[160];      /* why a or b is refused (checked after the handles), or "" */
} rand_args_t;

static accel_status_t rand_body(const kop_req_t *r, kop_entry_t *e, const void *user) {
  const rand_args_t *a = user;
  const uint32_t nc = e->num_chunks;
  const acc_rand_params_t p = {e->chunks_addr, ADDR(a->gen->state), nc,
                               (acc_u32)r->lists[0][0].dtype, a->a, a->b};
  accel_status_t st = kop_launch(r, r->op, nc, &p, sizeof p, e);
  if (st != ACCEL_OK) return st;
  const uint64_t blocks = r->op == ACCEL_KERNEL_RAND_RAW ? (a->raw_words + 3u) / 4u
                                                         : (uint64_t)nc * ACC_RAND_CHUNK_BLOCKS;
  return kop_rand_advance(r, a->gen->state, blocks);
}

accel_status_t kop_rand_advance(const kop_req_t *r, void *state, uint64_t blocks) {
  const acc_rand_advance_params_t adv = {0, ADDR(state), blocks, 0, 0};
  return kop_launch(r, ACCEL_KERNEL_RAND_ADVANCE, 1, &adv, sizeof adv, NULL);
}

/* Checks the stream and the generator, then a's values, then validates r (whose scalar 0 is
 * the state) and runs its two launches. */
static accel_status_t rand_op(kop_req_t *r, accel_generator_t *gen, const char *fn,
                              rand_args_t *a) {
  accel_device_t *dev;
  accel_status_t st = accel_generator_check(gen, r->stream, fn, &dev);
  if (st != ACCEL_OK) return st;
  if (a->bad[0])
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s", fn, a->bad);
  r->scalars[0] = gen->state;
  a->gen = gen;
  st = kop_prepare(r);
  if (st != ACCEL_OK || r->num_chunks == 0) return st;
  return kop_run(r, rand_body, a);
}

_Static_assert(ACCEL_RAND_CHUNK == ACC_CHUNK, "accel_random.h's chunk is the kernels' chunk");

accel_status_t accel_generator_raw(accel_stream_t *stream, accel_generator_t *gen, uint32_t *out,
                                   size_t n) {
  const accel_tensor_t words = {out, n, ACCEL_F32}; /* 4-byte words: the row's F32 list */
  kop_req_t r = {KOP_REQ(RAND_RAW), .stream = stream, .lists = {&words}, .n = 1};
  rand_args_t a = {NULL, 0.0f, 0.0f, n, ""};
  return rand_op(&r, gen, __func__, &a);
}

accel_status_t accel_rand_uniform(accel_stream_t *stream, accel_generator_t *gen,
                                  const accel_tensor_t *tensors, size_t n, float low,
                                  float high) {
  const float span = high - low;
  kop_req_t r = {KOP_REQ(RAND_UNIFORM), .stream = stream, .lists = {tensors}, .n = n};
  rand_args_t a = {NULL, low, span, 0, ""};
  if (!isfinite(low) || !isfinite(high) || !(low <= high) || !isfinite(span))
    snprintf(a.bad, sizeof a.bad,
             "[low, high) = [%g, %g) is not a finite range with low <= high", (double)low,
             (double)high);
  return rand_op(&r, gen, __func__, &a);
}

accel_status_t accel_rand_normal(accel_stream_t *stream, accel_generator_t *gen,
                                 const accel_tensor_t *tensors, size_t n, float mean,
                                 float std) {
  kop_req_t r = {KOP_REQ(RAND_NORMAL), .stream = stream, .lists = {tensors}, .n = n};
  rand_args_t a = {NULL, mean, std, 0, ""};
  if (!isfinite(mean) || !isfinite(std) || std < 0.0f)
    snprintf(a.bad, sizeof a.bad, "mean %g and std %g must be finite with std >= 0",
             (double)mean, (double)std);
  return rand_op(&r, gen, __func__, &a);
}

accel_status_t accel_dropout(accel_stream_t *stream, accel_generator_t *gen,
                             const accel_tensor_t *src, const accel_tensor_t *dst, size_t n,
                             float p) {
  kop_req_t r = {KOP_REQ(DROPOUT), .stream = stream, .lists = {src, dst}, .n = n};
  rand_args_t a = {NULL, p, p < 1.0f ? 1.0f / (1.0f - p) : 0.0f, 0, ""};
  if (!(p >= 0.0f && p <= 1.0f)) /* also NaN */
    snprintf(a.bad, sizeof a.bad, "p = %g is not in [0, 1]", (double)p);
  return rand_op(&r, gen, __func__, &a);
}
