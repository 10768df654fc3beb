"""bench/bench_graphs.py stays runnable: a tiny run renders both pages, opens them in Chromium and
reports every timing (the graph ones for this tree only)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_graphs.py"
pytestmark = pytest.mark.browser


def test_bench_small_run_reports_both_renderers(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(BENCH), "--rows", "80", "--nodes", "62", "--repeat", "1",
                        "--dir", str(tmp_path / "data"), "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    m = json.loads(out.read_text())
    now = m["best"]["this tree"]
    assert (m["rows"], m["nodes"]) == (80, 62)
    # the baseline renderer is measured whenever this checkout holds its commit (not a shallow clone)
    has_base = subprocess.run(["git", "-C", str(BENCH.parents[1]), "cat-file", "-e", "a1196a6^{commit}"],
                              capture_output=True).returncode == 0
    assert ("baseline a1196a6" in m["best"]) == has_base
    base = m["best"].get("baseline a1196a6", {"fcp_ms": 1, "ready_ms": 1})
    for k in ("fcp_ms", "ready_ms"):
        assert now[k] > 0 and base[k] > 0
    # the accuracy graph: drawn folded, then every node once unfolded (62 ops, the output Identity, input, output)
    assert now["graph_ms"] > 0 and 0 < now["graph_boxes"] < now["unfold_boxes"] == 65
    assert "graph_ms" not in base
    pages = tmp_path / "data"
    assert now["html_mb"] == (pages / "now.html").stat().st_size / 1e6
    assert "unfold all" in r.stdout and "view ready" in r.stdout
