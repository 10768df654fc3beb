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

The report is here; its rows are ``verify_rows``, its rules ``verify_rules``, its run-folder storage
``verify_storage`` (and ``csvtables``). Their public names are importable from here too: they are
the report's schema.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .base import Report, Viewable, register
from .columns import SAMPLE_ID_KEYS, row_columns, sample_columns
from .dc import Plain
from .graph import EngineGraph
from .verify_rows import (STATUSES, UNJUDGED_REASONS, InputSummary, SampleMetrics, VerifyRow,  # noqa: F401
                          worst_key)
from .verify_rules import DivergenceRule, ExpectedRule
from .verify_storage import HIST_FILE, SAMPLES_FILE, load_sample_hists, load_samples, save_arrays


@dataclass
class ExportDiffers(Plain):
    """Where the prepared fp32 ONNX first departs from the reference (``verify --expected int8``,
    its fp32 check on the first sample): ``row`` in model order, its ``nrmse``, the ``onnx`` file.
    Not an int8 effect: the finding leads with it and names an fp32 (``ort``) verify as the next step."""
    row: str = ""
    nrmse: float = 0.0
    onnx: str = ""


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
    it, in model order; ``first_beyond_expected``: the first of them; ``export_differs``: the
    row where the prepared fp32 ONNX already departs from the reference (``ExportDiffers``);
    ``worst_excess``: the row with the largest local excess (taps first; ``worst_local`` is the
    largest departure from the int8 simulation where one was measured). ``graph``: the build's graph with each row placed on the node that
    computes it (``leapp_lab.model.graph.EngineGraph``; what the accuracy graph view draws), None
    in reports written before it existed. ``metrics_backend``: what computed the metrics, ``numba``
    (the fused kernel) or ``numpy`` (its fallback; the same bits); None in reports written before it
    existed. ``elements``: some output row has a per-element breakdown (``VerifyRow.elements``: a
    node prepared from a LEAPP trace; docs/semantics.md). ``samples_file``: where a saved report keeps the per-sample records (``samples.npz``;
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
    export_differs: ExportDiffers | None = None
    worst_excess: str | None = None
    graph: EngineGraph | None = None
    metrics_backend: str | None = None
    elements: bool = False
    samples_file: str | None = None

    path: Path | None = field(default=None, repr=False, compare=False, metadata={"transient": True})

    # -- model API -----------------------------------------------------------------------------
    @property
    def sim(self) -> bool:
        """Were rows judged against the engine's own int8 simulation (``--expected int8``)?"""
        return bool(self.expected is not None and getattr(self.expected, "sim", False))

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

    def thresholds(self) -> dict[str, tuple[float, str]]:
        """The limits every view draws: the divergence rule's (``DivergenceRule.thresholds``) and,
        with an expectation judged locally, ``local_excess``'s factor."""
        out = self.rule.thresholds()
        if self.expected is not None and self.expected.local:
            out["local_excess"] = (self.expected.factor, "above")
        if self.sim and self.expected.sim_factor is not None:
            out["sim_excess"] = (self.expected.sim_factor, "above")
        return out

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
        from .compare_build import compare_reports
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
            "kind": "verify-rows", "schema_version": self.schema_version, "finding": self.finding,
            "reference": self.reference, "build": self.build, "engine": self.engine,
            "samples": self.samples, "rule": self.rule,
            "first_divergent": self.first_divergent, "worst_tap": self.worst_tap,
            "largest_jump": self.largest_jump, "max_mape": self.max_mape,
            "max_mape_taps": self.max_mape_taps, "exceeded": self.exceeded,
            "exit_code": self.exit_code, "local": self.local,
            "first_locally_divergent": self.first_locally_divergent, "worst_local": self.worst_local,
            "expected": self.expected, "first_beyond_expected": self.first_beyond_expected,
            "worst_excess": self.worst_excess,
            "beyond_expected": self.beyond_expected, "departs_sim": [r.name for r in self.rows if r.departs_sim],
            "export_differs": self.export_differs, "metrics_backend": self.metrics_backend,
            "rows": self._json_records(verbose),
            "warnings": list(self.warnings)})

    def _json_records(self, verbose: bool | None) -> list[dict[str, Any]]:
        """``row_records`` plus, on a row with a per-element breakdown, its ``elements``."""
        out = self.row_records(verbose)
        for rec, r in zip(out, self.table(verbose)):
            if r.elements:
                rec["elements"] = [e.to_dict() for e in r.elements]
        return out

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
        body["finding"] = self.finding
        # compact: json's C encoder only runs without indent (3-4x faster on many taps x samples);
        # one conversion pass, not two (dumps would walk the body again)
        text = json.dumps(body, allow_nan=False, ensure_ascii=False)
        atomic_write_text(directory / REPORT_FILE, text + "\n")
        self.path = directory
        return directory

    def _save_arrays(self, directory: Path) -> None:
        save_arrays(self, directory)

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None = None) -> "VerifyReport":
        from .safepaths import check_input_file, present
        r = super().from_dict(d, path)
        # reports written before rows carried a reason: the recorded rule gives it back
        for raw, row in zip(d.get("rows") or [], r.rows):
            if "reason" not in raw:
                row.reason = ", ".join(r.rule.reasons(row)) or None
        if path is not None and r.samples_file:
            f = Path(path) / r.samples_file
            if present(f):      # a FIFO, a device, a dangling link: named, never opened
                load_samples(r, check_input_file(f, "an .npz file"))
            else:
                r.warnings.append(f"{f}: missing; report.json keeps its per-sample records there, so "
                                  "this report shows none (copy the whole run folder, or verify again)")
        if path is not None and present(Path(path) / HIST_FILE):
            load_sample_hists(r, check_input_file(Path(path) / HIST_FILE, "an .npz file"))
        return r

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
