"""The test kernel's generated Python wrapper (tests/krow): accel.test_axpby comes from the row
(axpby_row.h) alone, through kernels/gen_kernel_rows.py, and calls the generated C function of
libaccel-krow. Checks it against a float64 reference with the f32 rounding of each product (so
bitwise), on NumPy arrays imported by DLPack, then that bad calls (an F16 y, a missing scalar,
lists of different lengths) raise ValueError (accel.InvalidArgument from core) naming the function and write nothing.
"""
import sys

import numpy as np

import accel


def main():
    assert "test_axpby" in accel.__all__, "the generated wrapper is not exported"
    dev = accel.Device("cpu")
    stream = dev.default_stream
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(n).astype(np.float32) for n in (1, 70001, 33)]
    ys = [rng.standard_normal(n).astype(np.float32) for n in (1, 70001, 33)]
    ys0 = [y.copy() for y in ys]
    gamma = 0.3  # a host value (ACC_VALUE): rounded to f32 by the wrapper's call
    want = [np.float32(0.75) * x + np.float32(-1.5) * y + np.float32(gamma)  # f32 each
            for x, y in zip(xs, ys0)]
    alpha, beta = dev.empty(1), dev.empty(1)
    alpha.numpy()[0], beta.numpy()[0] = 0.75, -1.5
    x_list, y_list = accel.TensorList(dev, xs), accel.TensorList(dev, ys)
    accel.test_axpby(x_list, y_list, alpha, beta, gamma=gamma, stream=stream)
    stream.synchronize()
    for i, (y, w) in enumerate(zip(ys, want)):
        assert np.array_equal(y.view(np.uint32), w.view(np.uint32)), f"tensor {i} differs"
        ref = 0.75 * xs[i].astype(np.float64) - 1.5 * ys0[i].astype(np.float64) + np.float32(gamma)
        assert np.allclose(y, ref, rtol=1e-6, atol=1e-6), f"tensor {i} far from float64"
    bad_calls = [  # (y, alpha, the message's part): the row's rules, checked by core
        (accel.TensorList(dev, [y.astype(np.float16) for y in ys]), alpha, "y"),
        (y_list, None, "alpha_dev"),
        (accel.TensorList(dev, ys0[:2]), alpha, "list lengths differ"),
    ]
    for y, a, part in bad_calls:
        try:
            accel.test_axpby(x_list, y, a, beta, gamma=gamma, stream=stream)
        except ValueError as e:  # accel.InvalidArgument is one; the wrapper's own check too
            assert "accel_test_axpby" in str(e) and part in str(e), str(e)
        else:
            raise AssertionError(f"a bad call ({part}) was accepted")
    assert all(np.array_equal(y, w) for y, w in zip(ys, want)), "a refused call wrote y"
    for tl in [x_list, y_list] + [c[0] for c in bad_calls]:
        tl.close()
    dev.close()
    print("ok: accel.test_axpby generated from its row")
    return 0


if __name__ == "__main__":
    sys.exit(main())
