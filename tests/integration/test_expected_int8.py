"""verify --expected int8 on real int8 builds through real onnxruntime: the expected error that
the engine's own int8 grids explain, checked against an independent computation (the layer of the
prepared model extracted with onnx.utils.extract_model, fake-quantized by hand with the scales
read from engine.onnx, run in onnxruntime fp32), and the judgement that follows."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from leapp_lab.model.jsonio import load_npz
from leapp_lab.steps.compile import compile
from leapp_lab.steps.verify import verify
from tests.integration.test_verify_local import perturbed_build
from tests.models.builds import prepared
from tests import oracle

CLI = [sys.executable, "-m", "leapp_lab.cli"]


@pytest.fixture(scope="module")
def conv():
    return prepared("conv_net", taps=("all",))


@pytest.fixture(scope="module")
def clean8(conv, tmp_path_factory):
    return compile(conv.onnx, "ort-int8", out=tmp_path_factory.mktemp("c") / "model.ort-int8", naive_check=False)


def _fq(x, scale, zp):
    """Round onto the grid (ONNX QuantizeLinear, then DequantizeLinear), by hand in numpy."""
    info = np.iinfo(zp.dtype)
    q = np.clip(np.rint(np.asarray(x, np.float32) / scale) + int(zp), info.min, info.max)
    return ((q - int(zp)) * scale).astype(np.float32)


def _layer(model_onnx: Path, tmp: Path, src: str, dst: str, weights: dict) -> "object":
    """The prepared model's layer from tensor ``src`` to ``dst`` (extract_model), with the
    initializers in ``weights`` replaced, as an onnxruntime fp32 session (optimisations off)."""
    import onnxruntime as ort
    sub = tmp / f"layer-{dst}.onnx"
    onnx.utils.extract_model(str(model_onnx), str(sub), [src], [dst], check_model=False)
    m = onnx.load(str(sub))
    for init in m.graph.initializer:
        if init.name in weights:
            init.CopyFrom(numpy_helper.from_array(weights[init.name], init.name))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def test_clean_int8_build_is_explained_by_its_own_rounding(conv, clean8):
    v = verify(conv.reference, clean8.path, save=False, expected="int8")
    assert v.local and v.expected.dtype == "int8" and v.expected.local
    assert v.expected.factor == pytest.approx(1.05) and v.expected.floor == pytest.approx(1e-3)
    rows = [r for r in v.rows if r.in_rule]
    assert len(rows) == 5
    for r in rows:
        assert r.expected_nrmse > 1e-3 and r.expected_local_nrmse > 1e-3, r.name
        # the rounded model reproduces the S8S8 kernels: the engine's error is its rounding
        assert r.local_excess == pytest.approx(r.local_nrmse / r.expected_local_nrmse, rel=1e-12)
        assert 0.95 < r.local_excess < 1.05, (r.name, r.local_excess)
        assert 0.9 < r.nrmse / r.expected_nrmse < 1.1, r.name
        assert not r.beyond_expected
    assert v.beyond_expected == [] and v.first_beyond_expected is None
    assert v.first_divergent == "stem"          # the plain rule still trips at the first int8 layer
    text = str(v)
    # the finding leads: every row is within int8 rounding although every row crosses the 1 % rule
    assert text.startswith("Every row is within what int8 rounding explains") and v.finding_record().status == "warn"
    assert "largest local excess" in text and "beyond expected int8 drift (local excess" in text


def test_expected_local_nrmse_equals_a_layer_fake_quantized_by_hand(conv, clean8, tmp_path):
    v = verify(conv.reference, clean8.path, save=False, expected="int8")
    ref = load_npz(conv.reference)
    engine = onnx.load(str(Path(clean8.path) / "engine.onnx"))
    g = {i.name: numpy_helper.to_array(i) for i in engine.graph.initializer}
    # the grids, read by hand from the engine's fused kernels: QLinearConv / QGemm name them
    conv2 = next(n for n in engine.graph.node if n.op_type == "QLinearConv" and n.input[3] == "block2.0.weight_quantized")
    gemm = next(n for n in engine.graph.node if n.op_type == "QGemm")
    x_s, x_z, w_s, w_z, y_s, y_z = (g[conv2.input[i]] for i in (1, 2, 4, 5, 6, 7))
    m_s, m_z, h_s, h_z, o_s, o_z = (g[gemm.input[i]] for i in (1, 2, 4, 5, 7, 8))
    prepared_m = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(conv.onnx)).graph.initializer}
    n = ref["stem"].shape[0]

    # block2 = relu(conv(add)): input on add's grid, int8 weights, int32 bias, output on relu_2's grid
    w = _fq(prepared_m["block2.0.weight"], w_s, w_z)
    b_scale = np.float32(x_s * w_s)
    b = (np.rint(prepared_m["block2.0.bias"] / b_scale) * b_scale).astype(np.float32)
    s = _layer(conv.onnx, tmp_path, "add", "relu_2", {"block2.0.weight": w, "block2.0.bias": b})
    got = [_fq(s.run(None, {"add": _fq(ref["block1"][i], x_s, x_z)})[0], y_s, y_z) for i in range(n)]
    assert v.row("block2").expected_local_nrmse == pytest.approx(oracle.nrmse(np.stack(got), ref["block2"]), rel=1e-9)

    # pooled = mean(block2): fp32 ReduceMean of the input on relu_2's grid, output on mean's grid
    s = _layer(conv.onnx, tmp_path, "relu_2", "mean", {})
    got = [_fq(s.run(None, {"relu_2": _fq(ref["block2"][i], y_s, y_z)})[0], m_s, m_z) for i in range(n)]
    assert v.row("pooled").expected_local_nrmse == pytest.approx(oracle.nrmse(np.stack(got), ref["pooled"]), rel=1e-9)

    # output_0 = head(pooled): QGemm's weight and bias grids, output on output_0's grid
    w = _fq(prepared_m["head.weight"], h_s, h_z)
    b_scale = np.float32(m_s * h_s)
    b = (np.rint(prepared_m["head.bias"] / b_scale) * b_scale).astype(np.float32)
    s = _layer(conv.onnx, tmp_path, "mean", "output_0", {"head.weight": w, "head.bias": b})
    got = [_fq(s.run(None, {"mean": _fq(ref["pooled"][i], m_s, m_z)})[0], o_s, o_z) for i in range(n)]
    assert v.row("output_0").expected_local_nrmse == pytest.approx(oracle.nrmse(np.stack(got), ref["output_0"]),
                                                                   rel=1e-9)


def test_a_layer_perturbed_in_the_engine_only_is_beyond_and_ranked_first(conv, tmp_path):
    """block1's weights x 1.03 in the engine's ONNX (the reference untouched): within the plain
    1 % rule and not the largest local error, but the only row beyond its int8 rounding."""
    import shutil
    out = tmp_path / "p"
    out.mkdir()
    m = onnx.load(str(conv.onnx))
    init = next(i for i in m.graph.initializer if i.name == "block1.0.weight")
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(1.03), init.name))
    onnx.save(m, str(out / "model.onnx"))
    shutil.copy(conv.npz, out / "model.npz")
    rep = compile(out / "model.onnx", "ort-int8", out=out / "model.ort-int8", naive_check=False)
    v = verify(conv.reference, rep.path, out=tmp_path / "runs", expected="int8", json_path=tmp_path / "v.json")
    assert v.first_beyond_expected == "block1" and v.beyond_expected == ["block1"]
    assert v.worst_local == "block1" and v.row("block1").local_excess > 1.5
    assert v.first_locally_divergent == "stem"      # what --local alone leads with: int8 rounding
    assert str(v).startswith("Beyond what int8 rounding explains: block1 (its own error is")
    assert v.finding_record().rows[0] == "block1"
    # saved and loaded as computed; the JSON rows and the CSV carry the new fields
    import leapp_lab
    back = leapp_lab.load(v.path)
    assert back.expected.dtype == "int8" and back.expected.local and back.first_beyond_expected == "block1"
    assert [r.local_excess for r in back.rows] == [r.local_excess for r in v.rows]
    rows = json.loads((tmp_path / "v.json").read_text())
    assert rows["expected"]["dtype"] == "int8" and rows["expected"]["factor"] == pytest.approx(1.05)
    assert {"expected_local_nrmse", "local_excess"} <= set(rows["rows"][0])
    head = (Path(v.path) / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "expected_local_nrmse" in head and "local_excess" in head


def test_cli_expected_int8_and_a_build_without_grids(conv, clean8, tmp_path):
    r = subprocess.run([*CLI, "verify", str(conv.reference), str(clean8.path), "--expected", "int8",
                        "--no-save", "--json", str(tmp_path / "v.json")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Every row is within what int8 rounding explains")
    rows = json.loads((tmp_path / "v.json").read_text())
    assert rows["local"] is True and all(x["local_excess"] is not None for x in rows["rows"])
    # an fp32 build has no int8 grids: the verify goes on and says why
    b32 = compile(conv.onnx, "ort", out=tmp_path / "model.ort", naive_check=False)
    v = verify(conv.reference, b32.path, save=False, expected="int8")
    assert v.expected is not None and all(r.expected_local_nrmse is None for r in v.rows)
    assert any("not ort-int8" in w for w in v.warnings)
    assert v.row("stem").expected_note.startswith("the build's engine is ort")


def _bench():
    """bench/bench_expected_int8.py as a module: the test runs a smaller, fixed version of its study."""
    import importlib.util
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_expected_int8.py"
    spec = importlib.util.spec_from_file_location("bench_expected_int8", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def mbv2(tmp_path_factory):
    """tests/models/mobilenet_blocks.py with 6 inverted-residual blocks (a tap after each), 32x32."""
    import leapp_lab
    from tests.models import mobilenet_blocks as mb
    d = tmp_path_factory.mktemp("mbv2")
    leapp_lab.prepare({"model": mb.Model(blocks=6), "samples": mb.get_samples(size=32, n=2)},
                      d / "model.onnx", d / "model.npz", d / "model.reference.npz", debug_taps=["all"])
    return d


TRIALS = 6      # seeds 0..5 of the study: blocks, convs and magnitudes drawn as bench/ draws them


def test_study_the_faulted_block_is_ranked_first_by_local_excess(mbv2, tmp_path):
    """The Must show's study, smaller: one conv of one block perturbed by a few percent of its
    norm (scale, noise, one channel) in the engine's ONNX only, under ort-int8. The largest local
    excess names the faulted block in every trial and it is first beyond expected in >= 80 % of
    them, where the plain ranking (largest local nrmse) does not; the unperturbed build has no
    row beyond expected."""
    bench = _bench()
    clean = compile(mbv2 / "model.onnx", "ort-int8", out=tmp_path / "clean.ort-int8", naive_check=False)
    v = verify(mbv2 / "model.reference.npz", clean.path, save=False, expected="int8")
    assert v.beyond_expected == [] and len([r for r in v.rows if r.local_excess is not None]) == 9
    assert all(0.99 < r.local_excess < 1.01 for r in v.rows if r.local_excess is not None)
    assert v.first_divergent == "stem"            # every int8 engine: rounding crosses the 1 % rule
    rows = [bench.trial(mbv2, tmp_path / "trials", s, 6) for s in range(TRIALS)]
    got = [(r["block"], r["fault"], round(r["excess"], 3), r["worst_excess"], r["first_beyond"]) for r in rows]
    assert all(r["hit_excess"] for r in rows), got
    assert sum(r["hit_first_beyond"] for r in rows) >= 0.8 * TRIALS, got
    # judged by the departure from its own int8 simulation: worst_local AND first beyond, every trial
    assert all(r["hit"] for r in rows), [(r["block"], r["fault"], r["worst_local"], r["first_beyond"]) for r in rows]
    assert {r["kind"] for r in rows} == set(bench.KINDS)
    assert sum(r["hit_local_nrmse"] for r in rows) < TRIALS, got     # what excess adds over local nrmse


def test_a_prepared_onnx_changed_after_prepare_is_checked_and_refused(conv, clean8, tmp_path):
    """The rounded model must be the model of the reference: an ONNX edited after prepare (newer
    than prepare's record) is run in fp32 on the first sample, found to differ, and not used."""
    import shutil
    d = tmp_path / "p"
    shutil.copytree(conv.dir, d)
    build = compile(d / "model.onnx", "ort-int8", naive_check=False)
    v = verify(d / "model.reference.npz", build.path, save=False, expected="int8")
    assert v.row("block1").expected_local_nrmse is not None        # checked in fp32: the same model
    m = onnx.load(str(d / "model.onnx"))
    init = next(i for i in m.graph.initializer if i.name == "block1.0.weight")
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(1.05), init.name))
    onnx.save(m, str(d / "model.onnx"))
    import os
    os.utime(d / "model.onnx")
    v = verify(d / "model.reference.npz", build.path, save=False, expected="int8")
    assert all(r.expected_nrmse is None for r in v.rows)
    w = next(x for x in v.warnings if "no expected int8 error" in x)
    assert "differs from the reference" in w and "not the model of this reference" in w


def test_repair_rank_excess_tries_candidates_by_excess(tmp_path):
    """repair --rank excess: the baseline verified with --expected int8, segments tried one at a
    time in the order of their local excess (one build each), kept when they lower the error."""
    import leapp_lab
    b = prepared("outlier_mlp", taps=("all",))
    r = leapp_lab.repair(b.reference, b.onnx, engine="ort-int8", target_nrmse=0.01, jobs=1, rank="excess",
                         out=tmp_path / "rep")
    assert r.rank == "excess" and set(r.excess) == {s.name for s in r.segments}
    assert all(0.9 < e < 1.1 for e in r.excess.values())       # a clean engine: rounding explains it all
    assert r.met and "l2" in r.chosen and r.builds == len(r.trials) + 2
    assert [t.rank for t in r.ranking()] == list(range(1, len(r.trials) + 1))
    assert "candidates by their local excess" in str(r)
    back = leapp_lab.load(r.path)
    assert back.rank == "excess" and back.excess == r.excess
    with pytest.raises(ValueError, match="--rank"):
        leapp_lab.repair(b.reference, b.onnx, engine="ort-int8", rank="largest")


def test_views_compare_and_diff_show_expected_and_excess(conv, clean8, tmp_path):
    """The widget's view dict, the offline report, the error-growth plot, the accuracy graph, the
    compare view and diff carry the expected local error and the excess where present."""
    import shutil

    import leapp_lab
    from leapp_lab.views.html import to_html
    from leapp_lab.views.viewdict import build_view
    out = tmp_path / "p"
    out.mkdir()
    m = onnx.load(str(conv.onnx))
    init = next(i for i in m.graph.initializer if i.name == "block2.0.weight")
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(0.96), init.name))
    onnx.save(m, str(out / "model.onnx"))
    shutil.copy(conv.npz, out / "model.npz")
    bad = compile(out / "model.onnx", "ort-int8", out=out / "model.ort-int8", naive_check=False)
    a = verify(conv.reference, clean8.path, out=tmp_path / "ra", expected="int8")
    b = verify(conv.reference, bad.path, out=tmp_path / "rb", expected="int8")
    assert b.first_beyond_expected == "block2" and a.beyond_expected == []
    view = build_view(b)
    keys = [c["key"] for c in view["table"]["columns"]]
    assert {"expected_nrmse", "expected_local_nrmse", "local_excess", "beyond_expected"} <= set(keys)
    assert view["finding"]["text"].startswith("Beyond what int8 rounding explains: block2")
    assert view["badges"][0]["label"] == "beyond expected int8" and view["badges"][0]["row"] == "block2"
    prof = view["profile"]
    series = {s["key"]: s for s in prof["series"]}
    assert series["local_excess"]["threshold"] == pytest.approx(1.05)
    assert prof["x"][prof["first_beyond_expected_index"]] == "block2"
    assert series["local_excess"]["y"][prof["x"].index("block2")] == pytest.approx(b.row("block2").local_excess)
    metrics = {m_["key"]: m_ for m_ in view["engine_graph"]["metrics"]}
    assert metrics["local_excess"]["threshold"] == pytest.approx(1.05) and "expected_local_nrmse" in metrics
    html = tmp_path / "b.html"
    to_html(b, html)
    text = html.read_text()
    assert "Beyond what int8 rounding explains" in text and "local_excess" in text
    # compare (two engines, one table) and diff (two runs): both runs' expectations
    c = leapp_lab.verify(conv.reference, [clean8.path, bad.path], out=tmp_path / "rc", expected="int8")
    ckeys = [col["key"] for col in build_view(c)["table"]["columns"]]
    assert "A.local_excess" in ckeys and "B.local_excess" in ckeys and "B.local_excess.ratio" in ckeys
    assert c.sides[1].first_beyond_expected == "block2" and c.sides[0].beyond_expected == []
    d = leapp_lab.diff(a.path, b.path)
    text = str(d)
    assert "beyond what int8 rounding explains in A: nothing" in text
    assert "beyond what int8 rounding explains in B: block2" in text
    row = d.row("block2").changes["B"]["local_excess"]
    assert row.a == pytest.approx(a.row("block2").local_excess) and row.b == pytest.approx(b.row("block2").local_excess)
