"""The Python wrappers generated from the kernel table's ACC_ROW_OP rows (_kernels_gen.py,
kernels/gen_kernel_rows.py --python): the ones the hand-written tests do not reach (fused_adam
with an AdamArgs, unscale_and_check, cast, and the one-block rows without lists amp_begin_step,
amp_update_scale and step_count, whose device comes from the stream), each against a NumPy
reference, and their argument names and refusals."""
import inspect

import numpy as np
import pytest

import accel


@pytest.fixture()
def dev():
    with accel.Device("cpu") as d:
        yield d


def test_signatures():
    assert list(inspect.signature(accel.fill).parameters) == [
        "tensors", "value", "stream", "device"]
    assert list(inspect.signature(accel.step_count).parameters) == [
        "step", "skip_if", "stream", "device"]
    assert inspect.signature(accel.step_count).parameters["skip_if"].default is None


def test_fused_adam_matches_numpy(dev):
    rng = np.random.default_rng(5)
    p, g = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    m, v = np.zeros_like(p), np.zeros_like(p)
    p0 = p.copy()
    args = accel.AdamArgs(dev, lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    s = dev.default_stream
    lists = [accel.TensorList(dev, [x]) for x in (p, g, m, v)]  # imported once, for both steps
    for step in (1, 2):
        args.host.step = step
        args.upload(s)
        accel.fused_adam(*lists, args, stream=s)  # an AdamArgs: a DeviceStruct
        s.synchronize()
    for tl in lists:
        tl.close()
    want, mw, vw = p0.astype(np.float64), np.zeros(1000), np.zeros(1000)
    g64 = g.astype(np.float64)
    for step in (1, 2):
        want *= 1 - 1e-2 * 0.1
        mw = mw + 0.1 * (g64 - mw)
        vw = 0.99 * vw + 0.01 * g64 * g64
        want -= (1e-2 / (1 - 0.9 ** step)) * mw / (np.sqrt(vw) / np.sqrt(1 - 0.99 ** step) + 1e-8)
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)
    args.close()


def test_unscale_cast_and_the_one_block_rows(dev):
    s = dev.default_stream
    scaler = accel.DeviceStruct(dev, "accel_loss_scaler_t")
    h = scaler.host
    h.scale, h.growth_interval, h.growth_factor, h.backoff_factor = 1024.0, 2000, 2.0, 0.5
    flags = accel.DeviceStruct(dev, "float", 2)  # found_inf, a skip flag
    flags.host[0], flags.host[1] = 7.0, 0.0
    step = accel.DeviceStruct(dev, "uint32_t")
    step.host[0] = 41
    scaler.upload(s)
    flags.upload(s)
    step.upload(s)
    accel.amp_begin_step(scaler, flags.dev + 0, stream=s)  # found_inf = 0, inv_scale = 1/scale
    grads = [np.array([2048.0, -512.0, np.inf], np.float32)]
    accel.unscale_and_check(grads, scaler.field("inv_scale"), flags.dev + 0, stream=s)
    accel.step_count(step, flags.dev + 0, stream=s)  # skipped: found_inf is set
    accel.step_count(step, stream=s)                 # no skip flag: counted
    accel.amp_update_scale(scaler, flags.dev + 0, stream=s)  # overflow: scale *= 0.5
    src = [np.array([1.0, 1 / 3, -2.5], np.float32)]
    dst = [np.zeros(3, np.float16)]
    accel.cast(src, dst, flags.dev + 1, stream=s)  # skip flag 0: cast
    s.synchronize()
    scaler.download()
    flags.download()
    step.download()
    assert np.array_equal(grads[0][:2], np.array([2.0, -0.5], np.float32))
    assert flags.host[0] == 1.0 and step.host[0] == 42
    assert scaler.host.scale == 512.0 and scaler.host.inv_scale == np.float32(1 / 1024)
    assert np.array_equal(dst[0], src[0].astype(np.float16))
    with pytest.raises(ValueError, match="pass device="):
        accel.step_count(step)  # no list, no stream, no device
    with pytest.raises(accel.InvalidArgument, match="step_dev"):
        accel.step_count(None, stream=s)  # a required scalar left out
    for x in (scaler, flags, step):
        x.close()
