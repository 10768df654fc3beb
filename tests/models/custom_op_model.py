"""A model with a real custom op (a 'plugin'): Linear -> scaled_tanh (custom) -> tap -> Linear.

ONNX: Gemm -> ai.onnx.contrib::FastTanh -> Mul -> Gemm. onnxruntime runs it with the
onnxruntime-extensions library (get_ort_session_options()); the FastTanh kernel is registered when
this file (its custom_ops module) is imported.
"""
import torch
from torch import nn

try:  # imported as tests.models.custom_op_model
    from .custom_ops import TRANSLATIONS, ort_session_options, scaled_tanh
except ImportError:  # loaded as MODEL.py by prepare (its folder is on sys.path while it loads)
    from custom_ops import TRANSLATIONS, ort_session_options, scaled_tanh

from leapp_lab import tap


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        h = self.fc1(x)
        h = scaled_tanh(h, 0.5)
        h = tap(h, "after_plugin")
        return self.fc2(h)


def get_fwd_args():
    return (torch.randn(2, 6),)


def get_samples():
    return [(torch.randn(2, 6) * s,) for s in (1.0, 2.0)]


def get_custom_translation_table():
    return TRANSLATIONS


def get_ort_session_options():
    return ort_session_options()
