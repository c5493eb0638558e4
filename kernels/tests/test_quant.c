/* The 8-bit blockwise codes of kernels/quant.h (as compiled for the CPU) against a reference
 * that follows the definition at the top of quant.h independently: the grid of values built in
 * double from (2^M + f) * 2^(e - 16 - M), t rounded to the nearest grid value by exact
 * distances in double (ties to the even code), saturating at the top. Checked: every code
 * decodes to its grid value and encodes back to itself; every midpoint between neighbours (and
 * one fp32 ulp either side) encodes as the reference says; random blocks of signed and unsigned
 * values spread over 40 binades give the reference's codes, decode to value * s rounded once,
 * and stay within the documented error (2^-(M+1) relative above 2^-15 * s, 2^-(16+M) * s
 * absolute below). */
#include "prelude_c.h"
#include "accel_kernel_abi.h"
#include "quant.h"
#include "kt_common.h"

int kt_failures;

/* The grid value of magnitude code c with mb mantissa bits (double, exact). */
static double ref_value(uint32_t c, uint32_t mb) {
  const uint32_t e = c >> mb, f = c & ((1u << mb) - 1u);
  return e == 0 ? ldexp((double)f, -15 - (int)mb)
                : ldexp((double)((1u << mb) + f), (int)e - 16 - (int)mb);
}

/* The nearest code to t (fp32, >= 0) by exact distances, ties to the even code. */
static uint32_t ref_code(float t, uint32_t mb) {
  const uint32_t top = (16u << mb) - 1u;
  if (!(t < 1.0f)) return top;
  uint32_t best = 0;
  for (uint32_t c = 1; c <= top; ++c) {
    const double dc = fabs(ref_value(c, mb) - (double)t), db = fabs(ref_value(best, mb) - t);
    if (dc < db || (dc == db && (c & 1u) == 0u)) best = c;
  }
  return best;
}

static void check_grid(uint32_t mb) {
  const uint32_t top = (16u << mb) - 1u;
  KT_CHECK(ref_value(top, mb) == 1.0 - ldexp(1.0, -(int)mb - 1), "mb %u: top value", mb);
  for (uint32_t c = 0; c <= top; ++c) {
    const float v = acc_q8_value(c, mb);
    KT_CHECK((double)v == ref_value(c, mb), "mb %u: value(%u) = %a, want %a", mb, c, v,
             ref_value(c, mb));
    KT_CHECK(acc_q8_code(v, mb) == c, "mb %u: code(value(%u)) = %u", mb, c, acc_q8_code(v, mb));
    if (c == top) break;
    /* the midpoint to the next value (exact in fp32: one more bit) and one ulp either side */
    const float mid = (float)((ref_value(c, mb) + ref_value(c + 1, mb)) / 2);
    const float pts[3] = {nextafterf(mid, 0.0f), mid, nextafterf(mid, 1.0f)};
    for (int k = 0; k < 3; ++k)
      KT_CHECK(acc_q8_code(pts[k], mb) == ref_code(pts[k], mb), "mb %u: code(%a) = %u, want %u",
               mb, pts[k], acc_q8_code(pts[k], mb), ref_code(pts[k], mb));
  }
  KT_CHECK(acc_q8_code(1.0f, mb) == top && acc_q8_code(NAN, mb) == top, "mb %u: saturation", mb);
}

/* One random block: magnitudes 2^-40..2^0 times a block scale, signed or not. */
static void check_block(uint64_t *seed, int is_signed) {
  const uint32_t mb = is_signed ? ACC_Q8_M_SIGNED : ACC_Q8_M_UNSIGNED;
  const float amp = ldexpf(1.0f, (int)(kt_rand(seed) % 60u) - 30);
  float x[ACC_Q8_BLOCK], s = 0.0f;
  for (uint32_t i = 0; i < ACC_Q8_BLOCK; ++i) {
    const float mag = amp * ldexpf(1.0f + 0.5f * kt_uniform(seed), -(int)(kt_rand(seed) % 40u));
    x[i] = is_signed && (kt_rand(seed) & 1u) ? -mag : mag;
    if (i % 37u == 5u) x[i] = 0.0f;
    s = fabsf(x[i]) > s ? fabsf(x[i]) : s;
  }
  for (uint32_t i = 0; i < ACC_Q8_BLOCK; ++i) {
    const float t = fabsf(x[i]) / s; /* fp32, as documented */
    const uint32_t want = ref_code(t, mb) | (is_signed && signbit(x[i]) ? 0x80u : 0u);
    const uint32_t got = is_signed ? acc_q8_encode_signed(x[i], s) : acc_q8_encode_unsigned(x[i], s);
    KT_CHECK(got == want, "%s x %a s %a: code %02x, want %02x", is_signed ? "m" : "v", x[i], s,
             got, want);
    const float back = is_signed ? acc_q8_decode_signed(got, s) : acc_q8_decode_unsigned(got, s);
    const double mag = ref_value(is_signed ? want & 0x7fu : want, mb) * s;
    const float want_back = (float)(is_signed && (want & 0x80u) ? -mag : mag);
    KT_CHECK(back == want_back, "decode %02x * %a = %a, want %a", got, s, back, want_back);
    const double err = fabs((double)back - x[i]);
    const double bound = fabs((double)x[i]) >= ldexp(s, -15)
                             ? ldexp(fabs((double)x[i]), -(int)mb - 1)
                             : ldexp((double)s, -16 - (int)mb);
    /* plus the fp32 roundings of t and of the product: 2 ulp of the result */
    KT_CHECK(err <= bound * (1.0 + 0x1p-22) + ldexp(fabs((double)back), -23),
             "%s x %a s %a: error %g > %g", is_signed ? "m" : "v", x[i], s, err, bound);
  }
}

int main(void) {
  check_grid(ACC_Q8_M_SIGNED);
  check_grid(ACC_Q8_M_UNSIGNED);
  uint64_t seed = 39;
  for (int b = 0; b < 400; ++b) {
    check_block(&seed, 1);
    check_block(&seed, 0);
  }
  KT_CHECK(acc_q8_encode_signed(0.0f, 0.0f) == 0u && acc_q8_decode_signed(0u, 0.0f) == 0.0f,
           "a block of zeros");
  if (kt_failures) {
    fprintf(stderr, "kernel-quant: %d failures\n", kt_failures);
    return 1;
  }
  printf("kernel-quant: codes, decoding and error bounds as documented\n");
  return 0;
}
