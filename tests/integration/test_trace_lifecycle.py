"""trace() leaves the process clean whatever the body does; options strict/validate are honoured;
runs of one graph never overwrite each other."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import leapp
import leapp_lab
from leapp import annotate
from leapp_lab.model import list_runs

ORIGINALS = (torch.tensor, torch.as_tensor, torch.from_numpy, np.array, np.asarray)


def _body(obs, fail=False, passes=2, item=False):
    for _ in range(passes):
        x = annotate.input_tensors("n", {"obs": obs if not item else torch.randn(1, 3) * 3})
        y = torch.tanh(x * 2) if not item else x / x.abs().max().item()
        if fail:
            raise RuntimeError("user bug in the traced body")
        annotate.output_tensors("n", {"y": y}, export_with="jit")


def _clean():
    from leapp.utils.tracing_lock import TracingLock
    assert not leapp.ExportManager.is_interpret_graph_enabled()
    assert not TracingLock().is_active
    assert not leapp.ExportManager().patcher.installed
    assert (torch.tensor, torch.as_tensor, torch.from_numpy, np.array, np.asarray) == ORIGINALS
    assert torch.jit._state._enabled.enabled
    assert not any(n.is_tracing for n in leapp.ExportManager().get_nodes().values())


def test_hundred_alternating_runs(tmp_path):
    obs = torch.randn(1, 3)                  # one tensor, promoted in place by every trace
    for i in range(100):
        fail = bool(i % 2)
        try:
            with leapp_lab.trace("loop", save_path=str(tmp_path), max_cached_io=2,
                                 validate=(i % 10 == 0)) as t:
                _body(obs, fail=fail)
        except RuntimeError as exc:
            assert fail and "user bug" in str(exc)
            assert (t.report.graph.status, t.report.graph.verdict) == ("error", "error")
            assert "user bug" in t.report.graph.error
        else:
            assert not fail
            assert t.report.graph.verdict == ("pass" if i % 10 == 0 else "skipped")
        _clean()
    assert len(list_runs(tmp_path / "loop" / "leapp_lab")) == 100

    @torch.jit.script
    def double(x):
        return x * 2
    assert isinstance(double, torch.jit.ScriptFunction)
    assert type(torch.tensor([1.0])) is torch.Tensor and type(np.array([1.0])) is np.ndarray
    # the promoted tensor of the dead trace is usable in plain LEAPP too
    leapp.start("after", save_path=str(tmp_path))
    _body(obs)
    leapp.stop()
    assert leapp.compile_graph(visualize=False) == {"n": True}


def test_error_report_saved_and_reraised(tmp_path):
    with pytest.raises(RuntimeError, match="user bug"):
        with leapp_lab.trace("err", save_path=str(tmp_path)) as t:
            _body(torch.randn(1, 3), fail=True)
    back = leapp_lab.load(tmp_path / "err")
    assert back.graph.status == "error" and back.graph.verdict == "error"
    assert back.graph.error == "RuntimeError: user bug in the traced body"
    assert [n.name for n in back.graph.nodes] == ["n"]          # the node the body had opened
    _clean()


def test_refused_compile(tmp_path):
    """A node that never reaches output_tensors: LEAPP refuses at compile_graph (FATAL)."""
    with pytest.raises(Exception, match="never completed"):
        with leapp_lab.trace("refused", save_path=str(tmp_path)) as t:
            annotate.input_tensors("n", {"obs": torch.randn(1, 3)})
    g = t.report.graph
    assert (g.status, g.verdict) == ("refused", "error") and "never completed" in g.error
    assert any(r.level == "FATAL" for r in g.log)
    assert leapp_lab.load(g.run_dir).graph.status == "refused"
    _clean()


def test_strict_raises_after_report_and_validate_false(tmp_path):
    with pytest.raises(Exception, match=r"Model validation failed for 1 node\(s\): \['n'\]"):
        with leapp_lab.trace("strict", save_path=str(tmp_path), strict=True, max_cached_io=3) as t:
            _body(None, passes=3, item=True)
    g = t.report.graph
    assert g.status == "compiled" and g.verdict == "fail" and os.path.isfile(f"{g.run_dir}/report.json")
    assert [c.passed for c in g.checks] == [True, False, False]
    _clean()
    with leapp_lab.trace("noval", save_path=str(tmp_path), validate=False, max_cached_io=3) as t:
        _body(None, passes=3, item=True)
    g = t.report.graph
    assert t.result is True and g.verdict == "skipped" and g.leapp_result == {}
    assert all(c.passed is None and c.stats == {} for c in g.checks)
    assert [c.fx_stats["max"] > 0 for c in g.checks] == [False, True, True]   # FX replay still kept


def test_two_runs_two_intact_folders(tmp_path):
    reports = []
    for scale in (1.0, 5.0):
        with leapp_lab.trace("twice", save_path=str(tmp_path), max_cached_io=2) as t:
            _body(torch.ones(1, 3) * scale)
        reports.append(t.report)
    lab = tmp_path / "twice" / "leapp_lab"
    runs = list_runs(lab)
    assert len(runs) == 2 and sorted(str(r.path) for r in reports) == [str(p) for p in runs]
    assert (lab / "latest").read_text().strip() == reports[1].graph.run_id
    first = leapp_lab.load(reports[0].path)
    assert first.arrays()["n/obs/0/input"].tolist() == [[1.0, 1.0, 1.0]]
    assert leapp_lab.load(tmp_path / "twice").arrays()["n/obs/0/input"].tolist() == [[5.0] * 3]
    for r in runs:
        files = sorted(os.listdir(r))
        assert files == ["arrays.npz", "log.txt", "models.sha256", "nodes", "report.json", "twice.yaml"], files
        assert "[PASS] n passed validation" in (r / "log.txt").read_text()
        rep = json.loads((r / "report.json").read_text())
        sha = (r / "models.sha256").read_text().split()[0]
        assert rep["graphs"][0]["nodes"][0]["sha256"] == sha


def test_session_left_open_by_plain_leapp_is_reset(tmp_path):
    leapp.start("dangling", save_path=str(tmp_path))
    annotate.input_tensors("n", {"obs": torch.randn(1, 3)})       # a cell that died mid-trace
    with pytest.warns(RuntimeWarning, match="was still open"):
        with leapp_lab.trace("fresh", save_path=str(tmp_path), max_cached_io=2) as t:
            _body(torch.randn(1, 3))
    assert t.report.graph.verdict == "pass"
    _clean()
