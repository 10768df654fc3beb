"""The typed ONNX of a reduced-precision build: ``compile --engine ort-fp16 --keep-fp32 NODE`` and
``repair --engine ort-fp16`` write engine.onnx with float16 weights and Casts at the kept layers;
onnxruntime runs that very file, and verify judges what it computed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto

from leapp_lab.model.build import BuildReport
from leapp_lab.model.jsonio import load_npz
from leapp_lab.engines.typed_onnx import cast_nodes_at
from tests import oracle
from tests.models.repairs import outlier_mlp

CLI = [sys.executable, "-m", "leapp_lab.cli"]
KEPT = "node_linear_3"          # l3's Gemm: its weight is small (l2's outlier channel divided away)


@pytest.fixture(scope="module")
def model():
    return outlier_mlp()


def _typed_checks(folder: Path, kept: list[str]) -> onnx.GraphProto:
    """engine.onnx of the build: float16 weights except the kept nodes' own, Casts around each kept
    node, float32 at the model's inputs and outputs."""
    assert BuildReport.read(folder).engine_onnx == "engine.onnx"
    g = onnx.load(str(folder / "engine.onnx")).graph
    inits = {i.name: i.data_type for i in g.initializer}
    nodes = {n.name: n for n in g.node}
    kept_weights = {i for k in kept for i in nodes[k].input if i in inits}
    assert kept_weights and {inits[w] for w in kept_weights} == {TensorProto.FLOAT}
    assert {t for w, t in inits.items() if w not in kept_weights} == {TensorProto.FLOAT16}
    m = onnx.load(str(folder / "engine.onnx"))
    for k in kept:
        to = {c.attribute[0].i for c in cast_nodes_at(m, k)}
        # a kept node after another kept one reads its float32 value directly; at the border: Casts
        assert to <= {TensorProto.FLOAT, TensorProto.FLOAT16}
    border = [k for k in kept if cast_nodes_at(m, k)]
    assert border
    assert {v.type.tensor_type.elem_type for v in g.input} == {TensorProto.FLOAT}
    return g


def _run_engine_onnx(folder: Path, npz: Path, name: str) -> np.ndarray:
    """onnxruntime on the build's engine.onnx, every sample of model.npz, as this test runs it."""
    feeds = load_npz(npz)
    s = ort.InferenceSession(str(folder / "engine.onnx"), providers=["CPUExecutionProvider"])
    ins = [i.name for i in s.get_inputs()]
    n = len(feeds[ins[0]])
    return np.stack([s.run([name], {k: feeds[k][i] for k in ins})[0] for i in range(n)])


def test_compile_keep_fp32_writes_a_typed_engine_onnx_that_onnxruntime_runs_and_verify_judges(model, tmp_path):
    out = tmp_path / "b16"
    r = subprocess.run(CLI + ["compile", str(model.onnx), "--engine", "ort-fp16", "--keep-fp32", KEPT,
                              "--out", str(out), "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _typed_checks(out, [KEPT])
    log = (out / "compile.log").read_text()
    assert "typed ONNX by onnxconverter-common" in log and "1 nodes kept in fp32" in log
    # onnxruntime runs that file: its outputs are the build's, bit for bit
    mine = _run_engine_onnx(out, model.npz, "output_0")
    assert np.array_equal(mine, load_npz(out / "sample_outputs.npz")["output_0"])
    # and verify judges them: its nrmse is the one of engine.onnx's outputs against torch
    vj = tmp_path / "v.json"
    r = subprocess.run(CLI + ["verify", str(model.reference), str(out), "--json", str(vj)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    row = next(x for x in json.loads(vj.read_text())["rows"] if x["name"] == "output_0")
    ref = load_npz(model.reference)["output_0"].astype(np.float64)
    want = oracle.nrmse(mine.astype(np.float64), ref)
    assert row["nrmse"] == pytest.approx(want, rel=1e-9)
    # keeping the layer in fp32 changed the engine: the plain fp16 build differs
    plain = tmp_path / "plain"
    r = subprocess.run(CLI + ["compile", str(model.onnx), "--engine", "ort-fp16", "--out", str(plain), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    g = onnx.load(str(plain / "engine.onnx")).graph
    assert {i.data_type for i in g.initializer} == {TensorProto.FLOAT16}
    assert not np.array_equal(mine, load_npz(plain / "sample_outputs.npz")["output_0"])


def test_repair_fp16_final_build_is_a_typed_engine_onnx_with_casts_at_the_chosen_nodes(model, tmp_path):
    plain = tmp_path / "plain"
    subprocess.run(CLI + ["compile", str(model.onnx), "--engine", "ort-fp16", "--out", str(plain), "--quiet"],
                   check=True, capture_output=True)
    before = oracle.nrmse_of_files(plain / "sample_outputs.npz", model.reference, "output_0")
    target = before * 0.95          # reachable: keeping a layer's weights in fp32 lowers the error
    rj = tmp_path / "r.json"
    r = subprocess.run(CLI + ["repair", str(model.reference), str(model.onnx), "--engine", "ort-fp16",
                              "--target-nrmse", repr(target), "--jobs", "1", "--out", str(tmp_path / "runs"),
                              "--json", str(rj), "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(rj.read_text())
    final = Path(rep["final"]["build"])
    kept = BuildReport.read(final).keep_fp32
    assert kept
    _typed_checks(final, kept)
    mine = _run_engine_onnx(final, model.npz, "output_0")
    assert np.array_equal(mine, load_npz(final / "sample_outputs.npz")["output_0"])
    assert oracle.nrmse(mine.astype(np.float64), load_npz(model.reference)["output_0"].astype(np.float64)) <= target
