"""The compiled binding (cffi API mode), status checking and the exception classes."""
import atexit
import threading
import weakref

from ._accel_cffi import ffi, lib

__all__ = ["ffi", "lib", "Error", "check", "register_handle"]


class Error(RuntimeError):
    """A failed accel call. status: the accel_status_t value; status_name: its name ("ACCEL_ERROR_
    INVALID_ARGUMENT"); message: accel_last_error() of the failing call (it names the function)."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = ffi.string(lib.accel_status_name(status)).decode()
        self.message = message
        super().__init__(f"{self.status_name}: {message}" if message else self.status_name)


# One subclass per status; the argument-like ones are also the Python built-in they resemble,
# so `except ValueError` catches a bad argument as usual.
class InvalidArgument(Error, ValueError): pass
class InvalidHandle(Error, ValueError): pass
class OutOfMemory(Error, MemoryError): pass
class Unavailable(Error): pass
class Unsupported(Error): pass
class NotReady(Error): pass
class IllegalInCapture(Error): pass
class CaptureInvalidated(Error): pass
class PluginError(Error): pass
class BackendError(Error): pass
class StateError(Error): pass
class GraphMismatch(Error): pass


_ERRORS = {
    lib.ACCEL_ERROR_INVALID_ARGUMENT: InvalidArgument,
    lib.ACCEL_ERROR_INVALID_HANDLE: InvalidHandle,
    lib.ACCEL_ERROR_OUT_OF_MEMORY: OutOfMemory,
    lib.ACCEL_ERROR_UNAVAILABLE: Unavailable,
    lib.ACCEL_ERROR_UNSUPPORTED: Unsupported,
    lib.ACCEL_ERROR_NOT_READY: NotReady,
    lib.ACCEL_ERROR_ILLEGAL_IN_CAPTURE: IllegalInCapture,
    lib.ACCEL_ERROR_CAPTURE_INVALIDATED: CaptureInvalidated,
    lib.ACCEL_ERROR_PLUGIN: PluginError,
    lib.ACCEL_ERROR_BACKEND: BackendError,
    lib.ACCEL_ERROR_STATE: StateError,
    lib.ACCEL_ERROR_GRAPH_MISMATCH: GraphMismatch,
}


def last_error():
    return ffi.string(lib.accel_last_error()).decode(errors="replace")


def error(status):
    """The exception for a failed status, with this thread's accel_last_error()."""
    return _ERRORS.get(status, Error)(status, last_error())


def check(status):
    """Raises the matching Error when status is not ACCEL_OK. The message is read on the same
    thread right after the call (accel_last_error() is thread-local)."""
    if status != lib.ACCEL_OK:
        raise error(status)


# Every live handle object, so that whatever the user did not close is closed at interpreter
# exit, children before parents (graphs and events, then streams, then devices), while the
# binding is still intact: __del__ during module teardown would run in no defined order.
_live = {}
_live_lock = threading.Lock()
_closing_order = ("Graph", "Pool", "Event", "Buffer", "Stream", "Device")


def register_handle(obj):
    with _live_lock:
        _live[id(obj)] = weakref.ref(obj)


def unregister_handle(obj):
    with _live_lock:
        _live.pop(id(obj), None)


@atexit.register
def _close_all():
    with _live_lock:
        objs = [r() for r in _live.values()]
    objs = [o for o in objs if o is not None]
    rank = {name: i for i, name in enumerate(_closing_order)}
    objs.sort(key=lambda o: rank.get(type(o).__name__, -1))
    for o in objs:
        try:
            o.close()
        except Exception:  # noqa: BLE001 - exit must not fail (a Buffer with live NumPy
            pass  # views stays allocated; the process gives everything back as it ends)
