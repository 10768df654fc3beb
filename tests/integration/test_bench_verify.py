"""bench/bench_verify.py stays runnable: a tiny run prints both timings and the ratio, and every
row it verifies is compared (the script asserts that itself)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_verify.py"


def test_bench_small_run_reports_ratio(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(BENCH), "--gib", "0.002", "--taps", "4", "--samples", "2",
                        "--repeat", "1", "--dir", str(tmp_path / "data"), "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ratio verify / baseline:" in r.stdout
    m = json.loads(out.read_text())
    assert (m["taps"], m["samples"]) == (4, 2)
    assert m["elements"] == int(0.002 * (1 << 30) / 4 / 4 / 2)
    assert m["bytes"] >= 2 * 4 * 2 * m["elements"] * 4      # both npz files hold every float32
    assert m["ratio"] == min(m["verify_s"]) / min(m["baseline_s"]) > 0
    assert (tmp_path / "data" / "verify" / "latest").exists()  # verify saved its run folder
