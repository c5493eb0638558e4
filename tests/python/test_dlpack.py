"""Zero-copy tensor lists over NumPy arrays (DLPack import) and the errors for bad input."""
import gc

import numpy as np
import pytest

import accel


def test_numpy_is_zero_copy(dev, stream):
    arrays = [np.full(n, 2.0, dtype=np.float32) for n in (3, 100, 5000)]
    tl = accel.TensorList(dev, arrays)
    for i, a in enumerate(arrays):
        assert tl[i][0] == a.__array_interface__["data"][0]
        assert tl[i][1] == a.size
    accel.fill(tl, -1.5, stream=stream)
    stream.synchronize()
    assert all(np.all(a == -1.5) for a in arrays)
    tl.close()


def test_norm_of_numpy_against_float64(dev, stream):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(n).astype(np.float32) for n in (1, 33, 70001)]
    ref = np.concatenate(arrays).astype(np.float64)
    out = dev.empty(1)
    with accel.TensorList(dev, arrays) as tl:
        accel.multi_tensor_norm(tl, out, 2.0, stream=stream)
        stream.synchronize()
    assert out.numpy()[0] == pytest.approx(np.linalg.norm(ref), rel=1e-6)


@pytest.mark.parametrize("bad, what", [
    (np.zeros((4, 4), np.float32)[:, 1], "strides"),
    (np.zeros(8, np.float64), "dtype"),
    (np.zeros(8, np.int32), "dtype"),
])
def test_bad_arrays_raise(dev, bad, what):
    with pytest.raises(accel.Error) as e:
        accel.TensorList(dev, [np.zeros(4, np.float32), bad])
    assert "element 1" in str(e.value) and what in str(e.value)


def test_failed_list_releases_the_good_elements(dev):
    good = np.zeros(16, np.float32)
    for _ in range(3):
        with pytest.raises(accel.Error):
            accel.TensorList(dev, [good, np.zeros(4, np.float64)])
    with accel.TensorList(dev, [good]):  # still importable: nothing left registered
        pass


def test_host_memory_on_another_device_is_refused():
    if accel.backends().get("opencl") != "ok":
        pytest.skip("no OpenCL device")
    with accel.Device("opencl") as ocl:
        with pytest.raises(accel.Error) as e:
            accel.TensorList(ocl, [np.zeros(4, np.float32)])
    assert "element 0" in str(e.value)


def test_graph_keeps_imported_arrays_alive(dev, stream):
    arrays = [np.zeros(1000, np.float32) for _ in range(3)]
    addr = arrays[0].__array_interface__["data"][0]
    tl = accel.TensorList(dev, arrays)
    g = dev.graph()
    with g.capture(stream):
        accel.fill(tl, 7.0, stream=stream)
    view = np.frombuffer((np.ctypeslib.ctypes.c_float * 1000).from_address(addr), np.float32)
    del arrays, tl  # the graph holds the imports: the memory is not freed under it
    gc.collect()
    g.replay(stream)
    stream.synchronize()
    assert np.all(view == 7.0)
    g.close()
