"""The verify report: a reference npz compared with a build's ``sample_outputs.npz``, row by row.

Shape (JSON, see docs/schema-verify.md)::

    VerifyReport{reference, build, engine, samples, rule: DivergenceRule,
                 rows: [VerifyRow{name, kind, order, status, mape, mse, max_abs, cosine, ...,
                                  hist: Hist, samples: [SampleMetrics{..., hist}]}],
                 warnings, first_divergent, worst_tap, largest_jump, exceeded, exit_code}

One ``VerifyRow`` per model output and tap, **in model order** (the manifest's ``order``: the index
of the producing node in the topologically sorted ONNX graph; names without a manifest entry come
last, in the build's output order). All numbers are float64 results of
``leapp_lab.numerics.metrics.diff_stats`` (DESIGN §4): over all samples of a row, and per sample.
A metric is ``None`` (JSON ``null``) when nothing finite was compared; non-finite elements are
counted in ``nonfinite_*``, never silently dropped.

The run folder (``leapp_lab.verify(..., out=DIR)``, default ``<build>/../leapp_lab/``) holds
``report.json`` (this object; per-row histograms inline), ``samples.npz`` (the per-sample
records as float64 columns) and ``histograms.npz`` (the per-sample histograms), put back into
``rows[i].samples`` by ``load`` (as JSON they were most of the file, and of the time verify took to
write it, for many taps x samples), ``metrics.csv`` (one line per row) and ``per_sample.csv``
(one line per row and sample). Views only read these fields.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, ClassVar

from .base import Report, Viewable, register
from .columns import JUMP_RANKS, SAMPLE_ID_KEYS, WORST_RANKS, row_columns, sample_columns  # noqa: F401
from .dc import Plain, fields_from_dict
from .graph import EngineGraph
from .hist import Hist
from .metrics import Metrics
from .tap import TapEntry

#: Row statuses. ``compared``: both sides present and comparable. ``no-reference``: the build
#: produced it but the reference npz has no array of that name (an uncompared tap, or an unpaired
#: name). ``not-in-engine``: the reference has it, the build's sample_outputs.npz does not.
#: ``shape-mismatch``: both present, per-sample shapes differ. ``dtype-unsupported``: a side is not
#: a real numeric/bool dtype (complex, strings, void).
STATUSES = ("compared", "no-reference", "not-in-engine", "shape-mismatch", "dtype-unsupported")

HIST_FILE = "histograms.npz"
SAMPLES_FILE = "samples.npz"
#: SampleMetrics fields that are integers (samples.npz stores every field as float64; exact below 2**53)
_INT_SAMPLE_FIELDS = ("sample", "n", "nonfinite_engine", "nonfinite_reference", "nonfinite_pairs")


@dataclass
class SampleMetrics(Metrics):
    """``Metrics`` of one sample (index along the leading sample axis) of a row."""
    sample: int = 0


@dataclass
class VerifyRow(Metrics, TapEntry):
    """One model output or tap (its ``TapEntry`` identity as the build recorded it), compared over
    every sample (its ``Metrics``, over all samples).

    ``status`` (STATUSES), ``note`` (why it is not compared, or a remark). ``self_compare``: the
    reference came from onnxruntime fp32 and the engine is ``ort``, so the row compares ort with
    itself; it is kept out of the first-divergent rule. Shapes/dtypes: per side, *including* the
    leading sample axis. Rule results: ``diverged`` (the row crosses the rule's thresholds),
    ``first_divergent`` (the first such row in model order), ``reason`` (why the verdict is what
    it is: the keys of ``DivergenceRule.reasons``, comma-separated, e.g. ``"nrmse, cosine"`` or
    ``"non-finite"`` for a diverging row, ``"shape"`` / ``"missing-reference"`` ... for a row the
    rule does not judge; None for a row that passes), ``growth`` (nrmse / nrmse of the
    previous judged row; None for the first or when that was 0), ``worst`` (the judged row that
    ranks highest under ``WORST_RANKS``), ``largest_jump`` (largest growth, ``JUMP_RANKS``).
    Gate: ``judged`` (--max-mape applies to it),
    ``exceeded`` (its mape is above --max-mape). ``paired``: present on both sides (unpaired rows are
    listed only with --verbose). ``samples``: per-sample metrics (empty unless compared).
    Local error (``verify(..., local=True)``): ``local_nrmse`` / ``local_cosine`` /
    ``local_max_abs`` of the value the engine computes from the *reference* values of the taps
    upstream (teacher forcing), over all samples; ``local_share`` = local_nrmse / nrmse clipped to
    [0, 1]; ``locally_diverged`` (the divergence rule on the local metrics),
    ``first_locally_divergent``; ``local_note``: why a row has no local value or was not cut.
    Expected drift (``verify(..., expected="fp16")``): ``expected_nrmse`` (nrmse of torch eager in
    that dtype vs the reference), ``beyond_expected`` (``ExpectedRule``), ``expected_note``.
    Every column is described in ``leapp_lab.model.columns``.
    """
    status: str = "compared"
    note: str | None = None
    self_compare: bool = False
    paired: bool = True
    shape_reference: list[int] | None = None
    shape_engine: list[int] | None = None
    dtype_reference: str | None = None
    dtype_engine: str | None = None
    diverged: bool = False
    first_divergent: bool = False
    reason: str | None = None
    growth: float | None = None
    worst: bool = False
    largest_jump: bool = False
    judged: bool = False
    exceeded: bool = False
    # local error (verify --local, docs/verify.md "Local vs inherited error")
    local_nrmse: float | None = None
    local_cosine: float | None = None
    local_max_abs: float | None = None
    local_share: float | None = None
    locally_diverged: bool = False
    first_locally_divergent: bool = False
    local_note: str | None = None
    # expected drift (verify --expected fp16|bf16)
    expected_nrmse: float | None = None
    beyond_expected: bool = False
    expected_note: str | None = None
    samples: list[SampleMetrics] = field(default_factory=list)

    @classmethod
    def of(cls, entry: TapEntry, **kw: Any) -> "VerifyRow":
        """A row for ``entry`` (its identity copied), with the other fields from ``kw``."""
        return cls(**entry.identity(), **kw)

    @property
    def in_rule(self) -> bool:
        """Does the first-divergent rule consider this row?"""
        return self.status == "compared" and not self.self_compare

    @property
    def verdict(self) -> str:
        """``pass`` | ``fail`` under the report's divergence rule, ``uncompared`` for a row the rule
        does not judge (the views' row status; a compare report's flips are changes of it)."""
        if not self.in_rule:
            return "uncompared"
        return "fail" if self.diverged else "pass"


#: ``VerifyRow.reason`` of a row the rule does not judge, by its status (and self-compare)
UNJUDGED_REASONS = {"no-reference": ("missing-reference", "the reference npz has no array of this name"),
                    "not-in-engine": ("missing-engine", "the build's sample outputs have no array of this name"),
                    "shape-mismatch": ("shape", "engine and reference shapes differ"),
                    "dtype-unsupported": ("dtype", "a dtype that is not compared (complex, string, void)"),
                    "self-compare": ("self-compare", "onnxruntime compared with itself: kept out of the rule")}
#: what ``worst`` and ``largest_jump`` rank (WORST_RANKS / JUMP_RANKS, in leapp_lab.model.columns
#: beside the columns they describe; the views and the text output say it in those words)


def worst_key(row: Any) -> tuple[int, float] | None:
    """The ``worst`` ranking of a judged row (WORST_RANKS): a row whose engine side has more
    non-finite values than the reference ranks above every finite one (by that excess: an
    overflow that spreads is worse than one that stays); then nrmse. None: nothing to rank (no
    extra non-finite value and no nrmse)."""
    extra = int(row.nonfinite_engine) - int(row.nonfinite_reference)
    if extra > 0:
        return (extra, float("inf") if row.nrmse is None else row.nrmse)
    return None if row.nrmse is None else (0, row.nrmse)


@dataclass
class ExpectedRule(Plain):
    """When a row's error is more than its precision explains (``verify --expected fp16|bf16``).

    ``expected_nrmse`` is the nrmse that torch eager run in ``dtype`` has against the fp32
    reference: the drift that precision alone causes. A row is *beyond expected* when

        nrmse > factor * max(expected_nrmse, floor)

    ``factor`` (default 4): an engine that rounds like ``dtype`` differs from torch's own
    low-precision run in where it rounds and accumulates (measured on the test models, every row:
    the ``ort-fp16`` engine's nrmse is 0.84-1.0x that of torch ``.half()``; an engine accumulating
    in fp16 drifts more), so only a clear excess counts.
    ``floor``: the dtype's unit roundoff (fp16 2**-11, bf16 2**-8), so a row whose expected drift
    is tiny (an exact op, a small tensor) is not flagged for ordinary rounding.
    """
    dtype: str = "fp16"
    factor: float = 4.0
    floor: float = 2.0 ** -11
    text: str = ""

    #: the unit roundoff of each dtype ``--expected`` takes
    FLOORS: ClassVar[dict[str, float]] = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}

    @classmethod
    def of(cls, dtype: str, factor: float | None = None) -> "ExpectedRule":
        if dtype not in cls.FLOORS:
            raise ValueError(f"expected={dtype!r}: choose one of {', '.join(cls.FLOORS)}")
        r = cls(dtype=dtype, floor=cls.FLOORS[dtype], **({} if factor is None else {"factor": float(factor)}))
        r.text = r.describe()
        return r

    def limit(self, expected_nrmse: float) -> float:
        return self.factor * max(expected_nrmse, self.floor)

    def beyond(self, nrmse: float | None, expected_nrmse: float | None) -> bool:
        return nrmse is not None and expected_nrmse is not None and nrmse > self.limit(expected_nrmse)

    def describe(self) -> str:
        return (f"nrmse > {self.factor:g} x max(expected {self.dtype} nrmse, {self.floor:.3g})")


@dataclass
class DivergenceRule(Plain):
    """The first-divergent rule (docs/verify.md). A compared row not compared with itself
    (``self_compare``) *diverges* when any criterion of ``criteria_table()`` fires:

    * ``nrmse``: nrmse > ``nrmse_pct`` / 100 (``nrmse_pct`` in percent; None: off);
    * ``mape``: mape > ``mape_pct`` (percent; None, the default: off; MAPE explodes where the
      reference is near zero, e.g. after a ReLU);
    * ``cosine``: cosine < ``min_cosine``;
    * ``non-finite``: the engine has more non-finite values than the reference (``nonfinite``);
    * ``nothing-compared``: no finite pair could be compared.

    The first diverging row in model order is ``first_divergent``. A fixed threshold trips at the
    first quantized/rounded layer of int8/fp16 engines, so the report also carries the error-growth
    profile (``VerifyRow.growth``), the worst row and the largest jump.
    """
    nrmse_pct: float | None = 1.0
    mape_pct: float | None = None
    min_cosine: float = 0.999
    nonfinite: bool = True
    text: str = ""

    def criteria_table(self) -> list[tuple[str, str, Callable[[Any], bool]]]:
        """(key, words, test(row)) of every criterion that applies, in the order they are tested:
        the one place that says what diverging means."""
        out: list[tuple[str, str, Callable[[Any], bool]]] = []
        if self.nrmse_pct is not None:
            lim = self.nrmse_pct / 100.0
            out.append(("nrmse", f"nrmse > {lim:g} ({self.nrmse_pct:g}%)",
                        lambda r: r.nrmse is not None and r.nrmse > lim))
        if self.mape_pct is not None:
            mp = self.mape_pct
            out.append(("mape", f"mape > {mp:g}%", lambda r: r.mape is not None and r.mape > mp))
        mc = self.min_cosine
        out.append(("cosine", f"cosine < {mc:g}", lambda r: r.cosine is not None and r.cosine < mc))
        if self.nonfinite:
            out.append(("non-finite", "more non-finite engine values than reference ones",
                        lambda r: r.nonfinite_engine > r.nonfinite_reference))
        out.append(("nothing-compared", "nothing finite compared", lambda r: r.mape is None and r.n > 0))
        return out

    def judge(self, row: Any) -> list[str]:
        """The keys of the criteria ``row`` fires (empty: it does not diverge)."""
        return [key for key, _, test in self.criteria_table() if test(row)]

    def diverges(self, row: Any) -> bool:
        return bool(self.judge(row))

    def reasons(self, row: Any) -> list[str]:
        """Why ``row`` has its verdict: the criteria it fires (``judge``) when the rule judges it,
        else the one UNJUDGED_REASONS key of its status; empty for a row that passes."""
        if row.status != "compared":
            return [UNJUDGED_REASONS[row.status][0]] if row.status in UNJUDGED_REASONS else [row.status]
        if row.self_compare:
            return [UNJUDGED_REASONS["self-compare"][0]]
        return self.judge(row)

    def reason_words(self) -> dict[str, str]:
        """reason key -> words (criteria as this rule words them, and the unjudged reasons)."""
        out = {key: words for key, words, _ in self.criteria_table()}
        out.update({k: w for k, w in UNJUDGED_REASONS.values()})
        return out

    def criteria(self) -> list[str]:
        """The criteria that apply, in words, in the order they are tested."""
        return [words for _, words, _ in self.criteria_table()]

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
class InputSummary(Plain):
    """One model input of one sample (what the row panel shows beside a sample's histogram):
    ``file``: the inputs npz it was read from at verify time; ``range``: [min, max] of the finite
    values; ``nonfinite``: NaN/Inf count."""
    name: str
    sample: int
    shape: list[int] | None = None
    dtype: str | None = None
    range: list[float] | None = None
    nonfinite: int = 0
    file: str | None = None


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
    with itself, else None. ``local``: local errors were computed (``verify --local``);
    ``first_locally_divergent`` / ``worst_local``: the first row in model order whose local error
    crosses ``rule``, and the row with the largest local nrmse (taps first). ``expected``: the
    ExpectedRule of ``verify --expected`` (None: not asked); ``beyond_expected``: the rows beyond
    it, in model order; ``first_beyond_expected``: the first of them. ``graph``: the build's graph with each row placed on the node that
    computes it (``leapp_lab.model.graph.EngineGraph``; what the accuracy graph view draws), None
    in reports written before it existed. ``metrics_backend``: what computed the metrics, ``numba``
    (the fused kernel) or ``numpy`` (its fallback; the same bits); None in reports written before it
    existed. ``samples_file``: where a saved report keeps the per-sample records (``samples.npz``;
    None: inline in ``rows[i].samples``, as reports written before it did).
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
    inputs: list[InputSummary] = field(default_factory=list)
    local: bool = False
    first_locally_divergent: str | None = None
    worst_local: str | None = None
    expected: ExpectedRule | None = None
    first_beyond_expected: str | None = None
    beyond_expected: list[str] = field(default_factory=list)
    graph: EngineGraph | None = None
    metrics_backend: str | None = None
    samples_file: str | None = None

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

    def profile(self) -> list[VerifyRow]:
        """The error-growth profile: the rows the rule judges, in model order."""
        return [r for r in self.rows if r.in_rule]

    def sample_inputs(self, sample: int) -> list[InputSummary]:
        return [i for i in self.inputs if i.sample == sample]

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def __bool__(self) -> bool:
        return self.passed

    def diff(self, other: "VerifyReport", *, fail_on_flip: bool = False):
        """This run (A) against ``other`` (B), row by row: a ``CompareReport`` (kind ``compare``)
        with each metric's change B − A and B / A, the rows whose verdict flipped and the rows in
        one run only, computed from the stored records (docs/verify.md#compare-engines-and-runs)."""
        from .compare import compare_reports
        return compare_reports([self, other], mode="diff", fail_on_flip=fail_on_flip)

    # -- tables: every one a selection of leapp_lab.model.columns ---------------------------------
    def row_records(self, verbose: bool | None = None) -> list[dict[str, Any]]:
        """One plain dict per shown row, every row column (dataframe, --json, metrics.csv)."""
        cols = [c.key for c in row_columns()]
        return [{k: getattr(r, k) for k in cols} for r in self.table(verbose)]

    def sample_records(self, verbose: bool | None = None) -> list[dict[str, Any]]:
        """One plain dict per shown row and sample (per-sample dataframe, per_sample.csv)."""
        cols = [c.key for c in sample_columns()]
        return [{"name": r.name, "kind": r.kind, "order": r.order, "sample": s.sample,
                 **{k: getattr(s, k) for k in cols}} for r in self.table(verbose) for s in r.samples]

    def to_dataframe(self, per_sample: bool = False, verbose: bool | None = None):
        """One line per row in model order (``per_sample=True``: one per row and sample)."""
        import pandas as pd
        if per_sample:
            return pd.DataFrame(self.sample_records(verbose),
                                columns=[*SAMPLE_ID_KEYS, *(c.key for c in sample_columns())])
        return pd.DataFrame(self.row_records(verbose), columns=[c.key for c in row_columns()])

    def json_rows(self, verbose: bool | None = None) -> dict[str, Any]:
        """The ``--json`` document: rows (no histograms / per-sample) and warnings."""
        from .jsonio import to_jsonable
        return to_jsonable({
            "kind": "verify-rows", "schema_version": self.schema_version,
            "reference": self.reference, "build": self.build, "engine": self.engine,
            "samples": self.samples, "rule": self.rule,
            "first_divergent": self.first_divergent, "worst_tap": self.worst_tap,
            "largest_jump": self.largest_jump, "max_mape": self.max_mape,
            "max_mape_taps": self.max_mape_taps, "exceeded": self.exceeded,
            "exit_code": self.exit_code, "local": self.local,
            "first_locally_divergent": self.first_locally_divergent, "worst_local": self.worst_local,
            "expected": self.expected, "first_beyond_expected": self.first_beyond_expected,
            "beyond_expected": self.beyond_expected, "metrics_backend": self.metrics_backend,
            "rows": self.row_records(verbose),
            "warnings": list(self.warnings)})

    # -- persistence ---------------------------------------------------------------------------
    def to_dict(self, sample_records: bool = True) -> dict[str, Any]:
        """Plain dict; ``sample_records=False`` leaves the per-sample records out (``save`` writes
        them to samples.npz and their histograms to histograms.npz instead)."""
        kept = [] if sample_records else [(r, r.samples) for r in self.rows]
        for r, _ in kept:
            r.samples = []
        try:
            return Report.to_dict(self)
        finally:
            for r, samples in kept:
                r.samples = samples

    def save(self, directory) -> Path:
        from .base import REPORT_FILE
        from .jsonio import atomic_write_text
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._save_arrays(directory)
        self.samples_file = SAMPLES_FILE
        body = {"kind": self.kind, "schema_version": self.schema_version}
        body.update(self.to_dict(sample_records=False))    # plain JSON values already (to_jsonable)
        # compact: json's C encoder only runs without indent (3-4x faster on many taps x samples);
        # one conversion pass, not two (dumps would walk the body again)
        text = json.dumps(body, allow_nan=False, ensure_ascii=False)
        atomic_write_text(directory / REPORT_FILE, text + "\n")
        self.path = directory
        return directory

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None = None) -> "VerifyReport":
        from .safepaths import check_input_file
        r = super().from_dict(d, path)
        # reports written before rows carried a reason: the recorded rule gives it back
        for raw, row in zip(d.get("rows") or [], r.rows):
            if "reason" not in raw:
                row.reason = ", ".join(r.rule.reasons(row)) or None
        if path is not None and r.samples_file:
            f = Path(path) / r.samples_file
            if f.exists() and not f.is_file():
                check_input_file(f, "an .npz file")    # a FIFO or a device: named, never opened
            if f.is_file():
                r._load_samples(f)
            else:
                r.warnings.append(f"{f}: missing; report.json keeps its per-sample records there, so "
                                  "this report shows none (copy the whole run folder, or verify again)")
        if path is not None and (Path(path) / HIST_FILE).exists():
            check_input_file(Path(path) / HIST_FILE, "an .npz file")
        if path is not None and (Path(path) / HIST_FILE).is_file():
            r._load_sample_hists(Path(path) / HIST_FILE)
        return r

    def _load_samples(self, file: Path) -> None:
        """samples.npz: ``records`` (lines x fields, float64), ``row`` (each line's index in
        ``rows``), ``fields`` (the field names); NaN or infinite metrics load as None (as JSON
        null did). Every problem names the file."""
        import math

        from .errors import UnusableInput
        from .jsonio import load_npz
        z = load_npz(file)
        try:
            recs, idx, names = z["records"], z["row"], z["fields"]
            if recs.dtype.kind != "f" or idx.dtype.kind not in "iu" or names.dtype.kind != "U":
                raise ValueError(f"dtypes {recs.dtype}, {idx.dtype}, {names.dtype}")
            names = [str(x) for x in names]
            if recs.ndim != 2 or recs.shape != (len(idx), len(names)) or idx.ndim != 1:
                raise ValueError(f"records {recs.shape}, row {idx.shape}, fields {len(names)}")
            if idx.size and (idx.min() < 0 or idx.max() >= len(self.rows)):
                raise ValueError(f"row index outside 0..{len(self.rows) - 1}")
        except (KeyError, ValueError, SystemError) as exc:   # SystemError: str() of corrupt UCS-4 text
            raise UnusableInput(f"{file}: not a samples file of this report ({exc}); verify again") from None
        known = {f.name for f in fields(SampleMetrics)}
        cols = [(k, i, k in _INT_SAMPLE_FIELDS) for i, k in enumerate(names) if k in known]
        per_row: dict[int, list] = {}
        for line, j in zip(recs.tolist(), idx.tolist()):
            kw = {}
            for k, i, is_int in cols:
                v = line[i]
                kw[k] = (int(v) if is_int else v) if math.isfinite(v) else None
            per_row.setdefault(j, []).append(SampleMetrics(**kw))
        for j, samples in per_row.items():
            self.rows[j].samples = samples

    # histograms.npz: one int64 array per row, keyed by the row's name, one line per sample:
    # [zero, first_bin, len, counts[0] .. counts[len-1], 0 padding to the widest sample]
    _HIST_PARTS = ("zero", "first_bin", "len", "counts")    # files written before: four arrays a row

    def _load_sample_hists(self, file: Path) -> None:
        from .jsonio import load_npz
        arrays = load_npz(file)
        for i, row in enumerate(self.rows):
            a = arrays.get(row.name)
            if a is not None and a.ndim == 2 and a.shape[1] >= 3:
                zero, first, lens, counts = a[:, 0], a[:, 1], a[:, 2], a[:, 3:]
            else:       # four arrays a row, keyed by name, or by position (row{i}) before names
                key = row.name if f"{row.name}.zero" in arrays else f"row{i}"
                if f"{key}.zero" not in arrays:
                    continue
                zero, first, lens, counts = (arrays[f"{key}.{p}"] for p in self._HIST_PARTS)
            for j, sm in enumerate(row.samples):
                if j < len(zero) and sm.hist is None:
                    sm.hist = Hist(int(zero[j]), int(first[j]), counts[j, :int(lens[j])].tolist())

    def _save_arrays(self, directory: Path) -> None:
        import numpy as np

        from .jsonio import save_npz
        names = _sample_record_fields()
        lines, idx = [], []
        for j, row in enumerate(self.rows):
            for sm in row.samples:
                lines.append([getattr(sm, k) for k in names])
                idx.append(j)
        recs = np.array(lines, dtype=np.float64).reshape(len(lines), len(names))   # None -> NaN
        save_npz(directory / SAMPLES_FILE, {"records": recs, "row": np.array(idx, dtype=np.int64),
                                            "fields": np.array(names)})
        hists = {}
        for row in self.rows:
            hs = [sm.hist for sm in row.samples]
            if not hs or any(h is None for h in hs):
                continue
            width = max((len(h.counts) for h in hs), default=0)
            packed = np.zeros((len(hs), 3 + width), dtype=np.int64)
            for j, h in enumerate(hs):
                packed[j, :3] = (h.zero, h.first_bin, len(h.counts))
                packed[j, 3:3 + len(h.counts)] = h.counts
            hists[row.name] = packed
        save_npz(directory / HIST_FILE, hists)
        from .jsonio import atomic_write_text
        atomic_write_text(directory / "metrics.csv",
                          _csv_text([c.key for c in row_columns()], self.row_records(verbose=True)))
        atomic_write_text(directory / "per_sample.csv", _per_sample_csv(self.table(verbose=True)))

    # -- views (str(self) and these: the registry's renderers for "verify", Report._render) -----
    def figure(self, row: str, sample: int | str | None = None):
        """A plotly ``Figure``: the |engine − reference| histogram of ``row`` (``sample``: an index;
        None: all samples), as the view draws it. Needs plotly."""
        return self._render("figure", plot="hist", row=row, sample=sample)

    def growth_figure(self, metric: str = "nrmse"):
        """A plotly ``Figure``: the error-growth plot (``metric`` over the judged rows in model
        order, the rule's threshold and the first divergent row marked)."""
        return self._render("figure", plot="growth", metric=metric)

    def to_model_explorer(self, directory, model_name: str = "model", graph_id: str | None = None) -> list[Path]:
        """Write Model Explorer node-data files (one per metric) for the engine's ONNX graph
        (``graph_id``: the graph's name, default ``main_graph``)."""
        return self._render("model_explorer", directory=directory, model_name=model_name, graph_id=graph_id)


def _sample_record_fields() -> list[str]:
    """The SampleMetrics fields samples.npz stores (the histogram goes to histograms.npz)."""
    return [f.name for f in fields(SampleMetrics) if f.name != "hist" and not f.metadata.get("transient")]


def _csv_text(keys: list[str], records: list[dict[str, Any]]) -> str:
    """The flat tables beside report.json (pandas-free: csv module); empty cells for None and
    non-finite values."""
    import csv
    import io
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(keys)
    # the csv module writes None as an empty cell, str/int as they are and a float as its repr:
    # only non-finite floats, numpy scalars and lists need a look (a per-sample table has ~20 k cells)
    plain = (str, int, bool, type(None))
    for rec in records:
        row = [rec[k] for k in keys]
        for i, v in enumerate(row):
            t = type(v)
            if t is float:
                if not -_INF < v < _INF:
                    row[i] = None
            elif t not in plain:
                row[i] = _csv(v)
        w.writerow(row)
    return buf.getvalue()


_INF = float("inf")


def _per_sample_csv(rows: list) -> str:
    """per_sample.csv: ``_csv_text`` of ``sample_records`` (the same text), without a dict per
    record: each row's identity cells are quoted once, its samples' cells (numbers) joined
    directly (1,024 records: 17 -> 8 ms here)."""
    import csv
    import io
    keys = [c.key for c in sample_columns()]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="")
    w.writerow([*SAMPLE_ID_KEYS, *keys])
    out = [buf.getvalue()]
    for r in rows:
        buf.seek(0)
        buf.truncate()
        w.writerow([r.name, r.kind, r.order])
        prefix = buf.getvalue() + ","
        for sm in r.samples:
            cells = [str(sm.sample)]
            for k in keys:
                v = getattr(sm, k)
                t = type(v)
                if t is float:
                    cells.append(repr(v) if -_INF < v < _INF else "")
                elif v is None:
                    cells.append("")
                elif t is int:
                    cells.append(str(v))
                else:
                    cells.append(_csv(v))
            out.append(prefix + ",".join(cells))
    return "\n".join(out) + "\n"


def _csv(v: Any) -> str:
    """A cell the csv module would not write right by itself (``_csv_text``)."""
    if isinstance(v, float):      # numpy's float64 (its repr would say np.float64(...))
        return repr(float(v)) if -_INF < v < _INF else ""
    if isinstance(v, list):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)
