"""bench/bench_loop.py stays runnable (issue 23, Deliver 4): a one-block run of every variant as real
processes prints each one and the ratios, and its re-run of the CLI pipeline reuses prepare's and
compile's outputs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_loop.py"
sys.path.insert(0, str(BENCH.parent))

from loop_model import block_plan  # noqa: E402


def test_block_plans_follow_mobilenet_v2():
    plan = block_plan(17)
    assert len(plan) == 17 and [c for _, c, _ in plan][-1] == 320
    assert sum(s == 2 for _, _, s in plan) == 4                         # MobileNetV2's 4 stride-2 blocks
    assert block_plan(10) == plan[:10]
    longer = block_plan(40)
    assert len(longer) == 40 and longer[:13] == plan[:13] and longer[-4:] == plan[-4:]


def test_bench_one_block_run(tmp_path):
    out = tmp_path / "loop.json"
    r = subprocess.run([sys.executable, str(BENCH), "--blocks", "1", "--rounds", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    for v in ("bare", "anchor", "cli", "rerun", "api"):
        assert f"round 1  {v}" in r.stdout, r.stdout
    assert "cli/bare" in r.stdout and "prepare reused: True, compile reused: True" in r.stdout
    m = json.loads(out.read_text())
    run = m["runs"][0]
    assert run["blocks"] == 1 and run["rows"] > 5 and run["rerun_reused"] is True
    assert run["cli_s"] == sum(run["cli_steps_s"].values())
    # each timing is measured and recorded; how they compare is the bench's report, not a test's
    # (the anchor exports too, but at one block the two are within the noise of a loaded machine)
    assert 0 < run["rerun_s"] and 0 < run["bare_s"] and 0 < run["anchor_s"]
    parts = run["prepare_parts_s"]
    assert parts["export"] > 0 and parts["eager"] > 0 and parts["write"] > 0
    assert run["prepare_overhead"] == (parts["total"] - parts["export"]) / parts["export"]
