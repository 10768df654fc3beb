"""verify --local (teacher-forced local error) on a real conv net through real onnxruntime:
one layer's weights perturbed only in the engine, under ``ort`` and ``ort-int8``; local metrics
checked against an independent computation on an extracted subgraph fed by hand."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from leapp_lab.steps.verify import verify
from leapp_lab.steps.compile import compile
from leapp_lab.model.jsonio import load_npz
from tests.models.builds import prepared
from tests import oracle

CLI = [sys.executable, "-m", "leapp_lab.cli"]


def perturbed_build(b, engine: str, weight: str, out: Path, scale: float = 0.5, seed: int = 0):
    """compile ``engine`` from a copy of the prepared ONNX whose initializer ``weight`` got noise
    of ``scale`` x its std: the engine is wrong at that layer, the reference (torch) is not."""
    out.mkdir(parents=True, exist_ok=True)
    m = onnx.load(str(b.onnx))
    init = next(i for i in m.graph.initializer if i.name == weight)
    w = numpy_helper.to_array(init).copy()
    rng = np.random.default_rng(seed)
    w += rng.standard_normal(w.shape).astype(np.float32) * np.float32(w.std() * scale)
    init.CopyFrom(numpy_helper.from_array(w, weight))
    onnx.save(m, str(out / "model.onnx"))
    shutil.copy(b.npz, out / "model.npz")
    return compile(out / "model.onnx", engine, out=out / f"model.{engine}", naive_check=False)


def _stats(e, r):
    """nrmse, cosine, max |diff| by their definitions (docs/verify.md), in float64."""
    return oracle.nrmse(e, r), oracle.cosine(e, r), oracle.max_abs(e, r)


def _extracted_run(engine_onnx: Path, tmp: Path, inputs: list[str], output: str, feeds) -> np.ndarray:
    """Run the subgraph of the engine between ``inputs`` and ``output`` (onnx.utils.extract_model),
    one sample per feed, with graph optimisations off like the engine."""
    import onnxruntime as ort
    sub = tmp / f"sub-{output.replace('/', '_')}.onnx"
    m = onnx.load(str(engine_onnx))
    # a cut at a tensor between two fused kernels (QLinearAdd, com.microsoft) has no value_info, which
    # extract_model needs: it is declared from the feed itself
    known = {v.name for v in [*m.graph.value_info, *m.graph.input, *m.graph.output]}
    for name in inputs:
        if name not in known:
            a = np.asarray(feeds[0][name])
            m.graph.value_info.append(onnx.helper.make_tensor_value_info(
                name, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)))
    onnx.save(m, str(tmp / "engine-vi.onnx"))
    onnx.utils.extract_model(str(tmp / "engine-vi.onnx"), str(sub), inputs, [output], check_model=False)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(str(sub), so, providers=["CPUExecutionProvider"])
    return np.stack([s.run([output], f)[0] for f in feeds])


def _tensor_of(engine: onnx.ModelProto, tap: str) -> onnx.NodeProto:
    """The node that exposes tap ``tap`` (an Identity or DequantizeLinear leapp_lab added)."""
    return next(n for n in engine.graph.node if tap in n.output)


@pytest.fixture(scope="module")
def conv():
    return prepared("conv_net", taps=("all",))


@pytest.mark.parametrize("layer", ["block1", "block2"])
def test_largest_local_error_is_the_perturbed_layer_under_ort_and_int8(conv, tmp_path, layer):
    weight = f"{layer}.0.weight"
    rep32 = perturbed_build(conv, "ort", weight, tmp_path / "a")
    rep8 = perturbed_build(conv, "ort-int8", weight, tmp_path / "b")
    v32 = verify(conv.reference, rep32.path, save=False, local=True)
    v8 = verify(conv.reference, rep8.path, save=False, local=True)
    taps = [r for r in v8.rows if r.is_tap]
    for v in (v32, v8):
        assert v.local and v.worst_local == layer
        worst = v.row(layer)
        others = [r.local_nrmse for r in v.rows if r.in_rule and r.name != layer]
        assert worst.local_nrmse > 0.1 and worst.local_nrmse > 5 * max(others)
        assert worst.local_share == pytest.approx(1.0, abs=1e-3)
        # the layer after it inherits the error: as large cumulatively, hardly any of it its own
        nxt = next(r for r in v.rows if r.in_rule and r.order > worst.order)
        assert nxt.nrmse > 0.1 and nxt.local_share < 0.1
    # cumulative: fp32 marks the broken layer, int8 its first quantized tap (int8 noise ~1 %)
    assert v32.first_divergent == layer
    assert v8.first_divergent == taps[0].name == "stem"
    # fp32 engine graph, unperturbed layers: exact inputs give (near) exact values
    assert all(r.local_nrmse < 1e-5 for r in v32.rows if r.in_rule and r.name != layer)
    # int8: the layers before it add int8 rounding only (below 2 %). (Those after it may add more:
    # their int8 scales were calibrated on the broken engine's wider ranges.)
    before = [r for r in v8.rows if r.in_rule and r.order < v8.row(layer).order]
    assert before and all(r.local_nrmse < 0.02 for r in before)


def test_local_metrics_equal_an_extracted_subgraph_fed_by_hand_ort(conv, tmp_path):
    rep = perturbed_build(conv, "ort", "block2.0.weight", tmp_path / "a")
    v = verify(conv.reference, rep.path, save=False, local=True)
    ref = load_npz(conv.reference)
    eng_path = Path(rep.path) / "engine.onnx"
    engine = onnx.load(str(eng_path))
    n = ref["stem"].shape[0]
    # row -> the tap upstream of it: feed that tap's reference where the engine has its tensor
    for row, upstream in (("block2", "block1"), ("pooled", "block2"), ("output_0", "pooled")):
        src = _tensor_of(engine, upstream)
        assert src.op_type == "Identity"
        dst = row if row == "output_0" else _tensor_of(engine, row).input[0]
        got = _extracted_run(eng_path, tmp_path, [src.input[0]], dst,
                             [{src.input[0]: ref[upstream][i]} for i in range(n)])
        nrmse, cos, mx = _stats(got, ref[row])
        r = v.row(row)
        assert r.local_nrmse == pytest.approx(nrmse, rel=1e-6)
        assert r.local_cosine == pytest.approx(cos, rel=1e-9, abs=1e-12)
        assert r.local_max_abs == pytest.approx(mx, rel=1e-6)
    assert v.row("block2").local_nrmse > 0.1   # the perturbed layer, seen from exact inputs


def test_local_metrics_equal_an_extracted_subgraph_fed_by_hand_int8(conv, tmp_path):
    """int8: the cut is the quantized tensor the next layer consumes; the hand feed quantizes the
    reference with that tensor's own scale and zero point (ONNX QuantizeLinear: round half to
    even, saturate)."""
    rep = perturbed_build(conv, "ort-int8", "block2.0.weight", tmp_path / "b")
    v = verify(conv.reference, rep.path, save=False, local=True)
    ref = load_npz(conv.reference)
    eng_path = Path(rep.path) / "engine.onnx"
    engine = onnx.load(str(eng_path))
    inits = {i.name: numpy_helper.to_array(i) for i in engine.graph.initializer}
    n = ref["stem"].shape[0]
    checked = 0
    for row, upstream in (("block1", "stem"), ("block2", "block1")):
        dq = _tensor_of(engine, upstream)
        assert dq.op_type == "DequantizeLinear"          # the tap shows the int8 value, dequantized
        q, scale, zp = dq.input[0], inits[dq.input[1]], inits[dq.input[2]]
        info = np.iinfo(zp.dtype)
        feeds = [{q: np.clip(np.rint(ref[upstream][i] / scale) + zp.astype(np.int64), info.min,
                             info.max).astype(zp.dtype)} for i in range(n)]
        got = _extracted_run(eng_path, tmp_path, [q], row, feeds)
        nrmse, cos, mx = _stats(got, ref[row])
        r = v.row(row)
        assert r.local_nrmse == pytest.approx(nrmse, rel=1e-6)
        assert r.local_cosine == pytest.approx(cos, rel=1e-9, abs=1e-12)
        assert r.local_max_abs == pytest.approx(mx, rel=1e-6)
        checked += 1
    assert checked == 2 and v.worst_local == "block2"


def test_op_taps_under_int8_and_fp32(tmp_path):
    """With op taps the perturbed layer owns several rows; the largest local error is one of them.
    Op taps int8 fused away are unbound: no engine value, no local value, and the cut goes on."""
    b = prepared("conv_net", taps=("all",), op=True)
    for engine in ("ort", "ort-int8"):
        rep = perturbed_build(b, engine, "block2.0.weight", tmp_path / engine)
        v = verify(b.reference, rep.path, save=False, local=True, verbose=True)
        worst = v.row(v.worst_local)
        assert worst.scope.startswith("block2"), (engine, v.worst_local)
        for t in rep.taps:
            r = v.row(t.name)
            if t.binding == "unbound":
                assert r.status == "not-in-engine" and r.local_nrmse is None
            else:
                assert r.local_nrmse is not None and r.local_note is None, (engine, t.name, r.local_note)
        assert v.row("output_0").local_nrmse is not None
        if engine == "ort-int8":
            assert any(t.binding == "unbound" for t in rep.taps)
            assert any(t.via == "dequantize" and t.kind == "op" for t in rep.taps)


def test_first_locally_divergent_rule_and_share_on_a_fp16_build(conv, tmp_path):
    """The same DivergenceRule judges local metrics; local_share is local / cumulative nrmse in
    [0, 1]; the saved run keeps every local field, the JSON rows and CSV carry them."""
    rep = perturbed_build(conv, "ort-fp16", "block1.0.weight", tmp_path / "a", scale=0.05)
    v = verify(conv.reference, rep.path, out=tmp_path / "runs", local=True, json_path=tmp_path / "v.json")
    assert v.first_locally_divergent == "block1" and v.row("block1").first_locally_divergent
    for r in v.rows:
        if r.in_rule:
            assert r.locally_diverged == (r.local_nrmse > 0.01 or r.local_cosine < 0.999)
            want = min(1.0, r.local_nrmse / r.nrmse)
            assert r.local_share == pytest.approx(want, rel=1e-12)
    import leapp_lab
    back = leapp_lab.load(v.path)
    assert back.local and back.first_locally_divergent == "block1" and back.worst_local == "block1"
    assert [r.local_nrmse for r in back.rows] == [r.local_nrmse for r in v.rows]
    rows = json.loads((tmp_path / "v.json").read_text())
    assert rows["first_locally_divergent"] == "block1" and rows["local"] is True
    assert {"local_nrmse", "local_cosine", "local_max_abs", "local_share"} <= set(rows["rows"][0])
    csv = (Path(v.path) / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "local_nrmse" in csv and "local_share" in csv
    text = str(v)
    assert "local NRMSE" in text and "first locally divergent" in text and "block1" in text


def test_local_on_a_build_without_engine_graph_or_inputs_says_why(conv, tmp_path):
    rep = compile(conv.onnx, "ort", out=tmp_path / "b", naive_check=False)
    plain = verify(conv.reference, rep.path, save=False)
    assert not plain.local and "local NRMSE" not in str(plain)    # columns only when asked
    (Path(rep.path) / "engine.onnx").unlink()
    v = verify(conv.reference, rep.path, save=False, local=True)
    assert v.exit_code == 0 and v.worst_local is None
    assert any("no local error: the engine graph engine.onnx is not in the build" in w for w in v.warnings)
    assert all(r.local_note and r.local_nrmse is None for r in v.rows if r.status == "compared")
    # same cumulative numbers as without --local
    assert [r.nrmse for r in v.rows] == [r.nrmse for r in plain.rows]


def test_local_says_why_for_an_engine_it_cannot_cut(conv, tmp_path):
    """TensorRT builds are serialized plans: the guard names the engine, the verify goes on."""
    rep = compile(conv.onnx, "ort", out=tmp_path / "b", naive_check=False)
    bj = Path(rep.path) / "build.json"
    d = json.loads(bj.read_text())
    d["engine"] = "trt-fp16"
    bj.write_text(json.dumps(d))
    v = verify(conv.reference, rep.path, save=False, local=True)
    assert v.exit_code == 0 and any("engine 'trt-fp16'" in w and "TensorRT" in w for w in v.warnings)


def test_cli_and_magic_local_flag(conv, tmp_path):
    rep = perturbed_build(conv, "ort", "block2.0.weight", tmp_path / "a")
    r = subprocess.run([*CLI, "verify", conv.reference, rep.path, "--local", "--no-save",
                        "--json", tmp_path / "v.json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "largest local error: block2" in r.stdout
    assert json.loads((tmp_path / "v.json").read_text())["worst_local"] == "block2"
    r = subprocess.run([*CLI, "verify", conv.reference, rep.path, "--expected", "fp64"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "invalid choice: 'fp64'" in r.stderr
    from IPython.core.interactiveshell import InteractiveShell
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    try:
        sh.run_line_magic("load_ext", "leapp_lab")
        got = sh.run_line_magic("leapp_verify", f"{conv.reference} {rep.path} --local --no-save")
    finally:
        InteractiveShell.clear_instance()
    assert got.local and got.worst_local == "block2"


def test_one_engine_run_per_sample_not_per_tap(conv, tmp_path, monkeypatch):
    from leapp_lab.engines import ort_session
    rep = compile(conv.onnx, "ort-int8", out=tmp_path / "b", naive_check=False)
    calls = []
    real = ort_session.OrtRunner._run_impl
    monkeypatch.setattr(ort_session.OrtRunner, "_run_impl",
                        lambda self, feed, names: calls.append(len(names or [])) or real(self, feed, names))
    v = verify(conv.reference, rep.path, save=False, local=True)
    rows = [r for r in v.rows if r.local_nrmse is not None]
    assert len(calls) == v.samples == 2 and len(rows) == 5     # 2 runs give all 5 rows' local values
    assert calls == [len(rows)] * 2


def test_local_on_an_archived_build_equals_the_folder_build(conv, tmp_path):
    folder = perturbed_build(conv, "ort-int8", "block2.0.weight", tmp_path / "a")
    tgz = compile(tmp_path / "a" / "model.onnx", "ort-int8", out=tmp_path / "a" / "model.tgz",
                  archive=True, naive_check=False)
    a = verify(conv.reference, folder.path, save=False, local=True)
    b = verify(conv.reference, tgz.path, save=False, local=True)
    assert b.worst_local == "block2" and not b.warnings
    assert [(r.name, r.local_nrmse, r.local_cosine) for r in a.rows] == \
           [(r.name, r.local_nrmse, r.local_cosine) for r in b.rows]
