"""Replay on the engine you ship (issue 20, parts 2 and 3), on a real LEAPP pipeline.

``tests/pipelines/lstm_joint_policy.py``: an LSTM joint policy with declared state (``h``, ``c``)
exported to ONNX. The pipeline's node is built for ``ort`` and ``ort-int8`` and replayed closed loop
beside the fp32 export, over the captured trajectory and over fresh observations with a reset.
Every number that matters is recomputed here from the stored arrays, and the teacher-forced run from
an onnxruntime session of the engine the replay built, fed the fp32 state by hand."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import leapp_lab
from deep_pipelines import load_pipeline, trace
from leapp_lab.model.jsonio import load_npz
from tests import oracle

STEPS = 20


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    mod = load_pipeline("lstm_joint_policy")
    report = trace(mod, tmp_path_factory.mktemp("lstm"))
    res = leapp_lab.replay(report, steps=STEPS, step_fn=mod.Original(), resets=[12], engine=["ort", "ort-int8"])
    return mod, report, res


def test_fp32_replay_is_clean_and_engines_are_listed(replayed):
    _, report, res = replayed
    assert (res.status, res.closed_loop.status, res.fresh.status) == ("ok", "ok", "ok")
    assert [e.engine for e in res.engines] == ["ort", "ort-int8"]
    d = json.loads(json.dumps(res.to_dict()))
    for e in d["engines"]:
        assert {"engine", "status", "reason", "closed_loop", "fresh"} <= set(e)
        for run in (e["closed_loop"], e["fresh"]):
            assert "not_comparable" in run
            for o in run["outputs"]:
                assert {"first_fail_step", "growth_per_step", "own_error_max", "inherited_error_max"} <= set(o)
    assert "not_comparable" in d["closed_loop"] and "not_comparable" in d["fresh"]
    # the section on disk is the same, loadable from the run folder alone
    back = leapp_lab.load(report.graph.run_dir).graph.replay
    assert [e.engine for e in back.engines] == ["ort", "ort-int8"]
    assert back.engine("ort-int8").closed_loop.rows[5].own_error == res.engine("ort-int8").closed_loop.rows[5].own_error


def test_ort_fp32_engine_follows_the_export(replayed):
    _, _, res = replayed
    e = res.engine("ort")
    assert e.status == "ok" and [n.runs_on for n in e.nodes] == ["ort"]
    for run in e.runs():
        assert max(r.fp32_max_abs for r in run.rows) < 1e-5
        assert all(r.passed for r in run.rows)


def test_int8_drift_grows_through_the_state_and_is_named(replayed):
    _, report, res = replayed
    e = res.engine("ort-int8")
    a = e.closed_loop
    act = next(o for o in a.outputs if o.output == "policy/action")
    rows = [r for r in a.rows if r.output == "policy/action"]
    # growth per step: the least-squares slope of log max|diff| over the steps, recomputed
    ks = np.array([r.step for r in rows], float)
    b = np.polyfit(ks, np.log(np.maximum([r.max_abs for r in rows], 0.1 * res.atol)), 1)[0]
    assert act.growth_per_step == pytest.approx(float(np.exp(b)), rel=1e-9)
    assert act.growth_per_step > 1.01 and act.trend in ("grows", "saturates")
    # the last steps carry more error than the first; most of it is inherited through the state
    assert np.mean([r.max_abs for r in rows[-4:]]) > 2 * np.mean([r.max_abs for r in rows[:4]])
    assert act.inherited_error_max > act.own_error_max
    assert np.mean([r.inherited_error for r in rows[-4:]]) > np.mean([r.own_error for r in rows[-4:]])
    note = next(n for n in a.notes if n.startswith("policy/action"))
    assert "state-carried" in note and "own error" in note and "inherited" in note
    assert act.worst_element in load_pipeline("lstm_joint_policy").JOINTS and f"worst element {act.worst_element}" in note


def test_own_and_inherited_error_recomputed_from_the_engine_itself(replayed):
    """Teacher forcing by hand: the int8 engine the replay built, run with onnxruntime on the recorded
    observation and the fp32 export's state of the step before; own = |that − fp32|,
    inherited = |closed loop − that|."""
    import onnxruntime as ort

    _, report, res = replayed
    e = res.engine("ort-int8")
    arrays = report.graph_arrays(report.graph)
    saved = load_npz(Path(report.graph.run_dir) / "replay.npz")
    art = Path(e.nodes[0].build) / "engine.untapped.onnx"
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(art), so, providers=["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    rows = {(r.output, r.step): r for r in e.closed_loop.rows}
    for k in (0, 5, STEPS - 1):
        h = np.zeros((1, 32), np.float32) if k == 0 else saved[f"a/policy/h_out/{k - 1}/exported"]
        c = np.zeros((1, 32), np.float32) if k == 0 else saved[f"a/policy/c_out/{k - 1}/exported"]
        got = dict(zip(outs, sess.run(None, {"obs": arrays[f"policy/obs/{k}/input"], "h_in": h, "c_in": c})))
        fp32 = saved[f"a/policy/action/{k}/exported"]
        closed = saved[f"ort-int8/a/policy/action/{k}/engine"]
        r = rows[("policy/action", k)]
        tf = np.asarray(got["action"], np.float64)
        assert r.own_error == pytest.approx(float(np.max(np.abs(tf - fp32))), rel=1e-6, abs=1e-9)
        assert r.inherited_error == pytest.approx(float(np.max(np.abs(np.asarray(closed, np.float64) - tf))),
                                                  rel=1e-6, abs=1e-9)
        ref = np.asarray(arrays[f"policy/action/{k}/recorded"], np.float64)
        d = np.asarray(closed, np.float64) - ref
        assert r.max_abs == pytest.approx(float(np.max(np.abs(d))), rel=1e-12)
        assert r.nrmse == pytest.approx(oracle.nrmse(np.asarray(closed, np.float64), ref), rel=1e-9)
        assert r.passed == bool(r.nrmse <= e.max_nrmse)
    assert rows[("policy/action", 0)].inherited_error == 0.0       # the same initial state


def test_fresh_sequence_resets_both_sides_and_compares_with_the_original(replayed):
    _, report, res = replayed
    f = res.engine("ort-int8").fresh
    assert f.steps == STEPS and f.resets == [12]
    saved = load_npz(Path(report.graph.run_dir) / "replay.npz")
    r12 = next(r for r in f.rows if (r.output, r.step) == ("policy/action", 12))
    assert r12.reset and r12.inherited_error == 0.0      # both pipelines restarted from the initial state
    orig = saved["b/policy/action/7/original"]
    eng = saved["ort-int8/b/policy/action/7/engine"]
    r7 = next(r for r in f.rows if (r.output, r.step) == ("policy/action", 7))
    assert r7.max_abs == pytest.approx(float(np.max(np.abs(eng.astype(np.float64) - orig))), rel=1e-12)


def test_a_second_replay_reuses_the_builds(replayed):
    mod, report, _ = replayed
    res = leapp_lab.replay(report, steps=3, engine="ort-int8")
    e = res.engine("ort-int8")
    assert [n.source for n in e.nodes] == ["reused"] and e.closed_loop.steps == 3


def test_long_runs_show_progress_step_by_step(replayed):
    """Deliver 6: every step of every sequence reports (stage, done, total), the fp32 replay's and the
    engine's, in order."""
    mod, report, _ = replayed
    seen = []
    leapp_lab.replay(report, steps=5, step_fn=mod.Original(), resets=[3], engine="ort-int8",
                     progress=lambda stage, done, total: seen.append((stage, done, total)))
    for what in ("replay: captured step", "replay: fresh step", "replay on ort-int8: captured step",
                 "replay on ort-int8: fresh step"):
        got = [(d, t) for s, d, t in seen if s.startswith(what + " ")]
        assert got == [(k, 5) for k in range(5)], (what, seen)
        assert [s for s, _, _ in seen if s.startswith(what + " ")][-1] == f"{what} 5/5"
    assert any(s == "replay: building the pipeline for ort-int8" for s, _, _ in seen)


def test_figures_from_the_api(replayed):
    _, _, res = replayed
    fig = res.figure("split", engine="ort-int8", output="policy/action", tier="a")
    own, inh = fig.data
    rows = [r for r in res.engine("ort-int8").closed_loop.rows if r.output == "policy/action"]
    assert list(own.y) == [r.own_error for r in rows] and list(inh.y) == [r.inherited_error for r in rows]
    fig = res.figure("error", engine="ort-int8", tier="b")
    assert any(t.name == "policy/action" for t in fig.data)
    bars = res.figure("elements", engine="ort-int8", output="policy/action", tier="a").data[0]
    assert len(bars.x) == 6
    with pytest.raises(KeyError, match="no output"):
        res.figure("split", engine="ort-int8", output="policy/nothing")
    df = res.to_dataframe()
    assert set(df["engine"]) == {"fp32 export", "ort", "ort-int8"}
    assert {"own_error", "inherited_error", "fp32_max_abs"} <= set(df.columns)


def test_unknown_engine_is_refused_by_name(replayed):
    _, report, _ = replayed
    with pytest.raises(ValueError, match="unknown engine 'ort-int4'"):
        leapp_lab.replay(report, engine="ort-int4")


def test_run_cli_replays_on_the_engine_and_writes_the_contract(tmp_path, capsys):
    from leapp_lab.cli import main
    from deep_pipelines import PIPELINES
    js = tmp_path / "run.json"
    rc = main(["run", str(PIPELINES / "lstm_joint_policy.py"), "--replay", "6", "--step-fn",
               "lstm_joint_policy.py:Original", "--engine", "ort-int8", "--json", str(js), "--quiet",
               "--", str(tmp_path / "out")])
    assert rc == 0                     # an engine's drift is a finding, never an exit status
    r = json.loads(js.read_text())["graphs"][0]["replay"]
    assert (r["status"], r["tier"]) == ("ok", "b")
    (e,) = r["engines"]
    assert e["engine"] == "ort-int8" and e["closed_loop"]["steps"] == 6 and e["fresh"]["steps"] == 6
    act = next(o for o in e["closed_loop"]["outputs"] if o["output"] == "policy/action")
    assert act["own_error_max"] > 0 and act["inherited_error_max"] > 0
    # --engine built the node (Inside a LEAPP node) before the checks: the replay runs that build
    assert e["nodes"][0]["source"] == "node build" and "/nodes/0/build/node.ort-int8" in e["nodes"][0]["build"]


def test_unknown_engine_is_a_usage_error(tmp_path, capsys):
    """(``--engine`` without ``--replay`` builds the nodes on it: tests/integration/test_node_engines.py)"""
    from leapp_lab.cli import main
    from deep_pipelines import PIPELINES
    rc = main(["run", str(PIPELINES / "lstm_joint_policy.py"), "--engine", "ort-int3", "--", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "--engine ort-int3: unknown engine" in err
    assert "Traceback" not in err and not any(tmp_path.iterdir())    # the script never ran
    rc = main(["run", str(PIPELINES / "lstm_joint_policy.py"), "--replay", "2", "--engine", "ort-int3"])
    assert rc == 2 and "--engine ort-int3: unknown engine" in capsys.readouterr().err


def test_leapp_records_during_a_runtime_load_do_not_reach_the_root_logger(caplog):
    """After onnxruntime's quantize_static has called logging.basicConfig (an int8 engine), LEAPP's
    "CUDA execution provider not available" reached the terminal as WARNING:leapp:... on every
    runtime load; LEAPP's log.txt and the capture keep it, the terminal does not."""
    import logging

    from leapp_lab.deep.runtime import _quiet_leapp
    caplog.set_level(logging.WARNING)
    lg = logging.getLogger("leapp")
    lg.propagate = True                                  # as LEAPP leaves it outside a session
    with _quiet_leapp():
        lg.warning("CUDA execution provider not available. Falling back to CPU.")
    assert not [r for r in caplog.records if r.name == "leapp"]
    assert lg.propagate                                  # put back after the load
