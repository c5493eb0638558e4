"""accel.Module (accel_module.h) from Python: a user kernel on NumPy and PyTorch inputs against a
float64 reference and bit for bit against its fp32 steps, eager, captured (replays that read
new scalar values) and lazy; the same on OpenCL (PoCL) when present; bad sources, rows and
launches raise accel's exceptions; release twice, after the device, and by the collector."""
import gc
import pathlib

import numpy as np
import pytest

import accel

# The kernel of tests/krow (its body axpby.h and its row axpby_row.h, which the table's
# generated-row test builds in), loaded here at run time: y = alpha * x + beta * y + gamma, x
# F32/F16/BF16, y F32, alpha and beta device scalars, gamma a host value (ACC_VALUE), each
# product rounded to fp32, then the sums left to right.
KROW = pathlib.Path(__file__).resolve().parents[1] / "krow"
AXPBY = (KROW / "axpby.h").read_text() + (KROW / "axpby_row.h").read_text()
NAME = "accel_test_axpby"  # the row's ACC_OP
SIZES = (70000, 1, 4099)  # the first crosses a chunk
GAMMA = 0.3  # the host value of every launch


@pytest.fixture(scope="module")
def mod(dev):
    m = accel.Module(AXPBY, dev)
    yield m
    m.close()


def scalars(device, *values):
    """A DeviceStruct of floats holding values, uploaded; its device pointers."""
    ds = accel.DeviceStruct(device, "float", len(values))
    for i, v in enumerate(values):
        ds.host[i] = v
    return ds, [ds.dev + i for i in range(len(values))]


def step_f32(x, y, alpha, beta):
    """The kernel's fp32 steps (no contraction: the CPU compiles with -ffp-contract=off)."""
    a, b = np.float32(alpha), np.float32(beta)
    return ((a * x.astype(np.float32)).astype(np.float32) + (b * y).astype(np.float32)) \
        + np.float32(GAMMA)


def check(xs, ys, y0s, runs):
    """ys after runs = [(alpha, beta), ...] against the fp32 steps bit for bit and a float64
    reference within the fp32 rounding of those steps."""
    for x, y, y0 in zip(xs, ys, y0s):
        want32, want64 = y0.copy(), y0.astype(np.float64)
        for a, b in runs:
            want32 = step_f32(x, want32, a, b)
            want64 = np.float64(np.float32(a)) * x.astype(np.float64) \
                + np.float64(np.float32(b)) * want64 + np.float64(np.float32(GAMMA))
        assert np.array_equal(y, want32)
        np.testing.assert_allclose(y, want64, rtol=1e-5, atol=1e-6)


def data(rng, dtype=np.float32):
    xs = [rng.standard_normal(n).astype(dtype) for n in SIZES]
    ys = [rng.standard_normal(n).astype(np.float32) for n in SIZES]
    return xs, ys, [y.copy() for y in ys]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_numpy_eager(dev, stream, mod, dtype):
    xs, ys, y0s = data(np.random.default_rng(1), dtype)
    ds, (alpha, beta) = scalars(dev, 0.75, -1.5)
    ds.upload(stream)
    k = mod.kernel(NAME)
    k(xs, ys, alpha, beta, np.float32(GAMMA), stream=stream)  # plain lists, a NumPy value
    dev.synchronize()  # releases the imports (an array imported twice at once is refused)
    x, y = accel.TensorList(dev, xs), accel.TensorList(dev, ys)
    k(x, y, alpha, beta, GAMMA, stream=stream)  # TensorLists: imported once, for every launch
    k(x, y, alpha, beta, GAMMA, stream=stream)
    stream.synchronize()
    check(xs, ys, y0s, [(0.75, -1.5)] * 3)
    x.close()
    y.close()
    ds.close()


def test_captured_replays_read_new_scalars(dev, stream, mod):
    xs, ys, y0s = data(np.random.default_rng(2))
    ds, (alpha, beta) = scalars(dev, 0.0, 0.0)
    k = mod[NAME]
    x, y = accel.TensorList(dev, xs), accel.TensorList(dev, ys)
    g = dev.graph()
    with g.capture(stream):
        ds.upload(stream)  # replays copy the host values of the moment
        k(x, y, alpha, beta, GAMMA, stream=stream)
    runs = [(0.5, 1.25), (-2.0, 0.5), (1.0, -0.75)]
    for a, b in runs:
        ds.host[0], ds.host[1] = a, b
        g.replay(stream)
        stream.synchronize()
    check(xs, ys, y0s, runs)
    g.close()
    x.close()
    y.close()
    ds.close()


def test_lazy_stream(dev, mod):
    xs, ys, y0s = data(np.random.default_rng(3))
    with dev.stream(lazy=True) as s:
        assert s.is_lazy
        ds, (alpha, beta) = scalars(dev, 1.5, 0.25)
        ds.upload(s)
        mod.kernel(NAME)(xs, ys, alpha, beta, GAMMA, stream=s)
        s.synchronize()
        ds.close()
    check(xs, ys, y0s, [(1.5, 0.25)])


def test_torch_inputs_and_default_stream(dev, mod):
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(4)
    xs = [torch.randn(n, generator=gen).to(torch.bfloat16) for n in SIZES]
    ys = [torch.randn(n, generator=gen) for n in SIZES]
    y0s = [y.clone() for y in ys]
    ds, (alpha, beta) = scalars(dev, -0.5, 2.0)
    ds.upload(dev.default_stream)
    mod.kernel(NAME)(xs, ys, alpha, beta, GAMMA)  # the device's default stream
    dev.default_stream.synchronize()
    for x, y, y0 in zip(xs, ys, y0s):
        want = torch.float32  # the fp32 steps, in torch
        ax = (torch.tensor(-0.5) * x.to(want))
        assert torch.equal(y, (ax + torch.tensor(2.0) * y0) + torch.tensor(GAMMA))
        ref = -0.5 * x.double() + 2.0 * y0.double() + float(torch.tensor(GAMMA))
        assert torch.allclose(y.double(), ref, rtol=1e-6, atol=1e-6)
    ds.close()


def test_bad_launches_raise(dev, stream, mod):
    k = mod.kernel(NAME)
    ds, (alpha, beta) = scalars(dev, 1.0, 1.0)
    x, y = [np.zeros(8, np.float32)], [np.zeros(8, np.float32)]
    cases = [
        ((x,), (alpha, beta, GAMMA), "not 1 and 3"),          # one list of two
        ((x, y), (alpha, GAMMA), "not 2 and 2"),              # one device scalar of two
        ((x, y), (alpha, beta), "not 2 and 2"),               # no value
        ((x, [np.zeros(8, np.float16)]), (alpha, beta, GAMMA), "must be F32"),
        ((x, [np.zeros(9, np.float32)]), (alpha, beta, GAMMA), "has 9 elements"),
        ((x, x), (alpha, beta, GAMMA), "overlaps"),
        ((x, y), (alpha, None, GAMMA), "beta_dev is NULL"),  # a required scalar left out
        ((x, y), (1.0, beta, GAMMA), "alpha_dev"),  # a number where the row has a device scalar
    ]
    for lists, scs, word in cases:
        with pytest.raises(accel.InvalidArgument) as e:
            k(*lists, *scs, stream=stream)
        assert NAME in e.value.message and word in e.value.message, e.value.message
    with pytest.raises(ValueError, match="list lengths differ"):
        k(x, y + y, alpha, beta, GAMMA, stream=stream)
    with pytest.raises(TypeError, match="before the device scalars"):
        k(x, alpha, y, beta, stream=stream)
    with pytest.raises(accel.InvalidArgument) as e:
        mod.kernel("no_such_kernel")
    assert "no_such_kernel" in e.value.message
    ds.close()


def test_bad_sources_raise(dev):
    typo = AXPBY.replace("y[i] = alpha * acc_load", "y[i] = alphz * acc_load")
    line = AXPBY[:AXPBY.index("y[i] = alpha *")].count("\n") + 1  # the statement's line
    with pytest.raises(accel.BackendError) as e:
        accel.Module(typo, dev)
    assert f"<module>:{line}:" in e.value.message and "alphz" in e.value.message
    refused = AXPBY.replace('ACC_LIST("y"', 'ACC_OPT_LIST("y"')  # needs a hand-written launch
    with pytest.raises(accel.InvalidArgument) as e:
        accel.Module(refused, dev)
    assert "kernel row 1" in e.value.message and "ACC_OPT_LIST" in e.value.message
    with pytest.raises(accel.InvalidArgument, match="no ACCEL_KERNEL"):
        accel.Module("/* no rows */", dev)
    with pytest.raises(TypeError):
        accel.Module(42, dev)
    with pytest.raises(ValueError, match="NUL"):
        accel.Module(AXPBY + "\0 trailing text C would not see", dev)


def test_release_twice_after_device_and_by_gc(stream):
    d = accel.Device("cpu")
    m = accel.Module(AXPBY, d, options="-DUNUSED=1")
    k = m[NAME]
    d.close()  # the module holds the device
    x, y = [np.ones(4, np.float32)], [np.ones(4, np.float32)]
    m.close()
    m.close()  # a second close does nothing
    with pytest.raises(accel.InvalidHandle):
        k(x, y, None, None)
    with pytest.raises(ValueError):
        m.kernel(NAME)
    with accel.Device("cpu") as d2:
        m2 = accel.Module(AXPBY, d2)
        k2 = m2.kernel(NAME)
    del m2, k2  # after its device: the collector releases the module
    gc.collect()


def test_graph_replays_after_module_close(dev, stream):
    m = accel.Module(AXPBY, dev)
    xs, ys, y0s = data(np.random.default_rng(5))
    ds, (alpha, beta) = scalars(dev, 2.0, 0.5)
    g = dev.graph()
    with g.capture(stream):
        ds.upload(stream)
        m.kernel(NAME)(xs, ys, alpha, beta, GAMMA, stream=stream)
    m.close()
    g.replay(stream)
    g.replay(stream)
    stream.synchronize()
    check(xs, ys, y0s, [(2.0, 0.5)] * 2)
    g.close()
    ds.close()


def test_opencl():
    if accel.backends().get("opencl") != "ok":
        pytest.skip(f"no OpenCL device: {accel.backends().get('opencl', 'backend not built')}")
    with accel.Device("opencl") as ocl:
        if not ocl.info.host_accessible:
            pytest.skip("the OpenCL device's memory is not host-accessible (the test fills it "
                        "through NumPy views)")
        m = accel.Module(AXPBY, ocl)
        k = m.kernel(NAME)
        rng = np.random.default_rng(6)
        bx = [ocl.empty(n) for n in SIZES]
        by = [ocl.empty(n) for n in SIZES]
        xs, ys = [b.numpy() for b in bx], [b.numpy() for b in by]
        for a in xs + ys:
            a[:] = rng.standard_normal(a.size)
        del a
        y0s = [y.copy() for y in ys]
        x, y = accel.TensorList(ocl, bx), accel.TensorList(ocl, by)
        with ocl.stream(lazy=False) as s:
            ds, (alpha, beta) = scalars(ocl, 0.0, 0.0)
            ds.host[0], ds.host[1] = 0.75, -1.5
            ds.upload(s)
            k(x, y, alpha, beta, GAMMA, stream=s)  # eager
            g = ocl.graph()
            with g.capture(s):
                ds.upload(s)
                k(x, y, alpha, beta, GAMMA, stream=s)
            ds.host[0], ds.host[1] = 0.5, 1.25
            g.replay(s)
            s.synchronize()
            check(xs, ys, y0s, [(0.75, -1.5), (0.5, 1.25)])
            with pytest.raises(accel.InvalidArgument):
                k(x, x, alpha, beta, GAMMA, stream=s)
            g.close()
            ds.close()
        x.close()
        y.close()
        del xs, ys
        for b in bx + by:
            b.close()
        m.close()


def lion_example():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[2] / "examples/python/lion_user_kernel.py"
    spec = importlib.util.spec_from_file_location("lion_user_kernel", path)
    lion = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lion)
    return lion


@pytest.mark.parametrize("mutation", [
    None,
    ("m[i] = b2 * mi + (1.0f - b2) * gi", "m[i] = b1 * mi + (1.0f - b1) * gi"),  # beta swapped
    ("s + wd * pi", "s"),                                                       # no decay
    ("(c > 0.0f) - (acc_f32)(c < 0.0f)", "(gi > 0.0f) - (acc_f32)(gi < 0.0f)"),  # sign(g)
])
def test_lion_example_catches_a_wrong_kernel(dev, mutation):
    """The Lion example's tolerance (examples/python/lion_user_kernel.py) holds for the kernel
    as written and is broken within 20 steps by each mutation of it."""
    pytest.importorskip("torch")
    lion = lion_example()
    source = lion.LION_SOURCE
    if mutation is not None:
        assert mutation[0] in source
        source = source.replace(*mutation)
    _, _, broken = lion.train(20, dev, source, verbose=False)
    assert bool(broken) == (mutation is not None), broken[:3]
