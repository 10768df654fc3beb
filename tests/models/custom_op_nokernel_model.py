"""A model whose custom op (ai.onnx.contrib::MysteryGate) has no onnxruntime kernel anywhere.

prepare works (torch runs the op eagerly); onnxruntime cannot run the graph, so compile with the
ort engines must fail naming MysteryGate, and plugin taps on its output stay uncompared.
"""
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from custom_ops import TRANSLATIONS, mystery_gate  # noqa: E402


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
