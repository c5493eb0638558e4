/* The 8-bit blockwise state format of kernels/quant.h (as compiled for the CPU) against a
 * reference that follows its definition independently (tests/common/ref_q8.h): the dynamic
 * map's values computed in double (each table value must be that value rounded to nearest
 * fp32), and the code of t chosen by exact distances in double to every value, ties to the
 * lower code. Checked: every code decodes to its value and encodes back;
 * every midpoint between neighbours and one fp32 ulp either side encodes as the reference says;
 * random blocks (magnitudes over 40 binades, zeros among them) give the reference's codes for
 * t = x / s rounded in fp32, and decode to map[c] * s rounded once; every 61st fp32 bit pattern
 * (each sign, every exponent, NaN and Inf among them) encodes as the reference says (a full sweep
 * of all 2^32 took 80 s and agreed when the lookup tables replaced the threshold search); a
 * block of zeros, a NaN and an Inf element. */
#include "prelude_c.h"
#include "accel_kernel_abi.h"
#include "reduce.h"
#include "quant.h"
#include "kt_common.h"
#include "../../tests/common/ref_q8.h"

int kt_failures;

static const float *map_of(int is_signed) {
  return is_signed ? acc_q8_map_signed : acc_q8_map_unsigned;
}

static uint32_t ref_code(float t, int is_signed) { return ref_q8_code(map_of(is_signed), t); }

/* ref_code by bisection (the map is sorted; ref_code's exact distances decide between the two
 * values around t), for sweeps too long for ref_code's 256 distances per t. */
static uint32_t ref_code_fast(float t, int is_signed) {
  const float *map = map_of(is_signed);
  if (t != t) return 0u;
  uint32_t lo = 0, hi = 255;
  if (t <= map[0]) return 0u;
  if (t >= map[255]) return 255u;
  while (hi - lo > 1u) { /* map[lo] < t <= map[hi] */
    const uint32_t mid = (lo + hi) / 2u;
    if (map[mid] < t)
      lo = mid;
    else
      hi = mid;
  }
  return fabs((double)map[hi] - t) < fabs((double)map[lo] - t) ? hi : lo;
}

static uint32_t encode(float x, float s, int is_signed) {
  return is_signed ? acc_q8_encode_signed(x, s) : acc_q8_encode_unsigned(x, s);
}

static float decode(uint32_t c, float s, int is_signed) {
  return is_signed ? acc_q8_decode_signed(c, s) : acc_q8_decode_unsigned(c, s);
}

static void check_map(int is_signed) {
  const char *tag = is_signed ? "signed" : "unsigned";
  const float *map = map_of(is_signed);
  double ref[256];
  ref_q8_map(is_signed, ref);
  for (uint32_t c = 0; c < 256; ++c) {
    /* rounded to nearest: within half an ulp of the value (the double's own error aside) */
    const double half_ulp = ref[c] == 0.0 ? 0.0 : ldexp(1.0, ilogb(ref[c]) - 24);
    KT_CHECK(fabs((double)map[c] - ref[c]) <= half_ulp * (1.0 + 0x1p-20), "%s map[%u] = %a, want %a",
             tag, c, map[c], ref[c]);
    KT_CHECK(decode(c, 1.0f, is_signed) == map[c], "%s decode(%u)", tag, c);
    KT_CHECK(encode(map[c], 1.0f, is_signed) == c, "%s encode(map[%u]) = %u", tag, c,
             encode(map[c], 1.0f, is_signed));
    if (c == 255u) break;
    /* the exact midpoint (a double: the neighbours are fp32 of similar size) and its
     * neighbours in fp32 */
    const double mid = ((double)map[c] + (double)map[c + 1]) / 2;
    const float m32 = (float)mid;
    const float pts[4] = {nextafterf(m32, -INFINITY), m32, nextafterf(m32, INFINITY),
                          nextafterf(nextafterf(m32, INFINITY), INFINITY)};
    for (int k = 0; k < 4; ++k)
      KT_CHECK(encode(pts[k], 1.0f, is_signed) == ref_code(pts[k], is_signed),
               "%s code(%a) = %u, want %u", tag, pts[k], encode(pts[k], 1.0f, is_signed),
               ref_code(pts[k], is_signed));
  }
}

/* t over every 61st fp32 bit pattern (61 is odd, so every low-bit residue and sign mix occurs),
 * through the encoder with s = 1 (t / 1 = t). */
static void check_sweep(int is_signed) {
  uint32_t failures = 0;
  for (uint64_t bits = 0; bits <= 0xffffffffu && failures < 5u; bits += 61u) {
    float t;
    const uint32_t b32 = (uint32_t)bits;
    memcpy(&t, &b32, sizeof t);
    const uint32_t want = ref_code_fast(t, is_signed), got = encode(t, 1.0f, is_signed);
    if (got != want) ++failures;
    KT_CHECK(got == want, "%s sweep: code(%a) = %u, want %u", is_signed ? "signed" : "unsigned", t,
             got, want);
  }
}

/* One random block: magnitudes over 40 binades times a block scale, zeros among them. */
static void check_block(uint64_t *seed, int is_signed) {
  const float amp = ldexpf(1.0f, (int)(kt_rand(seed) % 60u) - 30);
  float x[ACC_Q8_BLOCK], s = 0.0f;
  for (uint32_t i = 0; i < ACC_Q8_BLOCK; ++i) {
    const float mag = amp * ldexpf(1.0f + 0.5f * kt_uniform(seed), -(int)(kt_rand(seed) % 40u));
    x[i] = is_signed && (kt_rand(seed) & 1u) ? -mag : mag;
    if (i % 37u == 5u) x[i] = 0.0f;
    s = fabsf(x[i]) > s ? fabsf(x[i]) : s;
  }
  for (uint32_t i = 0; i < ACC_Q8_BLOCK; ++i) {
    const float t = x[i] / s; /* fp32, as documented */
    const uint32_t want = ref_code(t, is_signed), got = encode(x[i], s, is_signed);
    KT_CHECK(got == want, "%s x %a s %a: code %u, want %u", is_signed ? "m" : "v", x[i], s, got,
             want);
    const float back = decode(got, s, is_signed);
    KT_CHECK(back == (float)((double)map_of(is_signed)[want] * s), "decode %u * %a = %a", got, s,
             back);
  }
}

int main(void) {
  check_map(1);
  check_map(0);
  check_sweep(1);
  check_sweep(0);
  uint64_t seed = 39;
  for (int b = 0; b < 400; ++b) {
    check_block(&seed, 1);
    check_block(&seed, 0);
  }
  for (int sg = 0; sg < 2; ++sg) {
    const uint32_t z = encode(0.0f, 0.0f, sg);
    KT_CHECK(map_of(sg)[z] == 0.0f && decode(z, 0.0f, sg) == 0.0f, "a block of zeros");
    KT_CHECK(isnan(decode(encode(1.0f, NAN, sg), NAN, sg)), "a NaN scale decodes to NaN");
    KT_CHECK(!isfinite(decode(encode(1.0f, INFINITY, sg), INFINITY, sg)), "an Inf scale");
  }
  KT_CHECK(isnan(acc_q8_max(1.0f, NAN, 0u)) && isnan(acc_q8_max(NAN, 1.0f, 0u)) &&
               acc_q8_max(2.0f, 3.0f, 0u) == 3.0f,
           "the scale's max keeps NaN");
  if (kt_failures) {
    fprintf(stderr, "kernel-quant: %d failures\n", kt_failures);
    return 1;
  }
  printf("kernel-quant: the dynamic map, its codes and decoding as documented\n");
  return 0;
}
