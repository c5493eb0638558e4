"""Tensor lists and the multi-tensor kernels of accel_kernels.h.

A TensorList converts a sequence of tensors into one C array of accel_tensor_t, once: NumPy
arrays, PyTorch tensors and anything else with __dlpack__ are imported zero-copy
(accel_dlpack_import_legacy: the kernel works on the framework's own memory), accel Buffers are
used as they are. Keep the list and pass it to every step: the conversion is then paid once
and each kernel is one C call whatever the number of tensors.
"""
import ctypes

from ._lib import check, error, ffi, lib, register_handle, unregister_handle
from ._objects import Buffer, DeviceStruct, Stream, _Closes

# fill, scale, unscale_and_check, fused_adam and the other kernels whose C function comes from
# their row are generated with it (_kernels_gen.py, kernels/gen_kernel_rows.py --python).
__all__ = ["TensorList", "multi_tensor_norm", "clip_by_global_norm", "update_hp_grads",
           "AdamArgs"]

_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype, _capsule_get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype, _capsule_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_capsule_rename = ctypes.pythonapi.PyCapsule_SetName
_capsule_rename.restype, _capsule_rename.argtypes = ctypes.c_int, [ctypes.py_object,
                                                                   ctypes.c_char_p]


def _dlpack_capsule(obj):
    """obj's legacy DLPack capsule. A PyTorch tensor that requires grad is exported through
    detach() (same storage): accel updates parameters in place, as torch's optimizers do."""
    detach = getattr(obj, "detach", None)
    if detach is not None and getattr(obj, "requires_grad", False):
        obj = detach()
    return obj.__dlpack__()


class TensorList(_Closes):
    """tensors converted once for accel's kernels. device: an accel Device. Every element must
    be contiguous, float32/float16/bfloat16, and live on the device (host memory for the CPU
    backend); anything else raises ValueError (accel.InvalidArgument) naming the element.

    Imported tensors stay alive (accel holds them) until close() and until every graph and
    queued command that uses them is done; closing is safe at any time."""

    def __init__(self, device, tensors):
        self.device = device
        self.objects = list(tensors)
        self.n = len(self.objects)
        self.array = ffi.new("accel_tensor_t[]", max(self.n, 1))
        self._imports = []
        register_handle(self)
        try:
            for i, t in enumerate(self.objects):
                self._convert(i, t)
        except BaseException:
            self.close()
            raise

    def _convert(self, i, t):
        if isinstance(t, Buffer):
            if t.device is not self.device:
                raise ValueError(f"TensorList: element {i} is a Buffer of another device")
            self.array[i].data, self.array[i].numel, self.array[i].dtype = t.tensor()
            self._imports.append(t)  # keeps the Buffer alive
            return
        if not hasattr(t, "__dlpack__"):
            raise TypeError(f"TensorList: element {i} ({type(t).__name__}) has no __dlpack__")
        capsule = _dlpack_capsule(t)
        if not _capsule_valid(capsule, b"dltensor"):
            raise ValueError(f"TensorList: element {i}: not a legacy DLPack capsule "
                             "(already consumed?)")
        managed = ffi.cast("accel_dl_managed_tensor_t *", _capsule_get(capsule, b"dltensor"))
        imp = ffi.new("accel_dlpack_import_t **")
        st = lib.accel_dlpack_import_legacy(self.device._handle(), managed,
                                            lib.ACCEL_DLPACK_IMPORT_DEFAULT,
                                            ffi.addressof(self.array, i), imp)
        if st != lib.ACCEL_OK:
            e = error(st)  # the capsule keeps ownership and frees the tensor
            raise type(e)(e.status, f"TensorList: element {i} ({_describe(t)}): {e.message}")
        # accel owns the managed tensor now: the capsule must not call its deleter.
        _capsule_rename(capsule, b"used_dltensor")
        self._imports.append(imp[0])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        """(data address, numel, accel dtype) of element i."""
        t = self.array[i]
        return int(ffi.cast("uintptr_t", t.data)), t.numel, t.dtype

    def ptr(self, start=0):
        """The accel_tensor_t * of element start (for sub-lists)."""
        return self.array + start

    @property
    def closed(self):
        return self._imports is None

    def close(self):
        """Releases the imports (a captured graph or queued work still holds them until done)."""
        imports, self._imports = self._imports, None
        if imports is None:
            return
        unregister_handle(self)
        first = None
        for imp in imports:
            if isinstance(imp, Buffer):
                continue
            st = lib.accel_dlpack_release(imp)
            if st != lib.ACCEL_OK and first is None:
                first = error(st)
        if first is not None:
            raise first



def _describe(t):
    shape = getattr(t, "shape", None)
    dtype = getattr(t, "dtype", None)
    return f"{type(t).__name__} shape {tuple(shape) if shape is not None else '?'} dtype {dtype}"


def _list(device, tensors):
    """(TensorList, temporary?) of tensors."""
    if isinstance(tensors, TensorList):
        if tensors.closed:
            raise ValueError("the TensorList is closed")
        return tensors, False
    return TensorList(device, tensors), True


def _scalar_ptr(x, ctype="float *"):
    """A device scalar: a cffi pointer (DeviceStruct.field), a Buffer, a DeviceStruct (its first
    element, e.g. AdamArgs), or a TensorList of one."""
    if isinstance(x, Buffer):
        return ffi.cast(ctype, x._handle())
    if isinstance(x, DeviceStruct):
        return ffi.cast(ctype, x.dev)
    if isinstance(x, TensorList):
        return ffi.cast(ctype, x.array[0].data)
    if isinstance(x, ffi.CData):
        return ffi.cast(ctype, x)
    raise TypeError(f"expected a device scalar (DeviceStruct field, Buffer), got {type(x).__name__}")


def _device_of(device, *lists):
    """device, else the device of the first TensorList or Stream among lists."""
    if device is not None:
        return device
    for x in lists:
        if isinstance(x, (TensorList, Stream)):
            return x.device
    raise ValueError("pass device= (or TensorLists or a stream, which know their device)")


def _run(stream, fn, lists, keep):
    """Runs one kernel call on stream with the C arrays of lists; temporaries are released
    after enqueueing (accel holds an import until queued work using it is done)."""
    converted = []
    try:
        for device, tensors in lists:
            converted.append(_list(device, tensors))
        stream._keep(tuple(c for c, _ in converted) + tuple(keep))
        check(fn(*[c for c, _ in converted]))
    finally:
        for c, temporary in converted:
            if temporary:
                c.close()


def _stream(stream, device):
    return stream if stream is not None else device.default_stream


def multi_tensor_norm(tensors, out, norm_type=2.0, *, stream=None, device=None):
    """out[0] = the norm_type norm of all tensors together (accel_multi_tensor_norm)."""
    dev = _device_of(device, tensors)
    s = _stream(stream, dev)
    _run(s, lambda t: lib.accel_multi_tensor_norm(s._handle(), t.array, t.n, norm_type,
                                                  _scalar_ptr(out)), [(dev, tensors)], [out])


def clip_by_global_norm(tensors, max_norm, total_norm, eps=1e-6, coef_out=None, *, stream=None,
                        device=None):
    dev = _device_of(device, tensors)
    s = _stream(stream, dev)
    coef = _scalar_ptr(coef_out) if coef_out is not None else ffi.NULL
    _run(s, lambda t: lib.accel_clip_by_global_norm(s._handle(), t.array, t.n, max_norm,
                                                    _scalar_ptr(total_norm), eps, coef),
         [(dev, tensors)], [total_norm, coef_out])


def update_hp_grads(lp_grads, hp_grads, zero_lp=True, *, stream=None, device=None):
    dev = _device_of(device, lp_grads, hp_grads)
    s = _stream(stream, dev)

    def call(lp, hp):
        if lp.n != hp.n:
            raise ValueError(f"update_hp_grads: {lp.n} lp grads but {hp.n} hp grads")
        return lib.accel_update_hp_grads(s._handle(), lp.array, hp.array, lp.n, int(zero_lp))
    _run(s, call, [(dev, lp_grads), (dev, hp_grads)], [])


class AdamArgs(DeviceStruct):
    """accel_adam_args_t in device memory with a host copy (.host.lr, .host.step, ...): set the
    host fields and upload(stream) before the step, or capture the upload in the step's graph."""

    def __init__(self, device, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 adamw=True):
        super().__init__(device, "accel_adam_args_t")
        h = self.host
        h.lr, h.beta1, h.beta2, h.eps = lr, betas[0], betas[1], eps
        h.weight_decay, h.adamw, h.step, h.found_inf = weight_decay, int(adamw), 0, 0.0
