"""A verify report's rows: what one compared output or tap is (``VerifyRow``, its per-sample
``SampleMetrics``), the row statuses, why a row is not judged, how ``worst`` ranks rows, and the
inputs each sample fed (``InputSummary``). ``leapp_lab.model.verify`` holds the report around them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .dc import Plain
from .metrics import Metrics
from .semantics import ElementError
from .tap import TapEntry


#: Row statuses. ``compared``: both sides present and comparable. ``no-reference``: the build
#: produced it but the reference npz has no array of that name (an uncompared tap, or an unpaired
#: name). ``not-in-engine``: the reference has it, the build's sample_outputs.npz does not.
#: ``shape-mismatch``: both present, per-sample shapes differ. ``dtype-unsupported``: a side is not
#: a real numeric/bool dtype (complex, strings, void).
STATUSES = ("compared", "no-reference", "not-in-engine", "shape-mismatch", "dtype-unsupported")


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
    Expected drift (``verify(..., expected="fp16"|"bf16"|"int8")``): ``expected_nrmse`` (nrmse that
    the precision alone gives: torch eager in that dtype, or for int8 the model rounded onto the
    engine's grids), ``expected_local_nrmse`` (the same from the reference values upstream, at
    ``--local``'s cuts), ``local_excess`` (local_nrmse / max(expected_local_nrmse, floor)),
    ``beyond_expected`` (``ExpectedRule.judge``), ``expected_note``.
    Errors by meaning (an output port of a ``prepare --from-trace`` node, docs/semantics.md):
    ``elements`` (``[{name, max_abs, nrmse}]`` over every sample), ``worst_element`` (the element
    with the largest |engine − reference|), ``meaning`` (the port's kind and unit).
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
    expected_local_nrmse: float | None = None
    local_excess: float | None = None
    beyond_expected: bool = False
    expected_note: str | None = None
    # the engine against its own int8 simulation (verify --expected int8)
    sim_nrmse: float | None = None
    sim_local_nrmse: float | None = None
    sim_excess: float | None = None
    departs_sim: bool = False
    sim_note: str | None = None
    # errors by meaning (steps/verify_elements.py)
    elements: list[ElementError] = field(default_factory=list)
    worst_element: str | None = None
    meaning: str | None = None
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
