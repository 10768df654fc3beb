"""Exact comparison metrics and log-binned |diff| histograms, in one fused float64 pass.

Definitions (DESIGN §4), over all finite element pairs, e = engine/exported, r = reference:

    max_abs = max |e - r|
    mse     = mean((e - r)^2)
    mape    = 100 * mean(|e - r| / max(|r|, 1e-6))
    nrmse   = sqrt(mse) / rms(r),  rms(r) = sqrt(sum(r^2) / n)   (a fraction; None when rms(r) == 0)
    cosine  = sum(e*r) / (||e|| * ||r||)      (1.0 when both are all zero, 0.0 when one is)
    min_atol(rtol) = max(0, max(|e - r| - rtol*|r|))   -- the smallest atol that passes allclose

Pairs where either side is NaN/Inf are counted (``nonfinite_engine`` / ``nonfinite_reference`` /
``nonfinite_pairs``) and left out of the sums; they are never silently dropped from the report.

The histogram uses fixed, global bins so that histograms of different samples and runs add up: the
bin of a value is its float64 bit pattern shifted right by 50 bits (11 exponent bits + the top two
mantissa bits), i.e. four bins per octave, plus an explicit bin for exact zeros. Percentiles are
read from the histogram (interpolated inside a bin; relative error below one bin, ~19 %).

The pass itself (sums in a fixed order, by numba or numpy with the same bits) is
``compare.kernel``'s.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

MAPE_FLOOR = 1e-6
CHUNK = 1 << 16                  # elements per block (the unit of summation order and of threads)
_SHIFT = 50                      # keep sign(=0) + 11 exponent bits + 2 mantissa bits
_NBINS = 1 << (64 - 1 - _SHIFT)  # 8192 possible bins for non-negative doubles


def bin_lower_edge(b: np.ndarray | int) -> np.ndarray:
    """Lower edge of histogram bin ``b`` (b >= 1). Bin 0 is the exact-zero bin."""
    bits = np.atleast_1d(np.asarray(b, dtype=np.int64)) << _SHIFT
    out = bits.view(np.float64)
    return out if np.ndim(b) else out[0]


#: lower edge of every bin (and one past the last), as Python floats
_EDGES: list[float] = (np.arange(_NBINS + 1, dtype=np.int64) << _SHIFT).view(np.float64).tolist()


@dataclass
class LogHistogram:
    """Counts of |diff| on fixed log bins. ``zero`` counts exact zeros; ``first_bin`` is the index
    of ``counts[0]`` in the global bin numbering (see module doc)."""

    zero: int = 0
    first_bin: int = 0
    counts: list[int] = field(default_factory=list)

    @property
    def total(self) -> int:
        return int(self.zero + sum(self.counts))

    def edges(self) -> np.ndarray:
        """Bin edges (len(counts)+1) of the non-zero bins, in absolute-difference units."""
        return np.array(self._edge_list(), dtype=np.float64)

    def _edge_list(self) -> list[float]:
        return _EDGES[self.first_bin: self.first_bin + len(self.counts) + 1]

    def add(self, other: "LogHistogram") -> "LogHistogram":
        if not other.counts:
            return LogHistogram(self.zero + other.zero, self.first_bin, list(self.counts))
        if not self.counts:
            return LogHistogram(self.zero + other.zero, other.first_bin, list(other.counts))
        lo = min(self.first_bin, other.first_bin)
        hi = max(self.first_bin + len(self.counts), other.first_bin + len(other.counts))
        acc = np.zeros(hi - lo, dtype=np.int64)
        acc[self.first_bin - lo: self.first_bin - lo + len(self.counts)] += self.counts
        acc[other.first_bin - lo: other.first_bin - lo + len(other.counts)] += other.counts
        return LogHistogram(self.zero + other.zero, lo, acc.tolist())

    def percentile(self, q: float) -> float | None:
        """q in [0, 100]; linear interpolation inside the bin that holds the rank."""
        return self.percentiles((q,))[0]

    def percentiles(self, qs) -> list[float | None]:
        """``percentile`` of each q, in one walk over the bins. (Plain Python over the few
        non-empty bins: verify reads 4 percentiles per row and sample; the numbers are those of a
        float64 cumsum + searchsorted, exact for counts below 2**53.)"""
        counts = self.counts
        n = self.zero + sum(counts)
        if n == 0:
            return [None] * len(qs)
        out = []
        for q in qs:
            rank = q / 100.0 * (n - 1)
            if rank < self.zero:
                out.append(0.0)
                continue
            start = self.zero  # cumulative count before bin i (exact: counts are integers)
            i = len(counts) - 1  # when no bin passes the rank (q = 100): the last one
            for k, c in enumerate(counts):
                if start + c > rank:  # the first bin whose cumulative count passes the rank
                    i = k
                    break
                start += c
            else:
                start -= counts[-1]
            lo, hi = _EDGES[self.first_bin + i], _EDGES[self.first_bin + i + 1]
            frac = 0.0 if counts[i] <= 1 else (rank - float(start)) / (counts[i] - 1)
            out.append(float(lo + (hi - lo) * min(max(frac, 0.0), 1.0)))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"zero": int(self.zero), "first_bin": int(self.first_bin),
                "counts": [int(c) for c in self.counts],
                "edges": self._edge_list() if self.counts else []}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LogHistogram":
        return cls(int(d.get("zero", 0)), int(d.get("first_bin", 0)), [int(c) for c in d.get("counts", [])])


@dataclass
class DiffStats:
    """Everything one pass over a pair of arrays yields."""

    n: int = 0                     # elements compared (all pairs, finite or not)
    nonfinite_engine: int = 0
    nonfinite_reference: int = 0
    nonfinite_pairs: int = 0       # pairs left out because either side is non-finite
    max_abs: float | None = None
    mse: float | None = None
    mape: float | None = None
    nrmse: float | None = None     # sqrt(mse) / rms(reference), a fraction; None when rms(r) == 0
    cosine: float | None = None
    mean_abs: float | None = None
    min_atol: float | None = None  # at the rtol passed to diff_stats
    rtol: float = 0.0
    hist: LogHistogram = field(default_factory=LogHistogram)
    # raw sums, kept so that per-sample stats add up exactly into the whole
    _sum_abs: float = 0.0
    _sum_sq: float = 0.0
    _sum_ape: float = 0.0
    _sum_er: float = 0.0
    _sum_ee: float = 0.0
    _sum_rr: float = 0.0
    _max_excess: float = -math.inf

    @property
    def finite(self) -> int:
        return self.n - self.nonfinite_pairs

    def percentile(self, q: float) -> float | None:
        return self.hist.percentile(q)

    def _finish(self) -> "DiffStats":
        m = self.finite
        if m > 0:
            self.mse = self._sum_sq / m
            self.mape = 100.0 * self._sum_ape / m
            self.mean_abs = self._sum_abs / m
            self.min_atol = max(0.0, self._max_excess)
            # sqrt(mse) / sqrt(sum r^2 / m): the m cancels, so merged sums give the exact union value
            self.nrmse = math.sqrt(self._sum_sq / self._sum_rr) if self._sum_rr > 0.0 else None
            ne, nr = math.sqrt(self._sum_ee), math.sqrt(self._sum_rr)
            if ne == 0.0 and nr == 0.0:
                self.cosine = 1.0
            elif ne == 0.0 or nr == 0.0:
                self.cosine = 0.0
            else:
                self.cosine = self._sum_er / (ne * nr)
        else:
            self.max_abs = self.mse = self.mape = self.mean_abs = self.min_atol = self.cosine = None
            self.nrmse = None
        return self

    def merge(self, other: "DiffStats") -> "DiffStats":
        """Combine stats of disjoint element sets (e.g. samples) into stats of their union."""
        out = DiffStats(rtol=self.rtol)
        out.n = self.n + other.n
        out.nonfinite_engine = self.nonfinite_engine + other.nonfinite_engine
        out.nonfinite_reference = self.nonfinite_reference + other.nonfinite_reference
        out.nonfinite_pairs = self.nonfinite_pairs + other.nonfinite_pairs
        maxes = [x for x in (self.max_abs, other.max_abs) if x is not None]
        out.max_abs = max(maxes) if maxes else None
        for name in ("_sum_abs", "_sum_sq", "_sum_ape", "_sum_er", "_sum_ee", "_sum_rr"):
            setattr(out, name, getattr(self, name) + getattr(other, name))
        out._max_excess = max(self._max_excess, other._max_excess)
        out.hist = self.hist.add(other.hist)
        return out._finish()

    def to_dict(self, percentiles: Iterable[float] = ()) -> dict[str, Any]:
        d = {k.name: getattr(self, k.name) for k in dataclasses.fields(self)
             if not k.name.startswith("_") and k.name != "hist"}
        for q in percentiles:
            d[_pname(q)] = self.percentile(q)
        return d


def _pname(q: float) -> str:
    return "p" + (f"{q:g}".replace(".", ""))


def diff_stats(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int = CHUNK,
               backend: str | None = None, threads: int | None = None) -> DiffStats:
    """One fused pass over ``engine`` and ``reference`` (same shape): every sum, maximum,
    non-finite count and histogram count at once (``compare.kernel.diff_pass``; the module doc
    says in which order the sums add up).

    ``backend``: ``"numba"`` (the compiled kernel, on all cores), ``"numpy"`` (the same arithmetic
    in numpy), or None: ``$LEAPP_LAB_METRICS``, else numba when it imports. Both give the same bits.
    ``chunk``: elements per block (part of the summation order). ``threads``: numba threads for
    this call (None: all; 1 for callers that already score pairs in parallel); never changes a bit.
    """
    from .kernel import diff_pass
    return _stats(diff_pass(engine, reference, rtol=rtol, chunk=chunk, backend=backend, threads=threads),
                  float(rtol))


def diff_stats_samples(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int = CHUNK,
                       backend: str | None = None, threads: int | None = None) -> list[DiffStats]:
    """``diff_stats`` of each sample (index along the leading axis) of ``engine`` vs ``reference``,
    in one call (the samples side by side on the cores); the same numbers as one call per sample."""
    for _, stats in diff_stats_rows([(engine, reference)], rtol=rtol, chunk=chunk, backend=backend,
                                    threads=threads):
        return stats
    return []


def diff_stats_rows(rows: list, *, rtol: float = 0.0, chunk: int = CHUNK, backend: str | None = None,
                    threads: int | None = None):
    """``diff_stats_samples`` of every (engine, reference) pair of ``rows``, all scored side by side;
    yields ``(row index, [DiffStats per sample])`` as rows complete (``compare.kernel.diff_pass_rows``)."""
    from .kernel import diff_pass_rows
    rtol = float(rtol)
    for j, passes in diff_pass_rows(rows, rtol=rtol, chunk=chunk, backend=backend, threads=threads):
        yield j, [_stats(p, rtol) for p in passes]


def merge_all(stats: list[DiffStats]) -> DiffStats:
    """``stats[0].merge(stats[1]).merge(stats[2])...`` (the same numbers: sums added left to
    right), with one histogram sum instead of one per merge."""
    if len(stats) == 1:
        return stats[0]
    out = DiffStats(rtol=stats[0].rtol)
    for name in ("n", "nonfinite_engine", "nonfinite_reference", "nonfinite_pairs"):
        setattr(out, name, sum(getattr(s, name) for s in stats))
    for name in ("_sum_abs", "_sum_sq", "_sum_ape", "_sum_er", "_sum_ee", "_sum_rr"):
        acc = getattr(stats[0], name)
        for s in stats[1:]:
            acc = acc + getattr(s, name)
        setattr(out, name, acc)
    maxes = [s.max_abs for s in stats if s.max_abs is not None]
    out.max_abs = max(maxes) if maxes else None
    out._max_excess = max(s._max_excess for s in stats)
    hs = [s.hist for s in stats if s.hist.counts]
    zero = sum(s.hist.zero for s in stats)
    if hs:
        lo = min(h.first_bin for h in hs)
        acc = np.zeros(max(h.first_bin + len(h.counts) for h in hs) - lo, dtype=np.int64)
        for h in hs:
            acc[h.first_bin - lo: h.first_bin - lo + len(h.counts)] += h.counts
        out.hist = LogHistogram(zero, lo, acc.tolist())
    else:
        out.hist = LogHistogram(zero, 0, [])
    return out._finish()


def _stats(p, rtol: float) -> DiffStats:
    st = DiffStats(rtol=rtol)
    st.n = p.n
    st.nonfinite_engine, st.nonfinite_reference, st.nonfinite_pairs = p.nonfinite
    st._sum_abs, st._sum_sq, st._sum_ape, st._sum_er, st._sum_ee, st._sum_rr = p.sums
    st.max_abs = p.max_abs if p.max_abs != -math.inf else None
    st._max_excess = p.max_excess
    if p.hi > p.lo:
        st.hist = LogHistogram(int(p.counts[0]), p.lo, p.counts[p.lo:p.hi].tolist())
    else:
        st.hist = LogHistogram(int(p.counts[0]), 0, [])
    return st._finish()
