"""The labelled corpus of real clients' exports (tests/corpus/, docs/hazards.md "The corpus").

The labels file is checked whole (every script exists, enough runs and clean runs, every cause a
hazard kind). A representative subset of the runs goes through ``leapp-lab run SCRIPT --json`` in
this process and must get its label, scored by the same code as ``bench/bench_findings.py``
(which runs all of them, each in its own process): a clean Isaac Lab export, an rsl_rl actor with
a ``.item()`` clip, an rsl_rl LSTM stepped before ``leapp.start()`` (a warm start with no reset in
the recording), and our own undeclared GRU state and running normaliser. The cases that change
process-wide state (rl_games' TorchScript switch) or take the slow default exporter are left to
the bench.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from leapp_lab.cli import main
from leapp_lab.model.trace import HAZARD_KINDS

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_findings", ROOT / "bench" / "bench_findings.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

LABELS = {x["id"]: x for x in bench.load_labels()}
SUBSET = ("skrl-mlp", "rsl_rl-mlp-item-clip", "rsl_rl-lstm-warm-start", "ours-gru-undeclared-state",
          "ours-mutated-normalizer")


def test_labels_cover_the_clients_clean_and_with_bugs():
    runs = list(LABELS.values())
    assert len(runs) >= 20 and sum(r["status"] == "pass" for r in runs) >= 8
    for r in runs:
        assert (ROOT / r["script"]).is_file(), r["script"]
        assert set(bench.FIELDS) <= set(r), r["id"]
        if r["status"] == "pass":
            assert r["cause"] is None and r["node"] is None, r["id"]
        else:
            assert r["cause"] in HAZARD_KINDS and r["node"] and r["fix"], r["id"]
    scripts = {r["script"] for r in runs}
    for backend in ("rsl_rl", "sb3", "skrl", "rl_games"):
        assert f"tests/corpus/{backend}_export.py" in scripts
        assert any(r["script"].endswith(f"{backend}_export.py") and r["status"] == "pass" for r in runs)
        assert any(r["script"].endswith(f"{backend}_export.py") and r["status"] == "fail" for r in runs)


def test_scoring_reads_what_a_user_reads():
    label = LABELS["rsl_rl-lstm-mlp-recipe"]
    report = {"finding": "x/y/1 is the first failing node/port/sample. Cause, undeclared-state: the hidden "
                         "state of torch.lstm is the frozen tensor _tensor_constant4. Fix: declare the state: "
                         "annotate.state_tensors(...)",
              "graphs": [{"hazards": [{"kind": "undeclared-state", "node": label["node"], "port": label["port"],
                                       "samples": [1]}]}]}
    got = bench.observe(report, 1)
    assert all(bench.score(label, got).values())
    # the same run read as a frozen constant: the cause and the fix are wrong
    report["finding"] = report["finding"].replace("undeclared-state", "frozen-constant").replace("state_tensors", "x")
    report["graphs"][0]["hazards"][0]["kind"] = "frozen-constant"
    right = bench.score(label, bench.observe(report, 1))
    assert not right["cause"] and not right["fix"] and right["status"]
    # a clean label is wrong as soon as any hazard is reported, even with exit 0
    clean = LABELS["rsl_rl-mlp"]
    assert not bench.score(clean, bench.observe(report, 0))["status"]


@pytest.mark.parametrize("run_id", SUBSET)
def test_corpus_run_gets_its_label(run_id, tmp_path, monkeypatch):
    label = LABELS[run_id]
    monkeypatch.chdir(tmp_path)
    js = tmp_path / "report.json"
    rc = main(["run", str(ROOT / label["script"]), "--json", str(js), "--quiet"]
              + (["--", *label["args"]] if label["args"] else []))
    got = bench.observe(json.loads(js.read_text()), rc)
    right = bench.score(label, got)
    assert all(right.values()), (right, got["finding"], got["hazards"])
    if label["status"] == "fail":
        hz = [h for h in got["hazards"] if h[0] == label["cause"]]
        assert hz and hz[0][1] == label["node"]
