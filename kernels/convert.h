/*
 * F16 / BF16 <-> F32 with integer bit operations only, so every target produces the same bits
 * (OpenCL here has no fp16 extension, and no float rounding mode or denormal flushing is
 * involved). Widening is exact; narrowing rounds to nearest even, with correct subnormals,
 * overflow to Inf, and NaN -> canonical quiet NaN as c10::Half / c10::BFloat16 do.
 * Also: typed element loads/stores and the dtype dispatch used by every kernel body.
 */
#ifndef ACCEL_KERNELS_CONVERT_H
#define ACCEL_KERNELS_CONVERT_H

/* c ? a : b for c in {0, 1}, as bit operations: a chain of ?: over computed values becomes
 * branches in GCC, which blocks vectorisation of the conversion loops on the CPU. */
ACC_INLINE acc_u32 acc_sel(acc_u32 c, acc_u32 a, acc_u32 b) { return b ^ ((a ^ b) & (0u - c)); }

ACC_INLINE acc_f32 acc_f16_to_f32(acc_u32 h) {
  const acc_u32 sign = (h & 0x8000u) << 16;
  const acc_u32 ex = (h >> 10) & 0x1fu;
  const acc_u32 man = h & 0x3ffu;
  /* normal: rebias 15 -> 127; Inf/NaN: all-ones exponent, payload kept */
  const acc_u32 normal = sign | ((ex + 112u) << 23) | (man << 13);
  const acc_u32 special = sign | 0x7f800000u | (man << 13);
  /* subnormal (and zero): man * 2^-24. man fits a float mantissa exactly and 2^-24 is a power
   * of two, so this product is exact on every target; the sign is then ORed in. */
  const acc_u32 sub = sign | ACC_AS_U32((acc_f32)man * 5.9604644775390625e-08f);
  return ACC_AS_F32(acc_sel(ex == 0x1fu, special, acc_sel(ex == 0u, sub, normal)));
}

ACC_INLINE acc_u32 acc_f32_to_f16(acc_f32 f) {
  const acc_u32 x = ACC_AS_U32(f);
  const acc_u32 sign = (x >> 16) & 0x8000u;
  const acc_u32 ax = x & 0x7fffffffu;
  /* normal f16 range [2^-14, 65536): rebias the exponent by 112 and round the 13 dropped bits
   * to nearest even; a carry out of the mantissa correctly bumps the exponent (up to Inf). */
  const acc_u32 normal = ((ax - 0x38000000u) + 0xfffu + ((ax >> 13) & 1u)) >> 13;
  /* subnormal f16 (biased f32 exponent 102..112): shift the full significand right by
   * 126 - exp (14..24) and round to nearest even on the remainder. */
  const acc_u32 e = ax >> 23;
  const acc_u32 shift = e >= 102u && e <= 112u ? 126u - e : 24u;
  const acc_u32 sig = (ax & 0x7fffffu) | 0x800000u;
  const acc_u32 q = sig >> shift;
  const acc_u32 rem = sig & ((1u << shift) - 1u);
  const acc_u32 halfway = 1u << (shift - 1u);
  const acc_u32 sub = q + (((acc_u32)(rem > halfway) | ((acc_u32)(rem == halfway) & q)) & 1u);
  /* below 2^-25 (e < 102) the result is 0; exactly 2^-25 is a tie that sub rounds to even 0 */
  acc_u32 r = acc_sel(e >= 102u, sub, 0u);
  r = acc_sel(ax >= 0x38800000u, normal, r);
  r = acc_sel(ax >= 0x47800000u, 0x7c00u, r); /* >= 65536 and Inf */
  r = acc_sel(ax > 0x7f800000u, 0x7e00u, r);  /* NaN */
  return sign | r;
}

ACC_INLINE acc_f32 acc_bf16_to_f32(acc_u32 h) { return ACC_AS_F32(h << 16); }

ACC_INLINE acc_u32 acc_f32_to_bf16(acc_f32 f) {
  const acc_u32 x = ACC_AS_U32(f);
  const acc_u32 rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return acc_sel((x & 0x7fffffffu) > 0x7f800000u, 0x7fc0u, rounded);
}

/* Element i of the array at device address base, as f32. dt is a compile-time constant at
 * every call site (ACC_DTYPE_CALL), so the branches fold away. */
ACC_INLINE acc_f32 acc_load(acc_u64 base, acc_idx i, acc_u32 dt) {
  if (dt == ACC_DT_F32) return ACC_PTR(const acc_f32, base)[i];
  if (dt == ACC_DT_F16) return acc_f16_to_f32(ACC_PTR(const acc_u16, base)[i]);
  return acc_bf16_to_f32(ACC_PTR(const acc_u16, base)[i]);
}

ACC_INLINE acc_u32 acc_dt_bytes(acc_u32 dt) {
  return dt == ACC_DT_F32 ? 4u : dt == ACC_DT_U8 ? 1u : 2u;
}

/* Stores v rounded to dt; returns 1 when the stored value is Inf or NaN. */
ACC_INLINE acc_u32 acc_store(acc_u64 base, acc_idx i, acc_u32 dt, acc_f32 v) {
  if (dt == ACC_DT_F32) {
    ACC_PTR(acc_f32, base)[i] = v;
    return (acc_u32)((ACC_AS_U32(v) & 0x7f800000u) == 0x7f800000u);
  }
  if (dt == ACC_DT_F16) {
    const acc_u32 h = acc_f32_to_f16(v);
    ACC_PTR(acc_u16, base)[i] = (acc_u16)h;
    return (acc_u32)((h & 0x7c00u) == 0x7c00u);
  }
  {
    const acc_u32 h = acc_f32_to_bf16(v);
    ACC_PTR(acc_u16, base)[i] = (acc_u16)h;
    return (acc_u32)((h & 0x7f80u) == 0x7f80u);
  }
}

/* Calls FN(args..., DT) with DT the constant dtype dt (evaluated once): FN is an ACC_INLINE
 * body function, so each call site gets a copy of it specialised (and vectorised on the CPU)
 * for its element type. FN may itself be a dispatch macro (ACC_NORM_KIND_CALL, ...): the
 * constants are appended in order. docs/KERNELS.md, "The dialect". */
#define ACC_DTYPE_CALL(dt, FN, ...)                                               \
  {                                                                               \
    const acc_u32 acc_dt_ = (dt);                                                 \
    if (acc_dt_ == ACC_DT_F32) {                                                  \
      FN(__VA_ARGS__, ACC_DT_F32);                                                \
    } else if (acc_dt_ == ACC_DT_F16) {                                           \
      FN(__VA_ARGS__, ACC_DT_F16);                                                \
    } else {                                                                      \
      FN(__VA_ARGS__, ACC_DT_BF16);                                               \
    }                                                                             \
  }
#endif
