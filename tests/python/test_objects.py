"""Device, Stream, Event, Graph, Pool and Buffer objects over the C API (NumPy only)."""
import gc

import numpy as np
import pytest

import accel


def test_version_and_backends():
    assert accel.version() == accel.__version__
    assert accel.backends()["cpu"] == "ok"


def test_device_info_and_bad_selector(dev):
    assert dev.info.backend == "cpu" and dev.info.host_accessible
    with pytest.raises(accel.Error) as e:
        accel.Device("no-such-backend")
    assert "no-such-backend" in e.value.message and e.value.status_name == "ACCEL_ERROR_INVALID_ARGUMENT"


def test_buffer_numpy_is_zero_copy(dev, stream):
    buf = dev.empty(1000)
    a = buf.numpy()
    assert a.__array_interface__["data"][0] == buf.ptr
    accel.fill(accel.TensorList(dev, [buf]), 3.5, stream=stream)
    stream.synchronize()
    assert np.all(a == 3.5)
    with pytest.raises(ValueError):
        buf.close()  # a view is alive
    del a
    gc.collect()
    buf.close()
    buf.close()  # a second close does nothing


def test_memory_stats(dev):
    before = dev.memory_stats()["allocated_bytes"]
    with dev.empty(1 << 20) as buf:
        assert dev.memory_stats()["allocated_bytes"] >= before + buf.nbytes
    assert dev.memory_stats()["allocated_bytes"] == before


def test_norm_against_numpy(dev, stream):
    rng = np.random.default_rng(0)
    bufs = [dev.empty(n) for n in (1, 7, 1000, 4097)]
    for b in bufs:
        b.numpy()[:] = rng.standard_normal(b.numel, dtype=np.float32)
    out = dev.empty(1)
    ref = np.concatenate([b.numpy().astype(np.float64) for b in bufs])
    for p, want in ((2.0, np.linalg.norm(ref)), (1.0, np.abs(ref).sum()),
                    (float("inf"), np.abs(ref).max())):
        accel.multi_tensor_norm(accel.TensorList(dev, bufs), out, p, stream=stream)
        stream.synchronize()
        assert out.numpy()[0] == pytest.approx(want, rel=1e-6)


def test_graph_capture_replay(dev, stream):
    buf = dev.empty(100)
    tl = accel.TensorList(dev, [buf])
    factor = accel.DeviceStruct(dev, "float")
    g = dev.graph()
    with g.capture(stream):
        factor.upload(stream)  # the host copy is read on every replay
        accel.scale(tl, factor.dev, stream=stream)
    assert g.node_count == 2
    a = buf.numpy()
    a[:] = 1.0
    for k in (2.0, 3.0):
        factor.host[0] = k
        g.replay(stream)
        stream.synchronize()
    assert np.all(a == 6.0)
    del tl  # the graph keeps what it captured
    gc.collect()
    g.replay(stream)
    stream.synchronize()
    assert np.all(a == 18.0)
    g.close()


def test_graph_update_and_attributes(dev, stream):
    a, b = dev.empty(100), dev.empty(300)
    graphs = []
    for buf, value in ((a, 1.5), (b, -2.0)):
        g = dev.graph()
        with g.capture(stream):
            accel.fill(accel.TensorList(dev, [buf]), value, stream=stream)
        graphs.append(g)
    a.numpy()[:] = 0.0
    b.numpy()[:] = 0.0
    graphs[0].update(graphs[1])  # other pointer, size and fill value
    graphs[0].replay(stream)
    stream.synchronize()
    assert np.all(a.numpy() == 0.0) and np.all(b.numpy() == -2.0)
    other = dev.graph()
    with other.capture(stream):
        accel.fill(accel.TensorList(dev, [a]), 1.0, stream=stream)
        accel.fill(accel.TensorList(dev, [a]), 2.0, stream=stream)
    with pytest.raises(accel.GraphMismatch) as e:
        graphs[0].update(other)
    assert "node 1" in e.value.message
    assert dev.attribute("graph_update") in (lib_value("EMULATED"), lib_value("NATIVE"))
    assert dev.attribute(accel.lib.ACCEL_ATTR_HOST_ACCESSIBLE) == 1
    with pytest.raises(accel.InvalidArgument):
        dev.attribute(9999)
    for g in graphs + [other]:
        g.close()


def lib_value(name):
    return getattr(accel.lib, "ACCEL_GRAPH_UPDATE_" + name)


def test_illegal_in_capture_raises(dev, stream):
    g = dev.graph()
    with pytest.raises(accel.IllegalInCapture) as e:
        with g.capture(stream):
            stream.synchronize()
    assert "synchronize" in e.value.message
    # the device stays usable and the graph can capture again
    buf = dev.empty(4)
    with g.capture(stream):
        accel.fill(accel.TensorList(dev, [buf]), 1.0, stream=stream)
    g.replay(stream)
    stream.synchronize()
    assert list(buf.numpy()) == [1.0] * 4


def test_capture_on_default_stream_refused(dev):
    with pytest.raises(accel.InvalidArgument):
        with dev.graph().capture(dev.default_stream):
            pass


def test_shared_pool_and_events(dev, stream):
    pool = dev.pool()
    g1, g2 = dev.graph(), dev.graph()
    buf = dev.empty(10)
    tl = accel.TensorList(dev, [buf])
    with g1.capture(stream, pool=pool):
        accel.fill(tl, 1.0, stream=stream)
    with g2.capture(stream, pool=pool, mode="thread_local"):
        accel.fill(tl, 2.0, stream=stream)
    start, end = dev.event(), dev.event()
    start.record(stream)
    g1.replay(stream)
    g2.replay(stream)
    end.record(stream)
    end.synchronize()
    assert end.query() and stream.query()
    assert end.elapsed_ms(end) == 0.0 and start.elapsed_ms(end) >= 0.0
    assert np.all(buf.numpy() == 2.0)
    for h in (g1, g2, pool, start, end):
        h.close()


def test_closed_handles_raise(dev):
    s = dev.stream()
    s.close()
    with pytest.raises(ValueError):
        s.synchronize()


def test_bad_tensor_list_elements(dev):
    with pytest.raises(TypeError):
        accel.TensorList(dev, [object()])
    with pytest.raises(ValueError):
        accel.Buffer(dev, 4, "float64")


def test_memory_freed_under_a_captured_graph(dev, stream):
    """Closing what a live graph uses never pulls memory out from under it: accel defers the
    free until the graph is gone; closed Python objects refuse further use."""
    buf = dev.empty(100)
    tl = accel.TensorList(dev, [buf])
    g = dev.graph()
    with g.capture(stream):
        accel.fill(tl, 1.0, stream=stream)
    tl.close()
    buf.close()
    g.replay(stream)  # the graph still holds the (deferred) allocation
    stream.synchronize()
    with pytest.raises(ValueError, match="closed"):
        accel.fill(tl, 2.0, stream=stream)
    with pytest.raises(ValueError, match="closed"):
        buf.numpy()
    g.close()
    with pytest.raises(ValueError, match="closed"):
        g.replay(stream)


def test_wrap_stream_orders_on_the_native_queue():
    """Device.wrap_stream adopts a native queue (what accel.torch does with torch's current CUDA
    stream): work on the wrap lands in the queue's order, and closing the wrap leaves the queue
    to its owner. Here the queue is another accel stream's (OpenCL on PoCL)."""
    if accel.backends().get("opencl") != "ok":
        pytest.skip("no OpenCL device")
    with accel.Device("opencl") as ocl:
        owner = ocl.stream(lazy=False)
        wrap = ocl.wrap_stream(owner.native_queue())
        with ocl.empty(1 << 16) as buf:
            tl = accel.TensorList(ocl, [buf])
            accel.fill(tl, 1.0, stream=owner)
            accel.fill(tl, 2.0, stream=wrap)  # after the owner's fill: one in-order queue
            wrap.synchronize()  # the queue's work: both fills
            assert np.all(buf.numpy() == 2.0)
            wrap.close()
            accel.fill(tl, 3.0, stream=owner)  # the queue outlives the wrap
            owner.synchronize()
            assert np.all(buf.numpy() == 3.0)
            tl.close()
        owner.close()


def test_wrap_stream_refused_without_native_queues(dev):
    with pytest.raises(accel.Error) as e:
        dev.wrap_stream(0x1234)
    assert "accel_stream_wrap_native" in e.value.message
    with pytest.raises(accel.Unsupported):
        dev.stream().native_queue()


def test_conditional_regions(dev, stream):
    _check_regions(dev, stream)


def test_conditional_regions_opencl():
    """The same on PoCL, where regions are predicated (ACCEL_CONDITIONALS_PREDICATED)."""
    try:
        d = accel.Device("opencl")
    except accel.Error as e:
        pytest.skip(f"no OpenCL device: {e.message}")
    with d:
        if not d.info.host_accessible:
            pytest.skip("the OpenCL device's memory is not host-accessible (numpy views)")
        assert d.attribute("conditionals") == accel.lib.ACCEL_CONDITIONALS_PREDICATED
        with d.stream(lazy=False) as s:
            _check_regions(d, s)


def _check_regions(dev, stream):
    ffi, lib = accel.ffi, accel.lib
    if dev.attribute("conditionals") == lib.ACCEL_CONDITIONALS_NONE:
        with pytest.raises(accel.Unsupported):
            with stream.capture_if(dev.empty(1)):
                pass
        return
    flag, value, two = dev.empty(1), dev.empty(8), dev.empty(1)
    two.numpy()[0] = 2.0
    for taken in (0, 1):
        flag.numpy().view(np.int32)[0] = taken
        value.numpy()[:] = 1.0
        with stream.capture_if(flag):
            accel.fill(accel.TensorList(dev, [value]), 5.0, stream=stream)
        stream.synchronize()
        assert np.all(value.numpy() == (5.0 if taken else 1.0))
    # while: a kernel adds 1 to the flag each pass, from -3 up to 0; value doubles each pass
    g = dev.graph()
    with g.capture(stream):
        with stream.capture_while(flag, 10):
            accel.scale(accel.TensorList(dev, [value]), two, stream=stream)
            assert lib.accel_step_count(stream._handle(), ffi.cast("uint32_t *", flag._handle()),
                                        ffi.NULL) == lib.ACCEL_OK
    flag.numpy().view(np.int32)[0] = -3
    value.numpy()[:] = 1.0
    g.replay(stream)
    stream.synchronize()
    assert np.all(value.numpy() == 8.0) and flag.numpy().view(np.int32)[0] == 0
    assert lib.accel_graph_capture_end_if(stream._handle()) == lib.ACCEL_ERROR_STATE
    g.close()
