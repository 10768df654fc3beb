"""Found at model scale on GPT-2 under ort-int8 with op taps: the attention's q, k, v projection is
viewed, split and viewed again (Reshape -> Split -> Reshape), and the int8 quantizer gives that
whole chain one scale. compile matched int8 tensors by that scale and by the producing op type only,
so five Reshape taps of three shapes all read the one quantized Reshape output left in the engine;
verify reported them as shape mismatches and still exited 0 under --max-mape. An int8 tap is now
bound only where its engine value has its shape and its value on sample 0 (against the QDQ chain),
and a tap row of another shape fails the gate."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import leapp_lab
from leapp_lab.engines.ort_tapcheck import MAX_REL_ERR
from leapp_lab.steps.compile import compile
from leapp_lab.steps.verify import verify


class QKVAttention(nn.Module):
    """GPT-2's attention at toy width: one projection for q, k and v (addmm over the flattened
    tokens, viewed back), split, each viewed into heads and transposed."""

    def __init__(self, width: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.w = nn.Parameter(torch.randn(width, 3 * width) * 0.3)
        self.b = nn.Parameter(torch.randn(3 * width) * 0.1)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        qkv = torch.addmm(self.b, x.view(-1, x.shape[-1]), self.w).view(*x.shape[:-1], -1)
        q, k, v = qkv.split(x.shape[-1], dim=2)
        shape = (*x.shape[:-1], self.heads, -1)
        k = k.view(shape).transpose(1, 2)
        v = v.view(shape).transpose(1, 2)
        q = q.view(shape).transpose(1, 2)
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return {"y": self.proj(y.transpose(1, 2).reshape(*x.shape[:-1], -1))}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("qkv")
    torch.manual_seed(0)
    samples = [(torch.randn(1, 8, 16),) for _ in range(3)]
    p = {"onnx": d / "model.onnx", "npz": d / "model.npz", "reference": d / "model.reference.npz"}
    leapp_lab.prepare({"model": QKVAttention().eval(), "samples": samples}, p["onnx"], p["npz"],
                      p["reference"], op_taps=True)
    return p, compile(p["onnx"], "ort-int8", naive_check=False)


def test_every_int8_tap_carries_its_own_shape_and_value(built):
    p, build = built
    taps = build.manifest.taps
    views = [t for t in taps if t.producer_op == "Reshape"]
    assert len(views) >= 5, [t.name for t in views]          # the chain the scale is shared along
    with np.load(Path(build.path) / "sample_outputs.npz") as eng, np.load(p["reference"]) as ref:
        for t in taps:
            if t.binding != "bound":
                assert t.binding == "uncompared" or t.binding_reason, t
                assert t.name not in eng.files or t.binding == "uncompared", t
                continue
            e = eng[t.name].astype(np.float64)
            assert list(e.shape[1:]) == list(t.shape), (t.name, t.bound_to, e.shape, t.shape)
            if t.name in ref.files:
                r = ref[t.name].astype(np.float64)
                rel = np.linalg.norm(e - r) / max(np.linalg.norm(r), 1e-30)
                # int8 error against torch: far below the ~141 % of another tensor's values
                assert rel < 4 * MAX_REL_ERR, (t.name, t.bound_to, rel)
    # no two taps of different shapes read one engine tensor
    seen: dict[str, list[int]] = {}
    for t in taps:
        if t.binding == "bound" and t.via == "dequantize":
            assert seen.setdefault(t.bound_to, t.shape) == t.shape, (t.name, t.bound_to)
    log = (Path(build.path) / "compile.log").read_text()
    assert "bound by a shared int8 scale to another tensor" in log     # the check caught and rebound


def test_verify_has_no_shape_mismatch_and_gates(built):
    p, build = built
    rep = verify(p["reference"], build.path, save=False, max_mape=1000)
    assert not [r.name for r in rep.rows if r.status == "shape-mismatch"]
    assert rep.exit_code == 0


def test_a_tap_of_another_shape_is_counted_and_fails_the_gate(built, tmp_path):
    p, build = built
    tap = next(t.name for t in build.manifest.taps if t.producer_op == "Reshape" and t.binding == "bound")
    with np.load(p["reference"]) as z:
        arrays = {k: z[k] for k in z.files}
    arrays[tap] = arrays[tap].reshape(arrays[tap].shape[0], -1)      # the reference of another shape
    ref = tmp_path / "ref.npz"
    np.savez(ref, **arrays)
    cli = [sys.executable, "-m", "leapp_lab.cli", "verify", str(ref), str(build.path), "--no-save"]
    plain = subprocess.run(cli, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    assert f"shape mismatches: 1 row not compared" in plain.stdout and tap in plain.stdout
    gated = subprocess.run(cli + ["--max-mape", "1000"], capture_output=True, text=True)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "FAIL: taps whose engine value has another shape" in gated.stdout
