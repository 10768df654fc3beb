"""``--jobs`` is capped to the work: a repair never starts more pool workers than builds it has at
once (docs/repair.md). ``--jobs 1000`` for at most four builds a round started 121 processes.

The real CLI in a subprocess on a private copy of one prepared model (safety_helpers); every
``multiprocessing`` process the command starts is counted as it starts."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from safety_helpers import copy_prepared

# every process multiprocessing starts (the pool's workers), one line each
_COUNT_STARTS = """
import multiprocessing.process as _mp
_real_start = _mp.BaseProcess.start
def _start(self):
    with open(os.environ["STARTS"], "a") as fh:
        fh.write(type(self).__name__ + "\\n")
    return _real_start(self)
_mp.BaseProcess.start = _start
"""


def test_jobs_1000_starts_no_more_workers_than_builds_at_once(tmp_path_factory, tmp_path, short_tmp):
    w = copy_prepared(tmp_path_factory, tmp_path / "w")
    starts = tmp_path / "starts.txt"
    out = tmp_path / "rep"
    # 7 segments; a budget of 6 builds leaves room for 4 in the sweep's one round (the baseline and
    # the final proof take the other two): at most 4 builds at once
    argv = ["repair", "build/model.reference.npz", "build/model.onnx", "--engine", "ort-int8",
            "--target-nrmse", "1e-9", "--budget", "6", "--jobs", "1000", "--quiet", "--out", str(out),
            "--json", str(tmp_path / "r.json")]
    driver = (f"import os, sys\n{_COUNT_STARTS}\nsys.argv[1:] = {argv!r}\n"
              "from leapp_lab.cli import main\nmain()\n")
    env = dict(os.environ, STARTS=str(starts), TMPDIR=str(short_tmp))
    env.pop("LEAPP_LAB_DEBUG", None)
    r = subprocess.run([sys.executable, "-c", driver], cwd=w["dir"], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 1, r.stderr[-3000:]          # the tiny target is not met: a full report
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["builds"] == 6 and len(report["segments"]) == 7
    assert report["executor"] == "process" and report["workers"] == 4
    started = starts.read_text().split()
    assert len(started) == 4, started
