"""One verdict: over pipelines × flag sets (--replay, --engine, --taps, --local), the finding (text
and JSON), the JSON verdict, the view's status, every header badge and deep-check tab and
``leapp-lab run``'s exit code say the same thing (model/trace_verdict.py, docs/report.md "How the
finding is decided")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import leapp_lab
from leapp_lab.cli import main
from leapp_lab.views.registry import render

ROOT = Path(__file__).resolve().parents[1]
PIPES, NODES = ROOT / "pipelines", ROOT / "node_pipelines"
SEVERITY = {"pass": 0, "warn": 1, "fail": 2}

CASES = {
    "clean": (PIPES / "clean_mlp.py", []),
    "hazard": (PIPES / "constant_gripper.py", []),
    "validation": (PIPES / "frozen_item.py", ["--replay", "2"]),
    # a warn-level hazard (warm start) beside a requested replay that could not run: the failure leads
    "hazard+replay-failed": (PIPES / "warm_start.py", ["--replay", "3", "--step-fn", "{step}:step"]),
    "engine-local": (NODES / "tapped_policy.py", ["--engine", "ort-int8", "--taps", "all", "--local"]),
    "replay-engine": (PIPES / "lstm_joint_policy.py", ["--replay", "3", "--engine", "ort-int8"]),
    # state LEAPP never records after sample 0 (annotate.module()): samples 1-4 are no evidence
    "unrecorded-state": (PIPES / "gru_module_state.py", ["--replay", "3", "--engine", "ort-int8"]),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    base = tmp_path_factory.mktemp("one_verdict")
    step = base / "broken_step.py"
    step.write_text("def step(inputs, reset):\n    raise RuntimeError('the simulator is not connected')\n")
    for name, (script, flags) in CASES.items():
        js = base / f"{name}.json"
        argv = ["run", str(script), *[f.format(step=step) for f in flags], "--json", str(js), "--quiet",
                "--", str(base / name)]
        rc = main(argv)
        out[name] = (rc, json.loads(js.read_text()))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_finding_verdict_view_and_exit_code_agree(runs, name):
    rc, summary = runs[name]
    v = summary["verdict"]
    assert v["status"] in SEVERITY and v["evidence"] is not None
    assert rc == (1 if v["status"] == "fail" else 0), (rc, v)
    for g in summary["graphs"]:
        report = leapp_lab.load(g["run_dir"])
        # a run folder holds one graph: its own verdict may be milder than the whole run's, never worse
        rv = report.verdict()
        assert SEVERITY[rv.status] <= SEVERITY[v["status"]]
        view = render(report, "view")
        f = report.finding_record()
        assert f.status == rv.status == view["status"] == view["finding"]["status"]
        # no header element is more severe than the finding
        for b in view["badges"]:
            if b.get("status") is not None:
                assert SEVERITY[b["status"]] <= SEVERITY[f.status], (b, f.text)
        for ev in rv.evidence:
            assert SEVERITY[ev.status] <= SEVERITY[rv.status]
        # a replay whose run on an engine diverged is never labelled ok
        rep = report.graph.section("replay")
        if rep is not None and any(e.status in ("diverged", "failed") for e in rep.engines):
            tab = next(t for t in view["tabs"] if t["id"] == "replay")
            badge = next(b for b in view["badges"] if b["label"] == "replay")
            assert "(ok)" not in tab["label"] and badge["value"] != "ok", (tab, badge)
    assert summary["finding"].split(".")[0] in summary["finding"]


def test_the_failure_outranks_the_hazard(runs):
    rc, summary = runs["hazard+replay-failed"]
    assert summary["verdict"]["decided_by"] == "replay" and rc == 1
    assert "replay" in summary["finding"] and "could not run" in summary["finding"]
    kinds = [e["kind"] for e in summary["verdict"]["evidence"]]
    assert "hazard" in kinds and kinds.index("replay") < kinds.index("hazard")


def test_a_hazard_alone_is_amber_and_exits_0(runs):
    rc, summary = runs["hazard"]
    assert rc == 0 and summary["verdict"]["status"] == "warn" and summary["verdict"]["decided_by"] == "hazard"


def test_an_engine_that_diverges_is_never_green(runs):
    for name in ("engine-local", "replay-engine"):
        rc, summary = runs[name]
        kinds = {e["kind"] for e in summary["verdict"]["evidence"]}
        if kinds & {"engine-diverged", "engine-failed"}:
            assert summary["verdict"]["status"] != "pass" and "validates; no hazard" not in summary["finding"]


def test_the_docs_table_is_the_precedence():
    import re

    from leapp_lab.model.trace_verdict import PRECEDENCE
    text = (ROOT.parent / "docs" / "report.md").read_text()
    table = text.split("### How the finding is decided", 1)[1].split("\n\n")[2]
    rows = re.findall(r"^\| (\d+) \| `([a-z-]+)` \| (\w+) \| (\d) \|", table, re.M)
    assert [(k, st) for _, k, st, _ in rows] == [(k, st) for k, st, _ in PRECEDENCE]
    assert all(int(code) == (1 if st == "fail" else 0) for _, _, st, code in rows)


def test_samples_leapp_never_recorded_are_never_scored_or_blamed(runs):
    rc, summary = runs["unrecorded-state"]
    v, g = summary["verdict"], summary["graphs"][0]
    assert v["decided_by"] != "validation" and rc == 0, v
    assert "No hazard explains it" not in summary["finding"]
    assert "8 checks on samples LEAPP never recorded, no evidence either way" in summary["finding"]
    # the node's build is verified on the recorded sample only, not against the zero placeholders
    (e,) = next(n for n in g["nodes"] if n["name"] == "policy")["engines"]
    assert leapp_lab.load(e["verify_run"]).samples == 1
    (pe,) = g["pipeline_engines"]
    assert all(p["nrmse"] is not None and p["nrmse"] < 0.1 for p in pe["nodes"]), pe
    # the view greys them: neither pass nor fail
    report = leapp_lab.load(g["run_dir"])
    rows = {r["id"]: r["status"] for r in render(report, "view")["table"]["rows"]}
    assert rows["policy/action/0"] == "pass"
    assert {rows[f"policy/action/{k}"] for k in (1, 2, 3, 4)} == {"uncompared"}
