"""The one histogram type: counts of |engine − reference| on fixed, global log bins.

The bin of a value is its float64 bit pattern shifted right by ``SHIFT`` (11 exponent bits + the
top two mantissa bits of a non-negative double), i.e. four bins per octave, plus an explicit bin
for exact zeros. Because the bins are global, histograms of samples, rows and runs add up exactly,
and edges are a property of the bin numbers (never stored as the source of truth).
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Iterable

import numpy as np

from .dc import Plain

SHIFT = 50                       # keep sign(=0) + 11 exponent bits + 2 mantissa bits
NBINS = 1 << (64 - 1 - SHIFT)    # 8192 possible bins for non-negative doubles


def bin_lower_edge(b: np.ndarray | int) -> np.ndarray | float:
    """Lower edge of global bin ``b`` (b >= 1: the float64 whose bit pattern is ``b << SHIFT``).
    Bin 0 is the exact-zero bin."""
    bits = np.atleast_1d(np.asarray(b, dtype=np.int64)) << SHIFT
    out = bits.view(np.float64)
    return out if np.ndim(b) else float(out[0])


#: lower edge of every global bin and of the one past the last, as floats (``bin_lower_edge``)
_EDGES: list[float] = (np.arange(NBINS + 1, dtype=np.int64) << SHIFT).view(np.float64).tolist()


@dataclass
class Hist(Plain):
    """``zero``: count of exact zeros. ``counts[i]``: values in ``[edges()[i], edges()[i+1])`` where
    ``first_bin`` is the global index of ``counts[0]``. Empty ``counts`` with ``zero == total``:
    all equal. JSON also carries ``edges`` (absolute-difference units) for readers that do not
    know the binning; it is recomputed, not trusted, on load."""
    zero: int = 0
    first_bin: int = 0
    counts: list[int] = field(default_factory=list)

    @property
    def total(self) -> int:
        return int(self.zero + sum(self.counts))

    def edges(self) -> list[float]:
        """Bin edges (len(counts)+1) of the non-zero bins; [] when there are none."""
        if not self.counts:
            return []
        return _EDGES[self.first_bin: self.first_bin + len(self.counts) + 1]

    @classmethod
    def of_counts(cls, counts: np.ndarray) -> "Hist":
        """From a full-length (NBINS) count array indexed by global bin (index 0: zeros)."""
        counts = np.asarray(counts)
        nz = np.flatnonzero(counts[1:])
        if not nz.size:
            return cls(int(counts[0]), 0, [])
        lo, hi = int(nz[0]) + 1, int(nz[-1]) + 2
        return cls(int(counts[0]), lo, counts[lo:hi].astype(np.int64).tolist())

    @classmethod
    def sum(cls, hists: Iterable["Hist"]) -> "Hist":
        """The histogram of the union of disjoint element sets (samples of a row, rows, runs): the
        counts added bin by bin, exactly (the bins are global). The one merge of histograms: a row's
        samples (``numerics.metrics.merge_sums``) and two records (``add``, ``Sums.merge``) both
        come here. With no non-zero count anywhere the first's ``first_bin`` is kept."""
        hists = list(hists)
        if not hists:
            return cls()
        zero = sum(h.zero for h in hists)
        full = [h for h in hists if h.counts]
        if not full:
            return cls(zero, hists[0].first_bin, [])
        if len(full) == 1:
            return cls(zero, full[0].first_bin, list(full[0].counts))
        lo = min(h.first_bin for h in full)
        acc = np.zeros(max(h.first_bin + len(h.counts) for h in full) - lo, dtype=np.int64)
        for h in full:
            acc[h.first_bin - lo: h.first_bin - lo + len(h.counts)] += h.counts
        return cls(zero, lo, acc.tolist())

    def add(self, other: "Hist") -> "Hist":
        return Hist.sum((self, other))

    def percentile(self, q: float) -> float | None:
        """q in [0, 100]; linear interpolation inside the bin that holds the rank (so within one
        bin, ~19 %, of the exact value)."""
        return self.percentiles((q,))[0]

    def percentiles(self, qs) -> list[float | None]:
        """``percentile`` of each q, from one cumulative count (records take four per sample:
        numpy calls on a few dozen bins cost more than this); the numbers are those of a float64
        cumsum + searchsorted (counts are exact integers)."""
        counts = self.counts
        cum = list(accumulate(counts, initial=self.zero))  # cum[i]: count before bin i
        n = cum[-1]
        if n == 0:
            return [None] * len(qs)
        out: list[float | None] = []
        for q in qs:
            rank = q / 100.0 * (n - 1)
            if rank < self.zero:
                out.append(0.0)
                continue
            # the first bin whose cumulative count passes the rank; none (q = 100): the last
            i = min(bisect_right(cum, rank, 1) - 1, len(counts) - 1)
            lo, hi = _EDGES[self.first_bin + i], _EDGES[self.first_bin + i + 1]
            frac = 0.0 if counts[i] <= 1 else (rank - float(cum[i])) / (counts[i] - 1)
            out.append(float(lo + (hi - lo) * min(max(frac, 0.0), 1.0)))
        return out

    def _json_extra(self) -> dict[str, Any]:
        return {"edges": self.edges()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Hist":
        return cls(int(d.get("zero", 0) or 0), int(d.get("first_bin", 0) or 0),
                   [int(c) for c in d.get("counts") or []])
