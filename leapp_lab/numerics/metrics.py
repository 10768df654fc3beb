"""One fused float64 pass over a pair of arrays: the sums behind every metric, and the |diff|
histogram.

What the metrics mean, and how sums become them, is the report model's
(``leapp_lab.model.metrics``: definitions, ``Sums``, ``Metrics``) and the histogram's binning is
``leapp_lab.model.hist``'s. This module only reads arrays: ``diff_sums`` is the pass,
``diff_stats`` returns the finished ``Metrics`` record. The pass itself (every sum in a fixed
order, by the numba kernel or by numpy, with the same bits) is ``numerics.kernel``'s.
"""
from __future__ import annotations

from typing import Any


from leapp_lab.model.hist import NBINS as _NBINS  # noqa: F401 - where the pass's binning is defined
from leapp_lab.model.hist import SHIFT as _SHIFT  # noqa: F401
from leapp_lab.model.hist import Hist
from leapp_lab.model.metrics import MAPE_FLOOR, Metrics, Sums  # noqa: F401

CHUNK = 1 << 16                  # elements per block (the unit of summation order and of threads)


def diff_stats(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int = CHUNK,
               backend: str | None = None, threads: int | None = None) -> Metrics:
    """The metric record of ``engine`` vs ``reference`` (same shape); see ``diff_sums``."""
    return Metrics().fill(diff_sums(engine, reference, rtol=rtol, chunk=chunk, backend=backend,
                                    threads=threads))


def diff_sums(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int = CHUNK,
              backend: str | None = None, threads: int | None = None) -> Sums:
    """One fused pass over ``engine`` and ``reference`` (same shape): every sum, maximum,
    non-finite count and histogram count at once (``numerics.kernel.diff_pass``).

    ``backend``: ``"numba"`` (the compiled kernel), ``"numpy"`` (the same arithmetic in numpy), or
    None: ``$LEAPP_LAB_METRICS``, else numba when it imports. Both give the same bits. ``chunk``:
    elements per block (part of the summation order). ``threads``: threads for a large array
    (default: numba's thread count; numpy: 1); never changes a bit.
    """
    from .kernel import diff_pass
    return _sums(diff_pass(engine, reference, rtol=rtol, chunk=chunk, backend=backend, threads=threads),
                 float(rtol))


def diff_sums_rows(rows: list, *, rtol: float = 0.0, chunk: int = CHUNK, backend: str | None = None,
                   threads: int | None = None, light: bool = False):
    """``diff_sums`` of every sample (index along the leading axis) of every (engine, reference)
    pair of ``rows``, all scored side by side on ``threads`` threads; yields ``(row index,
    [Sums per sample])`` as rows complete (``numerics.kernel.diff_pass_rows``). The same numbers
    as one ``diff_sums`` per sample. ``light``: only the sums an nrmse, a cosine and a max |d|
    need, the others NaN and no histogram (``diff_pass_rows``)."""
    from .kernel import diff_pass_rows
    rtol = float(rtol)
    for j, passes in diff_pass_rows(rows, rtol=rtol, chunk=chunk, backend=backend, threads=threads,
                                    light=light):
        yield j, [_sums(p, rtol) for p in passes]


def merge_sums(sums: list[Sums]) -> Sums:
    """``sums[0].merge(sums[1]).merge(sums[2])...`` (the same numbers: floats added left to
    right), with one histogram sum instead of one per merge."""
    if len(sums) == 1:
        return sums[0]
    out = Sums(rtol=sums[0].rtol)
    for name in ("n", "nonfinite_engine", "nonfinite_reference", "nonfinite_pairs"):
        setattr(out, name, sum(getattr(s, name) for s in sums))
    for name in ("sum_abs", "sum_sq", "sum_ape", "sum_er", "sum_ee", "sum_rr"):
        acc = getattr(sums[0], name)
        for s in sums[1:]:
            acc = acc + getattr(s, name)
        setattr(out, name, acc)
    out.max_abs = max(s.max_abs for s in sums)
    out.max_excess = max(s.max_excess for s in sums)
    out.hist = Hist.sum(s.hist for s in sums)
    return out


def _sums(p, rtol: float) -> Sums:
    st = Sums(rtol=rtol)
    st.n = p.n
    st.nonfinite_engine, st.nonfinite_reference, st.nonfinite_pairs = p.nonfinite
    st.sum_abs, st.sum_sq, st.sum_ape, st.sum_er, st.sum_ee, st.sum_rr = p.sums
    st.max_abs, st.max_excess = p.max_abs, p.max_excess
    st.hist = Hist(p.zero, p.lo, p.counts.tolist()) if p.hi > p.lo else Hist(p.zero, 0, [])
    return st
