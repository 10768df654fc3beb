"""Inside the nodes on engines, in the same trace (issue 19, Deliver 3 back end, 4 and 5).

``leapp_lab.trace(..., engines=, taps=, local=)``, ``leapp-lab run SCRIPT --engine`` and
``%%leapp_trace --engine``: every exported node prepared from the trace, compiled per engine and
verified tap by tap; the pipeline run on each engine node by node. Real LEAPP and onnxruntime;
TensorRT guarded (no GPU here: ``unavailable`` with the reason). Numbers are recomputed here
from the stored arrays with onnxruntime sessions and float64 formulas.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import leapp_lab
from leapp_lab.cli import main as cli_main
from leapp_lab.model.jsonio import load_npz

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PIPES = HERE.parent / "node_pipelines"
sys.path.insert(0, str(HERE.parent))
from node_pipelines import encoded_policy, tapped_policy  # noqa: E402
from tests import oracle

ENGINE_KEYS = ["engine", "build", "verify_run", "status", "first_divergent", "worst_local", "error"]


def _tensorrt_here() -> str | None:
    """None where TensorRT engines can be built (the 'tensorrt' package and a CUDA GPU visible to
    torch), else why not: the node tests then check the guard instead (D5)."""
    try:
        import tensorrt  # noqa: F401
    except Exception:  # noqa: BLE001
        return "TensorRT is not installable on this machine (NVIDIA's package index is unreachable)"
    import torch
    return None if torch.cuda.is_available() else "TensorRT needs a CUDA GPU visible to torch; none here"


NO_TRT = _tensorrt_here()


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nodeeng")
    seen = []
    with leapp_lab.trace("ep", save_path=str(tmp), engines=["ort", "ort-int8", "trt-fp16"], taps="all",
                         local=True, progress=lambda s, d, t: seen.append((s, d, t)),
                         **encoded_policy.OPTIONS) as t:
        encoded_policy.body()
    return t.report, seen


def test_each_node_gets_one_entry_per_engine_as_the_contract_says(traced):
    rep, seen = traced
    d = json.loads((Path(rep.graph.run_dir) / "report.json").read_text())
    nodes = {n["name"]: n for n in d["graphs"][0]["nodes"]}
    for name in ("encoder", "policy"):
        assert [list(e) for e in nodes[name]["engines"]] == [ENGINE_KEYS] * 3
        assert [e["engine"] for e in nodes[name]["engines"]] == ["ort", "ort-int8", "trt-fp16"]
    assert [t["name"] for t in nodes["policy"]["taps"]] == ["l0", "l1", "l2", "l3"]
    ort, int8, trt = nodes["policy"]["engines"]
    assert ort["status"] == "ok" and ort["first_divergent"] is None and ort["error"] is None
    assert int8["status"] == "diverged"
    # D5: TensorRT is guarded: no GPU / no tensorrt here, said so, nothing built (where it exists:
    # test_tensorrt_node_engine)
    if NO_TRT:
        assert trt["status"] == "unavailable" and "TensorRT" in trt["error"] and trt["build"] is None
        assert trt["verify_run"] is None
    else:
        assert trt["status"] in ("ok", "diverged") and trt["verify_run"], trt
    # progress: one step per node and engine, ending at done == total
    assert seen[-1][1:] == (6, 6) and any("node policy: compile ort-int8" in s for s, _, _ in seen)


def test_verify_runs_are_the_usual_verify_runs_with_the_recorded_references(traced, tmp_path):
    rep, _ = traced
    arrays = rep.arrays()
    entry = next(e for e in rep.graph.node("policy").engines if e.engine == "ort-int8")
    v = leapp_lab.load(entry.verify_run)
    assert v.kind == "verify" and v.local
    assert [r.name for r in v.rows] == ["l0", "l1", "l2", "l3", "action"]        # model order
    assert (entry.first_divergent, entry.worst_local) == (v.first_divergent, v.worst_local)
    # the outlier channel of l2 breaks per-tensor int8 where it is consumed: l3 has the largest
    # local error, by far; l2 itself quantizes fine
    assert v.worst_local == "l3"
    loc = {r.name: r.local_nrmse for r in v.rows}
    assert loc["l3"] > 0.5 and all(loc[k] < 0.05 for k in ("l0", "l1", "l2", "action"))
    # the reference of the output row is what the Python returned while tracing
    ref = load_npz(Path(entry.build).parent / "node.reference.npz")
    for k in range(4):
        np.testing.assert_array_equal(ref["action"][k], arrays[f"policy/action/{k}/recorded"])
    # leapp-lab report renders the verify run
    assert cli_main(["report", entry.verify_run, "-o", str(tmp_path / "v.html")]) == 0
    assert (tmp_path / "v.html").stat().st_size > 1000


def test_pipeline_on_an_engine_node_by_node(traced):
    """Cumulative: policy fed the encoder's int8 outputs; local: fed the recorded latent. Both
    recomputed here with onnxruntime on the builds' engine graphs and nrmse's formula."""
    import onnxruntime as ort
    rep, _ = traced
    g = rep.graph
    arrays = rep.arrays()
    by = {pe.engine: pe for pe in g.pipeline_engines}
    assert list(by) == ["ort", "ort-int8", "trt-fp16"]
    pe = by["ort-int8"]
    assert [(r.node, r.port) for r in pe.nodes] == [("encoder", "latent"), ("policy", "action")]
    builds = {n.name: Path(next(e for e in n.engines if e.engine == "ort-int8").build) for n in g.nodes}
    enc_out = load_npz(builds["encoder"] / "sample_outputs.npz")["latent"]
    sess = ort.InferenceSession(str(builds["policy"] / "engine.onnx"), providers=["CPUExecutionProvider"])
    rec = [arrays[f"policy/action/{k}/recorded"] for k in range(4)]
    cum = [sess.run(["action"], {"latent": enc_out[k]})[0] for k in range(4)]
    loc = [sess.run(["action"], {"latent": arrays[f"policy/latent/{k}/input"]})[0] for k in range(4)]
    row = pe.nodes[1]
    assert row.nrmse == pytest.approx(oracle.nrmse(cum, rec), rel=1e-6)
    assert row.local_nrmse == pytest.approx(oracle.nrmse(loc, rec), rel=1e-6)
    assert row.own_share == pytest.approx(min(1.0, row.local_nrmse / row.nrmse), rel=1e-9)
    enc = pe.nodes[0]
    enc_rec = [arrays[f"encoder/latent/{k}/recorded"] for k in range(4)]
    assert enc.nrmse == enc.local_nrmse == pytest.approx(oracle.nrmse(enc_out, enc_rec), rel=1e-6)   # a graph input
    # the encoder stays under verify's 1 % nrmse limit; the policy does not: it is the node int8 hurts
    assert enc.nrmse < 0.01 < row.nrmse and pe.first_divergent_node == "policy"
    assert by["ort"].first_divergent_node is None and all(r.nrmse < 1e-5 for r in by["ort"].nodes)
    if NO_TRT:
        assert all(r.nrmse is None for r in by["trt-fp16"].nodes)    # no build: no number
    assert "the pipeline on ort-int8, node by node" in str(rep)


def test_run_cli_engines_exit_code_unchanged_and_unusable_options(tmp_path, capsys):
    js = tmp_path / "r.json"
    code = cli_main(["run", str(PIPES / "tapped_policy.py"), "--engine", "ort-int8", "--taps", "hidden",
                     "--local", "--json", str(js), "--quiet", "--", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 0, err                            # a diverged layer is a finding, not a failure
    assert "leapp-lab run: node policy: compile ort-int8" in err
    g = json.loads(js.read_text())["graphs"][0]
    pol = next(n for n in g["nodes"] if n["name"] == "policy")
    (e,) = pol["engines"]
    assert e["engine"] == "ort-int8" and e["status"] in ("ok", "diverged") and e["worst_local"] is not None
    assert [r["name"] for r in leapp_lab.load(e["verify_run"]).to_dict()["rows"]] == ["hidden", "action"]
    assert [p["engine"] for p in g["pipeline_engines"]] == ["ort-int8"]
    assert g["options"]["nodes"] == {"engines": ["ort-int8"], "taps": ["hidden"], "op_taps": False, "local": True}
    # unusable options: exit 2 naming them, before the script runs
    for argv, said in ((["--taps", "all"], "--taps: needs --engine ENGINE"),
                       (["--local", "--op-taps"], "--op-taps --local: needs --engine ENGINE"),
                       (["--engine", "ort-int9"], "--engine ort-int9: unknown engine")):
        code = cli_main(["run", str(PIPES / "tapped_policy.py"), *argv, "--", str(tmp_path / "x")])
        err = capsys.readouterr().err
        assert code == 2 and said in err, (argv, err)
    assert not (tmp_path / "x").exists()


def test_a_node_that_cannot_be_prepared_fails_alone(tmp_path):
    """A tap asked for by name that one node lacks: that node's entries are failed with the reason,
    the other node builds and verifies."""
    with leapp_lab.trace("tp", save_path=str(tmp_path), engines=["ort"], taps=["hidden"],
                         **tapped_policy.OPTIONS) as t:
        tapped_policy.body(steps=3)
    g = t.report.graph
    (norm,) = g.node("normalizer").engines
    (pol,) = g.node("policy").engines
    assert norm.status == "failed" and "debug tap 'hidden': no tap() of that name fired in node 'normalizer'" in norm.error
    assert pol.status == "ok" and pol.verify_run
    assert t.report.graph.verdict == "pass"


def test_api_options_are_checked_before_tracing(tmp_path):
    from leapp_lab.model.errors import InvalidOption
    with pytest.raises(InvalidOption, match="--taps: needs --engine"):
        leapp_lab.trace("x", save_path=str(tmp_path), taps="all")
    with pytest.raises(InvalidOption, match="unknown engine"):
        leapp_lab.trace("x", save_path=str(tmp_path), engines=["nope"])
    assert not any(tmp_path.iterdir())


def test_magic_engines(tmp_path):
    import io
    from contextlib import redirect_stdout

    from IPython.core.interactiveshell import InteractiveShell
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    try:
        with redirect_stdout(io.StringIO()):
            assert sh.run_cell("%load_ext leapp_lab").error_in_exec is None
            assert sh.run_cell(f"import sys; sys.path.insert(0, {str(HERE.parent)!r})\n"
                               f"from node_pipelines import tapped_policy").error_in_exec is None
            res = sh.run_cell(f"%%leapp_trace tpm --save-path {tmp_path} --max-cached-io 2 --engine ort "
                              f"--taps all --local --out rep --quiet\ntapped_policy.body(steps=2)")
        assert res.error_in_exec is None, res.error_in_exec
        g = sh.user_ns["rep"].graph
        (e,) = g.node("policy").engines
        assert e.engine == "ort" and e.status == "ok" and e.worst_local in ("hidden", "body_act", "action")
        with redirect_stdout(io.StringIO()):
            res = sh.run_cell(f"%%leapp_trace tpm --save-path {tmp_path} --local\ntapped_policy.body(steps=2)")
        assert "--local: needs --engine ENGINE" in str(res.error_in_exec)
    finally:
        InteractiveShell.clear_instance()


# -- the trace view: a Layers panel per node and engine, the pipeline table (D3 / D4 front end) ----

def test_trace_view_embeds_each_nodes_verify_view_as_its_layers(traced):
    """nodes[NAME].layers: one entry per engine; its view is the verify view of the entry's verify
    run, drawn by the verify view's own renderer (the same rows, badges, profile and graph)."""
    from leapp_lab.views.verify_view import verify_view
    from leapp_lab.views.viewdict import build_view
    rep, _ = traced
    vd = build_view(rep)
    ids = [t["id"] for t in vd["tabs"]]
    assert ids[ids.index("log") + 1:ids.index("log") + 3] == ["layers", "pipeline"]
    layers = vd["nodes"]["policy"]["layers"]
    assert [x["engine"] for x in layers] == ["ort", "ort-int8", "trt-fp16"]
    ort, int8, trt = layers
    entry = next(e for e in rep.graph.node("policy").engines if e.engine == "ort-int8")
    own = verify_view(leapp_lab.load(entry.verify_run))
    lv = int8["view"]
    assert lv["kind"] == "verify" and lv["title"].startswith("Layers of policy on ort-int8 · ")
    assert {k: v for k, v in lv.items() if k != "title"} == {k: v for k, v in own.items() if k != "title"}
    assert [r["id"] for r in lv["table"]["rows"]] == ["l0", "l1", "l2", "l3", "action"]       # model order
    assert lv["table"]["first_divergent"] == int8["first_divergent"] == entry.first_divergent
    assert int8["worst_local"] == "l3"
    local = next(b for b in lv["badges"] if b["label"] == "largest local error")
    assert local["value"] == local["row"] == "l3"
    assert lv["engine_graph"] is not None and lv["profile"]["x"] == ["l0", "l1", "l2", "l3", "action"]
    assert ort["status"] == "ok" and ort["view"]["table"]["first_divergent"] is None
    if NO_TRT:
        assert trt["view"] is None and "TensorRT" in trt["omitted"]
    else:
        assert trt["view"]["kind"] == "verify" and trt["omitted"] is None
    # the pipeline table: pipeline order, the first divergent node marked
    (pe,) = [p for p in vd["pipeline_engines"] if p["engine"] == "ort-int8"]
    assert [(r["node"], r["port"], r["first_divergent"]) for r in pe["nodes"]] == [
        ("encoder", "latent", False), ("policy", "action", True)]
    assert pe["first_divergent_node"] == "policy"


def test_layers_views_are_size_bounded(traced, monkeypatch, tmp_path):
    """One embedded view above MAX_LAYERS_BYTES keeps each row's histogram over all samples only;
    past the whole trace's budget a view is left out with the command that opens it, and the
    offline report still renders."""
    from leapp_lab.views import trace_layers
    from leapp_lab.views.html import to_html
    from leapp_lab.views.viewdict import build_view
    rep, _ = traced
    full = build_view(rep)["nodes"]["policy"]["layers"][1]["view"]
    small = trace_layers._only_overall(full)
    assert trace_layers._size(small) < trace_layers._size(full)
    monkeypatch.setattr(trace_layers, "MAX_LAYERS_BYTES", (trace_layers._size(small) + trace_layers._size(full)) // 2)
    lv = build_view(rep)["nodes"]["policy"]["layers"][1]["view"]
    assert [len(r["samples"]) for r in lv["table"]["rows"]] == [1] * 5
    assert lv["table"]["rows"][3]["samples"][0]["key"] == "all" and "per-sample histograms left out" in lv["notes"][-1]
    monkeypatch.setattr(trace_layers, "MAX_TOTAL_BYTES", 1000)
    vd = build_view(rep)
    for name in ("encoder", "policy"):
        for e in vd["nodes"][name]["layers"]:
            assert e["view"] is None
    assert "too large to embed here; open it: leapp-lab report " in vd["nodes"]["policy"]["layers"][1]["omitted"]
    html = to_html(rep, tmp_path / "t.html")
    assert (tmp_path / "t.html").stat().st_size > 1000 and html


def test_layers_find_the_verify_run_in_a_moved_run_folder(traced, tmp_path):
    import shutil

    from leapp_lab.views.trace_layers import _located
    rep, _ = traced
    entry = next(e for e in rep.graph.node("policy").engines if e.engine == "ort-int8")
    moved = tmp_path / "moved"
    shutil.copytree(rep.graph.run_dir, moved)
    gone = "/nowhere/else" + entry.verify_run[entry.verify_run.index("/nodes/"):]
    assert _located(gone, str(moved)) == moved / entry.verify_run[entry.verify_run.index("/nodes/") + 1:]
    assert _located(gone, str(tmp_path)) is None and _located(None, str(moved)) is None


@pytest.mark.parametrize("name,rc", [("frozen_item", 1), ("crash_midtrace", 2)])
def test_run_exit_codes_are_the_same_with_engines(name, rc, tmp_path, capsys):
    """A failed validation exits 1 and a script that raises exits 2, with or without --engine; the
    nodes of a compiled graph still get their engine entries."""
    script = str(HERE.parent / "pipelines" / f"{name}.py")
    plain = cli_main(["run", script, "--quiet", "--", str(tmp_path / "a")])
    js = tmp_path / "r.json"
    with_engine = cli_main(["run", script, "--engine", "ort", "--quiet", "--json", str(js), "--", str(tmp_path / "b")])
    capsys.readouterr()
    assert plain == with_engine == rc
    g = json.loads(js.read_text())["graphs"][0]
    assert (g["status"] == "compiled") == (name == "frozen_item")
    if g["status"] == "compiled":
        assert [[e["engine"] for e in n["engines"]] for n in g["nodes"] if n["backend"]] == [["ort"]]


def test_tensorrt_node_engine(tmp_path):
    """D5 where TensorRT exists: a traced node built for trt-fp32 and trt-fp16, verified tap by tap
    against the recorded Python values, and the pipeline run on it node by node."""
    if NO_TRT:
        pytest.skip(NO_TRT)
    with leapp_lab.trace("tp", save_path=str(tmp_path), engines=["trt-fp32", "trt-fp16"], taps="all",
                         local=True, **tapped_policy.OPTIONS) as t:
        tapped_policy.body()
    g = t.report.graph
    fp32, fp16 = g.node("policy").engines
    assert fp32.status == "ok" and fp32.error is None, fp32
    assert fp16.status in ("ok", "diverged") and fp16.verify_run, fp16
    v = leapp_lab.load(fp32.verify_run)
    assert [r.name for r in v.rows] == ["hidden", "body_act", "action"]
    assert all(r.nrmse < 1e-3 for r in v.rows)
    by = {pe.engine: pe for pe in g.pipeline_engines}
    assert all(r.nrmse is not None and r.nrmse < 1e-3 for r in by["trt-fp32"].nodes)
    assert all(r.nrmse is not None for r in by["trt-fp16"].nodes)
