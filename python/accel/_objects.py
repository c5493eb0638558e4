"""Pythonic objects over accel's handles: Device, Stream, Event, Graph, Pool, Buffer.

Every object owns one reference of its C handle and gives it back exactly once: on close(), on
leaving a `with` block, when garbage collected, or at interpreter exit (children first). The C
library counts references itself (a stream keeps its device alive, a graph what it captured),
so the order in which Python drops objects never matters for safety.
"""
import contextlib
import weakref
from dataclasses import dataclass

from ._lib import check, ffi, lib, register_handle, unregister_handle

__all__ = ["Device", "Stream", "Event", "Graph", "Pool", "Buffer", "DeviceStruct", "DeviceInfo",
           "backends", "version"]

_DTYPES = {"float32": lib.ACCEL_F32, "float16": lib.ACCEL_F16, "bfloat16": lib.ACCEL_BF16}
_CAPTURE_MODES = {"global": lib.ACCEL_CAPTURE_MODE_GLOBAL,
                  "thread_local": lib.ACCEL_CAPTURE_MODE_THREAD_LOCAL,
                  "relaxed": lib.ACCEL_CAPTURE_MODE_RELAXED}


def version():
    """The loaded libaccel's "MAJOR.MINOR.PATCH"."""
    return ffi.string(lib.accel_version_string()).decode()


def backends():
    """{name: status} of every registered backend: "ok" or the reason it is unusable."""
    out = {}
    for i in range(lib.accel_backend_count()):
        b = ffi.new("accel_backend_t **")
        check(lib.accel_backend_get(i, b))
        reason = ffi.new("const char **")
        st = lib.accel_backend_status(b[0], reason)
        name = ffi.string(lib.accel_backend_name(b[0])).decode()
        out[name] = "ok" if st == lib.ACCEL_OK else (
            ffi.string(reason[0]).decode() if reason[0] != ffi.NULL else
            ffi.string(lib.accel_status_name(st)).decode())
    return out


def _struct_to_dict(cdata):
    """Every field of a C struct, by the names in the header (char arrays as str)."""
    out = {}
    for name, field in ffi.typeof(cdata[0]).fields:
        value = getattr(cdata[0], name)
        if field.type.kind == "array" and field.type.item.cname == "char":
            value = ffi.string(value).decode(errors="replace")
        out[name] = value
    return out


def _done(st):
    """A query's status as a bool: False for ACCEL_ERROR_NOT_READY, True for ACCEL_OK; any
    other status raises."""
    if st == lib.ACCEL_ERROR_NOT_READY:
        return False
    check(st)
    return True


def _flag(fn, handle):
    """The int flag fn(handle, &out) reports, as a bool."""
    out = ffi.new("int *")
    check(fn(handle, out))
    return bool(out[0])


class _Closes:
    """close() on leaving a with block and on collection (for every owning wrapper)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing may escape __del__
            pass


class _Handle(_Closes):
    """Base of the owning wrappers: _ptr is the C handle (ffi.NULL once closed)."""
    _release = None  # the C function that drops our reference

    def __init__(self, ptr):
        self._ptr = ptr
        register_handle(self)

    @property
    def closed(self):
        return self._ptr == ffi.NULL

    def close(self):
        """Gives the handle back (waits for the object's work where the C call does). A second
        close does nothing."""
        ptr, self._ptr = self._ptr, ffi.NULL
        if ptr != ffi.NULL:
            unregister_handle(self)
            check(type(self)._release(ptr))

    def _handle(self):
        if self._ptr == ffi.NULL:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._ptr



@dataclass(frozen=True)
class DeviceInfo:
    name: str
    vendor: str
    backend: str
    driver_version: str
    index: int
    type: int
    memory_total: int
    memory_free: int
    compute_units: int
    supports_fp16: bool
    supports_bf16: bool
    native_graphs: bool
    lazy_default: bool
    host_accessible: bool


class Device(_Handle):
    """An open device: Device("cpu"), Device("opencl:0"), Device() (ACCEL_BACKEND, else the
    best device present)."""
    _release = lib.accel_device_release

    def __init__(self, selector=None):
        out = ffi.new("accel_device_t **")
        check(lib.accel_device_create(selector.encode() if selector else ffi.NULL, out))
        super().__init__(out[0])
        self._default_stream = None
        self.info = self._info()

    def attribute(self, attr):
        """accel_device_get_attribute: attr is an ACCEL_ATTR_* value or its name without the
        prefix ("graph_kind", "graph_update", "unified_memory", ...)."""
        if isinstance(attr, str):
            attr = getattr(lib, "ACCEL_ATTR_" + attr.upper())
        out = ffi.new("int64_t *")
        check(lib.accel_device_get_attribute(self._handle(), attr, out))
        return out[0]

    def _info(self):
        info = ffi.new("accel_device_info_t *")
        check(lib.accel_device_get_info(self._handle(), info))
        d = _struct_to_dict(info)
        return DeviceInfo(**{k: (bool(v) if DeviceInfo.__annotations__[k] is bool else v)
                             for k, v in d.items()})

    @property
    def backend(self):
        return self.info.backend

    def __repr__(self):
        return f"<accel.Device {self.info.backend}:{self.info.index} {self.info.name!r}>"

    @property
    def default_stream(self):
        """The device's default stream (cannot capture; owned by the device)."""
        if self._default_stream is None:
            out = ffi.new("accel_stream_t **")
            check(lib.accel_stream_default(self._handle(), out))
            self._default_stream = Stream._borrowed(self, out[0])
        return self._default_stream

    def synchronize(self):
        check(lib.accel_device_synchronize(self._handle()))

    def stream(self, lazy=None):
        """A new stream; lazy=None follows ACCEL_LAZY and the backend's default."""
        return Stream(self, lazy)

    def wrap_stream(self, queue):
        """A Stream over a runtime's own stream or queue of this device (its native handle as
        an int, e.g. torch.cuda.current_stream().cuda_stream): accel's work lands in that
        stream's order between the runtime's, with no host synchronization. Closing it waits
        for the stream and never destroys the native one (accel_stream_wrap_native)."""
        return Stream._wrap(self, queue)

    def event(self, timing=True):
        return Event(self, timing)

    def graph(self):
        return Graph(self)

    def pool(self):
        """A graph memory pool to share between captures (see Graph.capture)."""
        return Pool._create(self)

    def empty(self, numel, dtype="float32"):
        """numel elements of device memory (accel_malloc), as a Buffer."""
        return Buffer(self, numel, dtype)

    def memory_stats(self):
        """accel_memory_stats as a dict (allocated_bytes, reserved_bytes, peak_..., ...)."""
        stats = ffi.new("accel_memory_stats_t *")
        check(lib.accel_memory_stats(self._handle(), stats))
        return _struct_to_dict(stats)

    def reset_peak_memory_stats(self):
        check(lib.accel_reset_peak_memory_stats(self._handle()))

    def empty_cache(self):
        check(lib.accel_empty_cache(self._handle()))

    def close(self):
        self._default_stream = None
        super().close()


def _flag_ptr(flag):
    """The int32 flag of a conditional region: the start of a Buffer."""
    return ffi.cast("const int32_t *", flag._handle())


class Stream(_Handle):
    """A stream of a Device. Kernels, copies and graph replays are ordered on it."""
    _release = lib.accel_stream_release

    def __init__(self, device, lazy=None):
        flags = (lib.ACCEL_STREAM_DEFAULT if lazy is None else
                 lib.ACCEL_STREAM_LAZY if lazy else lib.ACCEL_STREAM_EAGER)
        out = ffi.new("accel_stream_t **")
        check(lib.accel_stream_create_ex(device._handle(), flags, out))
        self.device, self._owned = device, True
        self._capture = None  # the Graph capturing on this stream, while one is
        super().__init__(out[0])

    @classmethod
    def _wrap(cls, device, queue):
        native = ffi.new("accel_native_t *")
        native.struct_size = ffi.sizeof("accel_native_t")
        native.backend = device.info.backend.encode()
        native.queue = ffi.cast("void *", queue)
        out = ffi.new("accel_stream_t **")
        check(lib.accel_stream_wrap_native(device._handle(), native, out))
        self = cls.__new__(cls)
        self.device, self._capture, self._owned = device, None, True
        _Handle.__init__(self, out[0])
        return self

    def native_queue(self):
        """The stream's own native queue (CUstream, hipStream_t, cl_command_queue, ...) as an
        int; the CPU backend has none (accel.Unsupported)."""
        native = ffi.new("accel_native_t *")
        native.struct_size = ffi.sizeof("accel_native_t")
        check(lib.accel_stream_native(self._handle(), native))
        return int(ffi.cast("uintptr_t", native.queue))

    @classmethod
    def _borrowed(cls, device, ptr):
        """The default stream: not ours to destroy."""
        self = cls.__new__(cls)
        self.device, self._capture, self._ptr, self._owned = device, None, ptr, False
        return self

    def close(self):
        """Waits for the stream's work and destroys it (the default stream is the device's:
        closing it does nothing)."""
        if getattr(self, "_capture", None) is not None:
            raise ValueError("Stream.close: the stream is capturing (end the capture first)")
        if self._owned:
            super().close()

    def synchronize(self):
        check(lib.accel_stream_synchronize(self._handle()))

    @contextlib.contextmanager
    def capture_if(self, flag):
        """The work submitted inside the block runs iff the int32 in the first 4 bytes of flag
        (a Buffer) is nonzero when the stream reaches it, read on the device
        (accel_graph_capture_if). Inside Graph.capture the region is recorded; otherwise it runs
        when the block ends. Unsupported on devices whose attribute "conditionals" is NONE."""
        with self._region(lib.accel_graph_capture_if(self._handle(), _flag_ptr(flag)),
                          lib.accel_graph_capture_end_if):
            yield self

    @contextlib.contextmanager
    def capture_while(self, flag, max_iterations):
        """The work submitted inside the block runs again and again while the int32 flag is
        nonzero, at most max_iterations times; the block's work updates the flag
        (accel_graph_capture_while)."""
        with self._region(lib.accel_graph_capture_while(self._handle(), _flag_ptr(flag),
                                                        max_iterations),
                          lib.accel_graph_capture_end_while):
            yield self

    @contextlib.contextmanager
    def _region(self, begin_status, end):
        check(begin_status)
        ok = False
        try:
            yield
            ok = True
        finally:
            st = end(self._handle())
            if ok:
                check(st)

    def query(self):
        """True when all work submitted so far is done."""
        return _done(lib.accel_stream_query(self._handle()))

    def wait_event(self, event):
        check(lib.accel_stream_wait_event(self._handle(), event._handle()))

    def record_event(self, event=None):
        event = event or Event(self.device)
        event.record(self)
        return event

    def flush(self):
        """Submits queued work of a lazy stream (mark_step); a no-op on an eager one."""
        check(lib.accel_stream_flush(self._handle()))

    @property
    def is_capturing(self):
        return _flag(lib.accel_stream_is_capturing, self._handle())

    @property
    def is_lazy(self):
        return _flag(lib.accel_stream_is_lazy, self._handle())

    def _keep(self, obj):
        """Called by every operation enqueued on the stream: during a capture the graph keeps a
        Python reference to what it uses (tensor lists, scalars, buffers)."""
        if self._capture is not None:
            self._capture._keep.append(obj)


class Event(_Handle):
    _release = lib.accel_event_release

    def __init__(self, device, timing=True):
        out = ffi.new("accel_event_t **")
        flags = lib.ACCEL_EVENT_DEFAULT if timing else lib.ACCEL_EVENT_DISABLE_TIMING
        check(lib.accel_event_create(device._handle(), flags, out))
        self.device = device
        super().__init__(out[0])

    def record(self, stream):
        check(lib.accel_event_record(self._handle(), stream._handle()))

    def synchronize(self):
        check(lib.accel_event_synchronize(self._handle()))

    def query(self):
        """True when the last record completed (or the event was never recorded)."""
        return _done(lib.accel_event_query(self._handle()))

    def elapsed_ms(self, end):
        """Milliseconds from this event's record to end's (both completed)."""
        ms = ffi.new("float *")
        check(lib.accel_event_elapsed_ms(self._handle(), end._handle(), ms))
        return ms[0]


class Pool(_Handle):
    """A graph memory pool; share one between graphs that are replayed in capture order."""
    _release = lib.accel_pool_release

    @classmethod
    def _create(cls, device):
        out = ffi.new("accel_pool_t **")
        check(lib.accel_graph_pool_create(device._handle(), out))
        self = cls(out[0])
        self.device = device
        return self


class Graph(_Handle):
    """A captured sequence of work, replayed with one call:

        with graph.capture(stream):
            accel.fill([buf], 1.0, stream=stream)   # recorded, not run
        graph.replay(stream)                        # runs it
    """
    _release = lib.accel_graph_release

    def __init__(self, device):
        out = ffi.new("accel_graph_t **")
        check(lib.accel_graph_create(device._handle(), out))
        self.device = device
        self._keep = []  # Python objects the captured work uses (see Stream._keep)
        super().__init__(out[0])

    @contextlib.contextmanager
    def capture(self, stream, pool=None, mode="global"):
        """Records the work submitted to stream inside the block. If the block raises, the
        capture is ended and the graph reset before the exception propagates; an illegal call
        inside the block raises IllegalInCapture there, and ending then raises
        CaptureInvalidated."""
        if stream._capture is not None:
            raise ValueError("Graph.capture: the stream is already capturing")
        check(lib.accel_graph_capture_begin(self._handle(), stream._handle(),
                                            pool._handle() if pool else ffi.NULL,
                                            _CAPTURE_MODES[mode]))
        stream._capture = self
        ok = False
        try:
            yield self
            ok = True
        finally:
            stream._capture = None
            st = lib.accel_graph_capture_end(self._handle())
            if not ok:
                lib.accel_graph_reset(self._handle())
                self._keep = []
            else:
                if st != lib.ACCEL_OK:
                    self._keep = []
                check(st)

    def replay(self, stream):
        check(lib.accel_graph_replay(self._handle(), stream._handle()))

    def replay_timed(self, stream, n):
        """n replays driven from C (replay + synchronize each): their wall times in ms."""
        ms = ffi.new("double[]", n)
        check(lib.accel_py_replay_timed(self._handle(), stream._handle(), n, ms))
        return list(ms)

    def update(self, source):
        """Takes the arguments of source (a new capture of the same sequence with other
        buffers, scalars, sizes or tensor lists) in place; source stays as it is. Another
        topology raises GraphMismatch naming the first differing node, and this graph is
        unchanged. Python objects the old capture used are no longer kept by this graph: keep
        them yourself until replays issued before the update have finished."""
        check(lib.accel_graph_update(self._handle(), source._handle()))
        self._keep = list(source._keep)

    def reset(self):
        check(lib.accel_graph_reset(self._handle()))
        self._keep = []

    @property
    def node_count(self):
        out = ffi.new("size_t *")
        check(lib.accel_graph_node_count(self._handle(), out))
        return out[0]

    def pool(self):
        """The graph's memory pool (a new reference), to pass to another capture."""
        out = ffi.new("accel_pool_t **")
        check(lib.accel_graph_pool(self._handle(), out))
        p = Pool(out[0])
        p.device = self.device
        return p

    def close(self):
        super().close()
        self._keep = []


class Buffer(_Handle):
    """numel elements of accel_malloc memory. ptr: the device address; numpy(): a zero-copy
    NumPy view when the host can read device memory (the CPU backend)."""

    def __init__(self, device, numel, dtype="float32"):
        if dtype not in _DTYPES:
            raise ValueError(f"Buffer: dtype {dtype!r} is not one of {sorted(_DTYPES)}")
        self.device, self.numel, self.dtype = device, int(numel), dtype
        self.accel_dtype = _DTYPES[dtype]
        self.nbytes = self.numel * lib.accel_dtype_size(self.accel_dtype)
        out = ffi.new("void **")
        check(lib.accel_malloc(device._handle(), self.nbytes, out))
        self._views = []  # weak references to the holders of NumPy views
        super().__init__(out[0])

    def close(self):
        """Frees the memory (refused while a NumPy view of it is alive)."""
        if any(v() is not None for v in getattr(self, "_views", ())):
            raise ValueError("Buffer.close: NumPy views of the buffer are still alive")
        ptr, self._ptr = self._ptr, ffi.NULL
        if ptr != ffi.NULL:
            unregister_handle(self)
            if not self.device.closed:
                check(lib.accel_free(self.device._handle(), ptr))

    @property
    def ptr(self):
        return int(ffi.cast("uintptr_t", self._handle()))

    def tensor(self):
        """The accel_tensor_t of the whole buffer."""
        return (self._handle(), self.numel, self.accel_dtype)

    def numpy(self):
        """A NumPy array over the buffer (no copy). It keeps the buffer alive. bfloat16 has no
        NumPy dtype: it is returned as uint16 bit patterns."""
        import numpy as np
        if not self.device.info.host_accessible:
            raise TypeError(f"Buffer.numpy: {self.device.backend} memory is not host-accessible "
                            "(copy it with Device/Stream copies instead)")
        typestr = {"float32": "<f4", "float16": "<f2", "bfloat16": "<u2"}[self.dtype]
        holder = _ArrayHolder(self, typestr)
        self._views = [v for v in self._views if v() is not None] + [weakref.ref(holder)]
        return np.asarray(holder)


class _ArrayHolder:
    """Exposes a Buffer through the NumPy array interface; the array's base, so it keeps the
    Buffer alive as long as any view of it."""

    def __init__(self, buf, typestr):
        self.buffer = buf
        self.__array_interface__ = {"shape": (buf.numel,), "typestr": typestr,
                                    "data": (buf.ptr, False), "version": 3}


class DeviceStruct:
    """One C struct in device memory (per-step scalars such as accel_adam_args_t) with a host
    copy: set fields on .host, then upload(stream) (a stream-ordered copy, capturable: a graph
    that captured the upload reads the host copy's current values on every replay)."""

    def __init__(self, device, ctype, count=1):
        self.device, self.ctype = device, ctype
        self.nbytes = ffi.sizeof(ctype) * count
        hp = ffi.new("void **")
        check(lib.accel_host_alloc(device._handle(), self.nbytes, hp))
        self._host_raw = hp[0]
        ffi.memmove(self._host_raw, b"\0" * self.nbytes, self.nbytes)
        self.host = ffi.cast(ctype + " *", self._host_raw)
        self.buffer = Buffer(device, (self.nbytes + 3) // 4, "float32")
        self.dev = ffi.cast(ctype + " *", self.buffer._handle())

    def field(self, name):
        """Device pointer to a field (for kernels that take a device scalar)."""
        return ffi.addressof(self.dev[0], name)

    def upload(self, stream):
        check(lib.accel_memcpy_async(stream._handle(), self.buffer._handle(), self._host_raw,
                                     self.nbytes))
        stream._keep(self)

    def download(self):
        """Blocking copy of the device struct into .host (illegal during a capture)."""
        check(lib.accel_memcpy(self.device._handle(), self._host_raw, self.buffer._handle(),
                               self.nbytes))
        return self.host

    def close(self):
        if self._host_raw is not None and not self.device.closed:
            self.buffer.close()
            check(lib.accel_host_free(self.device._handle(), self._host_raw))
        self._host_raw = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
