/*
 * 8-bit blockwise codes for optimizer state (issue 39; docs/KERNELS.md "8-bit blockwise
 * moments"). A block of ACC_Q8_BLOCK elements (ACC_BLOCK: one row of the fused update) shares
 * one fp32 scale s, the largest magnitude in the block; each element x is stored as a code of
 * t = |x| / s in [0, 1] (fp32 division, correctly rounded) in a small floating-point format
 * with 4 exponent bits and M mantissa bits, relative to the block:
 *   e = c >> M, f = c & (2^M - 1)
 *   value(c) = (2^M + f) * 2^(e - 16 - M)   for e = 1..15   (binades 2^-15 .. 2^-1)
 *            = f * 2^(-15 - M)              for e = 0       (linear below 2^-15)
 * and t goes to the nearest value, ties to the even code; t above the largest value
 * (1 - 2^-(M+1)) saturates to it (only t = 1, the block's largest element, or a non-finite t).
 * Decoding gives value(c) * s (one fp32 rounding). The error is at most 2^-(M+1) relative
 * (the largest element: exactly that) above 2^-15 * s, and 2^-(16+M) * s absolute below.
 * A dynamic (floating-point) code rather than a linear one: the second moment spans many
 * binades inside a block, and a linear 8-bit code turns every v below s/510 into 0, which puts
 * eps alone in the update's denominator (m / eps: the step explodes).
 *   first moment m (signed):    bit 7 the sign, bits 0-6 the magnitude with M = 3
 *   second moment v (unsigned): bits 0-7 the magnitude with M = 4
 * Only exact operations besides the division and the final product (bit moves, powers of two,
 * the fp32 round-to-integer of the add-2^23 trick), so every backend gives the same codes.
 */
#ifndef ACCEL_KERNELS_QUANT_H
#define ACCEL_KERNELS_QUANT_H

#define ACC_Q8_BLOCK ACC_BLOCK
/* Mantissa bits of the first moment's (signed) and the second's (unsigned) codes. */
#define ACC_Q8_M_SIGNED 3u
#define ACC_Q8_M_UNSIGNED 4u

/* 2^k for k in [-126, 127] (exact). */
ACC_INLINE acc_f32 acc_q8_pow2(acc_u32 biased) { return ACC_AS_F32(biased << 23); }

/* The magnitude code (4 + mb bits) of t in [0, 1] (anything else saturates, NaN too). */
ACC_INLINE acc_u32 acc_q8_code(acc_f32 t, acc_u32 mb) {
  const acc_u32 top = (16u << mb) - 1u;
  if (!(t < 1.0f)) return top;
  if (t < 0x1p-15f) {
    /* linear: t * 2^(15 + mb) < 2^mb, rounded to nearest even by the 2^23 trick */
    const acc_f32 y = t * acc_q8_pow2(127u + 15u + mb);
    return (acc_u32)((y + 0x1p23f) - 0x1p23f);
  }
  /* round the fp32 significand to mb bits (nearest even; a carry moves to the next binade) */
  const acc_u32 u = ACC_AS_U32(t), drop = 23u - mb;
  const acc_u32 r = (u + ((1u << (drop - 1u)) - 1u) + ((u >> drop) & 1u)) >> drop;
  const acc_u32 c = r - ((127u - 16u) << mb);
  return c > top ? top : c;
}

/* value(c) of a magnitude code (see the top of the file; exact). */
ACC_INLINE acc_f32 acc_q8_value(acc_u32 c, acc_u32 mb) {
  const acc_u32 e = c >> mb, f = c & ((1u << mb) - 1u);
  const acc_u32 mant = e != 0u ? (1u << mb) + f : f;
  const acc_u32 ex = e != 0u ? e : 1u;
  return (acc_f32)mant * acc_q8_pow2(127u + ex - 16u - mb);
}

/* t = |x| / s (0 for a block of zeros). */
ACC_INLINE acc_f32 acc_q8_ratio(acc_f32 x, acc_f32 s) {
  return s > 0.0f ? ACC_FABSF(x) / s : 0.0f;
}

ACC_INLINE acc_u32 acc_q8_encode_signed(acc_f32 x, acc_f32 s) {
  const acc_u32 sign = (ACC_AS_U32(x) >> 24) & 0x80u;
  return sign | acc_q8_code(acc_q8_ratio(x, s), ACC_Q8_M_SIGNED);
}

ACC_INLINE acc_f32 acc_q8_decode_signed(acc_u32 c, acc_f32 s) {
  const acc_f32 v = acc_q8_value(c & 0x7fu, ACC_Q8_M_SIGNED) * s;
  return (c & 0x80u) != 0u ? -v : v;
}

ACC_INLINE acc_u32 acc_q8_encode_unsigned(acc_f32 x, acc_f32 s) {
  return acc_q8_code(acc_q8_ratio(x, s), ACC_Q8_M_UNSIGNED);
}

ACC_INLINE acc_f32 acc_q8_decode_unsigned(acc_u32 c, acc_f32 s) {
  return acc_q8_value(c, ACC_Q8_M_UNSIGNED) * s;
}

#endif
