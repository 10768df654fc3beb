"""``leapp_lab.diff(run_a, run_b)``: two verify runs row by row (int8 vs fp16, before vs after a fix).

Reads the two runs' stored records only (no arrays, no engine): each metric's change B − A and
B / A, the rows whose verdict flipped, the rows in one run only, each run's first divergent row.
The result is a ``CompareReport`` (mode ``diff``); see docs/verify.md#compare-engines-and-runs.
"""
from __future__ import annotations

import os
from pathlib import Path

from leapp_lab.model.base import load
from leapp_lab.model.compare import CompareReport
from leapp_lab.model.jsonio import write_json
from leapp_lab.model.runs import RunFolder
from leapp_lab.model.verify import VerifyReport


def load_verify(run, what: str = "run") -> VerifyReport:
    """A VerifyReport, or the verify run at ``run`` (anything ``leapp_lab.load`` accepts); another
    kind of report is refused with a message naming the path."""
    if isinstance(run, VerifyReport):
        return run
    if not isinstance(run, (str, os.PathLike)):
        raise TypeError(f"{what}: a verify run folder or a VerifyReport, got {type(run).__name__}")
    report = load(run)
    if report.kind != "verify":
        raise ValueError(f"{run}: a {report.kind} report, not a verify run; diff compares two verify runs "
                         f"(`leapp-lab verify` prints 'run folder: …')")
    return report


def diff(run_a, run_b, *, fail_on_flip: bool = False, out=None, json_path=None) -> CompareReport:
    """Run A against run B (run folders, or VerifyReports). ``fail_on_flip``: ``exit_code`` 1 when a
    row passing in A fails in B. ``out``: save the diff as a run folder under ``out``
    (``out/runs/<id>/``, ``out/latest``; default: not saved, a diff is cheap to make again);
    ``json_path`` writes the ``--json`` rows."""
    a, b = load_verify(run_a, "RUN_A"), load_verify(run_b, "RUN_B")
    report = a.diff(b, fail_on_flip=fail_on_flip)
    if json_path is not None:
        write_json(json_path, report.json_rows())
    if out is not None:
        with RunFolder(Path(out), label="diff") as run:
            report.save(run.path)
        report.path = run.final_path
    return report


__all__ = ["diff", "load_verify"]
