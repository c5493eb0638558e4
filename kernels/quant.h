/*
 * The 8-bit blockwise state format (issue 39; docs/KERNELS.md "8-bit blockwise moments"). A
 * block of ACC_Q8_BLOCK elements (ACC_BLOCK: one row of the fused update) shares one fp32
 * scale s, the largest magnitude in the block (NaN when one is NaN); element x is stored as the
 * 8-bit code c of the dynamic map's value nearest to t = x / s (t = 0 when s is 0, a block of
 * zeros, or NaN), ties to the lower code, and decodes to map[c] * s (one fp32 rounding). The
 * first moment uses the signed map (t in [-1, 1]), the second the unsigned one (t in [0, 1]).
 *
 * The maps and the thresholds between neighbours are tables (q8_map.h, from gen_q8_map.py): the
 * code is the count of thresholds below t, found in 8 comparisons, so only the division and the
 * decoding's product round and every backend gives the same codes. A non-finite element makes
 * its block's scale, so every value decoded from the block, non-finite.
 */
#ifndef ACCEL_KERNELS_QUANT_H
#define ACCEL_KERNELS_QUANT_H

#include "q8_map.h"

#define ACC_Q8_BLOCK ACC_BLOCK

/* c = the number of thr[0..254] below t, by halves (thr is sorted). Branch-free (a branch on
 * data this random mispredicts every other step) and unrolled by hand, so that a loop over
 * lanes around it vectorises (the CPU's vectoriser takes no inner loop). */
#define ACC_Q8_HALF(thr, c, t, h) c += (acc_u32)((t) > thr[c + (h - 1u)]) * h;
#define ACC_Q8_SEARCH(thr, c, t)                                                  \
  ACC_Q8_HALF(thr, c, t, 128u) ACC_Q8_HALF(thr, c, t, 64u) ACC_Q8_HALF(thr, c, t, 32u) \
  ACC_Q8_HALF(thr, c, t, 16u) ACC_Q8_HALF(thr, c, t, 8u) ACC_Q8_HALF(thr, c, t, 4u)    \
  ACC_Q8_HALF(thr, c, t, 2u) ACC_Q8_HALF(thr, c, t, 1u)

/* t = x / s, or 0 for a block of zeros and a NaN scale: there every x is +-0 or the block is
 * lost anyway, and x / Inf is +-0 (one division, no branch around it for the CPU's vectoriser
 * to trip on). */
ACC_INLINE acc_f32 acc_q8_ratio(acc_f32 x, acc_f32 s) {
  return x / (s > 0.0f ? s : ACC_AS_F32(0x7f800000u));
}

ACC_INLINE acc_u32 acc_q8_encode_signed(acc_f32 x, acc_f32 s) {
  const acc_f32 t = acc_q8_ratio(x, s);
  acc_u32 c = 0u;
  ACC_Q8_SEARCH(acc_q8_thr_signed, c, t)
  return c;
}

ACC_INLINE acc_u32 acc_q8_encode_unsigned(acc_f32 x, acc_f32 s) {
  const acc_f32 t = acc_q8_ratio(x, s);
  acc_u32 c = 0u;
  ACC_Q8_SEARCH(acc_q8_thr_unsigned, c, t)
  return c;
}

ACC_INLINE acc_f32 acc_q8_decode_signed(acc_u32 c, acc_f32 s) { return acc_q8_map_signed[c] * s; }

ACC_INLINE acc_f32 acc_q8_decode_unsigned(acc_u32 c, acc_f32 s) {
  return acc_q8_map_unsigned[c] * s;
}

/* The block scale's reduction (ACC_TREE): the larger, NaN kept. */
ACC_INLINE acc_f32 acc_q8_max(acc_f32 a, acc_f32 b, acc_u32 unused) {
  (void)unused;
  return acc_nanmax(a, b);
}

#endif
