"""accel.Module: your own kernels, written in the kernel dialect and compiled when the program
runs (accel_module.h; docs/KERNELS.md, "Loading a kernel at run time"; docs/PYTHON.md).

    mod = accel.Module(source, dev)           # compiles, or loads the kernel cache
    axpby = mod.kernel("my_axpby")            # or mod["my_axpby"]: the row's ACC_OP name
    axpby(xs, ys, alpha, beta, stream=s)      # the row's lists in order, then its scalars

A launch takes the same arguments as the generated wrappers of built-in kernels (accel.scale):
tensor lists (lists or tuples of NumPy arrays, PyTorch tensors or Buffers, or TensorLists) and
device scalars (a Buffer, or a DeviceStruct pointer such as `args.dev + 1`), on a stream that
may capture or be lazy.
"""
import numbers

from ._lib import InvalidHandle, check, ffi, lib
from ._objects import Device, _Handle
from ._tensors import TensorList, _run, _scalar_ptr, _stream

__all__ = ["Module", "Kernel"]


def _text(value, what):
    """value (str or bytes) as the bytes of a C string."""
    if isinstance(value, str):
        value = value.encode()
    if not isinstance(value, bytes):
        raise TypeError(f"Module: {what} must be str or bytes, got {type(value).__name__}")
    if b"\0" in value:
        raise ValueError(f"Module: {what} holds a NUL character (C would stop reading there)")
    return value


class Module(_Handle):
    """A module source compiled for device (accel_module_load_source); device None opens
    accel.Device() (ACCEL_BACKEND, else the best device). options: passed to the backend's
    compiler ("-DWIDTH=4"). A source that does not compile raises accel.BackendError with the
    compiler's log; a device without a compiler, accel.Unsupported.

    close() (also on leaving a with block, on collection, at exit) releases it: its kernels
    refuse further launches, while graphs that captured them keep replaying."""
    _release = lib.accel_module_release

    def __init__(self, source, device=None, options=None):
        src = _text(source, "source")
        opts = ffi.NULL if options is None else _text(options, "options")
        self.device = device if device is not None else Device()
        out = ffi.new("accel_module_t **")
        check(lib.accel_module_load_source(self.device._handle(), src, opts, out))
        super().__init__(out[0])

    def kernel(self, name):
        """The Kernel whose row's ACC_OP names name (accel.InvalidArgument when none does)."""
        out = ffi.new("accel_kernel_t **")
        check(lib.accel_module_get_kernel(self._handle(), _text(name, "name"), out))
        return Kernel(self, name, out[0])

    __getitem__ = kernel

    def __repr__(self):
        state = "closed" if self.closed else repr(self.device)
        return f"<accel.Module {state}>"


class Kernel:
    """One kernel of a Module. Calling it launches it (accel_launch): kernel(list0, list1, ...,
    scalar0, scalar1, ..., stream=None). The lists come first (the row's order; each a list or
    tuple of tensors or a TensorList, all of one length n), then the row's device scalars (None
    for an ACC_OPTIONAL one left out), then its ACC_VALUE host values (Python numbers, passed as
    fp32). stream None: the device's default stream. Validated by the row as built-in kernels
    are (a leading TensorList is always a list: pass scalars as Buffers or DeviceStruct
    pointers): a wrong count, dtype, size or overlap, a number where the row has a device
    scalar, raise accel's exception with accel_last_error()."""

    def __init__(self, module, name, ptr):
        self.module, self.name, self._ptr = module, name, ptr

    def __repr__(self):
        return f"<accel.Kernel {self.name!r} of {self.module!r}>"

    def __call__(self, *args, stream=None):
        lists, scalars = _split(self.name, args)
        if self.module.closed:
            raise InvalidHandle(lib.ACCEL_ERROR_INVALID_HANDLE,
                                f"accel_launch: the kernel {self.name!r} belongs to a closed "
                                "Module")
        dev = self.module.device
        s = _stream(stream, dev)
        # a number is a host value: a pointer to its fp32 copy, alive until the call returns
        ptrs = [ffi.new("float *", x) if isinstance(x, numbers.Real) else
                _scalar_ptr(x, "void *") if x is not None else ffi.NULL for x in scalars]

        def launch(*tls):
            if len({t.n for t in tls}) > 1:
                raise ValueError(f"{self.name}: list lengths differ "
                                 f"({', '.join(str(t.n) for t in tls)})")
            arr = ffi.new("const accel_tensor_t *[]", [t.array for t in tls] or [ffi.NULL])
            sc = ffi.new("const void *[]", ptrs or [ffi.NULL])
            n = tls[0].n if tls else 0
            return lib.accel_launch(s._handle(), self._ptr, arr, len(tls), n, sc, len(ptrs))
        _run(s, launch, [(dev, t) for t in lists],
             [x for x in scalars if x is not None and not isinstance(x, numbers.Real)])


def _split(name, args):
    """(lists, scalars) of a launch's positional arguments: the leading lists, then scalars."""
    lists = []
    for a in args:
        if not isinstance(a, (list, tuple, TensorList)):
            break
        lists.append(a)
    scalars = list(args[len(lists):])
    for a in scalars:
        if isinstance(a, (list, tuple, TensorList)):
            raise TypeError(f"{name}: the tensor lists come before the device scalars")
    return lists, scalars
