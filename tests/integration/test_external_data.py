"""Models above protobuf's 2 GiB bound: prepare writes the weights as external data beside the
ONNX, compile reads them by path (its graphs never hold a weight) and verify works on the build.
The size bound is lowered through LEAPP_LAB_EXTERNAL_DATA_MIB so that a small model takes the
same path (bench/bench_scale.py runs a real one above 2 GiB)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from torch import nn

import leapp_lab
from leapp_lab.onnxio.weights import EXTERNAL_DATA_ENV


class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 256)
        self.b = nn.Linear(256, 32)

    def forward(self, x):
        return {"y": self.b(torch.relu(self.a(x)))}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    d = tmp_path_factory.mktemp("ext")
    torch.manual_seed(0)
    samples = [(torch.randn(2, 64),) for _ in range(3)]
    p = {"onnx": d / "m.onnx", "npz": d / "m.npz", "reference": d / "m.reference.npz"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(EXTERNAL_DATA_ENV, "0.02")          # 20 KiB: the 64 KiB weight goes external
        leapp_lab.prepare({"model": Wide().eval(), "samples": samples}, p["onnx"], p["npz"], p["reference"],
                          op_taps=True)
    return p


def test_prepare_writes_the_weights_beside_the_model(prepared):
    onnx_p = prepared["onnx"]
    data = onnx_p.with_name("m.onnx.data")
    assert data.is_file() and data.stat().st_size >= 64 * 256 * 4
    assert onnx_p.stat().st_size < 16 * 1024
    m = onnx.load(str(onnx_p), load_external_data=False)
    ext = [t.name for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert ext and all(dict((e.key, e.value) for e in t.external_data)["location"] == "m.onnx.data"
                       for t in m.graph.initializer if t.name in ext)


def test_without_the_bound_the_model_is_one_file(tmp_path):
    samples = [(torch.randn(2, 64),) for _ in range(2)]
    onnx_p = tmp_path / "m.onnx"
    leapp_lab.prepare({"model": Wide().eval(), "samples": samples}, onnx_p, tmp_path / "m.npz",
                      tmp_path / "m.reference.npz")
    assert not onnx_p.with_name("m.onnx.data").exists()
    assert onnx_p.stat().st_size > 64 * 256 * 4


@pytest.mark.parametrize("engine", ["ort", "ort-int8"])
def test_compile_and_verify_read_external_data_by_path(prepared, engine, tmp_path):
    out = tmp_path / f"m.{engine}"
    build = leapp_lab.compile(prepared["onnx"], engine, out=out, naive_check=False)
    files = sorted(p.name for p in out.iterdir())
    assert "engine.weights" in files and not [f for f in files if f.startswith(".")], files
    # the engine graphs hold no weight: onnxruntime reads them from engine.weights
    assert (out / "engine.onnx").stat().st_size < 16 * 1024
    rep = leapp_lab.verify(prepared["reference"], build.path, save=False, max_mape=5 if engine == "ort" else 50)
    assert rep.exit_code == 0, str(rep)
    if engine == "ort":
        assert rep.row("y").mape < 1e-3
    local = leapp_lab.verify(prepared["reference"], build.path, save=False, local=True)
    assert local.row("y").status == "compared"
    with np.load(Path(build.path) / "sample_outputs.npz") as z:
        assert z["y"].shape == (3, 2, 32)
