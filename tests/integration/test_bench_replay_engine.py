"""bench/bench_replay_engine.py stays runnable: a tiny replay on ort-int8 against the same number of
single engine runs prints the ratio, and its numbers hang together (the engine's own runs inside the
closed loop are part of the loop's time; the build is reused, never rebuilt per step; both sides'
sessions have the same options; the single runs reproduce the closed loop's outputs, which the bench
checks, so they ran on the same inputs)."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_replay_engine.py"


def test_bench_replay_engine_small_run_reports_ratio(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(BENCH), "--hidden", "32", "--steps", "12", "--samples", "4",
                        "--repeat", "2", "--threads", "1", "--dir", str(tmp_path / "d"), "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    for said in ("ratio", "target <= 1.5x", "pipeline wiring", "per engine run", "same options",
                 "intra_op_num_threads=1", "replay first", "single runs first", "control", "cpu ratio"):
        assert said in r.stdout, (said, r.stdout)
    m = json.loads(out.read_text())
    assert m["engine_steps"] == 12 + 4 and len(m["engine_loop_s"]) == len(m["single_runs_s"]) == 2
    assert m["ratio"] == statistics.median(m["engine_loop_s"]) / statistics.median(m["single_runs_s"]) > 0
    tf, single = statistics.median(m["teacher_forcing_s"]), statistics.median(m["single_runs_s"])
    assert abs(m["ratio_per_engine_run"] - (statistics.median(m["engine_loop_s"]) + tf) / (2 * single)) < 1e-9
    for loop, inside, total in zip(m["engine_loop_s"], m["engine_loop_engine_s"], m["total_s"]):
        assert 0 < inside <= loop <= total
    # one session thread: the CPU time of the loop's thread holds the engine's runs (part of the wall time)
    for cpu, single_cpu, loop in zip(m["engine_loop_cpu_s"], m["single_runs_cpu_s"], m["engine_loop_s"]):
        assert 0 < cpu <= loop * 1.05 and single_cpu > 0
    assert m["cpu_ratio"] == statistics.median(m["engine_loop_cpu_s"]) / statistics.median(m["single_runs_cpu_s"])
    # a session costs many runs: a per-step rebuild would show as a loop far above the single runs
    assert m["session_build_s"] > m["one_run_s"]
