"""The compare report: several verify runs side by side, row by row (several engines, or before/after).

Two ways to get one, one shape (docs/verify.md#compare-engines-and-runs)::

    leapp_lab.verify_many(reference, [build_a, build_b, ...])   # mode "engines": one reference, N builds
    report_a.diff(report_b)  /  leapp_lab.diff(run_a, run_b)      # mode "diff": two verify runs, A and B

Shape (JSON, see docs/schema-verify.md#compare-run-folder)::

    CompareReport{mode, sides: [CompareSide{key: "A"|"B"|..., label, run, build, engine, ...}],
                  rows: [CompareRow{...TapEntry identity..., verdicts: {side: verdict},
                                    flips: {side: "to-fail"|"to-pass"},
                                    changes: {side: {column: Change{a, b, delta, ratio}}},
                                    first_divergent_in: [side], missing_in: [side]}],
                  warnings, fail_on_flip, exit_code}

Every side is a whole ``VerifyReport`` (``CompareSide.report``; the run folder keeps a copy of each in
``sides/<key>/``), so a compare opens, renders and exports on its own. The first side is the
*baseline*: every other side's changes and flips are against it. Rows are the union of the sides'
shown rows (``VerifyReport.table()``), in model order; a name a side lacks has the verdict
``absent`` there. Numbers are never recomputed from arrays: a change is the difference (and, where
meaningful, the ratio) of the two runs' stored float64 records.

Which columns belong to a side and which to the row is decided by the one column registry
(``leapp_lab.model.columns``): a column that is a ``TapEntry`` field is the row's identity (order,
name, kind, source, ...), every other column is a per-side column. A per-side column with a numeric
format gets a ``Change``: ``delta`` = b − a always, ``ratio`` = b / a for magnitudes (formats ``num``
and ``x``: errors, growth) when a > 0; none for cosine and counts, where a ratio means nothing.

The report is here; ``compare_build.compare_reports`` builds one from verify reports.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
import re
from pathlib import Path
from typing import Any, ClassVar

from .base import Report, Viewable, register
from .columns import Column, row_columns
from .dc import Plain
from .errors import UnusableInput
from .fieldcheck import check_fields
from .safepaths import present
from .tap import TapEntry
from .verify import VerifyReport, VerifyRow

MODES = ("engines", "diff")
#: a side's verdict on a row: VerifyRow.verdict, or ``absent`` (the side has no row of that name)
VERDICTS = ("pass", "fail", "uncompared", "absent")
#: flips of a side against the baseline (both sides judged the row)
FLIPS = {("pass", "fail"): "to-fail", ("fail", "pass"): "to-pass"}
NUMERIC_FMTS = ("num", "int", "cos", "x")
RATIO_FMTS = ("num", "x")
SIDES_DIR = "sides"
CSV_FILE = "compare.csv"
_IDENTITY = frozenset(f.name for f in fields(TapEntry))


def identity_columns() -> list[Column]:
    """Registry columns that name the row (TapEntry fields): shared by every side."""
    return [c for c in row_columns() if c.key in _IDENTITY]


def side_columns() -> list[Column]:
    """Registry columns that each side has a value of (metrics, status, rule results)."""
    return [c for c in row_columns() if c.key not in _IDENTITY]


def change_columns() -> list[Column]:
    """Per-side columns whose change is recorded (numeric formats)."""
    return [c for c in side_columns() if c.fmt in NUMERIC_FMTS]


def side_key(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"S{i}"


@dataclass
class Change(Plain):
    """One metric of one row, a side against the baseline: ``a`` (baseline), ``b`` (the side),
    ``delta`` = b − a, ``ratio`` = b / a (magnitudes only, and only when a > 0). None where a value
    is missing or not finite."""
    a: float | None = None
    b: float | None = None
    delta: float | None = None
    ratio: float | None = None

    @classmethod
    def of(cls, a: Any, b: Any, ratio: bool) -> "Change":
        fa, fb = _finite(a), _finite(b)
        d = fb - fa if fa is not None and fb is not None else None
        r = fb / fa if ratio and fa is not None and fb is not None and fa > 0 else None
        return cls(a=fa, b=fb, delta=d, ratio=r)


def _finite(v: Any) -> float | None:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


@dataclass
class CompareRow(TapEntry):
    """One output or tap across the sides (its ``TapEntry`` identity from the first side that has it).

    ``verdicts``: side key -> ``VERDICTS``. ``flips``: side key -> ``to-fail`` | ``to-pass`` for the
    sides whose verdict differs from the baseline's, both judged (pass/fail). ``changes``: side key
    -> column key -> ``Change`` against the baseline (non-baseline sides holding the row, baseline
    holding it too). ``first_divergent_in``: the sides where it is the first divergent row.
    ``missing_in``: the sides without a row of this name.
    """
    verdicts: dict[str, str] = field(default_factory=dict)
    flips: dict[str, str] = field(default_factory=dict)
    changes: dict[str, dict[str, Change]] = field(default_factory=dict)
    first_divergent_in: list[str] = field(default_factory=list)
    missing_in: list[str] = field(default_factory=list)

    @property
    def flip(self) -> str | None:
        """``to-fail`` when some side fails where the baseline passes, else ``to-pass`` when some
        side passes where it fails, else None."""
        vals = set(self.flips.values())
        return "to-fail" if "to-fail" in vals else ("to-pass" if "to-pass" in vals else None)

    @property
    def status(self) -> str:
        """The row over every side: ``fail`` when a side fails, ``pass`` when a side passes and
        none fails, ``uncompared`` when no side judges it."""
        vals = set(self.verdicts.values())
        return "fail" if "fail" in vals else ("pass" if "pass" in vals else "uncompared")


@dataclass
class CompareSide(Plain):
    """One verify run of a compare (a column group). ``key``: A, B, ...; ``label``: what the views
    call it (engines: the engine, or the build name where engines repeat; diff: the key);
    ``run``: the verify run folder it was saved in or loaded from (None: never saved). The rest
    summarises ``report``, the whole VerifyReport (kept in ``sides/<key>/`` of the run folder)."""
    key: str = "A"
    label: str = "A"
    run: str | None = None
    reference: str = ""
    build: str = ""
    build_name: str = ""
    engine: str | None = None
    samples: int = 0
    rule: str = ""
    first_divergent: str | None = None
    worst_tap: str | None = None
    #: with an expectation (verify --expected): its dtype, the rows beyond it, the first of them,
    #: the row with the largest local excess
    expected: str | None = None
    beyond_expected: list[str] = field(default_factory=list)
    first_beyond_expected: str | None = None
    worst_local: str | None = None
    exit_code: int = 0
    created: str | None = None
    report: VerifyReport | None = field(default=None, repr=False, compare=False, metadata={"transient": True})

    @property
    def title(self) -> str:
        """One line naming the run: build, engine and run folder."""
        eng = f" ({self.engine})" if self.engine and self.engine not in self.build_name else ""
        return f"{self.key}: {self.build_name or self.build}{eng}" + (f" · {self.run}" if self.run else "")


@register
@dataclass
class CompareReport(Viewable, Report, Plain):
    """Verify runs side by side (module doc). ``mode``: ``engines`` (``leapp_lab.verify_many``: one
    reference, several builds) or ``diff`` (``VerifyReport.diff`` / ``leapp_lab.diff``: run A then
    run B). ``sides``: the runs, the first one the baseline. ``rows``: union of the sides' rows in
    model order. ``warnings``: sentences (different references, rules, sample counts; rows in one
    run only). ``fail_on_flip``: the gate asked for; ``exit_code``: 1 when a side's own gate failed
    (engines: a build exceeded --max-mape) or, with ``fail_on_flip``, a row flipped to fail; else 0.
    """
    kind: ClassVar[str] = "compare"
    mode: str = "diff"
    sides: list[CompareSide] = field(default_factory=list)
    rows: list[CompareRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    fail_on_flip: bool = False
    exit_code: int = 0
    created: str | None = None
    versions: dict[str, str] = field(default_factory=dict)

    path: Path | None = field(default=None, repr=False, compare=False, metadata={"transient": True})

    # -- model API -----------------------------------------------------------------------------
    @property
    def baseline(self) -> CompareSide:
        return self.sides[0]

    def side(self, key: str) -> CompareSide:
        for s in self.sides:
            if s.key == key or s.label == key:
                return s
        raise KeyError(f"no side {key!r} in this compare; sides: {[s.key for s in self.sides]}")

    def row(self, name: str) -> CompareRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no row {name!r} in this compare; rows: {[r.name for r in self.rows]}")

    def cell(self, name: str, key: str) -> VerifyRow | None:
        """The verify row ``name`` of side ``key`` (None: that side has no such row, or its report
        is not loaded)."""
        index = self.__dict__.setdefault("_index", {})
        if key not in index:
            rep = self.side(key).report
            index[key] = {r.name: r for r in rep.rows} if rep is not None else {}
        return index[key].get(name)

    def flipped(self, to: str | None = None) -> list[CompareRow]:
        """Rows whose verdict flipped against the baseline (``to``: ``to-fail`` / ``to-pass`` only)."""
        return [r for r in self.rows if r.flips and (to is None or to in r.flips.values())]

    @property
    def to_fail(self) -> list[str]:
        return [r.name for r in self.flipped("to-fail")]

    @property
    def to_pass(self) -> list[str]:
        return [r.name for r in self.flipped("to-pass")]

    def only_in(self, key: str) -> list[str]:
        """Rows that only side ``key`` has."""
        return [r.name for r in self.rows if r.verdicts.get(key) != "absent"
                and len(r.missing_in) == len(self.sides) - 1]

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def __bool__(self) -> bool:
        return self.passed

    # -- tables --------------------------------------------------------------------------------
    def row_records(self) -> list[dict[str, Any]]:
        """One flat dict per row (DataFrame, ``--json``, compare.csv): the identity columns, then per
        side ``<side>.verdict`` and ``<side>.<column>`` for every per-side column, then per
        non-baseline side ``<side>.flip`` and ``<side>.<column>.delta`` / ``.ratio``."""
        out = []
        for r in self.rows:
            rec: dict[str, Any] = {c.key: getattr(r, c.key) for c in identity_columns()}
            rec["first_divergent_in"] = " ".join(r.first_divergent_in)
            rec["missing_in"] = " ".join(r.missing_in)
            for s in self.sides:
                cell = self.cell(r.name, s.key)
                rec[f"{s.key}.verdict"] = r.verdicts.get(s.key)
                for c in side_columns():
                    rec[f"{s.key}.{c.key}"] = getattr(cell, c.key) if cell is not None else None
            for s in self.sides[1:]:
                rec[f"{s.key}.flip"] = r.flips.get(s.key)
                ch = r.changes.get(s.key, {})
                for c in change_columns():
                    x = ch.get(c.key)
                    rec[f"{s.key}.{c.key}.delta"] = x.delta if x is not None else None
                    rec[f"{s.key}.{c.key}.ratio"] = x.ratio if x is not None else None
            out.append(rec)
        return out

    def record_keys(self) -> list[str]:
        keys = [c.key for c in identity_columns()] + ["first_divergent_in", "missing_in"]
        for s in self.sides:
            keys += [f"{s.key}.verdict"] + [f"{s.key}.{c.key}" for c in side_columns()]
        for s in self.sides[1:]:
            keys.append(f"{s.key}.flip")
            for c in change_columns():
                keys += [f"{s.key}.{c.key}.delta", f"{s.key}.{c.key}.ratio"]
        return keys

    def to_dataframe(self):
        """One line per row in model order, columns ``record_keys()`` (``df["B.nrmse.ratio"]``)."""
        import pandas as pd
        return pd.DataFrame(self.row_records(), columns=self.record_keys())

    def json_rows(self) -> dict[str, Any]:
        """The ``--json`` document: the sides, the flips, the flat rows and the warnings."""
        from .jsonio import to_jsonable
        return to_jsonable({
            "kind": "compare-rows", "schema_version": self.schema_version, "finding": self.finding,
            "mode": self.mode,
            "sides": self.sides, "baseline": self.baseline.key if self.sides else None,
            "to_fail": self.to_fail, "to_pass": self.to_pass,
            "fail_on_flip": self.fail_on_flip, "exit_code": self.exit_code,
            "rows": self.row_records(), "warnings": list(self.warnings)})

    # -- persistence ---------------------------------------------------------------------------
    def _save_arrays(self, directory: Path) -> None:
        from .csvtables import csv_text
        from .jsonio import atomic_write_text
        for s in self.sides:
            if s.report is not None:
                was = s.report.path
                s.report.save(directory / SIDES_DIR / s.key)
                s.report.path = was
        atomic_write_text(directory / CSV_FILE, csv_text(self.record_keys(), self.row_records()))

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None = None) -> "CompareReport":
        r = super().from_dict(d, path)
        if not r.sides:
            raise UnusableInput(f"{path or 'compare report'}: a compare of no runs (its 'sides' is empty); "
                                f"make it again (leapp-lab diff / verify)")
        if path is not None:
            for s in r.sides:
                if not (isinstance(s.key, str) and re.fullmatch(r"[A-Z]|S[0-9]{1,6}", s.key)):
                    raise UnusableInput(f"{path}: side key {s.key!r} in report.json is not one leapp_lab "
                                        f"writes (A, B, …, S26, …); its copy is read from sides/<key>/ "
                                        f"only. Make the compare again (leapp-lab diff / verify)")
                folder = Path(path) / SIDES_DIR / str(s.key)
                if not present(folder / "report.json"):
                    raise UnusableInput(
                        f"{path}: side {s.key}'s verify run is missing ({folder}); a compare run keeps "
                        f"a copy of every run it compares; make it again (leapp-lab diff / verify)")
                d = _read(folder / "report.json")
                check_fields(VerifyReport, d, str(folder / "report.json"))    # names the side's file
                s.report = VerifyReport.from_dict(d, folder)
        return r


def _read(file: Path) -> dict[str, Any]:
    from .jsonio import read_json
    d = read_json(file)
    if not isinstance(d, dict) or d.get("kind") != "verify":
        raise ValueError(f"{file}: not a verify report")
    return d
