"""verify --expected int8: the engine against its own int8 simulation (the prepared model rounded
onto the engine's grids), on real int8 builds through real onnxruntime. Clean builds of four
architectures depart nowhere; a fault of a few percent in one layer of a transformer departs there;
the simulation's values equal an independent computation (fake-quantized by hand with the scales
read from engine.onnx) for a MatMul, a LayerNorm and a Softmax row; an fp32 export that differs
from torch is named as such; a damaged engine.onnx is unusable input."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import leapp_lab
from leapp_lab.model.jsonio import load_npz
from leapp_lab.steps.compile import compile
from leapp_lab.steps.verify import verify
from tests import oracle
from tests.models.builds import prepared

CLI = [sys.executable, "-m", "leapp_lab.cli"]


def _bench():
    import importlib.util
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_expected_int8.py"
    spec = importlib.util.spec_from_file_location("bench_expected_int8", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _vit(d: Path, layers: int, hidden: int, op: bool = False) -> Path:
    from tests.models import vit_blocks as vb
    d.mkdir(parents=True, exist_ok=True)
    leapp_lab.prepare({"model": vb.Model(layers=layers, d=hidden, size=16), "samples": vb.get_samples(size=16, n=2)},
                      d / "model.onnx", d / "model.npz", d / "model.reference.npz", debug_taps=["all"], op_taps=op)
    return d


@pytest.fixture(scope="module")
def vit_op(tmp_path_factory):
    """A 2-layer ViT (hidden 48) with op taps: a row at every MatMul, LayerNorm and Softmax."""
    d = _vit(tmp_path_factory.mktemp("vit-op"), 2, 48, op=True)
    return d, compile(d / "model.onnx", "ort-int8", out=d / "model.ort-int8", naive_check=False)


def _clean_verdict(ref: Path, build: Path):
    v = verify(ref, build, save=False, expected="int8")
    judged = [r for r in v.rows if r.in_rule]
    assert v.expected.sim and v.expected.sim_factor == pytest.approx(0.1)
    assert all(r.sim_excess is not None for r in judged), [(r.name, r.sim_note) for r in judged]
    assert v.beyond_expected == [] and not any(r.departs_sim for r in judged)
    return v, max(r.sim_excess for r in judged)


@pytest.mark.parametrize("name,op", [("conv_net", False), ("mlp_policy", True), ("recurrent_policy", False),
                                     ("recurrent_policy", True)])
def test_clean_builds_do_not_depart_from_their_simulation(name, op, tmp_path):
    """A conv net, an MLP actor and a recurrent policy (GRU, LSTM, SiLU, Tanh), manual and op taps:
    no row departs, and the engine equals its simulation on every row."""
    b = prepared(name, taps=("all",), op=op)
    build = compile(b.onnx, "ort-int8", out=tmp_path / "b.ort-int8", naive_check=False)
    v, top = _clean_verdict(b.reference, build.path)
    assert top < 0.05, top
    assert "departs from its own int8 simulation at: no row" in str(v)


def test_clean_transformer_does_not_depart_and_matches_the_kernels_by_hand(vit_op, tmp_path):
    """The ViT's clean build departs nowhere, and the simulation's value of a MatMul, a LayerNorm
    and a Softmax row is that layer fake-quantized by hand in numpy, with the scales and zero
    points read from the engine's own kernels in engine.onnx, from the reference at its input."""
    d, build = vit_op
    v, top = _clean_verdict(d / "model.reference.npz", build.path)
    assert top < 0.05
    ref = load_npz(d / "model.reference.npz")
    eng = onnx.load(str(Path(build.path) / "engine.onnx"))
    init = {i.name: numpy_helper.to_array(i) for i in eng.graph.initializer}
    nodes = list(eng.graph.node)
    prep = onnx.load(str(d / "model.onnx"))
    prep_w = {i.name: numpy_helper.to_array(i) for i in prep.graph.initializer}
    prod = {o: n for n in prep.graph.node for o in n.output}

    def fq(x, s, z):
        info = np.iinfo(np.asarray(z).dtype)        # int8 activations and weights; a bias may be int32
        q = np.clip(np.rint(np.asarray(x, np.float64) / np.float64(s)) + int(z), info.min, info.max)
        return ((q - int(z)) * np.float64(s)).astype(np.float32)

    def grid_of(tensor):       # (scale, zero point) of a tensor's int8 form, read off the kernels
        q = tensor + "_QuantizeLinear_Output"
        for n in nodes:
            if n.op_type == "QuantizeLinear" and n.output[0] == q:
                return init[n.input[1]], init[n.input[2]]
            if n.op_type == "DequantizeLinear" and n.input[0] == q:
                return init[n.input[1]], init[n.input[2]]
            if n.op_type.startswith("QLinear") and n.output[0] == q:
                k = {"QLinearSoftmax": 3}.get(n.op_type, 6)
                return init[n.input[k]], init[n.input[k + 1]]
        raise AssertionError(f"no grid for {tensor}")

    def check(row, value):
        assert v.row(row).expected_local_nrmse == pytest.approx(oracle.nrmse(value, ref[row]), rel=1e-6), row
        assert v.row(row).sim_local_nrmse < 1e-3 * oracle.nrmse(value, ref[row]) + 1e-12, row

    # a MatMul row (fc1 of layer 1, before its bias): input on layer_norm_3's grid, int8 weight
    mm = next(t for t in ("val_81",) if t in ref)
    x_name, w_name = prod[mm].input
    wn = next(n for n in nodes if n.op_type == "QLinearMatMul" and n.input[3] == w_name + "_quantized")
    w = fq(prep_w[w_name], init[wn.input[4]], init[wn.input[5]])
    xs, xz = grid_of(x_name)
    ys, yz = grid_of(mm)
    check(mm, np.stack([fq(fq(ref[x_name][i], xs, xz).astype(np.float64) @ w, ys, yz) for i in range(2)]))

    # a LayerNorm row: input on add_3's grid, weight and bias as the engine stores them (int8)
    ln = "layer_norm_3"
    x_name, g_name, b_name = prod[ln].input
    gs, gz = next((init[n.input[1]], init[n.input[2]]) for n in nodes if n.op_type == "DequantizeLinear"
                  and n.input[0] == g_name + "_quantized")
    bs, bz = next((init[n.input[1]], init[n.input[2]]) for n in nodes if n.op_type == "DequantizeLinear"
                  and n.input[0] == b_name + "_quantized")
    gamma, beta = fq(prep_w[g_name], gs, gz).astype(np.float64), fq(prep_w[b_name], bs, bz).astype(np.float64)
    xs, xz = grid_of(x_name)
    ys, yz = grid_of(ln)

    def layer_norm(x):
        x = fq(x, xs, xz).astype(np.float64)
        mu = x.mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * gamma + beta
    check(ln, np.stack([fq(layer_norm(ref[x_name][i]), ys, yz) for i in range(2)]))

    # a Softmax row: input on mul_1's grid; onnxruntime's QLinearSoftmax stores round(p * floor(1/s))
    sm = "softmax_1"
    (x_name,) = prod[sm].input
    xs, xz = grid_of(x_name)
    ys, yz = grid_of(sm)

    def softmax(x):
        x = fq(x, xs, xz).astype(np.float64)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True) * np.floor(np.float32(1) / np.float32(ys)) * np.float64(ys)
    check(sm, np.stack([fq(softmax(ref[x_name][i]), ys, yz) for i in range(2)]))


def test_transformer_study_the_faulted_layer_departs_from_its_simulation(tmp_path):
    """The Must show's transformer study, smaller (4 encoder layers, hidden 48, 6 seeded trials
    through bench/bench_expected_int8.py's own trial): one MatMul weight of one layer perturbed by a
    few percent in the engine's ONNX only; the faulted layer is worst_local and
    first_beyond_expected in every trial, and the finding says where the engine departs."""
    bench = _bench()
    d = _vit(tmp_path / "vit", 4, 48)
    rows = [bench.trial(d, tmp_path / "trials", s, 4, model="vit_blocks") for s in range(6)]
    got = [(r["block"], r["weight"], r["fault"], r["worst_local"], r["first_beyond"]) for r in rows]
    assert all(r["hit"] for r in rows), got
    assert {r["kind"] for r in rows} == set(bench.KINDS)
    assert all(r["sim_local"] > 1e-3 for r in rows)


def test_an_fp32_export_that_differs_from_torch_leads_the_finding(tmp_path):
    """The prepared ONNX itself departs from the reference at block1 (an export-side fault, made
    here by editing its weight after prepare): the finding leads with that row, not an int8 effect,
    and names the verify of an ort build; no row is called within int8 rounding."""
    b = prepared("conv_net", taps=("all",))
    d = tmp_path / "p"
    shutil.copytree(b.dir, d)
    build = compile(d / "model.onnx", "ort-int8", naive_check=False)
    m = onnx.load(str(d / "model.onnx"))
    init = next(i for i in m.graph.initializer if i.name == "block1.0.weight")
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(1.05), init.name))
    onnx.save(m, str(d / "model.onnx"))
    os.utime(d / "model.onnx")
    v = verify(d / "model.reference.npz", build.path, save=False, expected="int8", json_path=tmp_path / "v.json")
    assert v.export_differs is not None and v.export_differs.row == "block1"
    text = str(v)
    assert text.startswith("The fp32 export already differs from torch at block1 (nrmse")
    assert "not an int8 effect" in text and "--engine ort" in text
    assert "within what int8 rounding explains" not in text
    assert v.finding_record().rows[0] == "block1" and v.finding_record().status == "fail"
    assert json.loads((tmp_path / "v.json").read_text())["export_differs"]["row"] == "block1"


@pytest.mark.parametrize("damage", ["truncated", "zero scale", "nan scale"])
def test_a_damaged_engine_is_unusable_input_naming_the_file(damage, tmp_path):
    b = prepared("conv_net", taps=("all",))
    build = compile(b.onnx, "ort-int8", out=tmp_path / "b.ort-int8", naive_check=False)
    engine = Path(build.path) / "engine.onnx"
    if damage == "truncated":
        with open(engine, "r+b") as f:
            f.truncate(engine.stat().st_size // 2)
    else:
        m = onnx.load(str(engine))
        scale = next(i for i in m.graph.initializer if i.name.endswith("_scale") and len(i.dims) == 0)
        scale.CopyFrom(numpy_helper.from_array(np.array(0.0 if damage == "zero scale" else np.nan, np.float32),
                                               scale.name))
        onnx.save(m, str(engine))
    r = subprocess.run([*CLI, "verify", str(b.reference), str(build.path), "--expected", "int8", "--no-save"],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert str(engine) in r.stderr and "compile it again" in r.stderr
