"""bench/bench_local.py stays runnable: a tiny run times both verifies, prints the ratio, and every
compared row of the local run has a local value (the script asserts that itself)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_local.py"


def test_bench_local_small_run_reports_ratio(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(BENCH), "--width", "4", "--size", "16", "--samples", "2",
                        "--repeat", "1", "--engines", "ort", "--dir", str(tmp_path / "d"), "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ratio" in r.stdout and "target <= 1.5x" in r.stdout
    m = json.loads(out.read_text())["engines"]["ort"]
    assert m["rows"] == 11 and m["ratio"] == min(m["local_s"]) / min(m["plain_s"]) > 0
    assert (tmp_path / "d" / "local" / "latest").exists()   # the local verify saved its run folder
