"""``leapp-lab run SCRIPT --replay N --step-fn M:F --parity N --exporters all|NODE --isolate`` on
unchanged export scripts (tests/pipelines/ files run as scripts): every graph of --json carries the
five sections, with numbers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import leapp_lab
from leapp_lab.cli import main

PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"
SECTIONS = ("replay", "parity", "adapters", "exporters", "isolation")


def _json(p):
    text = Path(p).read_text()
    assert "NaN" not in text and "Infinity" not in text
    return json.loads(text)


def test_replay_and_parity_from_the_command_line(tmp_path, capsys):
    js = tmp_path / "w.json"
    rc = main(["run", str(PIPELINES / "warm_start.py"), "--replay", "6", "--step-fn", "warm_start:Original",
               "--parity", "3", "--json", str(js), "--", str(tmp_path / "out")])
    cap = capsys.readouterr()
    assert rc == 1 and "replay, warm_start: parity diverged" in cap.err
    (g,) = _json(js)["graphs"]
    assert set(SECTIONS) <= set(g)
    r = g["replay"]
    assert (r["status"], r["tier"]) == ("diverged", "b")
    assert r["closed_loop"]["resets"] == [3] and r["closed_loop"]["first_divergent"]["step"] == 3
    assert r["fresh"]["steps"] == 6 and r["fresh"]["resets"] == [3]
    rows = [x for x in r["closed_loop"]["rows"] if x["step"] == 3]
    assert rows and all(x["passed"] is False and x["max_abs"] > 0.1 for x in rows)
    p = g["parity"]
    assert p["status"] == "diverged" and p["n"] == 3 and len(p["checks"]) == 9
    assert {o["output"] for o in p["outputs"]} == {"encoder/latent", "encoder/h", "policy/action"}
    assert g["adapters"]["status"] == "skipped" and "FunctionPatch" in g["adapters"]["reason"]
    assert g["exporters"]["status"] == "skipped" and "--exporters" in g["exporters"]["reason"]
    assert "replay: DIVERGED (tier b)" in cap.out and "warm start" in cap.out
    # the run folder holds the same sections; leapp_lab.load gives them back, --json too
    back = leapp_lab.load(g["run_dir"]).graph
    assert back.replay.to_dict() == r and back.parity.to_dict() == p
    assert leapp_lab.load(js).graph.replay.to_dict() == r


def test_exporters_and_isolation_rerun_the_script(tmp_path, capsys):
    js = tmp_path / "c.json"
    rc = main(["run", str(PIPELINES / "onnx_cumprod.py"), "--exporters", "discount", "--isolate",
               "--json", str(js), "--", str(tmp_path / "out")])
    cap = capsys.readouterr()
    assert rc == 2                                    # LEAPP's refusal reached the script (strict default)
    assert "the script onnx_cumprod.py runs again" in cap.err and "exporters: discount with pt2" in cap.err
    (g,) = _json(js)["graphs"]
    m = g["exporters"]
    outcome = {a["backend"]: a["outcome"] for a in m["attempts"]}
    assert outcome["onnx"] == "export-error" and all(outcome[b] == "pass" for b in ("jit", "jit-trace", "pt2"))
    assert m["reruns"] == 5 and "jit, jit-trace, pt2" in m["advice"][0]
    iso = g["isolation"]
    assert (iso["decision"], iso["rule"], iso["reruns"]) == ("export", 6, 3)
    assert [r["label"] for r in iso["runs"]][:4] == ["baseline", "dry_run", "non_traced", "global_patching_off"]
    assert "isolation: decision EXPORT" in cap.out
    # each re-run wrote its own run folder, inside the trace's
    assert Path(m["attempts"][2]["run_dir"]).is_relative_to(Path(g["run_dir"]))


def test_adapters_are_checked_in_attach_mode(tmp_path, capsys):
    js = tmp_path / "a.json"
    rc = main(["run", str(PIPELINES / "adapter_mismatch.py"), "--json", str(js), "--", str(tmp_path / "out")])
    capsys.readouterr()
    assert rc == 0                                    # validation passes; the hazard says why it should not
    (g,) = _json(js)["graphs"]
    assert [h["kind"] for h in g["hazards"]] == ["adapter-mismatch"]
    (a,) = g["adapters"]["adapters"]
    assert g["adapters"]["status"] == "diverged" and a["passed"] is False and a["node"] == "norm"
    assert all(g[s]["status"] == "skipped" for s in ("replay", "parity", "exporters", "isolation"))


@pytest.mark.parametrize("argv, message", [
    (["--replay", "0"], "--replay 0: must be at least 1"),
    (["--replay", "2", "--step-fn", "no_such_module:f"], "cannot import 'no_such_module'"),
    (["--replay", "2", "--step-fn", "warm_start:nothing"], "has no function 'nothing'"),
])
def test_bad_deep_flags(tmp_path, capsys, argv, message):
    rc = main(["run", str(PIPELINES / "warm_start.py"), *argv, "--", str(tmp_path / "out")])
    assert rc == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()            # refused before the script ran


def test_a_requested_replay_that_could_not_run_is_not_a_pass(tmp_path, capsys):
    """A step_fn that raises leaves replay and parity 'failed' (no verdict): exit 1, as a divergence
    is, so a CI gate does not read a check that never ran as passed; --no-fail exits 0."""
    step = tmp_path / "broken_step.py"
    step.write_text("def step(inputs, reset):\n    raise RuntimeError('the simulator is not connected')\n")
    argv = ["run", str(PIPELINES / "warm_start.py"), "--replay", "3", "--step-fn", f"{step}:step",
            "--parity", "2", "--", str(tmp_path / "out")]
    rc = main(argv)
    cap = capsys.readouterr()
    assert rc == 1 and "could not run" in cap.err and "warm_start: replay" in cap.err, cap.err[-2000:]
    # the header names the tier that failed (b, the step_fn's), not the highest that ran (a)
    assert "replay: FAILED (tier b): the fresh replay (step_fn) raised" in cap.out, cap.out
    assert main([*argv[:-2], "--no-fail", "--", str(tmp_path / "out2")]) == 0
