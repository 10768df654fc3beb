"""Adapter checks, the exporter matrix and the isolation runs on real LEAPP pipelines
(tests/pipelines/): adapters checked against their originals, the body traced again per backend and
per isolation run."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import leapp
import leapp_lab
from deep_pipelines import load_pipeline, trace


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("deep_rerun")


@pytest.fixture(scope="module")
def cumprod(out):
    mod = load_pipeline("onnx_cumprod")
    session = leapp_lab.trace(mod.NAME, save_path=str(out), **mod.OPTIONS)
    with warnings.catch_warnings(), pytest.raises(Exception, match="Error compiling model discount"):
        warnings.simplefilter("ignore")
        with session:
            mod.body()
    return mod, session.report


def test_adapter_that_disagrees_with_its_function(out):
    mod = load_pipeline("adapter_mismatch")
    report = trace(mod, out)
    g = report.graph
    assert g.verdict == "pass" and all(c.passed for c in g.checks)      # validation cannot see it
    (h,) = g.hazards
    assert (h.kind, h.node, h.port, h.samples) == ("adapter-mismatch", "norm", None, [])
    a = g.adapters
    assert a.status == "diverged"
    (chk,) = a.adapters
    assert (chk.function, chk.node, chk.calls, chk.passed) == ("adapter_mismatch_lib.normalize", "norm", 1, False)
    by = {c.case: c for c in chk.cases}
    assert [c for c, x in by.items() if not x.passed] == ["perturbed 0 (negated)"]
    x = torch.from_numpy(report.arrays()["norm/obs/0/input"])      # the argument captured while tracing
    expect = (mod.normalize_adapter(-x).double() - mod.normalize(-x).double()).abs().max().item()
    assert by["perturbed 0 (negated)"].max_abs == pytest.approx(expect, rel=1e-12)
    assert chk.max_abs == pytest.approx(expect, rel=1e-12) and chk.worst_case == "perturbed 0 (negated)"
    assert by["captured 0"].passed and by["captured 0"].adapter_shapes == [[2, 3]] == by["captured 0"].original_shapes
    assert mod.mylib.normalize is mod.normalize                     # LEAPP's patch is gone again
    back = leapp_lab.load(g.run_dir).graph
    assert back.adapters.to_dict() == a.to_dict() and [x.kind for x in back.hazards] == ["adapter-mismatch"]
    assert list(a.to_dataframe()["passed"]) == [True, True, True, False]


def test_exporter_matrix_onnx_fails_others_pass(cumprod):
    mod, report = cumprod
    g = report.graph
    assert g.status == "refused" and g.node("discount").backend == "onnx-dynamo"
    m = leapp_lab.exporters(report, mod.body, node="discount")
    assert m.status == "ok" and m.nodes == ["discount"] and m.reruns == 5
    got = {a.backend: a for a in m.attempts}
    assert list(got) == ["onnx", "onnx-torchscript", "jit", "jit-trace", "pt2"]
    onnx = got["onnx"]
    assert onnx.current and onnx.outcome == "export-error" and not onnx.exported
    assert "No ONNX function found" in onnx.error and "\n" not in onnx.error
    assert got["onnx-torchscript"].outcome != "pass"
    for b in ("jit", "jit-trace", "pt2"):
        a = got[b]
        assert (a.outcome, a.exported, a.verdict, a.failed_samples) == ("pass", True, "pass", 0), b
        assert a.max_abs is not None and a.max_abs < 1e-5 and a.time_s > 0
        back = leapp_lab.load(a.run_dir).graph          # each attempt is a full trace run of its own
        assert back.node("discount").backend == {"jit": "jit-script", "jit-trace": "jit-trace", "pt2": "exported-program"}[b]
    (advice,) = m.advice
    assert "'discount'" in advice and "jit, jit-trace, pt2" in advice and "Advice only" in advice
    # advice only: the trace and the user's code are untouched
    assert leapp_lab.load(g.run_dir).graph.node("discount").backend == "onnx-dynamo"
    assert not leapp.ExportManager.is_interpret_graph_enabled() and "output_tensors" not in vars(leapp.ExportManager())
    assert g.exporters is m and leapp_lab.load(g.run_dir).graph.exporters.to_dict() == m.to_dict()
    with pytest.raises(KeyError, match="no graph has a node 'nope'"):
        leapp_lab.exporters(report, mod.body, node="nope")


def test_isolation_pins_export(cumprod):
    mod, report = cumprod
    res = leapp_lab.isolate(report, mod.body)
    assert (res.decision, res.rule) == ("export", 6)
    assert res.run("non_traced").options == {"non_traced": ["discount"]} and res.run("non_traced").verdict == "pass"
    assert res.run("dry_run").status == "dry-run" and res.run("dry_run").same_trace


def test_isolation_pins_patching(out):
    mod = load_pipeline("adapter_branch")
    report = trace(mod, out)
    assert report.graph.verdict == "fail"
    assert report.graph.adapters.status == "ok"                    # eagerly, the adapter is right
    with pytest.raises(ValueError, match="pass the same list again"):
        leapp_lab.isolate(report, mod.body)
    res = leapp_lab.isolate(report, mod.body, patching=mod.OPTIONS["patching"])
    assert (res.decision, res.rule) == ("patching", 2) and res.reruns == 4
    runs = {r.label: r for r in res.runs}
    assert runs["baseline"].failing == ["clip/y/1", "clip/y/2"]
    assert runs["dry_run"].fx_mismatch == ["clip/y/1", "clip/y/2"]         # the trace is wrong ...
    assert runs["no_adapters"].verdict == "pass" and not runs["no_adapters"].failing   # ... because of the adapter
    assert runs["global_patching_off"].verdict == "pass"
    assert runs["no_adapters"].same_trace is False
    # the FX-vs-recorded count is the numpy allclose of the stored arrays
    a = leapp_lab.load(runs["dry_run"].run_dir).arrays()
    bad = [k for k in range(3) if not np.allclose(a[f"clip/y/{k}/fx"], a[f"clip/y/{k}/recorded"], rtol=1e-3, atol=1e-5)]
    assert bad == [1, 2]
    assert "ran again 4 time(s)" in res.notes[0]


def test_isolation_pins_tracing(out):
    mod = load_pipeline("frozen_item")
    res = leapp_lab.isolate(trace(mod, out), mod.body)
    assert (res.decision, res.rule) == ("tracing", 5)
    assert res.run("global_patching_off").verdict == "fail" and res.run("no_adapters").ran is False
