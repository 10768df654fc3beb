"""The metric record of one element set (a verify row, one sample of it, one trace port/sample).

Definitions (DESIGN §4), over all finite element pairs, in float64, e = engine/exported, r =
reference::

    max_abs  = max |e - r|
    mse      = mean((e - r)^2)
    mape     = 100 * mean(|e - r| / max(|r|, 1e-6))
    nrmse    = sqrt(mse) / rms(r),  rms(r) = sqrt(sum(r^2) / n)   (a fraction; None when rms(r) == 0)
    cosine   = sum(e*r) / (||e|| * ||r||)      (1.0 when both are all zero, 0.0 when one is)
    mean_abs = mean |e - r|
    min_atol(rtol) = max(0, max(|e - r| - rtol*|r|))   -- the smallest atol that passes allclose

A metric is None when nothing finite was compared. Pairs where either side is NaN/Inf are counted
(``nonfinite_*``) and left out of the sums, never silently dropped.

``Sums`` are the raw, mergeable accumulators one pass over the arrays yields (leapp_lab.compare
computes them); ``Metrics.fill(sums)`` turns them into the record, so records of disjoint element
sets (samples) merge into the exact record of their union.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .dc import Plain
from .hist import Hist

MAPE_FLOOR = 1e-6
#: percentiles of |engine - reference| stored per record, read from the histogram
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
PERCENTILE_KEYS = ("p50", "p90", "p99", "p999")


@dataclass
class Sums:
    """Raw accumulators of one element set. ``max_abs`` / ``max_excess`` are -inf when no finite
    pair was seen; ``max_excess`` is max(|e-r| - rtol*|r|) at ``rtol``."""
    n: int = 0
    nonfinite_engine: int = 0
    nonfinite_reference: int = 0
    nonfinite_pairs: int = 0
    sum_abs: float = 0.0
    sum_sq: float = 0.0
    sum_ape: float = 0.0
    sum_er: float = 0.0
    sum_ee: float = 0.0
    sum_rr: float = 0.0
    max_abs: float = -math.inf
    max_excess: float = -math.inf
    rtol: float = 0.0
    hist: Hist = field(default_factory=Hist)

    @property
    def finite(self) -> int:
        return self.n - self.nonfinite_pairs

    def merge(self, o: "Sums") -> "Sums":
        """Sums of the union of two disjoint element sets."""
        return Sums(self.n + o.n, self.nonfinite_engine + o.nonfinite_engine,
                    self.nonfinite_reference + o.nonfinite_reference, self.nonfinite_pairs + o.nonfinite_pairs,
                    self.sum_abs + o.sum_abs, self.sum_sq + o.sum_sq, self.sum_ape + o.sum_ape,
                    self.sum_er + o.sum_er, self.sum_ee + o.sum_ee, self.sum_rr + o.sum_rr,
                    max(self.max_abs, o.max_abs), max(self.max_excess, o.max_excess), self.rtol,
                    self.hist.add(o.hist))


@dataclass
class Metrics(Plain):
    """Metrics of one element set (module doc). ``n``: elements paired; ``nonfinite_engine`` /
    ``nonfinite_reference``: NaN/Inf counts on each side; ``nonfinite_pairs``: pairs left out
    because either side is non-finite. ``mape`` in percent; ``nrmse`` a fraction; ``min_atol`` at
    the rtol of the run. ``p50``..``p999``: *approximate* percentiles of |diff| read from ``hist``
    (within one bin, ~19 %), clamped to the exact ``max_abs``. ``sums``: the accumulators (kept in memory for merging, not saved)."""
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
    sums: Sums | None = field(default=None, repr=False, compare=False, metadata={"transient": True})

    @property
    def nonfinite(self) -> int:
        # counts may be null in a report's JSON (every field may): none known, none counted
        return int((self.nonfinite_engine or 0) + (self.nonfinite_reference or 0))

    def percentile(self, q: float) -> float | None:
        return self.hist.percentile(q) if self.hist is not None else None

    def fill(self, s: Sums) -> Any:
        """Set every metric of this record from ``s``; returns self."""
        self.sums = s
        self.n, self.nonfinite_engine, self.nonfinite_reference, self.nonfinite_pairs = (
            s.n, s.nonfinite_engine, s.nonfinite_reference, s.nonfinite_pairs)
        self.hist = s.hist
        m = s.finite
        if m <= 0:
            self.mape = self.nrmse = self.mse = self.max_abs = self.cosine = None
            self.mean_abs = self.min_atol = None
        else:
            self.mse = s.sum_sq / m
            self.mape = 100.0 * s.sum_ape / m
            self.mean_abs = s.sum_abs / m
            self.max_abs = s.max_abs
            self.min_atol = max(0.0, s.max_excess)
            # sqrt(mse) / sqrt(sum r^2 / m): the m cancels, so merged sums give the exact union value
            self.nrmse = math.sqrt(s.sum_sq / s.sum_rr) if s.sum_rr > 0.0 else None
            ne, nr = math.sqrt(s.sum_ee), math.sqrt(s.sum_rr)
            if ne == 0.0 and nr == 0.0:
                self.cosine = 1.0
            elif ne == 0.0 or nr == 0.0:
                self.cosine = 0.0
            else:
                self.cosine = s.sum_er / (ne * nr)
        for k, p in zip(PERCENTILE_KEYS, s.hist.percentiles(PERCENTILES)):
            # read from a log bin, a percentile can land above the exact max (up to one bin, ~19 %):
            # never report more than was measured
            if p is not None and self.max_abs is not None:
                p = min(p, self.max_abs)
            setattr(self, k, p)
        return self

    def merge(self, other: "Metrics") -> "Metrics":
        """The record of the union of two disjoint element sets (needs both records' ``sums``)."""
        if self.sums is None or other.sums is None:
            raise ValueError("only records computed in this process (with their sums) can be merged")
        return Metrics().fill(self.sums.merge(other.sums))
