/* Exhaustive F16/BF16 <-> F32 conversion test of kernels/convert.h (as compiled for the CPU):
 * every 16-bit pattern widened, every f16/bf16 value and every midpoint between neighbours
 * (plus one f32 ulp either side) narrowed, plus 16M random f32 patterns, against references
 * computed independently (the compiler's _Float16 and exact double arithmetic). */
#include "prelude_c.h"
#include "accel_kernel_abi.h"
#include "convert.h"
#include "kt_common.h"

int kt_failures;

static uint32_t bits(float f) { return acc_as_u32(f); }

/* bf16 round to nearest even by exact distances in double. */
static uint32_t ref_bf16(float x) {
  if (isnan(x)) return 0x7fc0u;
  const uint32_t u = bits(x);
  const uint32_t lo = u >> 16, hi = lo + 1u;
  const double dl = fabs((double)x - (double)acc_as_f32(lo << 16));
  /* rounding up past the largest finite value gives Inf: treat it as 2^128 (IEEE overflow) */
  const double vh = (hi & 0x7fffu) == 0x7f80u ? ldexp(x < 0 ? -1.0 : 1.0, 128)
                                              : (double)acc_as_f32(hi << 16);
  const double dh = fabs(vh - (double)x);
  if ((lo & 0x7fffu) == 0x7f80u) return lo; /* Inf */
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return (lo & 1u) ? hi : lo;
}

static uint32_t ref_f16(float x) {
  _Float16 h = (_Float16)x;
  uint16_t r;
  memcpy(&r, &h, 2);
  return r;
}

static void check_narrow(float x) {
  const uint32_t h = acc_f32_to_f16(x), rh = ref_f16(x);
  if (isnan(x))
    KT_CHECK(h == ((bits(x) >> 16 & 0x8000u) | 0x7e00u), "f16 NaN %08x -> %04x", bits(x), h);
  else
    KT_CHECK(h == rh, "f32 %08x (%a) -> f16 %04x, want %04x", bits(x), x, h, rh);
  const uint32_t b = acc_f32_to_bf16(x), rb = ref_bf16(x);
  KT_CHECK(b == rb, "f32 %08x (%a) -> bf16 %04x, want %04x", bits(x), x, b, rb);
}

int main(void) {
  for (uint32_t p = 0; p < 65536u; ++p) {
    _Float16 hv;
    uint16_t p16 = (uint16_t)p;
    memcpy(&hv, &p16, 2);
    const float want = (float)hv, got = acc_f16_to_f32(p);
    if (isnan(want))
      KT_CHECK(isnan(got) && (bits(got) & 0x1fffu) == 0 && ((bits(got) >> 13) & 0x3ffu) == (p & 0x3ffu),
               "f16 NaN %04x widened to %08x", p, bits(got));
    else
      KT_CHECK(bits(got) == bits(want), "f16 %04x -> %08x, want %08x", p, bits(got), bits(want));
    KT_CHECK(bits(acc_bf16_to_f32(p)) == p << 16, "bf16 %04x widened wrong", p);
    /* narrowing: the value itself, and midpoints to the next value (+- 1 f32 ulp) */
    check_narrow(got);
    check_narrow(acc_bf16_to_f32(p));
    if ((p & 0x7fffu) < 0x7c00u) {
      const float next = acc_f16_to_f32(p + 1u);
      const float mid = (float)(((double)got + (double)next) / 2);
      check_narrow(mid);
      check_narrow(nextafterf(mid, 0.0f));
      check_narrow(nextafterf(mid, INFINITY));
    }
    if ((p & 0x7fffu) < 0x7f80u) {
      const float b0 = acc_bf16_to_f32(p), b1 = acc_bf16_to_f32(p + 1u);
      const float mid = (float)(((double)b0 + (double)b1) / 2);
      check_narrow(mid);
      check_narrow(nextafterf(mid, 0.0f));
      check_narrow(nextafterf(mid, INFINITY));
    }
    if (kt_failures > 20) break;
  }
  uint64_t s = 42;
  for (int k = 0; k < (1 << 24) && kt_failures < 20; ++k) check_narrow(acc_as_f32((uint32_t)kt_rand(&s)));
  if (kt_failures) {
    fprintf(stderr, "test_convert: %d failures\n", kt_failures);
    return 1;
  }
  printf("test_convert: all 65536 f16/bf16 patterns + midpoints + 16M random f32 OK\n");
  return 0;
}
