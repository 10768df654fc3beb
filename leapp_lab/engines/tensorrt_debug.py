"""Reading a TensorRT engine's taps: debug tensors, delivered to a debug listener.

TensorRT 11 exposes an intermediate tensor without making it a network output (which would keep
it from being fused): the builder marks it a *debug tensor* (``INetworkDefinition.mark_debug`` for
one tensor, ``mark_unfused_tensors_as_debug_tensors`` for every tensor that survives fusion), the
execution context switches it on (``set_tensor_debug_state`` / ``unfused_tensors_debug_state``)
and, while the engine runs, calls ``IDebugListener.process_debug_tensor`` with each value's device
address, type and shape. The listener copies it to the host at once (the memory is reused).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

import numpy as np

from .base import CompileError

_DEVICE_TO_HOST = 2     # cudaMemcpyKind.cudaMemcpyDeviceToHost


@functools.cache
def _cudart():
    """The CUDA runtime library torch's CUDA build loaded (or the system's)."""
    names = ["libcudart.so", "libcudart.so.13", "libcudart.so.12", ctypes.util.find_library("cudart")]
    for name in [n for n in names if n]:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                        ctypes.c_void_p]
        lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
        return lib
    raise CompileError("TensorRT taps: no CUDA runtime library (libcudart) could be loaded to copy the "
                       "debug tensors to the host")


def copy_to_host(addr: int, dtype: np.dtype, shape: tuple[int, ...], stream: int) -> np.ndarray:
    """The device array at ``addr`` as a new host array (copied on ``stream``, then synchronized)."""
    out = np.empty(shape, dtype=dtype)
    if out.nbytes:
        lib = _cudart()
        err = lib.cudaMemcpyAsync(out.ctypes.data, ctypes.c_void_p(addr), out.nbytes, _DEVICE_TO_HOST,
                                  ctypes.c_void_p(stream))
        err = err or lib.cudaStreamSynchronize(ctypes.c_void_p(stream))
        if err:
            raise CompileError(f"TensorRT taps: cudaMemcpyAsync of a debug tensor failed (CUDA error {err})")
    return out


def make_listener(trt, wanted: dict[str, str]):
    """An ``IDebugListener`` that keeps the value of each debug tensor named in ``wanted`` (tensor
    name -> tap name) of the last run in ``listener.values`` (tap name -> host array)."""

    class Listener(trt.IDebugListener):
        def __init__(self):
            trt.IDebugListener.__init__(self)
            self.values: dict[str, np.ndarray] = {}

        def process_debug_tensor(self, addr, location, type, shape, name, stream):  # noqa: A002
            tap = wanted.get(name)
            if tap is None:
                return True
            dt = np.dtype(trt.nptype(type))
            self.values[tap] = copy_to_host(int(addr), dt, tuple(int(d) for d in shape), int(stream))
            return True

    return Listener()


def supports_unfused_debug(network) -> bool:
    """TensorRT 11 (and late 10.x) can mark every unfused tensor at once; earlier ones cannot."""
    return hasattr(network, "mark_unfused_tensors_as_debug_tensors")
