"""``leapp_lab.verify_many(reference_npz, [build_a, build_b, ...])``: several engines in one table.

Each build is verified exactly as ``leapp_lab.verify`` does on its own (its own VerifyReport and
run folder, its own --max-mape gate); the reports then become one ``CompareReport`` (mode
``engines``, the first build the baseline), saved in a run folder of its own. See
docs/verify.md#compare-engines-and-runs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from leapp_lab.model.compare import CompareReport, compare_reports
from leapp_lab.model.jsonio import write_json
from leapp_lab.model.runs import RunFolder, lab_dir
from leapp_lab.model.verify import VerifyReport

from .verify import check_verify_outputs, verify


def runs_roots(builds: Sequence, out=None, save: bool = True) -> list[Path]:
    """Where ``verify_many`` saves: ``out``, else each build's ``leapp_lab`` folder (the compare goes
    to the first's); none without ``save``."""
    if not save:
        return []
    return [Path(out)] if out is not None else [lab_dir(Path(b).parent) for b in builds]


def verify_many(reference_npz, builds: Sequence, max_mape: float | None = None, max_mape_taps: bool = False,
                out=None, *, save: bool = True, json_path=None, labels: Sequence[str] | None = None,
                **verify_options: Any) -> CompareReport:
    """Verify ``reference_npz`` against every build of ``builds`` (two or more build folders or
    .tgz; the first is the baseline) and put them in one table. ``max_mape``, ``max_mape_taps``,
    ``out``, ``save`` and ``verify_options`` (``div_nrmse``, ``rtol``, ``verbose``, ``progress``, ...)
    go to each ``verify``; each build's run is saved as ``verify`` saves it, and the compare under
    ``out`` (default: ``<first build's folder>/leapp_lab``). ``json_path`` writes the compare's
    ``--json`` rows. ``labels``: one name per build (default: the engine names). The compare's
    ``exit_code`` is 1 when any build's gate failed."""
    builds = list(builds)
    if len(builds) < 2:
        raise ValueError(f"verify_many needs two or more builds, got {len(builds)}; "
                         f"leapp_lab.verify(reference, build) verifies one")
    # every output against every input, before the first build's run is saved
    check_verify_outputs(reference_npz, builds, json_path=json_path, runs_root=runs_roots(builds, out, save))
    reports = [verify(reference_npz, b, max_mape, max_mape_taps, out, save=save, **verify_options)
               for b in builds]
    return finish(reports, builds[0], out=out, save=save, json_path=json_path, labels=labels)


def finish(reports: list[VerifyReport], first_build, *, out=None, save: bool = True, json_path=None,
           labels: Sequence[str] | None = None) -> CompareReport:
    """The compare of verify ``reports`` already made (mode ``engines``): written to ``json_path``
    and saved in a run folder under ``out`` (default ``<first_build's folder>/leapp_lab``)."""
    report = compare_reports(reports, mode="engines", labels=None if labels is None else list(labels))
    if json_path is not None:
        write_json(json_path, report.json_rows())
    if save:
        root = Path(out) if out is not None else lab_dir(Path(first_build).parent)
        label = "compare-" + "-".join(s.label for s in report.sides)
        with RunFolder(root, label=label) as run:
            report.save(run.path)
        report.path = run.final_path
    return report


__all__ = ["verify_many", "finish", "runs_roots"]
