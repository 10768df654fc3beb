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
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

MAPE_FLOOR = 1e-6
CHUNK = 1 << 16                  # elements per fused step (float64 buffers stay in L2/L3)
_DOT = 1 << 13                   # dot products on rows this long: below OpenBLAS's ddot threading
_SHIFT = 50                      # keep sign(=0) + 11 exponent bits + 2 mantissa bits
_NBINS = 1 << (64 - 1 - _SHIFT)  # 8192 possible bins for non-negative doubles


def bin_lower_edge(b: np.ndarray | int) -> np.ndarray:
    """Lower edge of histogram bin ``b`` (b >= 1). Bin 0 is the exact-zero bin."""
    bits = np.atleast_1d(np.asarray(b, dtype=np.int64)) << _SHIFT
    out = bits.view(np.float64)
    return out if np.ndim(b) else out[0]


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
        idx = np.arange(self.first_bin, self.first_bin + len(self.counts) + 1, dtype=np.int64)
        return np.asarray(bin_lower_edge(idx), dtype=np.float64)

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
        n = self.total
        if n == 0:
            return None
        rank = q / 100.0 * (n - 1)
        if rank < self.zero:
            return 0.0
        c = np.cumsum(np.asarray(self.counts, dtype=np.float64)) + self.zero
        i = int(np.searchsorted(c, rank, side="right"))
        i = min(i, len(self.counts) - 1)
        edges = self.edges()
        lo, hi = edges[i], edges[i + 1]
        start = c[i] - self.counts[i]
        frac = 0.0 if self.counts[i] <= 1 else (rank - start) / (self.counts[i] - 1)
        return float(lo + (hi - lo) * min(max(frac, 0.0), 1.0))

    def to_dict(self) -> dict[str, Any]:
        return {"zero": int(self.zero), "first_bin": int(self.first_bin),
                "counts": [int(c) for c in self.counts],
                "edges": [float(x) for x in self.edges()] if self.counts else []}

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


def diff_stats(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int = CHUNK) -> DiffStats:
    """One fused pass over ``engine`` and ``reference`` (same shape), in float64 chunks.

    Each chunk is cast into reused float64 buffers (no allocation per chunk) and every statistic is
    taken while it is in cache; Python-level work is per chunk, not per element. The dot products
    run on rows of ``_DOT`` elements (``np.vecdot`` over a 2-D view): OpenBLAS threads ``ddot``
    above ~10k elements, which on a busy machine made a single dot product ~60x slower.
    """
    e_all = np.asarray(engine).reshape(-1)
    r_all = np.asarray(reference).reshape(-1)
    if e_all.shape != r_all.shape:
        raise ValueError(f"shape mismatch: {np.shape(engine)} vs {np.shape(reference)}")
    st = DiffStats(rtol=float(rtol))
    n = int(e_all.size)
    st.n = n
    chunk = max(1, min(int(chunk), n or 1))
    be, br, bd, bt, bu = (np.empty(chunk, dtype=np.float64) for _ in range(5))
    floor = np.full(chunk, MAPE_FLOOR)  # fmax against an array: ~2x faster than maximum(t, scalar)
    hbuf = np.empty(chunk, dtype=np.int64)
    counts = np.zeros(_NBINS, dtype=np.int64)
    acc = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # sum |d|, sum d^2, sum ape, sum er, sum ee, sum rr
    max_abs = max_excess = -math.inf
    rtol = float(rtol)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        e, r, d = be[:m], br[:m], bd[:m]
        e[...] = e_all[start:start + m]
        r[...] = r_all[start:start + m]
        np.subtract(e, r, out=d)
        np.abs(d, out=d)
        cmax = float(d.max())
        if not cmax < math.inf:
            # slow path: some element is non-finite (NaN propagates into max); count, then drop them
            fe, fr = np.isfinite(e), np.isfinite(r)
            st.nonfinite_engine += int(m - np.count_nonzero(fe))
            st.nonfinite_reference += int(m - np.count_nonzero(fr))
            ok = fe & fr
            k = int(np.count_nonzero(ok))
            st.nonfinite_pairs += m - k
            if k == 0:
                continue
            e, r, d = e[ok], r[ok], d[ok]
            m = k
            cmax = float(d.max())
        max_abs = max(max_abs, cmax)
        ex = _accumulate(acc, e, r, d, bt[:m], bu[:m], floor[:m], hbuf[:m], rtol)
        if rtol:
            max_excess = max(max_excess, ex)
        counts += np.bincount(hbuf[:m], minlength=_NBINS)
    st._sum_abs, st._sum_sq, st._sum_ape, st._sum_er, st._sum_ee, st._sum_rr = acc
    st._max_excess = max_excess if rtol else max_abs
    st.max_abs = max_abs if max_abs != -math.inf else None
    nz = np.flatnonzero(counts[1:])
    if nz.size:
        lo, hi = int(nz[0]) + 1, int(nz[-1]) + 2
        st.hist = LogHistogram(int(counts[0]), lo, counts[lo:hi].tolist())
    else:
        st.hist = LogHistogram(int(counts[0]), 0, [])
    return st._finish()


def _vecdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b)


if hasattr(np, "vecdot"):  # numpy >= 2.0: one BLAS ddot per row, no per-row Python call
    _vecdot = np.vecdot  # noqa: F811


def _dots(acc: list, e: np.ndarray, r: np.ndarray, d: np.ndarray) -> None:
    m = d.size
    k = (m // _DOT) * _DOT
    if k:
        vd = _vecdot
        D, E, R = d[:k].reshape(-1, _DOT), e[:k].reshape(-1, _DOT), r[:k].reshape(-1, _DOT)
        acc[1] += float(vd(D, D).sum())
        acc[3] += float(vd(E, R).sum())
        acc[4] += float(vd(E, E).sum())
        acc[5] += float(vd(R, R).sum())
    if k < m:
        D, E, R = d[k:], e[k:], r[k:]
        acc[1] += float(np.dot(D, D))
        acc[3] += float(np.dot(E, R))
        acc[4] += float(np.dot(E, E))
        acc[5] += float(np.dot(R, R))


def _accumulate(acc: list, e, r, d, t, u, floor, h, rtol: float) -> float:
    """Sums of one chunk (d = |e - r|, all finite) into ``acc``; bin indices into ``h``; returns
    max(d - rtol*|r|) (the min_atol candidate) when rtol, else -inf."""
    acc[0] += float(d.sum())
    _dots(acc, e, r, d)
    np.abs(r, out=t)
    ex = -math.inf
    if rtol:
        np.multiply(t, rtol, out=u)
        np.subtract(d, u, out=u)
        ex = float(u.max())
    np.fmax(t, floor, out=t)
    np.divide(d, t, out=t)
    acc[2] += float(t.sum())
    np.right_shift(d.view(np.int64), _SHIFT, out=h)
    return ex
