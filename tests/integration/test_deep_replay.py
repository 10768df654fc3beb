"""Sequential replay and fresh-input parity on real LEAPP pipelines (tests/pipelines/), through the
real leapp.InferenceManager. Every number is recomputed here from the stored arrays, in float64."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import leapp_lab
from deep_pipelines import load_pipeline, trace


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    out = tmp_path_factory.mktemp("deep_replay")
    mods = {n: load_pipeline(n) for n in ("recurrent_policy", "state_outside", "warm_start", "branch_unseen")}
    return {n: (m, trace(m, out)) for n, m in mods.items()}


def numbers(value, ref):
    d = np.asarray(value, np.float64) - np.asarray(ref, np.float64)
    r = np.asarray(ref, np.float64)
    return float(np.abs(d).max()), float(np.sqrt((d ** 2).mean()) / np.sqrt((r ** 2).mean()))


def test_recurrent_policy_replay_matches(traced):
    mod, report = traced["recurrent_policy"]
    res = leapp_lab.replay(report, step_fn=mod.Original(), steps=10, resets=[4, 7])
    assert res.status == "ok" and res.tier == "b"
    a, b = res.closed_loop, res.fresh
    assert (a.status, a.steps, a.resets, a.breaks) == ("ok", 5, [], {})
    assert (b.status, b.steps, b.resets) == ("ok", 10, [4, 7])
    # ONNX renamed the state: the exported outputs are latent, h_out and the fed-back action
    assert [o.output for o in a.outputs] == ["encoder/latent", "encoder/h_out", "policy/action"]
    rec, npz = report.arrays(), res.arrays()
    for r in a.rows:
        mx, nrmse = numbers(npz[f"a/{r.output}/{r.step}/exported"], rec[f"{r.output}/{r.step}/recorded"])
        assert r.max_abs == pytest.approx(mx, abs=0) and r.nrmse == pytest.approx(nrmse, rel=1e-12)
        assert r.passed and mx < 1e-5
    for r in b.rows:
        mx, _ = numbers(npz[f"b/{r.output}/{r.step}/exported"], npz[f"b/{r.output}/{r.step}/original"])
        assert r.max_abs == pytest.approx(mx, abs=0) and r.passed
        assert r.reset == (r.step in (4, 7))
    # the fresh observations are new (not the captured ones) and seeded
    obs = [npz[f"b/encoder/obs/{i}/input"] for i in range(10)]
    assert not any(np.array_equal(o, rec[f"encoder/obs/{k}/input"]) for o in obs for k in range(5))
    again = leapp_lab.replay(report, step_fn=mod.Original(), steps=10, resets=[4, 7])
    np.testing.assert_array_equal(again.arrays()["b/encoder/obs/3/input"], obs[3])
    # saved beside report.json and back through leapp_lab.load
    back = leapp_lab.load(report.graph.run_dir).graph.replay
    assert back.to_dict() == again.to_dict() and "b/policy/action/9/exported" in back.arrays()


def test_per_sample_validation_passes_but_replay_diverges(traced):
    """The state is fed back: the exported step k is computed from the exported state of step k-1."""
    mod, report = traced["state_outside"]
    g = report.graph
    assert g.verdict == "pass" and all(c.passed for c in g.checks) and g.hazards == []
    res = leapp_lab.replay(report)
    assert res.status == "diverged" and res.tier == "a" and res.fresh is None
    run = res.closed_loop
    assert run.first_divergent == {"step": 1, "output": "encoder/action"}
    assert run.breaks == {"encoder/h": [1, 2, 3, 4]} and run.resets == []
    assert any("every per-sample validation passed" in n for n in run.notes)
    torch.manual_seed(0)
    w = (torch.randn(4, 4) * 0.5).double().numpy()
    rec, npz = report.arrays(), res.arrays()
    h = rec["encoder/h/0/input"].astype(np.float64)            # the initial state LEAPP saved
    for k in range(5):
        obs = rec[f"encoder/obs/{k}/input"].astype(np.float64)
        h = np.tanh(obs @ w + h)                                # the exported state, carried
        np.testing.assert_allclose(npz[f"a/encoder/h/{k}/exported"], h, atol=1e-6)
        np.testing.assert_allclose(npz[f"a/encoder/action/{k}/exported"], 2 * h, atol=1e-6)
    growth = {o.output: o for o in run.outputs}
    assert growth["encoder/h"].first == 0.0 and growth["encoder/h"].grows
    assert report.graph.replay is res


def test_warm_start_diverges_after_reset(traced):
    mod, report = traced["warm_start"]
    assert report.graph.verdict == "pass"
    res = leapp_lab.replay(report, step_fn=mod.Original(), steps=6)
    a = res.closed_loop
    assert a.resets == [mod.RESET_AT] and a.breaks == {}
    assert {r.step for r in a.rows if r.passed is False} == {3, 4, 5}
    assert all(r.passed for r in a.rows if r.step < 3)
    assert a.first_divergent["step"] == 3 and any("warm start" in n for n in a.notes)
    # at the reset the exported pipeline restarts from LEAPP's saved initial values (sample 0 of
    # the trace), the Python from zeros: recompute step 3 from the initial values
    w, p = (x.double().numpy() for x in mod.weights())
    rec, npz = report.arrays(), res.arrays()
    h0, pa0 = rec["encoder/h/0/input"].astype(np.float64), rec["encoder/prev_action/0/input"].astype(np.float64)
    assert np.abs(h0).max() > 0.1                                # mid-episode, not the reset state
    h3 = np.tanh(rec["encoder/obs/3/input"] @ w + h0 + pa0.sum())
    np.testing.assert_allclose(npz["a/encoder/h/3/exported"], h3, atol=1e-6)
    assert not np.any(rec["encoder/h/3/input"])                  # the Python reset to zeros
    # tier (b): the first episode already starts from the wrong state
    assert res.fresh.status == "diverged" and res.fresh.first_divergent["step"] == 0


def test_fresh_input_parity_finds_the_branch_validation_missed(traced):
    mod, report = traced["branch_unseen"]
    assert report.graph.verdict == "pass" and all(c.passed for c in report.graph.checks)
    res = leapp_lab.parity(report, mod.step_fn, n=6, seed=1)
    assert res.status == "diverged" and [o.output for o in res.outputs] == ["clip/action"]
    npz = res.arrays()
    crossed = [i for i in range(6) if np.abs(npz[f"clip/obs/{i}/input"]).max() > 1.5]
    assert crossed and len(crossed) < 6
    assert [c.sample for c in res.checks if c.passed is False] == crossed
    for c in res.checks:
        e, o = npz[f"clip/action/{c.sample}/exported"], npz[f"clip/action/{c.sample}/original"]
        d = np.abs(e.astype(np.float64) - o.astype(np.float64))
        assert c.stats["max"] == d.max() and c.stats["mean"] == pytest.approx(d.mean(), rel=1e-12)
        assert c.stats["p99"] == pytest.approx(np.percentile(d, 99), rel=1e-12)
        assert c.passed == bool(np.allclose(e, o, rtol=1e-3, atol=1e-5))
    # drawn like the captured inputs: their mean/std, scaled and shifted by the guide's recipe
    rec = np.concatenate([report.arrays()[f"clip/obs/{k}/input"].reshape(-1) for k in range(4)]).astype(np.float64)
    (inp,) = res.inputs
    assert inp.mean == pytest.approx(rec.mean()) and inp.std == pytest.approx(rec.std())
    df = res.to_dataframe()
    assert list(df["sample"]) == list(range(6)) and df["passed"].sum() == 6 - len(crossed)


def test_a_step_fn_of_the_wrong_shape_is_named_not_blamed_on_the_export(traced):
    """step_fn returns the action flattened: no number to compare, so both checks say which output
    and which shapes, and parity does not call it a value frozen at trace time."""
    mod, report = traced["branch_unseen"]

    def flat(inputs, reset):
        return {k: v.reshape(-1) for k, v in mod.step_fn(inputs, reset).items()}

    p = leapp_lab.parity(report, flat, n=2)
    assert p.status == "diverged"
    assert any(n.startswith("clip/action: not compared: the exported pipeline returns shape")
               and "step_fn [" in n for n in p.notes)
    assert not any("frozen" in n for n in p.notes)
    assert "clip/action: not compared" in "\n".join(str(report).splitlines())
    r = leapp_lab.replay(report, steps=2, step_fn=flat)
    assert any(n.startswith("clip/action: no step compared (the export's shape") for n in r.fresh.notes)
    assert "at step None" not in str(report)


def test_sections_say_why_they_cannot_run(traced, tmp_path):
    mod, report = traced["recurrent_policy"]
    p = leapp_lab.parity(report, None)
    assert p.status == "unavailable" and "step_fn" in p.reason
    dry = trace(load_pipeline("clean_mlp"), tmp_path, dry_run=True)
    r = leapp_lab.replay(dry)
    assert (r.status, r.tier) == ("unavailable", "c") and "was not compiled (status dry-run)" in r.reason
    nt = trace(load_pipeline("clean_recurrent"), tmp_path, non_traced=["policy"])
    r = leapp_lab.replay(nt)
    assert r.status == "unavailable" and "'policy'" in r.reason and "backend null" in r.reason
    # a later trace of the same graph name overwrites LEAPP's models: the old run says so
    first = trace(load_pipeline("clean_recurrent"), tmp_path / "twice")
    trace(load_pipeline("clean_recurrent"), tmp_path / "twice", max_cached_io=3)
    r = leapp_lab.replay(first)
    assert r.status == "unavailable" and "overwrote" in r.reason
    bad = leapp_lab.replay(report, step_fn=lambda inputs: {})
    assert bad.status == "failed" and "reset" in bad.reason
    wrong = leapp_lab.replay(report, step_fn=lambda inputs, reset: {"encoder/nope": inputs["encoder/obs"]})
    assert wrong.closed_loop.status == "ok" and wrong.fresh.status == "failed" and "'encoder/nope'" in wrong.fresh.reason
