"""bench/bench_replay_engine.py stays runnable: a tiny replay on ort-int8 against the same number of
single engine runs prints the ratio, and its numbers hang together (the engine's own runs inside the
closed loop are part of the loop's time; the build is reused, never rebuilt per step)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_replay_engine.py"


def test_bench_replay_engine_small_run_reports_ratio(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(BENCH), "--hidden", "32", "--steps", "12", "--samples", "4",
                        "--repeat", "1", "--dir", str(tmp_path / "d"), "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ratio" in r.stdout and "target <= 1.5x" in r.stdout and "pipeline wiring" in r.stdout
    m = json.loads(out.read_text())
    assert m["engine_steps"] == 12 + 4 and m["ratio"] == min(m["engine_loop_s"]) / m["single_runs_s"] > 0
    assert 0 < m["engine_loop_engine_s"][0] <= m["engine_loop_s"][0] <= m["total_s"][0]
    # a session costs many runs: a per-step rebuild would show as a loop far above the single runs
    assert m["session_build_s"] > m["one_run_s"]
