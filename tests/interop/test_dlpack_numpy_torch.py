#!/usr/bin/python3
"""accel kernels in place on NumPy arrays and PyTorch CPU tensors through DLPack, zero-copy.

Each array/tensor goes through its own __dlpack__ / torch.utils.dlpack.to_dlpack (legacy
DLManagedTensor in a "dltensor" capsule, DLPack 0.x as NumPy 1.24 and torch 1.13 export it) into
accel_dlpack_import_legacy; the capsule is renamed "used_dltensor" after a successful import (the
protocol's hand-over of ownership). Then accel_scale, accel_multi_tensor_norm and
accel_fused_adam run on the views, and the test checks that

  * the view's address is the array's own (no copy),
  * the results are bitwise equal to the same kernels on accel_malloc'd copies,
  * the producer's deleter is called exactly once, after accel_dlpack_release,
  * refused tensors (strided, int32) leave ownership with the capsule (its deleter runs when
    Python drops it, not accel's),
  * an accel allocation exported with accel_dlpack_export_legacy is a torch tensor over the
    same memory, and accel_free of it is deferred until torch lets go.

usage: test_dlpack_numpy_torch.py PATH/TO/libaccel.so [DEVICE]
Exit 77 (skip) when numpy or torch is missing or the device has no DLPack device.
"""
import ctypes
import gc
import sys

try:
    import numpy as np
    import torch
    import torch.utils.dlpack
except ImportError as e:  # needs /usr/bin/python3 with python3-numpy and python3-torch
    print(f"SKIP: numpy or torch is not importable: {e}")
    sys.exit(77)

F32, F16, BF16 = 0, 1, 2
OK, INVALID_ARGUMENT, UNSUPPORTED = 0, 1, 5  # checked against accel_status_name below


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("numel", ctypes.c_size_t), ("dtype", ctypes.c_int)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]


class AdamArgs(ctypes.Structure):
    _fields_ = [("lr", ctypes.c_float), ("beta1", ctypes.c_float), ("beta2", ctypes.c_float),
                ("eps", ctypes.c_float), ("weight_decay", ctypes.c_float),
                ("step", ctypes.c_uint32), ("adamw", ctypes.c_uint32),
                ("found_inf", ctypes.c_float)]


class MemoryStats(ctypes.Structure):  # the leading fields of accel_memory_stats_t
    _fields_ = [("allocated_bytes", ctypes.c_uint64)] + [(f"f{i}", ctypes.c_uint64)
                                                         for i in range(31)]


capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
capsule_get.restype = ctypes.c_void_p
capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_rename = ctypes.pythonapi.PyCapsule_SetName
capsule_rename.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr)


class Accel:
    def __init__(self, path, selector):
        self.lib = lib = ctypes.CDLL(path)
        lib.accel_last_error.restype = ctypes.c_char_p
        lib.accel_status_name.restype = ctypes.c_char_p
        for name, value in (("ACCEL_OK", OK), ("ACCEL_ERROR_INVALID_ARGUMENT", INVALID_ARGUMENT),
                            ("ACCEL_ERROR_UNSUPPORTED", UNSUPPORTED)):
            assert lib.accel_status_name(value).decode() == name, name
        self.dev = ctypes.c_void_p()
        if lib.accel_device_open(selector.encode(), ctypes.byref(self.dev)) != OK:
            print(f"SKIP: accel_device_open({selector}): {self.err()}")
            sys.exit(77)
        dl = DLDevice()
        if lib.accel_device_dlpack_device(self.dev, ctypes.byref(dl)) != OK:
            print(f"SKIP: {selector} has no DLPack device: {self.err()}")
            sys.exit(77)
        self.stream = ctypes.c_void_p()
        self.check(lib.accel_stream_create(self.dev, ctypes.byref(self.stream)), "stream_create")
        self.scalars = self.alloc(64)  # scale, norm, Adam args
        self.put(self.scalars, np.array([0.625], np.float32))
        args = AdamArgs(1e-2, 0.9, 0.999, 1e-8, 0.01, 1, 1, 0.0)
        self.check(lib.accel_memcpy(self.dev, ctypes.c_void_p(self.scalars + 16), ctypes.byref(args),
                                    ctypes.c_size_t(ctypes.sizeof(args))), "memcpy args")

    def err(self):
        return self.lib.accel_last_error().decode()

    def check(self, st, what):
        if st != OK:
            raise RuntimeError(f"{what} failed ({st}): {self.err()}")

    def alloc(self, nbytes):
        p = ctypes.c_void_p()
        self.check(self.lib.accel_malloc(self.dev, ctypes.c_size_t(nbytes), ctypes.byref(p)), "malloc")
        return p.value

    def put(self, p, array):
        self.check(self.lib.accel_memcpy(self.dev, ctypes.c_void_p(p), ctypes.c_void_p(array.ctypes.data),
                                         ctypes.c_size_t(array.nbytes)), "memcpy h2d")

    def get(self, p, like):
        out = np.empty_like(like)
        self.sync()
        self.check(self.lib.accel_memcpy(self.dev, ctypes.c_void_p(out.ctypes.data), ctypes.c_void_p(p),
                                         ctypes.c_size_t(out.nbytes)), "memcpy d2h")
        return out

    def sync(self):
        self.check(self.lib.accel_device_synchronize(self.dev), "device_synchronize")

    # the kernels under test, on accel_tensor_t lists
    def scale(self, tensors):
        arr = (Tensor * len(tensors))(*tensors)
        self.check(self.lib.accel_scale(self.stream, arr, ctypes.c_size_t(len(tensors)),
                                        ctypes.c_void_p(self.scalars)), "accel_scale")

    def norm(self, tensors, p=2.0):
        arr = (Tensor * len(tensors))(*tensors)
        self.check(self.lib.accel_multi_tensor_norm(self.stream, arr, ctypes.c_size_t(len(tensors)),
                                                    ctypes.c_float(p), ctypes.c_void_p(self.scalars + 4)),
                   "accel_multi_tensor_norm")
        return self.get(self.scalars + 4, np.zeros(1, np.float32))[0]

    def adam(self, p, g, m, v):
        lists = [(Tensor * 1)(t) for t in (p, g, m, v)]
        self.check(self.lib.accel_fused_adam(self.stream, *lists, ctypes.c_size_t(1),
                                             ctypes.c_void_p(self.scalars + 16)), "accel_fused_adam")


class Import:
    """A legacy DLPack capsule imported into accel; counts the producer's deleter calls."""

    def __init__(self, accel, capsule):
        self.accel = accel
        self.calls = 0
        ptr = capsule_get(capsule, b"dltensor")
        self.managed = ctypes.cast(ptr, ctypes.POINTER(DLManagedTensor))
        # a function of its own over the pointer's value (the field itself is about to change)
        original = DELETER(ctypes.cast(self.managed.contents.deleter, ctypes.c_void_p).value)

        def counted(self_ptr):
            self.calls += 1
            original(self_ptr)

        self.hook = DELETER(counted)  # kept alive here: accel calls it at the release
        self.managed.contents.deleter = self.hook
        self.view = Tensor()
        self.handle = ctypes.c_void_p()
        self.status = accel.lib.accel_dlpack_import_legacy(accel.dev, ctypes.c_void_p(ptr), 0,
                                                           ctypes.byref(self.view),
                                                           ctypes.byref(self.handle))
        if self.status == OK:
            capsule_rename(capsule, b"used_dltensor")  # accel owns it now
        else:
            self.managed.contents.deleter = original  # the capsule still owns it

    def release(self):
        self.accel.check(self.accel.lib.accel_dlpack_release(self.handle), "accel_dlpack_release")


def kernels_in_place(accel, views):
    """scale, norms, AdamW step on views [p, g, m, v] (F32 p, m, v); returns the norms (one
    dtype per list: params and grads apart)."""
    p, g, m, v = views
    accel.scale([g])
    n = np.array([accel.norm([p, m, v]), accel.norm([g], float("inf"))], np.float32)
    accel.adam(p, g, m, v)
    accel.sync()
    return n


def reference(accel, arrays, grad_dtype):
    """The same kernels on accel_malloc'd copies of arrays (NumPy, grads as raw bytes)."""
    ptrs = [accel.alloc(a.nbytes) for a in arrays]
    for p, a in zip(ptrs, arrays):
        accel.put(p, a)
    views = [Tensor(ptrs[i], arrays[i].size, grad_dtype if i == 1 else F32) for i in range(4)]
    n = kernels_in_place(accel, views)
    out = [accel.get(p, a) for p, a in zip(ptrs, arrays)]
    for p in ptrs:
        accel.check(accel.lib.accel_free(accel.dev, ctypes.c_void_p(p)), "free")
    return n, out


def run_numpy(accel):
    rng = np.random.default_rng(19)
    arrays = [rng.standard_normal((33, 257)).astype(np.float32) for _ in range(3)]
    arrays.insert(2, np.zeros((33, 257), np.float32))  # p, g, m, v
    arrays[3] = np.abs(arrays[3]) * 0.01
    want_norm, want = reference(accel, [a.copy() for a in arrays], F32)
    imports = [Import(accel, a.__dlpack__()) for a in arrays]
    for a, imp in zip(arrays, imports):
        check(imp.status == OK, f"numpy import: {accel.err()}")
        check(imp.view.data == a.ctypes.data and imp.view.numel == a.size,
              f"numpy view {imp.view.data:#x} vs array {a.ctypes.data:#x}: not zero-copy")
    got_norm = kernels_in_place(accel, [imp.view for imp in imports])
    check(got_norm.tobytes() == want_norm.tobytes(),
          f"numpy norm {got_norm!r} vs {want_norm!r}")
    for name, a, w in zip(("param", "grad", "exp_avg", "exp_avg_sq"), arrays, want):
        check(a.tobytes() == w.tobytes(), f"numpy {name}: in-place result differs from the copy's")
    before = [sys.getrefcount(arrays[i]) for i in range(4)]
    for imp in imports:
        check(imp.calls == 0, "numpy deleter called before the release")
        imp.release()
    accel.sync()
    after = [sys.getrefcount(arrays[i]) for i in range(4)]
    check([imp.calls for imp in imports] == [1] * 4,
          f"numpy deleter calls {[imp.calls for imp in imports]}, expected one each")
    check(after == [b - 1 for b in before], f"the arrays' DLPack references: {before} -> {after}")
    print(f"numpy: 4 arrays of {arrays[0].shape} updated in place, norm {got_norm}")


def run_torch(accel):
    g = torch.Generator().manual_seed(19)
    p = torch.randn(4099, generator=g)
    grad = torch.randn(4099, generator=g).to(torch.bfloat16)
    m = torch.zeros(4099)
    v = torch.rand(4099, generator=g) * 0.01
    tensors = [p, grad, m, v]
    arrays = [t.view(torch.int16).numpy().copy() if t.dtype == torch.bfloat16 else t.numpy().copy()
              for t in tensors]
    want_norm, want = reference(accel, arrays, BF16)
    imports = [Import(accel, torch.utils.dlpack.to_dlpack(t)) for t in tensors]
    for t, imp in zip(tensors, imports):
        check(imp.status == OK, f"torch import: {accel.err()}")
        check(imp.view.data == t.data_ptr() and imp.view.numel == t.numel(),
              "torch view is not the tensor's memory")
    check(imports[1].view.dtype == BF16, "bfloat16 tensor imported as BF16")
    got_norm = kernels_in_place(accel, [imp.view for imp in imports])
    check(got_norm.tobytes() == want_norm.tobytes(),
          f"torch norm {got_norm!r} vs {want_norm!r}")
    for name, t, w in zip(("param", "grad", "exp_avg", "exp_avg_sq"), tensors, want):
        raw = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
        check(raw.tobytes() == w.tobytes(), f"torch {name}: in-place result differs from the copy's")
    for imp in imports:
        imp.release()
    accel.sync()
    check(all(imp.calls == 1 for imp in imports), "torch deleters: " + str([i.calls for i in imports]))
    print(f"torch: AdamW step in place on 4 tensors (bf16 grads), norm {got_norm}")


def run_refusals(accel):
    a = np.ones((16, 16), np.float32)
    for what, capsule, status in (
            ("strided numpy", a[:, ::2].__dlpack__(), UNSUPPORTED),
            ("int32 numpy", np.ones(8, np.int32).__dlpack__(), UNSUPPORTED),
            ("float64 torch", torch.utils.dlpack.to_dlpack(torch.ones(8, dtype=torch.float64)), UNSUPPORTED),
            ("transposed torch", torch.utils.dlpack.to_dlpack(torch.ones(4, 8).t()), UNSUPPORTED)):
        imp = Import(accel, capsule)
        check(imp.status == status, f"{what}: status {imp.status}, expected {status}")
        check("accel_dlpack_import_legacy" in accel.err(), f"{what}: message {accel.err()!r}")
        del capsule  # still "dltensor": its destructor calls the producer's deleter, once
        gc.collect()
        check(imp.calls == 0, f"{what}: accel called the deleter of a refused tensor")
    check(sys.getrefcount(a) == 2, "a refused capsule kept the array alive")
    print("refusals: strided, int32, float64 and transposed tensors refused, ownership kept")


def run_export(accel):
    lib = accel.lib
    n = 1000
    buf = accel.alloc(n * 4)
    accel.check(lib.accel_fill(accel.stream, ctypes.byref(Tensor(buf, n, F32)), ctypes.c_size_t(1),
                               ctypes.c_float(3.5)), "fill")
    accel.sync()
    managed = ctypes.c_void_p()
    accel.check(lib.accel_dlpack_export_legacy(accel.dev, ctypes.byref(Tensor(buf, n, F32)),
                                               ctypes.byref(managed)), "export")
    t = torch.utils.dlpack.from_dlpack(capsule_new(managed, b"dltensor", None))
    check(t.data_ptr() == buf and t.numel() == n, "the exported tensor is not accel's memory")
    check(bool((t == 3.5).all()), "exported values")
    t.mul_(2)  # torch writes accel's memory
    check(accel.get(buf, np.zeros(n, np.float32))[7] == 7.0, "torch's write is not seen by accel")
    stats = MemoryStats()
    accel.check(lib.accel_free(accel.dev, ctypes.c_void_p(buf)), "free while exported")
    lib.accel_memory_stats(accel.dev, ctypes.byref(stats))
    held = stats.allocated_bytes
    check(float(t.sum()) == 7.0 * n, "the memory went away under torch")
    del t
    gc.collect()
    lib.accel_memory_stats(accel.dev, ctypes.byref(stats))
    check(stats.allocated_bytes < held, "torch's deleter did not complete the deferred accel_free")
    print("export: accel memory seen by torch, freed after torch let go")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    accel = Accel(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "cpu")
    run_numpy(accel)
    run_torch(accel)
    run_refusals(accel)
    run_export(accel)
    print("ok" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
