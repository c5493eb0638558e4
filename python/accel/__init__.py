"""accel from Python: devices, streams, events, graphs and accel's multi-tensor kernels on
NumPy arrays, PyTorch tensors (zero-copy through DLPack) and accel Buffers.

    import accel
    dev = accel.Device("cpu")
    grads = accel.TensorList(dev, [numpy_or_torch_tensors...])   # converted once
    norm = dev.empty(1)
    accel.multi_tensor_norm(grads, norm, 2.0, stream=dev.default_stream)

accel.Module compiles your own kernels at run time (accel_module.h).
accel.torch (imported on demand: it needs PyTorch) has clip_grad_norm_ and AdamW. See
docs/PYTHON.md.
"""
from ._lib import (BackendError, CaptureInvalidated, Error, GraphMismatch, IllegalInCapture,
                   InvalidArgument, InvalidHandle, NotReady, OutOfMemory, PluginError, StateError,
                   Unavailable, Unsupported, ffi, lib)
from ._memory import (graph_memory_info, memory_snapshot, memory_stats_ex, memory_summary,
                      memory_tag)
from ._objects import (Buffer, Device, DeviceInfo, DeviceStruct, Event, Graph, Pool, Stream,
                       backends, version)
from ._module import Kernel, Module
from ._random import Generator
from ._tensors import (AdamArgs, TensorList, clip_by_global_norm, multi_tensor_norm,
                       update_hp_grads)
from . import _kernels_gen
# fill, scale, unscale_and_check, fused_adam, cast, amp_begin_step, ...: generated from their
# kernel table rows, like a build's own rows
from ._kernels_gen import *  # noqa: F401,F403

__version__ = version()

__all__ = [
    "Device", "DeviceInfo", "Stream", "Event", "Graph", "Pool", "Buffer", "DeviceStruct",
    "TensorList", "AdamArgs", "Generator", "Module", "Kernel", "backends", "version",
    "multi_tensor_norm", "clip_by_global_norm", "update_hp_grads",
    "memory_stats_ex", "graph_memory_info", "memory_snapshot", "memory_summary", "memory_tag",
    "Error", "InvalidArgument", "InvalidHandle", "OutOfMemory", "Unavailable", "Unsupported",
    "NotReady", "IllegalInCapture", "CaptureInvalidated", "PluginError", "BackendError",
    "StateError", "GraphMismatch", "ffi", "lib",
] + _kernels_gen.__all__
