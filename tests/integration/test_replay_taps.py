"""Taps over time (issue 20, Deliver 4) on a real LEAPP pipeline.

``tests/pipelines/lstm_tapped_policy.py``: an LSTM joint policy with declared state whose cell is
spelled out with ``tap()`` inside the node (``gates``, ``c_next``, ``h_next``). Replayed on
``ort-int8``, its tapped build (prepare --from-trace + compile) gives the taps at every step; every
cell of the steps × taps grid is recomputed here with onnxruntime from the tapped int8 engine and
the prepared fp32 ONNX, fed by hand the engine's own state (closed loop) or the fp32 export's
(local), as the replay saved them."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import leapp_lab
from deep_pipelines import load_pipeline, trace
from leapp_lab.model.jsonio import load_npz
from tests import oracle

STEPS = 12


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    mod = load_pipeline("lstm_tapped_policy")
    report = trace(mod, tmp_path_factory.mktemp("lstm_taps"))
    res = leapp_lab.replay(report, engine="ort-int8")
    return mod, report, res


def _session(path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return s, [o.name for o in s.get_outputs()]


def test_every_cell_recomputed_from_the_engine_and_the_fp32_onnx(replayed):
    mod, report, res = replayed
    e = res.engine("ort-int8")
    t = e.taps
    assert (t.node, t.tier, t.taps, t.steps) == ("policy", "a", mod.TAPS, list(range(STEPS)))
    assert t.note is None and e.nodes[0].source.startswith("tapped build")
    build = Path(e.nodes[0].build)
    tapped, tapped_out = _session(build / "engine.onnx")
    ref, ref_out = _session(build.parent / "node.onnx")
    bound = {x.name: x.bound_to for x in leapp_lab.load(build).taps}
    arrays = report.graph_arrays(report.graph)
    saved = load_npz(Path(report.graph.run_dir) / "replay.npz")
    zero = np.zeros((1, mod.HIDDEN), np.float32)
    grid, local = np.zeros((STEPS, 3)), np.zeros((STEPS, 3))
    for k in range(STEPS):
        obs = arrays[f"policy/obs/{k}/input"]

        def state(kind):
            if k == 0:
                return zero, zero
            return tuple(saved[f"{kind}/policy/{p}/{k - 1}/{'engine' if kind != 'a' else 'exported'}"]
                         for p in ("h_out", "c_out"))
        h, c = state("ort-int8/a")
        hf, cf = state("a")
        own = dict(zip(tapped_out, tapped.run(None, {"obs": obs, "h_in": h, "c_in": c})))
        teacher = dict(zip(tapped_out, tapped.run(None, {"obs": obs, "h_in": hf, "c_in": cf})))
        fp32 = dict(zip(ref_out, ref.run(None, {"obs": obs, "h_in": hf, "c_in": cf})))
        for j, name in enumerate(mod.TAPS):
            grid[k, j] = oracle.nrmse(own[bound[name]], fp32[name])
            local[k, j] = oracle.nrmse(teacher[bound[name]], fp32[name])
            assert t.max_abs[k][j] == pytest.approx(float(np.max(np.abs(
                own[bound[name]].astype(np.float64) - fp32[name]))), rel=1e-6)
            assert sum(t.hists[k][j].counts) + t.hists[k][j].zero == fp32[name].size
    np.testing.assert_allclose(np.array(t.nrmse, float), grid, rtol=1e-6)
    np.testing.assert_allclose(np.array(t.local_nrmse, float), local, rtol=1e-6)
    # at step 0 both start from the same state; later the closed loop carries its own
    assert t.nrmse[0] == t.local_nrmse[0] and grid[1:].tolist() != local[1:].tolist()
    # the first (step, tap) beyond the rule, in step then model order
    for first, g in ((t.first, grid), (t.first_local, local)):
        i, j = next((i, j) for i in range(STEPS) for j in range(3) if g[i, j] > e.max_nrmse)
        assert first == {"step": i, "tap": mod.TAPS[j]}


def test_the_untapped_engine_drives_the_pipeline(replayed):
    """Taps never change the engine being replayed: the closed loop is the untapped engine's."""
    mod, report, res = replayed
    e = res.engine("ort-int8")
    build = Path(e.nodes[0].build)
    untapped, out = _session(build / "engine.untapped.onnx")
    assert out == ["action", "h_out", "c_out"]
    saved = load_npz(Path(report.graph.run_dir) / "replay.npz")
    arrays = report.graph_arrays(report.graph)
    k = 5
    got = dict(zip(out, untapped.run(None, {"obs": arrays[f"policy/obs/{k}/input"],
                                            "h_in": saved[f"ort-int8/a/policy/h_out/{k - 1}/engine"],
                                            "c_in": saved[f"ort-int8/a/policy/c_out/{k - 1}/engine"]})))
    np.testing.assert_array_equal(got["action"], saved[f"ort-int8/a/policy/action/{k}/engine"])


def test_text_json_dataframe_figure_and_view(replayed):
    mod, report, res = replayed
    t = res.engine("ort-int8").taps
    f = t.first
    assert (f"taps of policy over {STEPS} steps (tier a, 3 taps): first beyond nrmse 0.01 at "
            f"step {f['step']}, tap {f['tap']}") in str(report)
    d = json.loads(json.dumps(res.to_dict()))["engines"][0]["taps"]
    assert d["taps"] == mod.TAPS and d["first"] == f and len(d["nrmse"]) == STEPS
    back = leapp_lab.load(report.graph.run_dir).graph.replay.engine("ort-int8").taps
    assert back.nrmse == t.nrmse and back.first == f
    df = t.to_dataframe()
    assert len(df) == STEPS * 3 and df["first"].sum() == 1
    row = df[df["first"]].iloc[0]
    assert (row["step"], row["tap"]) == (f["step"], f["tap"]) and row["nrmse"] > 0.01
    fig = res.figure("taps", engine="ort-int8")
    assert [list(r) for r in fig.data[0].z] == t.nrmse
    assert (fig.data[1].x[0], fig.data[1].y[0]) == (f["tap"], f["step"])
    lf = res.figure("taps", engine="ort-int8", local=True)
    assert [list(r) for r in lf.data[0].z] == t.local_nrmse
    from leapp_lab.views.viewdict import build_view
    view = build_view(report)
    blob = json.dumps(view)
    assert '"key": "lstm_tapped_policy:ort-int8:taps"' in blob and '"first": {"step": %d, "tap": "%s"}' % (
        f["step"], f["tap"]) in blob


@pytest.mark.parametrize("taps", [["--taps", "all"], []], ids=["node-build-tapped", "untapped-node-build"])
def test_run_with_engine_reuses_the_node_builds(tmp_path, taps, capsys):
    """``leapp-lab run --replay N --engine E`` builds each node (Inside a LEAPP node: prepare
    --from-trace, compile) before the checks. With ``--taps all`` that build has the taps: the replay
    on E runs it and follows the taps with it, instead of building the node a second time. Without,
    the replay makes its own tapped build (the run's progress callback reaches compile, not prepare,
    whose progress takes other arguments)."""
    from leapp_lab.cli import main
    from deep_pipelines import PIPELINES
    js = tmp_path / "run.json"
    rc = main(["run", str(PIPELINES / "lstm_tapped_policy.py"), "--replay", "4", "--engine", "ort-int8", *taps,
               "--json", str(js), "--", str(tmp_path / "out")])
    assert rc == 0
    g = json.loads(js.read_text())["graphs"][0]
    (e,) = g["replay"]["engines"]
    assert e["status"] in ("ok", "diverged"), e["reason"]
    build = Path(g["run_dir"]) / "nodes" / "0" / "build" / "node.ort-int8"
    if taps:
        assert e["nodes"][0]["source"] == "node build (tapped)" and Path(e["nodes"][0]["build"]) == build
        assert not (Path(g["run_dir"]) / "replay_engines").exists()
        # the node's verify (Inside a LEAPP node) breaks its outputs down: the joints by name, the
        # state (no semantics, 16 elements) by index
        v = leapp_lab.load(build.parent / "leapp_lab")
        assert [e.name for e in v.row("action").elements] == load_pipeline("lstm_tapped_policy").JOINTS
        assert v.row("action").meaning == "target/joint/position, rad"
        assert [e.name for e in v.row("h_out").elements] == [f"[{i}]" for i in range(16)]
        assert v.row("h_out").meaning is None and v.elements
        assert all(not r.elements for r in v.taps)
    else:
        assert e["nodes"][0]["source"] == "tapped build (prepare --from-trace, compile)"
        assert "replay_engines" in Path(e["nodes"][0]["build"]).parts
        assert "replay on ort-int8: captured step 4/4" in capsys.readouterr().err
    assert e["taps"]["taps"] == ["gates", "c_next", "h_next"] and len(e["taps"]["steps"]) == 4
    assert e["closed_loop"]["steps"] == 4 and e["status"] in ("ok", "diverged")
