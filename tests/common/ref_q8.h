/* The 8-bit state format's reference (docs/KERNELS.md "8-bit blockwise moments"), written from
 * its definition and independent of kernels/quant.h and its tables: the dynamic map in double
 * (kernels/gen_q8_map.py's docstring: for i = 0..6 the midpoints of n + 1 equally spaced points
 * from 0.1 to 1 times 10^(i - 6), n = 2^i with their negatives for the signed map, 2^(i + 1) for
 * the unsigned one, plus 0 and 1; sorted), and the code of t: the value nearest to t by exact
 * distance, ties to the lower code, 0 for NaN. Used by kernels/tests/test_quant.c and the CTS.
 * Needs <math.h>. */
#ifndef ACCEL_TESTS_REF_Q8_H
#define ACCEL_TESTS_REF_Q8_H

static inline void ref_q8_map(int is_signed, double out[256]) {
  int k = 0;
  out[k++] = 0.0;
  out[k++] = 1.0;
  for (int i = 0; i < 7; ++i) {
    const int n = is_signed ? 1 << i : 1 << (i + 1);
    for (int j = 0; j < n; ++j) {
      const double v = (0.1 + (2.0 * j + 1.0) * 0.9 / (2.0 * n)) * pow(10.0, i - 6);
      out[k++] = v;
      if (is_signed) out[k++] = -v;
    }
  }
  for (int a = 1; a < 256; ++a) /* insertion sort */
    for (int b = a; b > 0 && out[b - 1] > out[b]; --b) {
      const double t = out[b];
      out[b] = out[b - 1];
      out[b - 1] = t;
    }
}

/* The code of t against map (256 fp32 values, sorted). */
static inline unsigned ref_q8_code(const float map[256], float t) {
  unsigned best = 0;
  if (t != t) return 0u;
  for (unsigned c = 1; c < 256; ++c)
    if (fabs((double)map[c] - t) < fabs((double)map[best] - t)) best = c;
  return best;
}

#endif
