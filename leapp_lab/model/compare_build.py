"""Building a compare from verify reports: sides labelled, rows as the union of the sides' shown rows
in model order, verdict flips and changes against the baseline, warnings, the gate. No arrays: the
stored records only (``leapp_lab.model.compare`` holds the report's shape and the module doc).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .compare import (FLIPS, MODES, RATIO_FMTS, Change, CompareReport, CompareRow, CompareSide, change_columns,
                      side_key)
from .tap import TapEntry, model_order_key
from .verify import VerifyReport


def _labels(reports: list[VerifyReport], mode: str) -> list[str]:
    if mode == "diff":
        return [side_key(i) for i in range(len(reports))]
    names = [r.engine or r.build_name or side_key(i) for i, r in enumerate(reports)]
    if len(set(names)) < len(names):
        names = [r.build_name or n for r, n in zip(reports, names)]
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def compare_reports(reports: list[VerifyReport], mode: str = "engines", *, labels: list[str] | None = None,
                    fail_on_flip: bool = False) -> CompareReport:
    """The compare of ``reports`` (the first is the baseline). ``mode``: ``engines`` (one reference,
    several builds; the gate fails when a build's own gate failed) or ``diff`` (two runs)."""
    import datetime as _dt

    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {MODES}")
    if len(reports) < 2:
        raise ValueError(f"a compare needs two or more verify reports, got {len(reports)}")
    for i, rep in enumerate(reports):
        if getattr(rep, "kind", None) != "verify":
            raise TypeError(f"side {side_key(i)}: a {type(rep).__name__} (kind "
                            f"{getattr(rep, 'kind', None)!r}); a compare takes verify reports")
    labels = list(labels) if labels is not None else _labels(reports, mode)
    if len(labels) != len(reports) or len(set(labels)) != len(labels):
        raise ValueError(f"labels {labels!r}: one distinct label per report ({len(reports)})")
    sides = [CompareSide(key=side_key(i), label=labels[i], run=str(rep.path) if rep.path else None,
                         reference=rep.reference, build=rep.build, build_name=rep.build_name,
                         engine=rep.engine, samples=rep.samples, rule=rep.rule.text or rep.rule.describe(),
                         first_divergent=rep.first_divergent, worst_tap=rep.worst_tap,
                         expected=rep.expected.dtype if rep.expected is not None else None,
                         beyond_expected=list(rep.beyond_expected),
                         first_beyond_expected=rep.first_beyond_expected, worst_local=rep.worst_local,
                         exit_code=rep.exit_code, created=rep.created, report=rep)
             for i, rep in enumerate(reports)]
    report = CompareReport(mode=mode, sides=sides, fail_on_flip=bool(fail_on_flip),
                           created=_dt.datetime.now().isoformat(timespec="seconds"))
    from leapp_lab import __version__
    report.versions = {"leapp_lab": __version__}
    report.rows = _rows(report)
    report.warnings = _warnings(report)
    gate(report, fail_on_flip)
    return report


def _rows(report: CompareReport) -> list[CompareRow]:
    sides = report.sides
    ident: dict[str, TapEntry] = {}
    for s in sides:
        for r in s.report.table():
            ident.setdefault(r.name, r)
    items = list(enumerate(ident.values()))
    ordered = [e for i, e in sorted(items, key=lambda it: model_order_key(it[1], it[0]))]
    base = sides[0].key
    ratio = {c.key: c.fmt in RATIO_FMTS for c in change_columns()}
    rows = []
    for e in ordered:
        row = CompareRow(**TapEntry.identity(e))
        for s in sides:
            cell = report.cell(e.name, s.key)
            row.verdicts[s.key] = cell.verdict if cell is not None else "absent"
            if cell is None:
                row.missing_in.append(s.key)
            elif cell.first_divergent:
                row.first_divergent_in.append(s.key)
        a = report.cell(e.name, base)
        for s in sides[1:]:
            b = report.cell(e.name, s.key)
            flip = FLIPS.get((row.verdicts[base], row.verdicts[s.key]))
            if flip:
                row.flips[s.key] = flip
            if a is not None and b is not None:
                row.changes[s.key] = {k: Change.of(getattr(a, k), getattr(b, k), r) for k, r in ratio.items()}
        rows.append(row)
    return rows


def _same_file(path: Any) -> str:
    """A reference path as one file: ``build/model.reference.npz`` given to verify and the absolute
    path repair records name the same file. A relative path is taken from the current folder, the
    one it was given in when both runs come from one session."""
    return str(Path(str(path)).resolve()) if path else ""


def _warnings(report: CompareReport) -> list[str]:
    out = []
    sides = report.sides
    for attr, what in (("reference", "references"), ("rule", "divergence rules"), ("samples", "sample counts")):
        vals = {s.key: getattr(s, attr) for s in sides}
        same = _same_file if attr == "reference" else str
        if len(set(map(same, vals.values()))) > 1:
            detail = "; ".join(f"{k}: {v}" for k, v in vals.items())
            why = {"reference": "their rows measure different reference values",
                   "rule": "a verdict may flip because of the rule, not the engine",
                   "samples": "their metrics cover different samples"}[attr]
            out.append(f"the runs have different {what} ({detail}): {why}")
    for s in sides:
        only = report.only_in(s.key)
        if only:
            name = s.key if s.label == s.key else f"{s.key} ({s.label})"
            out.append(f"{len(only)} rows only in {name}: {', '.join(only[:8])}"
                       + (" ..." if len(only) > 8 else ""))
    missing = [s.key for s in sides if s.report is None]
    if missing:
        out.append(f"sides without their verify report: {missing}")
    return out


def gate(report: CompareReport, fail_on_flip: bool) -> int:
    """Set ``exit_code``: 1 when (engines) a side's own gate failed, or (``fail_on_flip``) a row
    flipped to fail; else 0."""
    report.fail_on_flip = bool(fail_on_flip)
    failed = report.mode == "engines" and any(s.exit_code for s in report.sides)
    flipped = report.fail_on_flip and bool(report.to_fail)
    report.exit_code = 1 if (failed or flipped) else 0
    return report.exit_code
