/*
 * Random numbers: Philox4x32-10 (Salmon et al., SC'11; Random123's philox4x32 with 10 rounds)
 * and the uniform / normal / dropout kernels built on its blocks (docs/KERNELS.md, "Random
 * numbers").
 *
 * Block b of a launch is acc_philox4x32_10(counter = state counter + b, a 128-bit little-endian
 * number, key = the state's key): four 32-bit words. Everything here is integer arithmetic or
 * fp32 +, -, *, / and sqrt (correctly rounded on every target, no contraction), so every
 * backend gives the same bits. A launch only reads the state; RAND_ADVANCE, the next launch
 * of the same operation, moves the counter past the blocks the first one used, so no block
 * of a launch races with the update.
 */
#ifndef ACCEL_KERNELS_RANDOM_H
#define ACCEL_KERNELS_RANDOM_H

#define ACC_PHILOX_M0 0xD2511F53u
#define ACC_PHILOX_M1 0xCD9E8D57u
#define ACC_PHILOX_W0 0x9E3779B9u
#define ACC_PHILOX_W1 0xBB67AE85u

/* Four 32-bit words: a Philox counter or block. */
typedef struct acc_x4 {
  acc_u32 x, y, z, w;
} acc_x4_t;

ACC_INLINE acc_u32 acc_mulhi32(acc_u32 a, acc_u32 b) {
  return (acc_u32)(((acc_u64)a * (acc_u64)b) >> 32);
}

/* One Philox4x32 round (Random123's philox4x32round). */
ACC_INLINE acc_x4_t acc_philox_round(acc_x4_t c, acc_u32 k0, acc_u32 k1) {
  const acc_x4_t n = {acc_mulhi32(ACC_PHILOX_M1, c.z) ^ c.y ^ k0, ACC_PHILOX_M1 * c.z,
                      acc_mulhi32(ACC_PHILOX_M0, c.x) ^ c.w ^ k1, ACC_PHILOX_M0 * c.x};
  return n;
}

/* Philox4x32-10 of counter c under key (k0, k1): the key is bumped before rounds 2..10. */
ACC_INLINE acc_x4_t acc_philox4x32_10(acc_x4_t c, acc_u32 k0, acc_u32 k1) {
  c = acc_philox_round(c, k0, k1);
  for (acc_u32 r = 1u; r < 10u; ++r) {
    k0 += ACC_PHILOX_W0;
    k1 += ACC_PHILOX_W1;
    c = acc_philox_round(c, k0, k1);
  }
  return c;
}

/* Block d of a launch from state s: Philox of (s's counter + d) under s's key. */
ACC_INLINE acc_x4_t acc_philox_block(const acc_philox_state_t s, acc_u64 d) {
  const acc_u64 lo = (((acc_u64)s.ctr1 << 32) | (acc_u64)s.ctr0) + d;
  const acc_u32 carry = (acc_u32)(lo < d);
  const acc_u32 z = s.ctr2 + carry;
  const acc_x4_t c = {(acc_u32)lo, (acc_u32)(lo >> 32), z,
                      s.ctr3 + (acc_u32)(carry != 0u && z == 0u)};
  return acc_philox4x32_10(c, s.key0, s.key1);
}

ACC_INLINE acc_u32 acc_x4_word(const acc_x4_t v, acc_u32 k) {
  return k == 0u ? v.x : k == 1u ? v.y : k == 2u ? v.z : v.w;
}

/* The top 24 bits of w as a float in [0, 1) (exact: k * 2^-24). */
ACC_INLINE acc_f32 acc_uniform01(acc_u32 w) { return (acc_f32)(w >> 8) * 5.9604644775390625e-8f; }
/* ... in (0, 1]: the argument of a logarithm. */
ACC_INLINE acc_f32 acc_uniform01_open(acc_u32 w) {
  return (acc_f32)((w >> 8) + 1u) * 5.9604644775390625e-8f;
}

/* ln(u) for u in (0, 1]: u = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| < 0.172, by its series to s^9 (the next term is below 2^-27 of
 * the result); e ln 2 with ln 2 split in two so that e * ln2_hi is exact. A fixed sequence of
 * fp32 operations: the same bits everywhere (libm's logf differs between targets). */
ACC_INLINE acc_f32 acc_log_unit(acc_f32 u) {
  const acc_u32 bits = ACC_AS_U32(u);
  int e = (int)(bits >> 23) - 127; /* u >= 2^-24: never subnormal */
  acc_f32 m = ACC_AS_F32((bits & 0x007fffffu) | 0x3f800000u); /* [1, 2) */
  if (m > 1.4142135381698608f) {
    m = m * 0.5f;
    e += 1;
  }
  const acc_f32 s = (m - 1.0f) / (m + 1.0f);
  const acc_f32 s2 = s * s;
  const acc_f32 poly =
      1.0f + s2 * (0.3333333432674408f +
                   s2 * (0.20000000298023224f +
                         s2 * (0.1428571492433548f + s2 * 0.1111111119389534f)));
  const acc_f32 ef = (acc_f32)e;
  return ef * 0.693145751953125f + (ef * 1.428606765330187e-6f +
                                    2.0f * s * poly);
}

/* sin and cos of y in [0, pi/4] by their Taylor series (to y^9 and y^10; the next terms are
 * below 2^-28). */
ACC_INLINE acc_f32 acc_sin_q(acc_f32 y) {
  const acc_f32 y2 = y * y;
  return y + y * y2 *
                 (-0.1666666716337204f +
                  y2 * (0.008333333767950535f +
                        y2 * (-1.9841270113829523e-4f +
                              y2 * 2.7557318844628753e-6f)));
}
ACC_INLINE acc_f32 acc_cos_q(acc_f32 y) {
  const acc_f32 y2 = y * y;
  return 1.0f +
         y2 * (-0.5f +
               y2 * (0.0416666679084301f +
                     y2 * (-0.0013888889225199819f +
                           y2 * (2.4801587642286904e-5f +
                                 y2 * -2.755731998149713e-7f))));
}

/* Standard normals from a block: (w0, w1) and (w2, w3) each give r cos t and r sin t with
 * r = sqrt(-2 ln u1), u1 in (0, 1], t = 2 pi u2, u2 in [0, 1) (Box-Muller). t is reduced
 * exactly on the integer u2 * 2^24: its octant o (top 3 bits) and the rest j; y = j or
 * 2^21 - j (odd octants) times pi/4 / 2^21, in [0, pi/4]; the quadrant then swaps and negates. */
ACC_INLINE acc_f32 acc_normal_of(const acc_x4_t v, acc_u32 k) {
  const acc_u32 w1 = (k & 2u) != 0u ? v.z : v.x;
  const acc_u32 w2 = (k & 2u) != 0u ? v.w : v.y;
  const acc_f32 r = ACC_SQRTF(-2.0f * acc_log_unit(acc_uniform01_open(w1)));
  const acc_u32 t = w2 >> 8;
  const acc_u32 oct = t >> 21;
  const acc_u32 j = t & 0x1fffffu;
  const acc_f32 y = (acc_f32)((oct & 1u) != 0u ? 0x200000u - j : j) * 3.7450703871400037e-7f;
  const acc_f32 sy = acc_sin_q(y), cy = acc_cos_q(y);
  /* within the quadrant: angle a = (octant parity) ? pi/2 - y : y */
  const acc_f32 sa = (oct & 1u) != 0u ? cy : sy;
  const acc_f32 ca = (oct & 1u) != 0u ? sy : cy;
  const acc_u32 q = oct >> 1;
  /* sin/cos of a + q pi/2 */
  const acc_f32 st = q == 0u ? sa : q == 1u ? ca : q == 2u ? -sa : -ca;
  const acc_f32 ct = q == 0u ? ca : q == 1u ? -sa : q == 2u ? -ca : sa;
  return r * ((k & 1u) != 0u ? st : ct);
}

/* Chunk b of a launch uses blocks b * ACC_RAND_CHUNK_BLOCKS + i / 4 (its element i: word
 * i % 4), so a launch reserves ACC_RAND_CHUNK_BLOCKS per chunk. */
ACC_INLINE acc_u64 acc_rand_chunk_first(acc_u32 b) { return (acc_u64)b * ACC_RAND_CHUNK_BLOCKS; }

/* Group g (elements 4g .. 4g + 3 below count) of a chunk: raw words. */
ACC_INLINE void acc_rand_raw_group(acc_idx g, acc_u64 dst, acc_u32 count,
                                   const acc_philox_state_t s, acc_u64 first) {
  const acc_x4_t v = acc_philox_block(s, first + g);
  for (acc_u32 k = 0u; k < 4u && g * 4u + k < count; ++k)
    ACC_PTR(acc_u32, dst)[g * 4u + k] = acc_x4_word(v, k);
}

/* ... a + b * x, x = u uniform in [0, 1) (normal = 0) or z standard normal (normal = 1), stored
 * rounded to dt. */
ACC_INLINE void acc_rand_value_group(acc_idx g, acc_u64 dst, acc_u32 count,
                                     const acc_philox_state_t s, acc_u64 first, acc_f32 a,
                                     acc_f32 b, acc_u32 normal, acc_u32 dt) {
  const acc_x4_t v = acc_philox_block(s, first + g);
  for (acc_u32 k = 0u; k < 4u && g * 4u + k < count; ++k) {
    const acc_f32 x = normal != 0u ? acc_normal_of(v, k) : acc_uniform01(acc_x4_word(v, k));
    (void)acc_store(dst, g * 4u + k, dt, a + b * x);
  }
}

/* ... dst = src * scale where u >= p (kept), else 0. */
ACC_INLINE void acc_dropout_group(acc_idx g, acc_u64 src, acc_u64 dst, acc_u32 count,
                                  const acc_philox_state_t s, acc_u64 first, acc_f32 p,
                                  acc_f32 scale, acc_u32 dt) {
  const acc_x4_t v = acc_philox_block(s, first + g);
  for (acc_u32 k = 0u; k < 4u && g * 4u + k < count; ++k) {
    const acc_idx i = g * 4u + k;
    const acc_u32 keep = (acc_u32)(acc_uniform01(acc_x4_word(v, k)) >= p);
    (void)acc_store(dst, i, dt, keep != 0u ? acc_load(src, i, dt) * scale : 0.0f);
  }
}

/* Chunk b of uniform (normal = 0) or normal (1) values, a constant in each copy. */
ACC_INLINE void acc_rand_value_chunk(const acc_rand_params_t P, const acc_philox_state_t s,
                                     acc_u32 b, acc_u32 normal, acc_u32 dt) {
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  const acc_u32 count = chunks[b].count;
  ACC_ELEM_MAP((count + 3u) / 4u, acc_rand_value_group, chunks[b].ptr[0], count, s,
               acc_rand_chunk_first(b), P.a, P.b, normal, dt);
}

ACC_INLINE void acc_dropout_chunk(const acc_rand_params_t P, const acc_philox_state_t s,
                                  acc_u32 b, acc_u32 dt) {
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  const acc_u32 count = chunks[b].count;
  ACC_ELEM_MAP((count + 3u) / 4u, acc_dropout_group, chunks[b].ptr[0], chunks[b].ptr[1], count,
               s, acc_rand_chunk_first(b), P.a, P.b, dt);
}

ACC_KERNEL(accel_k_rand_raw, acc_rand_params_t, P) {
  const acc_philox_state_t s = ACC_PTR(const acc_philox_state_t, P.state)[0];
  ACC_GPTR(const acc_chunk_t) chunks = ACC_PTR(const acc_chunk_t, P.chunks);
  ACC_FOR_BLOCKS(b, P.num_chunks) {
    const acc_u32 count = chunks[b].count;
    ACC_ELEM_MAP((count + 3u) / 4u, acc_rand_raw_group, chunks[b].ptr[0], count, s,
                 acc_rand_chunk_first(b));
  }
}

ACC_KERNEL(accel_k_rand_uniform, acc_rand_params_t, P) {
  const acc_philox_state_t s = ACC_PTR(const acc_philox_state_t, P.state)[0];
  ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.dtype, acc_rand_value_chunk, P, s, b, 0u);
}

ACC_KERNEL(accel_k_rand_normal, acc_rand_params_t, P) {
  const acc_philox_state_t s = ACC_PTR(const acc_philox_state_t, P.state)[0];
  ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.dtype, acc_rand_value_chunk, P, s, b, 1u);
}

ACC_KERNEL(accel_k_dropout, acc_rand_params_t, P) {
  const acc_philox_state_t s = ACC_PTR(const acc_philox_state_t, P.state)[0];
  ACC_FOR_BLOCKS(b, P.num_chunks) ACC_DTYPE_CALL(P.dtype, acc_dropout_chunk, P, s, b);
}

/* One block: the state's 128-bit counter += blocks. */
ACC_KERNEL(accel_k_rand_advance, acc_rand_advance_params_t, P) {
  ACC_FOR_BLOCKS(b, 1u) {
    ACC_LANE0(ACC_GPTR(acc_philox_state_t) s = ACC_PTR(acc_philox_state_t, P.state);
              const acc_u64 lo = (((acc_u64)s[0].ctr1 << 32) | (acc_u64)s[0].ctr0) + P.blocks;
              const acc_u32 carry = (acc_u32)(lo < P.blocks);
              s[0].ctr0 = (acc_u32)lo; s[0].ctr1 = (acc_u32)(lo >> 32);
              s[0].ctr2 += carry; s[0].ctr3 += (acc_u32)(carry != 0u && s[0].ctr2 == 0u);)
  }
}

#endif
