"""The verify report: a reference npz compared with a build's ``sample_outputs.npz``, row by row.

Shape (JSON, see docs/schema-verify.md)::

    VerifyReport{reference, build, engine, samples, rule: DivergenceRule,
                 rows: [VerifyRow{name, kind, order, status, mape, mse, max_abs, cosine, ...,
                                  hist: LogHistogram, samples: [SampleMetrics{..., hist}]}],
                 warnings, first_divergent, worst_tap, largest_jump, exceeded, exit_code}

One ``VerifyRow`` per model output and tap, **in model order** (the manifest's ``order``: the index
of the producing node in the topologically sorted ONNX graph; names without a manifest entry come
last, in the build's output order). All numbers are float64 results of
``leapp_lab.compare.metrics.diff_stats`` (DESIGN §4): over all samples of a row, and per sample.
A metric is ``None`` (JSON ``null``) when nothing finite was compared; non-finite elements are
counted in ``nonfinite_*``, never silently dropped.

The run folder (``leapp_lab.verify(..., out=DIR)``, default ``<build>/../leapp_lab/``) holds
``report.json`` (this object; per-row histograms inline), ``histograms.npz`` (the per-sample
histograms, put back into ``SampleMetrics.hist`` by ``load``: JSON would be slow and large for
many taps x samples), ``metrics.csv`` (one line per row) and ``per_sample.csv`` (one line per row
and sample). Views only read these fields.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .base import Report, Viewable, register
from .dc import Plain, fields_from_dict

#: Row statuses. ``compared``: both sides present and comparable. ``no-reference``: the build
#: produced it but the reference npz has no array of that name (an uncompared tap, or an unpaired
#: name). ``not-in-engine``: the reference has it, the build's sample_outputs.npz does not.
#: ``shape-mismatch``: both present, per-sample shapes differ. ``dtype-unsupported``: a side is not
#: a real numeric/bool dtype (complex, strings, void).
STATUSES = ("compared", "no-reference", "not-in-engine", "shape-mismatch", "dtype-unsupported")

#: Row kinds: ``output`` (a real model output) or the manifest tap kind ``manual|plugin|op``;
#: ``unknown`` for a name in neither the manifest nor the model's outputs.
KINDS = ("output", "manual", "plugin", "op", "unknown")

#: Percentiles of |engine - reference| stored per row and per sample (read from the histogram).
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
PERCENTILE_KEYS = ("p50", "p90", "p99", "p999")

#: The metric columns of every table (dataframe, --json rows, metrics.csv, per_sample.csv).
METRIC_COLS = ("mape", "nrmse", "mse", "max_abs", "cosine", "min_atol", "mean_abs", *PERCENTILE_KEYS,
               "n", "nonfinite_engine", "nonfinite_reference")

HIST_FILE = "histograms.npz"


@dataclass
class Hist(Plain):
    """Pre-binned |engine - reference| histogram (``metrics.LogHistogram`` in plain form).

    ``zero``: count of exact zeros (explicit bin). ``counts[i]`` counts values in
    ``[edges[i], edges[i+1])``; ``edges`` has ``len(counts) + 1`` entries in absolute-difference
    units on fixed global log bins (four per octave), so histograms of samples/runs add up.
    ``first_bin``: global index of ``counts[0]``. Empty ``counts`` with ``zero == total``: all equal.
    """
    zero: int = 0
    first_bin: int = 0
    counts: list[int] = field(default_factory=list)
    edges: list[float] = field(default_factory=list)

    @property
    def total(self) -> int:
        return int(self.zero + sum(self.counts))

    @classmethod
    def of(cls, h) -> "Hist":
        d = h.to_dict()
        return cls(d["zero"], d["first_bin"], d["counts"], d["edges"])

    @classmethod
    def from_bins(cls, zero: int, first_bin: int, counts: list[int]) -> "Hist":
        """Rebuild edges from global bin indices (bin b's lower edge: the float64 whose bit pattern
        is ``b << 50``; see leapp_lab.compare.metrics)."""
        import numpy as np
        if not counts:
            return cls(int(zero), int(first_bin), [], [])
        idx = np.arange(first_bin, first_bin + len(counts) + 1, dtype=np.int64) << 50
        return cls(int(zero), int(first_bin), [int(c) for c in counts], idx.view(np.float64).tolist())


@dataclass
class Metrics(Plain):
    """Metrics of one element set (a whole row, or one sample of it). DESIGN §4, float64.

    ``n``: elements paired; ``nonfinite_engine`` / ``nonfinite_reference``: NaN/Inf counts on each
    side; ``nonfinite_pairs``: pairs left out of the sums because either side is non-finite.
    ``mape`` in percent (reference floored at 1e-6); ``nrmse``: sqrt(mse) / rms(reference) as a
    fraction (None when the reference is all zero); ``min_atol``: the smallest atol for which
    ``allclose(engine, reference, rtol=report.rtol, atol=min_atol)`` holds on the finite pairs.
    ``p50``..``p999``: percentiles of |diff| read from ``hist`` (within one bin, ~19 %).
    ``ref_absmax``: max |reference| over finite pairs (scale for reading max_abs).
    """
    n: int = 0
    nonfinite_engine: int = 0
    nonfinite_reference: int = 0
    nonfinite_pairs: int = 0
    mape: float | None = None
    nrmse: float | None = None
    mse: float | None = None
    max_abs: float | None = None
    cosine: float | None = None
    mean_abs: float | None = None
    min_atol: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p999: float | None = None
    hist: Hist | None = None

    @property
    def nonfinite(self) -> int:
        return int(self.nonfinite_engine + self.nonfinite_reference)


@dataclass
class SampleMetrics(Metrics):
    """``Metrics`` of one sample (index along the leading sample axis) of a row."""
    sample: int = 0


@dataclass
class VerifyRow(Metrics):
    """One model output or tap, compared over every sample.

    Identity: ``name`` (ONNX output name = npz key), ``kind`` (KINDS), ``order`` (model order; None
    when unknown), ``status`` (STATUSES), ``note`` (why it is not compared, or a remark).
    Provenance from the tap manifest: ``source`` (Python ``file:line``), ``reference_source``
    (``torch`` | ``onnxruntime`` | None), ``producer_op``, ``producer_node``, ``tensor``.
    ``self_compare``: the reference came from onnxruntime fp32 and the engine is ``ort``, so the row
    compares ort with itself; it is kept out of the first-divergent rule.
    Shapes/dtypes: per-side, *including* the leading sample axis.
    Rule results: ``diverged`` (the row crosses the rule's thresholds), ``first_divergent`` (the
    first such row in model order), ``growth`` (nrmse / nrmse of the previous compared rule row;
    None for the first or when that was 0), ``worst`` (largest nrmse among compared rule rows),
    ``largest_jump`` (largest growth).
    Gate: ``judged`` (--max-mape applies to it), ``exceeded`` (its mape is above --max-mape).
    ``paired``: present on both sides (unpaired rows are listed only with --verbose).
    ``samples``: per-sample metrics (empty unless compared). Metric fields are over all samples.
    """
    name: str = ""
    kind: str = "unknown"
    order: int | None = None
    status: str = "compared"
    note: str | None = None
    source: str | None = None
    reference_source: str | None = None
    producer_op: str | None = None
    producer_node: str | None = None
    tensor: str | None = None
    self_compare: bool = False
    paired: bool = True
    shape_reference: list[int] | None = None
    shape_engine: list[int] | None = None
    dtype_reference: str | None = None
    dtype_engine: str | None = None
    diverged: bool = False
    first_divergent: bool = False
    growth: float | None = None
    worst: bool = False
    largest_jump: bool = False
    judged: bool = False
    exceeded: bool = False
    samples: list[SampleMetrics] = field(default_factory=list)

    @property
    def is_tap(self) -> bool:
        return self.kind not in ("output", "unknown")

    @property
    def in_rule(self) -> bool:
        """Does the first-divergent rule consider this row?"""
        return self.status == "compared" and not self.self_compare


@dataclass
class DivergenceRule(Plain):
    """The first-divergent rule (docs/verify.md). A compared row not compared with itself
    (``self_compare``) *diverges* when any holds:

    * ``nrmse > nrmse_pct / 100`` (``nrmse_pct`` in percent; None: off), or
    * ``mape > mape_pct`` (percent; None, the default: off; MAPE explodes where the reference is
      near zero, e.g. after a ReLU), or
    * ``cosine < min_cosine``, or
    * the engine has non-finite values where the reference is finite (``nonfinite`` true), or
    * nothing finite could be compared.

    The first diverging row in model order is ``first_divergent``. A fixed threshold trips at the
    first quantized/rounded layer of int8/fp16 engines, so the report also carries the error-growth
    profile (``VerifyRow.growth``), the worst row and the largest jump.
    """
    nrmse_pct: float | None = 1.0
    mape_pct: float | None = None
    min_cosine: float = 0.999
    nonfinite: bool = True
    text: str = ""

    def criteria(self) -> list[str]:
        """The criteria that apply, in words, in the order ``leapp_lab.verify`` tests them."""
        out = []
        if self.nrmse_pct is not None:
            out.append(f"nrmse > {self.nrmse_pct / 100:g} ({self.nrmse_pct:g}%)")
        if self.mape_pct is not None:
            out.append(f"mape > {self.mape_pct:g}%")
        out.append(f"cosine < {self.min_cosine:g}")
        if self.nonfinite:
            out.append("more non-finite engine values than reference ones")
        out.append("nothing finite compared")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DivergenceRule":
        # reports written before nrmse existed judged by mape alone: load them as they were judged
        if "nrmse_pct" not in data:
            data = {**data, "nrmse_pct": None}
        return fields_from_dict(cls, data)

    def describe(self) -> str:
        """The rule in one sentence (``text`` holds it as recorded at verify time)."""
        return ("first row in model order, among compared rows not compared with itself, with "
                + " or ".join(self.criteria()))


@dataclass
class ProfilePoint(Plain):
    """One step of the error-growth profile: compared rule rows in model order."""
    name: str
    order: int | None
    kind: str
    mape: float | None
    max_abs: float | None
    cosine: float | None
    growth: float | None
    nrmse: float | None = None


@register
@dataclass
class VerifyReport(Viewable, Report, Plain):
    """``leapp_lab.verify(reference_npz, build)``: every output and tap compared, in model order.

    ``reference``: path of the reference npz; ``build``: the build folder or .tgz; ``engine``: its
    engine name (from build.json; None when unknown); ``build_name``: e.g. ``model.ort`` (prefix of
    warnings); ``samples``: sample count; ``rtol``: the rtol of ``min_atol``.
    ``rows``: every row (unpaired ones too; see ``table()``). ``warnings``: human sentences,
    including ``N outputs are missing in the reference`` / ``... in the sample output``.
    ``rule``: the DivergenceRule used. ``first_divergent`` / ``worst_tap`` / ``largest_jump``: row
    names or None. ``max_mape`` (percent, None: no gate), ``max_mape_taps`` (taps judged too),
    ``exceeded``: names of judged rows above max_mape; ``exit_code``: 0 ok, 1 max_mape exceeded.
    ``verbose``: list unpaired names as rows in text/JSON views. ``created``: ISO time;
    ``versions``: package versions. ``self_compare_note``: a sentence when some rows compare ort
    with itself, else None. ``metrics_backend``: what computed the metrics, ``numba`` (the fused
    kernel) or ``numpy`` (its fallback; the same bits); None in reports written before it existed.
    """
    kind: ClassVar[str] = "verify"
    reference: str = ""
    build: str = ""
    engine: str | None = None
    build_name: str = ""
    samples: int = 0
    rtol: float = 1e-3
    rows: list[VerifyRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rule: DivergenceRule = field(default_factory=DivergenceRule)
    first_divergent: str | None = None
    worst_tap: str | None = None
    largest_jump: str | None = None
    max_mape: float | None = None
    max_mape_taps: bool = False
    exceeded: list[str] = field(default_factory=list)
    exit_code: int = 0
    verbose: bool = False
    self_compare_note: str | None = None
    created: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    metrics_backend: str | None = None

    path: Path | None = field(default=None, repr=False, compare=False, metadata={"transient": True})

    # -- model API -----------------------------------------------------------------------------
    def row(self, name: str) -> VerifyRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no row {name!r} in this verify report; rows: {[r.name for r in self.rows]}")

    def table(self, verbose: bool | None = None) -> list[VerifyRow]:
        """Rows to show: paired ones (present on both sides, whatever their status), plus the
        unpaired ones (``no-reference`` / ``not-in-engine``) when ``verbose`` (default: self.verbose)."""
        v = self.verbose if verbose is None else verbose
        return [r for r in self.rows if v or r.paired]

    @property
    def outputs(self) -> list[VerifyRow]:
        return [r for r in self.rows if r.kind == "output"]

    @property
    def taps(self) -> list[VerifyRow]:
        return [r for r in self.rows if r.is_tap]

    def profile(self) -> list[ProfilePoint]:
        """The error-growth profile: compared rule rows in model order."""
        return [ProfilePoint(r.name, r.order, r.kind, r.mape, r.max_abs, r.cosine, r.growth, r.nrmse)
                for r in self.rows if r.in_rule]

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def __bool__(self) -> bool:
        return self.passed

    def to_dataframe(self, per_sample: bool = False, verbose: bool | None = None):
        """One line per row in model order (``per_sample=True``: one per row and sample)."""
        import pandas as pd
        cols = ["name", "kind", "order", "status", *METRIC_COLS, "growth", "first_divergent", "worst",
                "diverged", "self_compare", "exceeded", "reference_source", "source", "producer_op",
                "shape_reference", "shape_engine", "note"]
        rows = self.table(verbose)
        if not per_sample:
            return pd.DataFrame([{c: getattr(r, c) for c in cols} for r in rows], columns=cols)
        scols = ["name", "kind", "order", "sample", *METRIC_COLS]
        out = []
        for r in rows:
            for s in r.samples:
                d = {c: getattr(s, c) for c in scols if c not in ("name", "kind", "order")}
                d.update(name=r.name, kind=r.kind, order=r.order)
                out.append(d)
        return pd.DataFrame(out, columns=scols)

    def json_rows(self, verbose: bool | None = None) -> dict[str, Any]:
        """The ``--json`` document: rows (no histograms / per-sample) and warnings."""
        from .jsonio import to_jsonable
        keep = ["name", "kind", "order", "status", *METRIC_COLS, "nonfinite_pairs", "source",
                "reference_source", "self_compare", "first_divergent", "diverged", "growth", "worst",
                "largest_jump", "judged", "exceeded", "paired", "shape_reference", "shape_engine",
                "dtype_reference", "dtype_engine", "note"]
        return to_jsonable({
            "kind": "verify-rows", "schema_version": self.schema_version,
            "reference": self.reference, "build": self.build, "engine": self.engine,
            "samples": self.samples, "rule": self.rule,
            "first_divergent": self.first_divergent, "worst_tap": self.worst_tap,
            "largest_jump": self.largest_jump, "max_mape": self.max_mape,
            "max_mape_taps": self.max_mape_taps, "exceeded": self.exceeded,
            "exit_code": self.exit_code, "metrics_backend": self.metrics_backend,
            "rows": [{k: getattr(r, k) for k in keep} for r in self.table(verbose)],
            "warnings": list(self.warnings)})

    # -- persistence ---------------------------------------------------------------------------
    def to_dict(self, sample_hists: bool = True) -> dict[str, Any]:
        """Plain dict; ``sample_hists=False`` leaves the per-sample histograms out (``save`` writes
        them to histograms.npz instead)."""
        saved = []
        if not sample_hists:
            for r in self.rows:
                for sm in r.samples:
                    saved.append((sm, sm.hist))
                    sm.hist = None
        try:
            return Report.to_dict(self)
        finally:
            for sm, h in saved:
                sm.hist = h

    def save(self, directory) -> Path:
        from .base import REPORT_FILE
        from .jsonio import atomic_write_text, dumps
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._save_arrays(directory)
        body = {"kind": self.kind, "schema_version": self.schema_version}
        body.update(self.to_dict(sample_hists=False))
        # compact: json's C encoder only runs without indent (3-4x faster on many taps x samples)
        text, _ = dumps(body, indent=None)
        atomic_write_text(directory / REPORT_FILE, text + "\n")
        self.path = directory
        return directory

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None = None) -> "VerifyReport":
        r = super().from_dict(d, path)
        if path is not None and (Path(path) / HIST_FILE).is_file():
            r._load_sample_hists(Path(path) / HIST_FILE)
        return r

    def _load_sample_hists(self, file: Path) -> None:
        from .jsonio import load_npz
        arrays = load_npz(file)
        for i, row in enumerate(self.rows):
            key = f"row{i}"
            if f"{key}.zero" not in arrays:
                continue
            zero, first, counts = arrays[f"{key}.zero"], arrays[f"{key}.first_bin"], arrays[f"{key}.counts"]
            lens = arrays[f"{key}.len"]
            for j, sm in enumerate(row.samples):
                if j < len(zero) and sm.hist is None:
                    sm.hist = Hist.from_bins(int(zero[j]), int(first[j]), counts[j, :int(lens[j])].tolist())

    def _save_arrays(self, directory: Path) -> None:
        import numpy as np

        from .jsonio import save_npz
        hists = {}
        for i, row in enumerate(self.rows):
            hs = [sm.hist for sm in row.samples]
            if not hs or any(h is None for h in hs):
                continue
            width = max((len(h.counts) for h in hs), default=0)
            counts = np.zeros((len(hs), width), dtype=np.int64)
            for j, h in enumerate(hs):
                counts[j, :len(h.counts)] = h.counts
            hists[f"row{i}.zero"] = np.array([h.zero for h in hs], dtype=np.int64)
            hists[f"row{i}.first_bin"] = np.array([h.first_bin for h in hs], dtype=np.int64)
            hists[f"row{i}.len"] = np.array([len(h.counts) for h in hs], dtype=np.int64)
            hists[f"row{i}.counts"] = counts
        save_npz(directory / HIST_FILE, hists)
        # not arrays, but the flat tables beside report.json (pandas-free: csv module)
        import csv
        import io

        from .jsonio import atomic_write_text
        df_cols = ["name", "kind", "order", "status", *METRIC_COLS, "growth", "first_divergent",
                   "self_compare", "reference_source", "source"]
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(df_cols)
        for r in self.rows:
            w.writerow([_csv(getattr(r, c)) for c in df_cols])
        atomic_write_text(directory / "metrics.csv", buf.getvalue())
        s_cols = ["sample", *METRIC_COLS]
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["name", "order", *s_cols])
        for r in self.rows:
            for s in r.samples:
                w.writerow([r.name, _csv(r.order), *[_csv(getattr(s, c)) for c in s_cols]])
        atomic_write_text(directory / "per_sample.csv", buf.getvalue())

    # -- views ---------------------------------------------------------------------------------
    def __str__(self) -> str:
        from leapp_lab.views.text_verify import render_verify
        return render_verify(self)


def _csv(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if v == v and v not in (float("inf"), float("-inf")) else ""
    return str(v)
