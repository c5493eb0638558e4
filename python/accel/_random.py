"""accel.Generator: the Philox4x32-10 generator of accel_random.h (docs/KERNELS.md, "Random
numbers"). Its key and counter live in device memory and every draw advances the counter on the
device, so a captured graph draws new numbers at every replay."""
from ._lib import check, ffi, lib
from ._objects import Buffer, _Handle
from ._tensors import _run, _stream

STATE_BYTES = 24  # accel_generator_state_t: key[2], counter[4] (uint32)


def _buffer_ptr(buf, nbytes, what):
    if not isinstance(buf, Buffer):
        raise TypeError(f"Generator.{what}: expected an accel Buffer, got {type(buf).__name__}")
    if buf.nbytes < nbytes:
        raise ValueError(f"Generator.{what}: the Buffer holds {buf.nbytes} bytes, {nbytes} needed")
    return buf._handle()


class Generator(_Handle):
    """A generator on device with key = seed and counter 0 (accel_generator_create). Use one
    generator per stream at a time; fork() gives a non-overlapping one for another stream."""
    _release = lib.accel_generator_release

    def __init__(self, device, seed=0):
        out = ffi.new("accel_generator_t **")
        check(lib.accel_generator_create(device._handle(), int(seed), out))
        self.device = device
        super().__init__(out[0])

    def fork(self, stream=None):
        """A child generator whose blocks never meet this one's (accel_generator_fork)."""
        s = _stream(stream, self.device)
        out = ffi.new("accel_generator_t **")
        check(lib.accel_generator_fork(s._handle(), self._handle(), out))
        child = Generator.__new__(Generator)
        child.device = self.device
        _Handle.__init__(child, out[0])
        return child

    def raw(self, out, n=None, *, stream=None):
        """out (a Buffer) = n raw 32-bit Philox words (accel_generator_raw); n defaults to what
        out holds."""
        n = out.nbytes // 4 if n is None else int(n)
        ptr = ffi.cast("uint32_t *", _buffer_ptr(out, 4 * n, "raw"))
        s = _stream(stream, self.device)
        s._keep((self, out))
        check(lib.accel_generator_raw(s._handle(), self._handle(), ptr, n))

    def uniform(self, tensors, low=0.0, high=1.0, *, stream=None):
        """Every element = low + (high - low) * u, u in [0, 1) (accel_rand_uniform)."""
        s = _stream(stream, self.device)
        s._keep((self,))
        _run(s, lambda t: lib.accel_rand_uniform(s._handle(), self._handle(), t.array, t.n, low,
                                                 high), [(self.device, tensors)], [])

    def normal(self, tensors, mean=0.0, std=1.0, *, stream=None):
        """Every element = mean + std * z, z standard normal (accel_rand_normal)."""
        s = _stream(stream, self.device)
        s._keep((self,))
        _run(s, lambda t: lib.accel_rand_normal(s._handle(), self._handle(), t.array, t.n, mean,
                                                std), [(self.device, tensors)], [])

    def dropout(self, src, dst, p, *, stream=None):
        """dst = src / (1 - p) where kept, else 0 (accel_dropout); dst may be src."""
        s = _stream(stream, self.device)
        s._keep((self,))
        _run(s, lambda a, b: lib.accel_dropout(s._handle(), self._handle(), a.array, b.array,
                                               a.n, p),
             [(self.device, src), (self.device, dst)], [])

    def get_state(self, state, *, stream=None):
        """Copies the 24-byte state into the Buffer state, in stream order."""
        ptr = ffi.cast("accel_generator_state_t *", _buffer_ptr(state, STATE_BYTES, "get_state"))
        s = _stream(stream, self.device)
        s._keep((self, state))
        check(lib.accel_generator_get_state(s._handle(), self._handle(), ptr))

    def set_state(self, state, *, stream=None):
        """Sets the state from the Buffer state (24 bytes), in stream order."""
        ptr = ffi.cast("accel_generator_state_t *", _buffer_ptr(state, STATE_BYTES, "set_state"))
        s = _stream(stream, self.device)
        s._keep((self, state))
        check(lib.accel_generator_set_state(s._handle(), self._handle(), ptr))
