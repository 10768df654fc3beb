"""``leapp_lab.verify_many(reference_npz, [build_a, build_b, ...])``: several engines in one table.

Each build is verified exactly as ``leapp_lab.verify`` does on its own (its own VerifyReport and
run folder, its own --max-mape gate); the reports then become one ``CompareReport`` (mode
``engines``, the first build the baseline), saved in a run folder of its own. No run is committed
before every build is verified and every run written (check, then work, then commit). See
docs/verify.md#compare-engines-and-runs.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Sequence

from leapp_lab.model.compare import CompareReport
from leapp_lab.model.compare_build import compare_reports
from leapp_lab.model.errors import InvalidOption
from leapp_lab.model.jsonio import write_json
from leapp_lab.model.runs import RunFolder, lab_dir
from leapp_lab.model.safepaths import staged
from leapp_lab.model.verify import VerifyReport

from .verify_build import check_verify_outputs, verify_build


def runs_roots(builds: Sequence, out=None, save: bool = True) -> list[Path]:
    """Where ``verify_many`` saves: ``out``, else each build's ``leapp_lab`` folder (the compare goes
    to the first's); none without ``save``."""
    if not save:
        return []
    return [Path(out)] if out is not None else [lab_dir(Path(b).parent) for b in builds]


def check_distinct(builds: Sequence) -> None:
    """One build given twice (also as ``./b/`` or through a link) would be compared with itself,
    every change 0, which says nothing: InvalidOption naming both spellings."""
    seen: dict[str, Any] = {}
    for b in builds:
        first = seen.setdefault(os.path.realpath(b), b)
        if first is not b:
            raise InvalidOption(f"{b}: the same build as {first}, given twice; give each build once "
                                f"(verify REFERENCE.npz BUILD_A BUILD_B compares different builds)")


def verify_many(reference_npz, builds: Sequence, max_mape: float | None = None, max_mape_taps: bool = False,
                out=None, *, save: bool = True, json_path=None, labels: Sequence[str] | None = None,
                html=None, **verify_options: Any) -> CompareReport:
    """Verify ``reference_npz`` against every build of ``builds`` (two or more build folders or
    .tgz; the first is the baseline) and put them in one table. ``max_mape``, ``max_mape_taps``,
    ``out``, ``save`` and ``verify_options`` (``div_nrmse``, ``rtol``, ``verbose``, ``progress``, ...)
    go to each ``verify``; each build's run is saved as ``verify`` saves it, and the compare under
    ``out`` (default: ``<first build's folder>/leapp_lab``). ``json_path`` writes the compare's
    ``--json`` rows, ``html`` its standalone HTML report. ``labels``: one name per build (default: the
    engine names). The compare's ``exit_code`` is 1 when any build's gate failed."""
    builds = list(builds)
    if len(builds) < 2:
        raise ValueError(f"verify_many needs two or more builds, got {len(builds)}; "
                         f"leapp_lab.verify(reference, build) verifies one")
    check_distinct(builds)
    # every output against every input, before the first build's run is saved
    check_verify_outputs(reference_npz, builds, json_path=json_path, runs_root=runs_roots(builds, out, save),
                         html=html)
    # every build verified before any run is saved: a bad build commits nothing (docs/safety.md)
    reports = [verify_build(reference_npz, b, max_mape, max_mape_taps, out, save=False, **verify_options)
               for b in builds]
    return finish(reports, builds, out=out, save=save, json_path=json_path, labels=labels, html=html)


def finish(reports: list[VerifyReport], builds: Sequence, *, out=None, save: bool = True, json_path=None,
           labels: Sequence[str] | None = None, html=None) -> CompareReport:
    """The compare of verify ``reports`` made unsaved, one per build of ``builds``: each build's run
    (under ``out``, default ``<build's folder>/leapp_lab``, as ``verify`` saves it), the compare run
    (under ``out``, default ``<first build's folder>/leapp_lab``), ``json_path`` and ``html`` are all
    written first, then committed in that order (``latest`` names the compare): a failure or Ctrl-C
    before the end commits none of them."""
    # each build's runs root (runs_roots: the distinct ones), the first's also the compare's
    roots = [Path(out) if out is not None else lab_dir(Path(b).parent) for b in builds] if save else []
    files = [Path(f) for f in (json_path, html) if f is not None]
    with staged(files) as tmps, contextlib.ExitStack() as stack:
        tmp = dict(zip(files, tmps))
        runs = []
        for rep, root in zip(reports, roots):
            run = stack.enter_context(RunFolder(root, label=f"verify-{rep.build_name}"))
            rep.save(run.path)
            rep.path = run.final_path          # where it will be: the compare names it
            runs.append(run)
        report = compare_reports(reports, mode="engines", labels=None if labels is None else list(labels))
        if save:
            label = "compare-" + "-".join(s.label for s in report.sides)
            run = stack.enter_context(RunFolder(roots[0], label=label))
            report.save(run.path)
            report.path = run.final_path
            runs.append(run)
        if json_path is not None:
            write_json(tmp[Path(json_path)], report.json_rows())
        if html is not None:
            report.to_html(tmp[Path(html)])
        for run in runs:
            run.commit()
    return report


__all__ = ["verify_many", "finish", "runs_roots"]
