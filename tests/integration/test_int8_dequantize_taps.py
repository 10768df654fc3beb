"""Found by a new user on a conv net (GroupNorm, depthwise convs) under ort-int8: taps on conv
outputs that exist only quantized were exposed through an extra DequantizeLinear before onnxruntime
optimised the graph again, which changed no kernel, yet build.json said ``via: unfused`` and compile
warned that exposing them "changed the engine's kernels" while the observer record below showed the
same kernels. ``verify --expected int8`` then read those taps before the int8 rounding although the
engine shows the rounded value, and the expected error fell short of the engine's own."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import leapp_lab
from leapp_lab import tap
from leapp_lab.steps.compile import compile
from leapp_lab.steps.verify import verify


class ConvGroupNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, 1, 1)
        self.gn = nn.GroupNorm(4, 16)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16)

    def forward(self, x):
        y = tap(self.c1(x), "c1")
        y = tap(self.dw(self.gn(y)), "dw")
        return {"y": y.reshape(y.shape[0], -1)}


def test_int8_taps_read_through_a_dequantize_claim_no_kernel_change(tmp_path: Path):
    torch.manual_seed(0)
    samples = [(torch.randn(1, 3, 16, 16),) for _ in range(3)]
    onnx_p = tmp_path / "model.onnx"
    leapp_lab.prepare({"model": ConvGroupNorm().eval(), "samples": samples}, onnx_p, tmp_path / "model.npz",
                      tmp_path / "model.reference.npz", debug_taps=["all"])
    build = compile(onnx_p, "ort-int8", naive_check=False)
    assert not build.observer.kernels_differ
    for name in ("c1", "dw"):
        t = build.tap(name)
        assert (t.binding, t.via, t.binding_reason) == ("bound", "dequantize", None), t
    assert not [w for w in build.warnings if "kernels" in w], build.warnings
    # the engine shows the int8-rounded value: the expected error rounds it too and explains it whole
    v = verify(tmp_path / "model.reference.npz", build.path, save=False, expected="int8")
    r = v.row("c1")
    assert r.expected_nrmse == pytest.approx(r.nrmse, rel=1e-4)
