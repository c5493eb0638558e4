"""accel.Generator (accel_random.h) from Python: Random123's known answer, uniform / normal /
dropout values, save and restore, forks, and refusals."""
import numpy as np
import pytest

import accel


def test_known_answer_and_advance(dev, stream):
    # Random123 tests/kat_vectors: philox4x32 10, counter 0, key 0
    with accel.Generator(dev, 0) as g, dev.empty(8) as buf:
        g.raw(buf, 4, stream=stream)
        state = dev.empty(6)
        g.get_state(state, stream=stream)
        stream.synchronize()
        words = buf.numpy().view(np.uint32)[:4]
        assert [int(w) for w in words] == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        assert list(state.numpy().view(np.uint32)) == [0, 0, 1, 0, 0, 0]  # one block used
        del words
        state.close()


def test_uniform_normal_dropout_and_restore(dev, stream):
    with accel.Generator(dev, 1234) as g, dev.empty(6) as state:
        u = np.zeros(100003, np.float32)
        z = np.zeros(100003, np.float32)
        g.get_state(state, stream=stream)
        g.uniform([u], -2.0, 3.0, stream=stream)
        g.set_state(state, stream=stream)
        g.normal([z], stream=stream)
        stream.synchronize()
        assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.02
        assert abs(z.mean()) < 0.02 and abs(z.std() - 1.0) < 0.02
        # restoring the state repeats the draw
        u2 = np.zeros_like(u)
        g.set_state(state, stream=stream)
        g.uniform([u2], -2.0, 3.0, stream=stream)
        stream.synchronize()
        assert np.array_equal(u, u2)
        x = np.arange(1, 10001, dtype=np.float32)
        y = np.zeros_like(x)
        g.dropout([x], [y], 0.25, stream=stream)
        stream.synchronize()
        kept = y != 0
        assert abs(kept.mean() - 0.75) < 0.03
        scale = np.float32(1) / np.float32(0.75)  # the kernel's 1 / (1 - p), in fp32
        assert np.array_equal(y[kept], x[kept] * scale)


def test_forks_differ(dev, stream):
    with accel.Generator(dev, 5) as g:
        a, b = np.zeros(4096, np.float32), np.zeros(4096, np.float32)
        with g.fork(stream) as k1, g.fork(stream) as k2:
            k1.uniform([a], stream=stream)
            k2.uniform([b], stream=stream)
            stream.synchronize()
        assert not np.any(a == b)


def test_refused(dev, stream):
    g = accel.Generator(dev, 1)
    with pytest.raises(accel.InvalidArgument):
        g.uniform([np.zeros(4, np.float32)], 1.0, 0.0, stream=stream)
    with pytest.raises(accel.InvalidArgument):
        g.dropout([np.zeros(4, np.float32)], [np.zeros(4, np.float32)], 1.5, stream=stream)
    g.close()
    with pytest.raises(ValueError):
        g.normal([np.zeros(4, np.float32)], stream=stream)
