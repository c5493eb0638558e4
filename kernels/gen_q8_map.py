#!/usr/bin/env python3
"""Writes the tables of the 8-bit blockwise state format (docs/KERNELS.md, "8-bit blockwise
moments"): kernels/q8_map.h and kernels/q8_codes_{signed,unsigned}.h.

usage: gen_q8_map.py --write DIR | --check DIR   (--check: exit 1 unless the headers in DIR
hold exactly what would be written: the test kernel-q8-map)

The values are bitsandbytes' dynamic map (create_dynamic_map, max_exponent_bits = 7, 8 bits):
for i = 0..6 the midpoints of n + 1 equally spaced points from 0.1 to 1, times 10^(i - 6), with
n = 2^i for the signed map (and their negatives) and n = 2^(i + 1) for the unsigned one, plus 0
and 1: 256 values each, sorted. Here each value is the exact rational, rounded once to the
nearest fp32 (bitsandbytes computes them in fp32 arithmetic). Beside each map, its 255
thresholds: thr[k] is the largest fp32 not above the exact midpoint of map[k] and map[k + 1],
so that for an fp32 t the count of thresholds below t is the code of the nearest value, ties
going to the lower code (t > thr[k] exactly when t lies above that midpoint).

The encoder does not search the thresholds: it looks its code up by the bits of t
(kernels/quant.h). A bucket is the set of fp32 t of one sign whose magnitude has the same
exponent and top `bits` mantissa bits (6 for the signed map, 7 for the unsigned one, whose
values lie twice as close), from the binade of the smallest threshold up; the magnitudes below
share bucket 0 and those from 1 up (Inf and NaN too) the last. Each bucket holds at most one
threshold (asserted), so its entry, code << k | key with k = 23 - bits, gives every t in it:
the code of its lowest t, plus one when the low k bits of t (of ~t for negative t, so that
larger means nearer +inf) exceed the key, the threshold's low k bits the same way (all ones
when the bucket holds none). The signed map's entries are the positive buckets, then the
negative ones; the unsigned map's the positive ones (a negative t has code 0).

Output: q8_map.h (the values and the buckets' constants) and q8_codes_signed.h /
q8_codes_unsigned.h (the entries), all three in DIR.
"""
import bisect
import os
import re
import struct
import sys
from fractions import Fraction

BITS = {"signed": 6, "unsigned": 7}  # mantissa bits of |t| in a bucket's index
NAMES = ("q8_map.h", "q8_codes_signed.h", "q8_codes_unsigned.h")


def dynamic_map(signed):
    vals = [Fraction(0), Fraction(1)]
    for i in range(7):
        n = 2 ** i if signed else 2 ** (i + 1)
        for k in range(n):
            mean = Fraction(1, 10) + Fraction((2 * k + 1) * 9, 20 * n)
            v = mean * Fraction(10) ** (i - 6)
            vals += [v, -v] if signed else [v]
    assert len(vals) == 256 and len(set(vals)) == 256
    return sorted(vals)


def fp32(q, down=False):
    """q (a Fraction, 0 or of magnitude in fp32's normal range) rounded to fp32: to nearest,
    ties to even, or toward -inf with down."""
    if q == 0:
        return 0.0
    neg = q < 0
    a = -q if neg else q
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    assert -126 <= e <= 127
    scaled = a * Fraction(2) ** (23 - e)  # in [2^23, 2^24)
    m, rem = divmod(scaled.numerator, scaled.denominator)
    rem = Fraction(rem, scaled.denominator)
    if down:
        if neg and rem:
            m += 1
    elif rem > Fraction(1, 2) or (rem == Fraction(1, 2) and m % 2):
        m += 1
    v = float(m) * 2.0 ** (e - 23)
    return -v if neg else v


def tables(signed):
    exact = dynamic_map(signed)
    vals = [fp32(q) for q in exact]
    assert all(a < b for a, b in zip(vals, vals[1:]))
    thr = [fp32((Fraction(a) + Fraction(b)) / 2, down=True) for a, b in zip(vals, vals[1:])]
    return vals, thr


def f32_of_bits(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def bits_of_f32(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bucket_layout(thr, bits):
    """(first, count): |t| >> (23 - bits) of the first bucket of its own (the binade of the
    smallest positive threshold), and the number of buckets (the last: |t| >= 1)."""
    e = bits_of_f32(min(x for x in thr if x > 0)) >> 23
    first = e << bits
    return first, (127 << bits) - first + 1


def bucket_entries(thr, signed, bits):
    """The lookup table of a map with thresholds thr (see the docstring)."""
    k = 23 - bits
    ones = (1 << k) - 1
    first, count = bucket_layout(thr, bits)

    def code(t):
        return bisect.bisect_left(thr, t)  # the count of thresholds below t

    def entry(lo, hi, negative):
        """The bucket of the magnitudes [lo, hi] (bits) on one side."""
        ends = (-f32_of_bits(hi), -f32_of_bits(lo)) if negative else (f32_of_bits(lo),
                                                                        f32_of_bits(hi))
        c0, c1 = code(ends[0]), code(ends[1])
        assert c1 - c0 <= 1, "two thresholds in one bucket"
        if c1 == c0:
            return c0 << k | ones
        a = bits_of_f32(thr[c0]) & 0x7fffffff
        assert a >> k == lo >> k and lo != 0 and hi != 0x7f800000, "a threshold off its bucket"
        return c0 << k | ((~a if negative else a) & ones)

    out = []
    for negative in (False, True) if signed else (False,):
        for b in range(count):
            lo = 0 if b == 0 else (first + b) << k
            hi = 0x7f800000 if b == count - 1 else ((first + b + 1) << k) - 1
            out.append(entry(lo, hi, negative))
    return out


def hexf(x):
    """x as a C hex-float literal, exactly (an fp32 value is exact in a double)."""
    return re.sub(r"\.?0*p", "p", x.hex()) + "f" if x else "0.0f"


def c_array(name, xs):
    body = ",\n".join("    " + ", ".join(hexf(x) for x in xs[k:k + 4])
                      for k in range(0, len(xs), 4))
    return f"ACC_TABLE(acc_f32, {name}, {len(xs)}) = {{\n{body}}};\n"


def c_array_u32(name, xs):
    body = ",\n".join("    " + ", ".join(f"0x{x:07x}u" for x in xs[k:k + 8])
                      for k in range(0, len(xs), 8))
    return f"ACC_TABLE(acc_u32, {name}, {len(xs)}) = {{\n{body}}};\n"


def header(name, what, body):
    guard = "ACCEL_KERNELS_" + name.replace(".", "_").upper()
    return "\n".join(["/* Generated by kernels/gen_q8_map.py; do not edit.", f" * {what} */",
                      f"#ifndef {guard}", f"#define {guard}", "", *body, "#endif"]) + "\n"


def texts():
    """The three headers' texts, by name."""
    maps, consts, codes = [], [], {}
    for tag in ("signed", "unsigned"):
        vals, thr = tables(tag == "signed")
        bits = BITS[tag]
        first, count = bucket_layout(thr, bits)
        maps.append(c_array(f"acc_q8_map_{tag}", vals))
        consts += [f"#define ACC_Q8_{tag.upper()}_SHIFT {23 - bits}u",
                   f"#define ACC_Q8_{tag.upper()}_FIRST {first}u",
                   f"#define ACC_Q8_{tag.upper()}_BUCKETS {count}u"]
        codes[tag] = header(f"q8_codes_{tag}.h", f"The {tag} map's code lookup table "
                            "(kernels/quant.h).",
                            [c_array_u32(f"acc_q8_codes_{tag}", bucket_entries(
                                thr, tag == "signed", bits))])
    return {
        NAMES[0]: header(NAMES[0], "The 8-bit state format's values (the dynamic map, each "
                         "rounded once to fp32)\n * and the layout of its code lookup tables "
                         "(kernels/quant.h).", consts + [""] + maps),
        NAMES[1]: codes["signed"],
        NAMES[2]: codes["unsigned"],
    }


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("--check", "--write"):
        sys.exit("usage: gen_q8_map.py --write DIR | --check DIR")
    for name, text in texts().items():
        path = os.path.join(sys.argv[2], name)
        if sys.argv[1] == "--write":
            with open(path, "w") as f:
                f.write(text)
            continue
        with open(path) as f:
            if f.read() != text:
                sys.exit(f"{path} differs from what gen_q8_map.py writes: regenerate it")
        print(f"{path}: as generated")


if __name__ == "__main__":
    main()
