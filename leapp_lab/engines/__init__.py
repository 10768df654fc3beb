"""Engines: build an engine from a prepared ONNX and run it on every sample (Polygraphy-style runners).

``ENGINES`` maps the ``--engine`` names to engine classes. onnxruntime engines run everywhere;
TensorRT ones import ``tensorrt`` only when asked for (GPU only).
"""
from __future__ import annotations

from typing import Any

ENGINE_NAMES = ("ort", "ort-fp16", "ort-int8", "trt-fp32", "trt-fp16", "trt-int8")
#: asked for by name, never offered: they would always fail; the message says what to use instead
NOT_IMPLEMENTED: dict[str, str] = {}


def get_engine(name: str) -> Engine:
    from . import onnxrt, tensorrt

    table = {"ort": onnxrt.OrtEngine, "ort-fp16": onnxrt.OrtFp16Engine, "ort-int8": onnxrt.OrtInt8Engine,
             "trt-fp32": tensorrt.TrtEngine, "trt-fp16": tensorrt.TrtFp16Engine,
             "trt-int8": tensorrt.TrtInt8Engine}
    if name in NOT_IMPLEMENTED:
        raise ValueError(NOT_IMPLEMENTED[name])
    if name not in table:
        raise ValueError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINE_NAMES)}")
    return table[name]()


def __getattr__(name: str) -> Any:
    # the engine classes import numpy (and onnxruntime further on): loaded when first used, so that
    # `leapp-lab --help` (the --engine choices above) and a verify's graph reader pay for neither
    if name in ("CompileError", "Engine", "EngineUnavailable", "Runner"):
        from . import base
        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CompileError", "Engine", "EngineUnavailable", "Runner", "ENGINE_NAMES", "get_engine"]
