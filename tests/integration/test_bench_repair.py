"""bench/bench_repair.py stays runnable: on the shared outlier MLP it runs the same sweep with 1 and
2 workers, prints both times and the ratio, and both runs rank the segments alike."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.models.repairs import outlier_mlp

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_repair.py"


def test_bench_reports_one_vs_two_workers(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(BENCH), "--prepared", str(outlier_mlp().dir), "--repeat", "1",
                        "--target-nrmse", "0.02", "--dir", str(tmp_path / "w"), "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 worker:" in r.stdout and "2 workers:" in r.stdout and "ratio 1 worker / 2 workers:" in r.stdout
    m = json.loads(out.read_text())
    assert m["same_ranking"] is True and m["status"] == "met"
    assert m["ratio"] == min(m["seconds"]["1"]) / min(m["seconds"]["2"]) > 0
    assert m["builds"] == 1 + m["segments"] + 1      # one round: the baseline, the sweep, the final build
