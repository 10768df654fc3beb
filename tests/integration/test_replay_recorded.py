"""Replay that knows what LEAPP recorded (issue 20, part 1), on real LEAPP pipelines:

- LEAPP's own stateful GRU example (module buffers tracked with ``annotate.module()``): its state
  cache is unfilled on re-entry, so the replay must neither reset on nor compare with those zero
  placeholders; it replays ``ok`` and lists what it could not compare (``not_comparable``). The same
  GRU with its state undeclared still diverges.
- ``--parity N`` without ``--step-fn``: the run completes, parity is ``unavailable`` with its reason.
- a warm-start capture is the hazard ``warm-start`` without any step_fn; a normal capture is not.
Numbers are recomputed here from the stored arrays with an eager GRU, in float64."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import leapp_lab
from leapp_lab.cli import main
from deep_pipelines import PIPELINES, load_pipeline, trace


def _json(p):
    return json.loads(Path(p).read_text())


@pytest.fixture(scope="module")
def gru_runs(tmp_path_factory):
    """``leapp-lab run SCRIPT --replay 10 --json`` on the module-tracked and the undeclared GRU."""
    out = tmp_path_factory.mktemp("gru_replay")
    runs = {}
    for name in ("gru_module_state", "gru_undeclared_state"):
        js = out / f"{name}.json"
        rc = main(["run", str(PIPELINES / f"{name}.py"), "--replay", "10", "--json", str(js), "--quiet",
                   "--", str(out / name)])
        runs[name] = (rc, _json(js)["graphs"][0])
    return runs


def test_gru_example_with_module_buffers_replays_ok(gru_runs, capsys):
    rc, g = gru_runs["gru_module_state"]
    assert [(h["kind"], h["port"], h["samples"]) for h in g["hazards"]] == \
        [("unfilled-cache", "h_state_out", [1, 2, 3, 4])]
    r = g["replay"]
    assert (r["status"], r["tier"]) == ("ok", "a")
    a = r["closed_loop"]
    # the zero placeholders of h_state_in at steps 1-4 are no episode reset, no break
    assert (a["status"], a["steps"], a["resets"], a["breaks"]) == ("ok", 5, [], {})
    assert a["not_comparable"] == {"policy/h_state_out": [1, 2, 3, 4]}
    rows = {(x["output"], x["step"]): x for x in a["rows"]}
    for k in range(1, 5):
        nc = rows[("policy/h_state_out", k)]
        assert nc["max_abs"] is None and nc["passed"] is None and "did not record" in nc["note"]
    assert all(rows[("policy/action", k)]["passed"] for k in range(5))
    # an eager GRU carried over the recorded observations: the exported closed loop is on it,
    # and so is the action LEAPP recorded (a real value: the Python policy ran with the real state)
    mod = load_pipeline("gru_module_state")
    torch.manual_seed(0)
    model = mod.GRUPolicy().eval().double()
    rep = leapp_lab.load(g["run_dir"])
    rec, npz = rep.arrays(), rep.graph.replay.arrays()
    h = torch.zeros(1, 8, dtype=torch.float64)
    with torch.no_grad():
        for k in range(5):
            h = model.gru(torch.from_numpy(rec[f"policy/obs/{k}/input"]).double(), h)
            act = torch.tanh(model.head(h)).numpy()
            np.testing.assert_allclose(npz[f"a/policy/action/{k}/exported"], act, atol=1e-6)
            np.testing.assert_allclose(rec[f"policy/action/{k}/recorded"], act, atol=1e-6)
            np.testing.assert_allclose(npz[f"a/policy/h_state_out/{k}/exported"], h.numpy(), atol=1e-6)
            if k:
                assert not np.any(rec[f"policy/h_state_in/{k}/input"])      # LEAPP's placeholder
                d = np.abs(rec[f"policy/action/{k}/recorded"] - npz[f"a/policy/action/{k}/exported"]).max()
                assert rows[("policy/action", k)]["max_abs"] == pytest.approx(float(d), abs=1e-12)
    # the saved section says the same; a report.json of before not_comparable still loads
    back = rep.graph.replay
    assert back.closed_loop.not_comparable == {"policy/h_state_out": [1, 2, 3, 4]}
    old = _json(Path(g["run_dir"]) / "replay.json")
    old["closed_loop"].pop("not_comparable")
    from leapp_lab.model.replay import ReplayResult
    assert ReplayResult.from_dict(old).closed_loop.not_comparable == {}
    assert not any(w.kind == "warm-start" for w in rep.graph.hazards)


def test_gru_with_undeclared_state_still_diverges(gru_runs):
    rc, g = gru_runs["gru_undeclared_state"]
    assert rc == 1
    r = g["replay"]
    assert r["status"] == "diverged"
    a = r["closed_loop"]
    assert a["first_divergent"] == {"step": 1, "output": "policy/action"} and a["not_comparable"] == {}
    assert [x["step"] for x in a["rows"] if x["passed"] is False] == [1, 2, 3, 4]


def test_parity_without_step_fn_runs_the_other_checks(tmp_path, capsys):
    js = tmp_path / "p.json"
    rc = main(["run", str(PIPELINES / "recurrent_policy.py"), "--replay", "5", "--parity", "3",
               "--json", str(js), "--", str(tmp_path / "out")])
    cap = capsys.readouterr()
    assert rc == 0, cap.err                     # parity unavailable is no failure
    (g,) = _json(js)["graphs"]
    assert g["replay"]["status"] == "ok" and g["replay"]["closed_loop"]["steps"] == 5
    p = g["parity"]
    assert p["status"] == "unavailable" and "step_fn" in p["reason"] and p["checks"] == []
    assert "parity: UNAVAILABLE" in cap.out


@pytest.fixture(scope="module")
def warm_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("warm")
    mod = load_pipeline("warm_start")
    warm = trace(mod, out / "warm")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with leapp_lab.trace(mod.NAME, save_path=str(out / "normal"), **mod.OPTIONS) as t:
            mod.body(warm_steps=0)           # the same loop, traced from an episode start
    normal = t.report
    return mod, warm, normal


def test_warm_start_capture_is_flagged_without_a_step_fn(warm_runs):
    mod, warm, _ = warm_runs
    g = warm.graph
    found = sorted((h.kind, h.node, h.port, h.samples) for h in g.hazards)
    assert found == [("warm-start", "encoder", "h", [3]), ("warm-start", "encoder", "prev_action", [3])]
    assert g.verdict == "pass"                  # every transition validates: only the hazard says it
    # the evidence, from the arrays: the reset at step 3 went to zeros, the saved initial value is not
    rec = warm.arrays()
    for port, src in (("h", "encoder/h"), ("prev_action", "policy/action")):
        assert np.abs(rec[f"encoder/{port}/0/input"]).max() > 0.1
        assert not np.any(rec[f"encoder/{port}/{mod.RESET_AT}/input"])
        assert not np.array_equal(rec[f"encoder/{port}/{mod.RESET_AT}/input"], rec[f"{src}/{mod.RESET_AT - 1}/recorded"])
        (h,) = [x for x in g.hazards if x.port == port]
        assert "warm start" in h.message and "step 3" in h.message and repr(src) in h.message
    # in --json / report.json as every hazard
    assert {"kind": "warm-start", "node": "encoder", "port": "h", "samples": [3]}.items() <= \
        next(x for x in _json(Path(g.run_dir) / "report.json")["graphs"][0]["hazards"] if x["port"] == "h").items()


def test_capture_from_an_episode_start_is_not_flagged(warm_runs):
    mod, _, normal = warm_runs
    g = normal.graph
    assert g.hazards == []
    rec = normal.arrays()
    assert not np.any(rec["encoder/h/0/input"]) and not np.any(rec[f"encoder/h/{mod.RESET_AT}/input"])
    res = leapp_lab.replay(normal)              # the same reset, to the saved initial values: ok
    assert res.status == "ok" and res.closed_loop.resets == [mod.RESET_AT]
    assert res.closed_loop.not_comparable == {}  # every step had a real recorded value
    assert res.to_dict()["closed_loop"]["not_comparable"] == {}
