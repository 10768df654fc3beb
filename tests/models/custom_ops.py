"""Real custom ops for plugin-tap tests: torch.library ops, their ONNX translations into the
``ai.onnx.contrib`` domain, and onnxruntime kernels registered through onnxruntime-extensions.

* ``leapp_test::scaled_tanh(x, scale)`` -> ``ai.onnx.contrib::FastTanh(x)`` then ``Mul(., scale)``.
  FastTanh has an onnxruntime kernel (``onnx_op``); its output has no FX name, so its reference
  can only come from onnxruntime.
* ``leapp_test::mystery_gate(x)`` -> ``ai.onnx.contrib::MysteryGate(x)``: no onnxruntime kernel
  anywhere, so onnxruntime cannot run a graph holding it (compile must fail naming it).

``ort_session_options()`` returns SessionOptions with the onnxruntime-extensions library
registered (the FastTanh kernel lives in this process once this module is imported).
``TRANSLATIONS`` is the ``custom_translation_table`` for ``torch.onnx.export``.

The registrations are process-wide and must happen once even when this file is imported under two
module names (``custom_ops`` from a MODEL.py, ``tests.models.custom_ops`` from a test), so their
state is kept in one ``sys.modules`` entry.
"""
from __future__ import annotations

import sys
import types

import numpy as np
import onnx
import onnxscript
import torch
from onnx.defs import OpSchema
from onnxscript import opset18 as op

CONTRIB = "ai.onnx.contrib"
_STATE = "_leapp_lab_test_custom_ops"


def _register() -> types.ModuleType:
    state = types.ModuleType(_STATE)

    @torch.library.custom_op("leapp_test::scaled_tanh", mutates_args=())
    def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
        return torch.tanh(x) * scale

    @scaled_tanh.register_fake
    def _(x, scale):
        return torch.empty_like(x)

    @torch.library.custom_op("leapp_test::mystery_gate", mutates_args=())
    def mystery_gate(x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)

    @mystery_gate.register_fake
    def _(x):
        return torch.empty_like(x)

    # ONNX schemas, so the exporter's translation functions can build the custom-domain nodes
    for name in ("FastTanh", "MysteryGate"):
        if not onnx.defs.has(name, CONTRIB):
            onnx.defs.register_schema(OpSchema(
                name, CONTRIB, 1, inputs=[OpSchema.FormalParameter("X", "T")],
                outputs=[OpSchema.FormalParameter("Y", "T")],
                type_constraints=[("T", ["tensor(float)"], "float tensors")]))
    contrib = onnxscript.values.Opset(CONTRIB, 1)

    def scaled_tanh_onnx(x, scale: float):
        t = contrib.FastTanh(x)
        return op.Mul(t, op.CastLike(scale, t))

    def mystery_gate_onnx(x):
        return contrib.MysteryGate(x)

    from onnxruntime_extensions import PyCustomOpDef, onnx_op

    @onnx_op(op_type="FastTanh", inputs=[PyCustomOpDef.dt_float], outputs=[PyCustomOpDef.dt_float])
    def fast_tanh(x):
        return np.tanh(x).astype(np.float32)

    state.translations = {torch.ops.leapp_test.scaled_tanh.default: scaled_tanh_onnx,
                          torch.ops.leapp_test.mystery_gate.default: mystery_gate_onnx}
    state.fast_tanh = fast_tanh
    sys.modules[_STATE] = state
    return state


_state = sys.modules.get(_STATE) or _register()
TRANSLATIONS = _state.translations


def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.ops.leapp_test.scaled_tanh(x, scale)


def mystery_gate(x: torch.Tensor) -> torch.Tensor:
    return torch.ops.leapp_test.mystery_gate(x)


def ort_session_options():
    """onnxruntime SessionOptions with the onnxruntime-extensions custom-op library registered."""
    import onnxruntime as ort
    from onnxruntime_extensions import get_library_path

    so = ort.SessionOptions()
    so.register_custom_ops_library(get_library_path())
    return so
