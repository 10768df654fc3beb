"""``leapp_lab.diff(run_a, run_b)``: two verify runs row by row (int8 vs fp16, before vs after a fix).

Reads the two runs' stored records only (no arrays, no engine): each metric's change B − A and
B / A, the rows whose verdict flipped, the rows in one run only, each run's first divergent row.
The result is a ``CompareReport`` (mode ``diff``); see docs/verify.md#compare-engines-and-runs.
"""
from __future__ import annotations

import os
from pathlib import Path

from leapp_lab.model.base import load, resolve_report_path
from leapp_lab.model.compare import CompareReport
from leapp_lab.model.jsonio import write_json
from leapp_lab.model.runs import LATEST, RUNS_DIRNAME, save_run_with
from leapp_lab.model.errors import UnsafeOutput, UnusableInput
from leapp_lab.model.safepaths import check_outputs
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
                         f"(`leapp-lab verify` prints 'run folder: …')" + _repair_hint(report))
    return report


def _repair_hint(report) -> str:
    """A repair report holds two verify runs, the engine as built and the repaired one: the diff
    the user most likely wanted, as a command."""
    import shlex
    base, final = (getattr(getattr(report, k, None), "verify_run", None) for k in ("baseline", "final"))
    if report.kind != "repair" or not base or not final:
        return ""
    return (f"; this repair verified the engine as built ({base}) and the repaired engine ({final}): "
            f"leapp-lab diff {shlex.quote(str(base))} {shlex.quote(str(final))}")


def diff(run_a, run_b, *, fail_on_flip: bool = False, out=None, json_path=None, html=None) -> CompareReport:
    """Run A against run B (run folders, or VerifyReports). ``fail_on_flip``: ``exit_code`` 1 when a
    row passing in A fails in B. ``out``: save the diff as a run folder under ``out``
    (``out/runs/<id>/``, ``out/latest``; default: not saved, a diff is cheap to make again);
    ``json_path`` writes the ``--json`` rows, ``html`` the standalone HTML report; the run and both
    files are written first and committed together at the end."""
    a, b = load_verify(run_a, "RUN_A"), load_verify(run_b, "RUN_B")
    check_two_runs(run_a, run_b)
    check_same_model(a, b, run_a, run_b)
    # the runs as given: a runs root given as RUN_A is an input too (its 'latest' names the run)
    check_diff_outputs(run_a, run_b, json_path=json_path, out=out, html=html)
    report = a.diff(b, fail_on_flip=fail_on_flip)
    save_run_with(report, None if out is None else Path(out), "diff",
                  [(json_path, lambda tmp: write_json(tmp, report.json_rows())), (html, report.to_html)])
    return report


def check_two_runs(run_a, run_b) -> None:
    """One run given twice (a run folder and the runs root whose 'latest' names it, say) would diff
    it with itself: every change 0, no flip, exit 0, which reads as "nothing changed"; refused."""
    fa, fb = _run_folder(run_a), _run_folder(run_b)
    if fa is not None and fb is not None and _same_path(fa, fb):
        raise UnusableInput(f"{run_a} and {run_b}: the same verify run ({fa}) given twice; diff compares "
                            f"two runs (of two builds, or before and after a change)")


def check_same_model(a: VerifyReport, b: VerifyReport, run_a, run_b) -> None:
    """Two runs without one output or tap name in common verify different models: a diff of them
    would pair nothing and show every row as absent on one side (exit 0); refused naming both."""
    names_a, names_b = [r.name for r in a.rows], [r.name for r in b.rows]
    if names_a and names_b and not set(names_a) & set(names_b):
        raise UnusableInput(f"{run_a} and {run_b}: no output or tap in common (A: {names_a[:4]}, "
                            f"B: {names_b[:4]}): the runs verify different models; diff two verify "
                            f"runs of the same model (of two builds, or before and after a change)")


def _run_folder(run) -> Path | None:
    if isinstance(run, VerifyReport):
        return None if run.path is None else Path(run.path)
    if isinstance(run, (str, os.PathLike)):
        try:
            return resolve_report_path(run)
        except (FileNotFoundError, UnusableInput):      # load() names it: e.g. a verify --json summary
            return Path(run)
    return None


def _named_by_latest(run, root: Path | None) -> Path | None:
    """The run folder that ``run`` (as the user gave it) names through the 'latest' of ``root``,
    or None when it does not: it is a run folder, a report.json, or another root's latest."""
    if root is None or not isinstance(run, (str, os.PathLike)):
        return None
    folder = _run_folder(run)
    if folder is None or _same_path(folder, Path(run)) or _same_path(folder, Path(run).parent):
        return None
    holder = folder.parent.parent          # <root>/runs/<id>: the root whose latest named it
    return folder if _same_path(holder, root) else None


def _same_path(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def check_diff_outputs(run_a, run_b, *, json_path=None, out=None, html=None) -> None:
    """Refuse, before anything is written, a diff output that would land on or inside one of the two
    runs, or replace a file leapp_lab did not write for it (docs/safety.md). The runs folder that
    holds the runs may take the diff's own run (a run is added there, none replaced)."""
    root = None if out is None else Path(out)
    for run, what in ((run_a, "RUN_A"), (run_b, "RUN_B")):
        named = _named_by_latest(run, root)
        if named is not None:
            raise UnsafeOutput(
                f"--out {root}: {what} was given as {run}, whose 'latest' names the run compared "
                f"({named}); saving the diff there would move that 'latest' to the diff, and {what} "
                f"would then name another run: choose another --out, or give {what} as {named}")
    check_outputs(
        [(json_path, "compare-json", "--json"), (html, "html", "--html"),
         (None if root is None else root / LATEST, "latest", "--out"),
         (None if root is None else root / RUNS_DIRNAME, "runs-dir", "--out")],
        [(_run_folder(run_a), "RUN_A"), (_run_folder(run_b), "RUN_B")])


__all__ = ["check_diff_outputs", "diff", "load_verify"]
