"""A model whose custom op (ai.onnx.contrib::MysteryGate) has no onnxruntime kernel anywhere.

prepare works (torch runs the op eagerly); onnxruntime cannot run the graph, so compile with the
ort engines must fail naming MysteryGate, and plugin taps on its output stay uncompared.
"""
import torch
from torch import nn

try:  # imported as tests.models.custom_op_nokernel_model
    from .custom_ops import TRANSLATIONS, mystery_gate
except ImportError:  # loaded as MODEL.py by prepare (its folder is on sys.path while it loads)
    from custom_ops import TRANSLATIONS, mystery_gate


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(mystery_gate(self.fc1(x)))


def get_fwd_args():
    return (torch.randn(3, 5),)


def get_custom_translation_table():
    return TRANSLATIONS
