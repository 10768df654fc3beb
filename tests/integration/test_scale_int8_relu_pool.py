"""Found scaling up to a ResNet-like stem (conv-bn-relu, tap, maxpool): the int8 quantizer folds the
Relu into the QuantizeLinear and gives the MaxPool's output the same scale, so the tap's scale match
was ambiguous; the tap then fell back to the float tensor named 'relu', which in the QDQ graph is the
*pre-activation* conv output. verify showed a post-ReLU tap with negative values (cosine ~0.7) and
named it the first divergent row. The tap must show what the next layer consumes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

import leapp_lab
from leapp_lab import Tap
from leapp_lab.steps.verify import verify
from leapp_lab.steps.compile import compile
from leapp_lab.model.jsonio import load_npz
from tests import oracle


class Stem(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                  Tap("stem"), nn.MaxPool2d(3, 2, 1))
        self.c2 = nn.Conv2d(16, 16, 3, 1, 1)
        self.bn = self.stem[1]
        self.bn.running_mean.normal_(0, 0.1, generator=torch.Generator().manual_seed(1))

    def forward(self, x):
        return {"y": torch.relu(self.c2(self.stem(x)))}


def test_int8_tap_after_folded_relu_shows_the_activation_not_the_preactivation(tmp_path: Path):
    torch.manual_seed(0)
    model = Stem().eval()
    samples = [(torch.randn(1, 3, 16, 16),) for _ in range(3)]
    onnx_p = tmp_path / "model.onnx"
    leapp_lab.prepare({"model": model, "samples": samples}, onnx_p, tmp_path / "model.npz",
                      tmp_path / "model.reference.npz", debug_taps=["all"])
    build = compile(onnx_p, "ort-int8", naive_check=False)
    tap = next(t for t in build.taps if t.name == "stem")
    assert tap.binding == "bound"
    e = load_npz(Path(build.path) / "sample_outputs.npz")["stem"].astype(np.float64)
    r = load_npz(tmp_path / "model.reference.npz")["stem"].astype(np.float64)
    assert e.min() >= 0.0, f"post-ReLU tap shows negative values (via {tap.via}): the pre-activation"
    cos = oracle.cosine(e, r)
    assert cos > 0.999
    v = verify(tmp_path / "model.reference.npz", build.path, save=False)
    assert v.row("stem").cosine > 0.999
