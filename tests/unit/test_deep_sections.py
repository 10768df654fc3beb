"""The deep-check sections without LEAPP: model round trip and files, the decision table, the
comparison numbers and fresh-input rule against independent formulas, the view dict, the text and
HTML renderers (escaping included)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from leapp_lab.deep.common import diff_numbers, leapp_passes
from leapp_lab.deep.isolation import decide
from leapp_lab.model.adapters import AdapterCase, AdapterCheck, AdapterResult
from leapp_lab.model.exporters import ExporterAttempt, ExporterMatrix
from leapp_lab.model.isolation import DECISION_TABLE, IsolationResult, IsolationRun
from leapp_lab.model.parity import ParityOutput, ParityResult
from leapp_lab.model.replay import ReplayOutput, ReplayResult, ReplayRow, ReplayRun
from leapp_lab.model.sections import SECTION_NAMES, load_section, save_section, skipped
from leapp_lab.model.trace import TraceReport
from leapp_lab.views.html import to_html
from leapp_lab.views.viewdict import build_view
from viewfixtures import EVIL, trace_report
from tests import oracle


def sections(evil: str = EVIL) -> dict:
    run = ReplayRun(tier="a", status="diverged", steps=3, resets=[2], breaks={f"head/h{evil}": [1]},
                    rows=[ReplayRow(k, f"head/out{evil}", max_abs=0.5 * k, nrmse=0.1 * k, ref_max=1.0,
                                    passed=k == 0, reset=k == 2) for k in range(3)],
                    outputs=[ReplayOutput(f"head/out{evil}", steps=3, first=0.0, last=1.0, max_abs=1.0, max_step=2,
                                          first_fail=1, grows=True)],
                    first_divergent={"step": 1, "output": f"head/out{evil}"}, notes=[f"note {evil}"])
    return {
        "replay": ReplayResult(status="diverged", tier="a", rtol=1e-3, atol=1e-5, closed_loop=run),
        "parity": ParityResult(status="ok", n=2, seed=0, rtol=1e-3, atol=1e-5, outputs=[ParityOutput("head/out", 2)]),
        "adapters": AdapterResult(status="diverged", rtol=1e-3, atol=1e-5, adapters=[
            AdapterCheck(f"lib.f{evil}", "adapter", node="scale", calls=1, passed=False, max_abs=2.0,
                         cases=[AdapterCase("captured 0", True, 0.0), AdapterCase("perturbed 0 (negated)", False, 2.0)])]),
        "exporters": ExporterMatrix(status="ok", nodes=["scale"], backends=["onnx", "jit"], reruns=2, attempts=[
            ExporterAttempt("scale", "onnx", current=True, outcome="export-error", error=f"boom {evil}"),
            ExporterAttempt("scale", "jit", outcome="pass", exported=True, verdict="pass", max_abs=0.0)],
            advice=[f"node 'scale': use jit {evil}"]),
        "isolation": IsolationResult(status="ok", decision="export", rule=6, explanation=f"why {evil}", reruns=1,
                                     runs=[IsolationRun("baseline", status="refused", verdict="error"),
                                           IsolationRun("non_traced", {"non_traced": ["scale"]}, status="compiled",
                                                        verdict="pass")]),
    }


@pytest.fixture
def report(tmp_path):
    r = trace_report(evil=True)
    g = r.graph
    g.run_dir = str(tmp_path)
    for name, sec in sections().items():
        save_section(g, sec, {"a/x/0/exported": np.arange(3.0)} if name == "replay" else None)
    return r


def test_sections_round_trip_through_their_files(report, tmp_path):
    g = report.graph
    for name in SECTION_NAMES:
        assert (tmp_path / f"{name}.json").is_file()
        back = load_section(tmp_path, name)
        assert back.to_dict() == g.sections[name].to_dict() and type(back) is type(g.sections[name])
    np.testing.assert_array_equal(load_section(tmp_path, "replay").arrays()["a/x/0/exported"], np.arange(3.0))
    # a GraphReport read back (report.json does not hold them) finds them in its run folder
    fresh = TraceReport.from_dict(json.loads(json.dumps(report.to_dict()))).graph
    assert "replay" not in report.to_dict()["graphs"][0]
    assert fresh.replay.closed_loop.first_divergent == {"step": 1, "output": f"head/out{EVIL}"}
    assert fresh.isolation.decision == "export" and fresh.exporters.attempt("scale", "jit").outcome == "pass"
    # a combined --json report carries them inline
    d = report.to_dict()
    d["graphs"][0]["parity"] = g.parity.to_dict()
    d["graphs"][0]["run_dir"] = None
    assert TraceReport.from_dict(d).graph.parity.to_dict() == g.parity.to_dict()
    assert skipped("replay").status == "skipped" and "--replay" in skipped("replay").reason


def test_dataframes(report):
    g = report.graph
    assert list(g.replay.to_dataframe()["max_abs"]) == [0.0, 0.5, 1.0]
    assert list(g.adapters.to_dataframe()["passed"]) == [True, False]
    assert list(g.exporters.to_dataframe()["outcome"]) == ["export-error", "pass"]
    assert list(g.isolation.to_dataframe()["label"]) == ["baseline", "non_traced"]
    assert g.exporters.passing("scale") == ["jit"]


def test_numbers_match_the_formulas():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(3, 4)).astype(np.float32)
    val = ref + rng.normal(size=(3, 4)).astype(np.float32) * 1e-3
    n = diff_numbers(val, ref)
    d = val.astype(np.float64) - ref.astype(np.float64)
    assert n["max_abs"] == np.abs(d).max()
    assert n["nrmse"] == pytest.approx(oracle.nrmse(val, ref), rel=1e-12)
    assert diff_numbers(val, np.zeros_like(ref))["nrmse"] is None
    assert leapp_passes(val, ref, 1e-3, 1e-5) == bool(np.all(np.abs(d) <= 1e-5 + 1e-3 * np.abs(ref)))
    bad = val.copy()
    bad[0, 0] = np.nan
    assert leapp_passes(bad, bad, 1e-3, 1e-5) is False          # LEAPP fails any NaN
    assert leapp_passes(val[:2], ref, 1, 1) is False and leapp_passes(None, ref, 1, 1) is None


def test_fresh_inputs_follow_the_recipe():
    import torch

    from leapp_lab.deep.fresh import SCALES, SHIFT, Drawer, plan
    arrays = {f"n/obs/{k}/input": np.full((2, 3), k, np.float32) for k in range(3)}
    arrays.update({f"n/idx/{k}/input": np.array([k, 5], np.int64) for k in range(3)})
    p = plan(arrays, ["n/obs", "n/idx"])
    allv = np.concatenate([arrays[f"n/obs/{k}/input"].ravel() for k in range(3)]).astype(np.float64)
    assert p[0].mean == allv.mean() and p[0].std == allv.std() and (p[1].low, p[1].high) == (0.0, 5.0)
    d = Drawer(p, seed=3)
    got = [d.draw(i) for i in range(4)]
    g = torch.Generator().manual_seed(3)
    for i in range(4):
        z = torch.randn((2, 3), generator=g, dtype=torch.float64)
        expect = (p[0].mean + p[0].std * (z * SCALES[i % 3] + SHIFT)).float()
        torch.testing.assert_close(got[i]["n/obs"], expect, rtol=0, atol=0)
        torch.randint(0, 6, (2,), generator=g)                  # the integer input's draw
        assert got[i]["n/idx"].dtype == torch.int64 and 0 <= int(got[i]["n/idx"].min()) <= 5


def _run(label, *args, **kw):
    return IsolationRun(label, *args, **kw)


@pytest.mark.parametrize("runs, row, decision", [
    ([_run("baseline", status="compiled", verdict="pass")], 1, "none"),
    ([_run("baseline", status="compiled", verdict="fail", failing=["n/y/1"]),
      _run("no_adapters", status="compiled", verdict="pass")], 2, "patching"),
    ([_run("baseline", status="compiled", verdict="fail", failing=["n/y/1"]),
      _run("no_adapters", status="compiled", verdict="fail", failing=["n/y/1"]),
      _run("global_patching_off", status="compiled", verdict="pass")], 3, "patching"),
    ([_run("baseline", status="compiled", verdict="fail", failing=["n/y/1"]),
      _run("dry_run", status="dry-run", verdict="skipped", same_trace=False, trace_diff=["node 'n': the FX graph differs"])],
     4, "tracing"),
    ([_run("baseline", status="compiled", verdict="fail", failing=["n/y/1"]),
      _run("dry_run", status="dry-run", verdict="skipped", same_trace=True, fx_mismatch=["n/y/1"])], 5, "tracing"),
    ([_run("baseline", status="refused", verdict="error"),
      _run("dry_run", status="dry-run", verdict="skipped", same_trace=True),
      _run("non_traced", {"non_traced": ["n"]}, status="compiled", verdict="pass")], 6, "export"),
    ([_run("baseline", status="compiled", verdict="fail", failing=["n/y/0"]),
      _run("dry_run", status="dry-run", verdict="skipped", same_trace=True)], 7, "export"),
    ([_run("baseline", status="compiled", verdict="fail", failing=["n/y/0"])], 8, "inconclusive"),
])
def test_decision_table(runs, row, decision):
    got, rule, why = decide(runs)
    assert (got, rule) == (decision, row) and why
    assert DECISION_TABLE[row - 1][2] == decision


def test_view_dict_tabs_and_rows(report):
    v = build_view(report)
    ids = [t["id"] for t in v["tabs"]]
    assert ids[-5:] == list(SECTION_NAMES)
    assert {t["id"]: t["label"] for t in v["tabs"]}["isolation"] == "Isolation (export)"
    rp = v["deep"]["replay"][0]["runs"][0]
    assert rp["series"][0]["y"] == [0.0, 0.5, 1.0] and rp["series"][0]["status"] == ["pass", "fail", "fail"]
    assert [r["cells"]["reset"] for r in rp["rows"]] == ["", "", "reset"] and rp["resets"] == [2]
    ex = v["deep"]["exporters"][0]
    assert [(r["status"], r["outcome"]) for r in ex["rows"]] == [("fail", "export-error"), ("pass", "pass")]
    assert ex["rows"][0]["cells"]["backend"] == "onnx (yours)"
    iso = v["deep"]["isolation"][0]
    assert [t["matched"] for t in iso["table"]].index(True) == 5 and iso["decision"] == "export"
    assert {b["label"]: b["value"] for b in v["badges"]}["replay"] == "diverged"
    # no section: no tab
    assert [t["id"] for t in build_view(trace_report())["tabs"]] == ["table", "graph", "node", "hazards", "log"]


def test_text_and_html_render_every_section(report):
    text = str(report)
    assert "replay: DIVERGED (tier a)" in text and "resets at 2: DIVERGES at step 1" in text
    assert "adapters: DIVERGED" in text and "FAIL 1/2 cases" in text
    assert "scale: onnx* export-error, jit pass" in text and "isolation: decision EXPORT (row 6" in text
    page = to_html(report)
    assert '<script>alert("x")</script>' not in page and "\\u003cscript\\u003e" in page
    assert "renderDeep" in page


def test_docs_print_the_decision_table():
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "deep-checks.md").read_text(encoding="utf-8")
    rows = [tuple(c.strip() for c in line.strip("|").split("|"))
            for line in doc.splitlines() if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert rows == [(str(r), p, d) for r, p, d in DECISION_TABLE]
