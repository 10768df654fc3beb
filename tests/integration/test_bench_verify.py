"""bench/bench_verify.py stays runnable: a tiny run at two sizes prints, per size, the limit and
verify timings, their ratio, M pairs/s and verify's peak memory, and every row it verifies is
compared (the script asserts that itself)."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_verify.py"


def test_bench_small_run_reports_ratio(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(BENCH), "--gib", "0.001", "0.002", "--taps", "4", "--samples", "2",
                        "--rounds", "3", "--dir", str(tmp_path / "data"), "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("  ratio verify / limit:") == 2 and "worst ratio verify / limit:" in r.stdout
    assert r.stdout.count("verify / strict limit:") == 3
    assert "M pairs/s" in r.stdout and "peak memory beyond the memory-mapped files" in r.stdout
    m = json.loads(out.read_text())
    assert m["cores"] >= 1 and m["metrics_backend"] in ("numba", "numpy") and m["rounds"] == 3
    assert [x["gib"] for x in m["runs"]] == [0.001, 0.002]
    for run in m["runs"]:
        assert (run["taps"], run["samples"]) == (4, 2)
        assert run["elements"] == int(run["gib"] * (1 << 30) / 4 / 4 / 2)
        assert run["pairs"] == 4 * 2 * run["elements"]
        assert run["bytes"] >= 2 * run["pairs"] * 4            # both npz files hold every float32
        assert len(run["limit_s"]) == len(run["verify_s"]) == 3
        assert run["ratio"] == statistics.median(run["verify_s"]) / statistics.median(run["limit_s"]) > 0
        assert len(run["strict_limit_s"]) == 3
        assert run["ratio_strict"] == statistics.median(run["verify_s"]) / statistics.median(run["strict_limit_s"])
        assert run["verify_mpairs_s"] == run["pairs"] / run["verify_median_s"] / 1e6
        assert run["verify_peak_anon_mib"] is None or run["verify_peak_anon_mib"] >= 0
        assert (tmp_path / "data" / f"{run['gib']:g}GiB" / "verify" / "latest").exists()  # run folder saved
