/*
 * The 8-bit blockwise state format (issue 39; docs/KERNELS.md "8-bit blockwise moments"). A
 * block of ACC_Q8_BLOCK elements (ACC_BLOCK: one row of the fused update) shares one fp32
 * scale s, the largest magnitude in the block (NaN when one is NaN); element x is stored as the
 * 8-bit code c of the dynamic map's value nearest to t = x / s (t = 0 when s is 0, a block of
 * zeros, or NaN), ties to the lower code, and decodes to map[c] * s (one fp32 rounding). The
 * first moment uses the signed map (t in [-1, 1]), the second the unsigned one (t in [0, 1]).
 *
 * The maps and the codes' lookup tables are generated (q8_map.h, q8_codes_*.h, from
 * gen_q8_map.py): the code of t is one table entry, chosen by the sign, exponent and top 6 (7)
 * mantissa bits of t, and one integer comparison of its low 17 (16) bits (such a bucket holds
 * at most one threshold between neighbours), so only the division and the decoding's product
 * round and every backend gives the same codes. A non-finite element makes its block's scale,
 * so every value decoded from the block, non-finite.
 */
#ifndef ACCEL_KERNELS_QUANT_H
#define ACCEL_KERNELS_QUANT_H

#include "q8_map.h"
#include "q8_codes_signed.h"
#include "q8_codes_unsigned.h"

#define ACC_Q8_BLOCK ACC_BLOCK

/* t = x / s, or 0 for a block of zeros and a NaN scale: there every x is +-0 or the block is
 * lost anyway, and x / Inf is +-0 (one division, no branch around it for the CPU's vectoriser
 * to trip on). */
ACC_INLINE acc_f32 acc_q8_ratio(acc_f32 x, acc_f32 s) {
  return x / (s > 0.0f ? s : ACC_AS_F32(0x7f800000u));
}

/* The bucket of a magnitude's bits a in a map's table (gen_q8_map.py): 0 below its first,
 * the last from 1 up. */
ACC_INLINE acc_u32 acc_q8_bucket(acc_u32 a, acc_u32 shift, acc_u32 first, acc_u32 count) {
  const acc_u32 b = a >> shift;
  const acc_u32 i = b < first ? 0u : b - first;
  return i < count - 1u ? i : count - 1u;
}

/* The code of t from its bucket's entry e (code << shift | threshold key) and t's key (the
 * low shift bits of key_bits): the nearest value's code, ties to the lower one, 0 for NaN. A product instead of a select for
 * NaN, so that a loop over lanes around it vectorises (GCC 12 did not vectorise the select).
 * This replaced a count of the 255 thresholds below t by 8 comparisons, each a table load,
 * which GCC turns into emulated gathers: the step took 3.3x as long (docs/PERFORMANCE.md,
 * section 25). */
ACC_INLINE acc_u32 acc_q8_code_of(acc_f32 t, acc_u32 e, acc_u32 key_bits, acc_u32 shift) {
  const acc_u32 ones = (1u << shift) - 1u;
  return ((e >> shift) + (acc_u32)((key_bits & ones) > (e & ones))) * (acc_u32)(t == t);
}

ACC_INLINE acc_u32 acc_q8_encode_signed(acc_f32 x, acc_f32 s) {
  const acc_f32 t = acc_q8_ratio(x, s);
  const acc_u32 u = ACC_AS_U32(t), a = u & 0x7fffffffu, neg = u >> 31;
  const acc_u32 b = acc_q8_bucket(a, ACC_Q8_SIGNED_SHIFT, ACC_Q8_SIGNED_FIRST,
                                  ACC_Q8_SIGNED_BUCKETS);
  const acc_u32 e = acc_q8_codes_signed[b + neg * ACC_Q8_SIGNED_BUCKETS];
  return acc_q8_code_of(t, e, a ^ (0u - neg), ACC_Q8_SIGNED_SHIFT);
}

ACC_INLINE acc_u32 acc_q8_encode_unsigned(acc_f32 x, acc_f32 s) {
  const acc_f32 t = acc_q8_ratio(x, s);
  const acc_u32 u = ACC_AS_U32(t), a = u >> 31 != 0u ? 0u : u; /* t < 0: code 0 */
  const acc_u32 b = acc_q8_bucket(a, ACC_Q8_UNSIGNED_SHIFT, ACC_Q8_UNSIGNED_FIRST,
                                  ACC_Q8_UNSIGNED_BUCKETS);
  return acc_q8_code_of(t, acc_q8_codes_unsigned[b], a, ACC_Q8_UNSIGNED_SHIFT);
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
