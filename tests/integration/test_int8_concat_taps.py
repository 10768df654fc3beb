"""Found trying a new policy net (two branches concatenated) under ort-int8: onnxruntime's
QLinearConcat shares one scale between its inputs and its output, so the tap on a branch matched the
*concatenated* tensor by scale and showed it: verify said shape-mismatch ((2, 64) vs (2, 128)) on the
branch and nothing about its values. Each tap must show its own tensor, as the next layer consumes it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

import leapp_lab
from leapp_lab import tap
from leapp_lab.steps.verify import verify
from leapp_lab.steps.compile import compile
from leapp_lab.model.jsonio import load_npz
from tests import oracle


class TwoBranches(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(24, 64), nn.LayerNorm(64), nn.GELU())
        self.b = nn.Linear(24, 32)
        self.head = nn.Linear(96, 6)

    def forward(self, x):
        left = tap(self.a(x), "left")
        right = tap(torch.relu(self.b(x)), "right")
        joined = tap(torch.cat([left, right], dim=-1), "joined")
        return {"y": self.head(joined)}


def test_int8_taps_on_concatenated_branches_show_their_own_tensors(tmp_path: Path):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(3)
    samples = [(torch.randn(2, 24, generator=g),) for _ in range(4)]
    onnx_p = tmp_path / "model.onnx"
    leapp_lab.prepare({"model": TwoBranches().eval(), "samples": samples}, onnx_p, tmp_path / "model.npz",
                      tmp_path / "model.reference.npz", debug_taps=["all"])
    build = compile(onnx_p, "ort-int8", naive_check=False)
    taps = {t.name: t for t in build.taps}
    eng = load_npz(Path(build.path) / "sample_outputs.npz")
    ref = load_npz(tmp_path / "model.reference.npz")
    for name in ("left", "right", "joined"):
        assert taps[name].binding == "bound", (name, taps[name].binding_reason)
        assert eng[name].shape == ref[name].shape, (name, taps[name].bound_to, eng[name].shape)
        e, r = eng[name].astype(np.float64), ref[name].astype(np.float64)
        cos = oracle.cosine(e, r)
        assert cos > 0.99, (name, taps[name].bound_to, cos)
    assert taps["left"].bound_to != taps["joined"].bound_to
    v = verify(tmp_path / "model.reference.npz", build.path, save=False)
    assert all(v.row(n).status == "compared" for n in ("left", "right", "joined"))
