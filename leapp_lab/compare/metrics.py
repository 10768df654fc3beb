"""One fused float64 pass over a pair of arrays: the sums behind every metric, and the |diff|
histogram, per chunk.

What the metrics mean, and how sums become them, is the report model's
(``leapp_lab.model.metrics``: definitions, ``Sums``, ``Metrics``) and the histogram's binning is
``leapp_lab.model.hist``'s. This module only reads arrays: ``diff_sums`` is the kernel,
``diff_stats`` returns the finished ``Metrics`` record.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from leapp_lab.model.hist import NBINS as _NBINS
from leapp_lab.model.hist import SHIFT as _SHIFT
from leapp_lab.model.hist import Hist
from leapp_lab.model.metrics import MAPE_FLOOR, Metrics, Sums

CHUNK = 1 << 16                  # elements per fused step (float64 buffers stay in L2/L3)
_DOT = 1 << 13                   # dot products on rows this long: below OpenBLAS's ddot threading


def diff_stats(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int = CHUNK) -> Metrics:
    """The metric record of ``engine`` vs ``reference`` (same shape); see ``diff_sums``."""
    return Metrics().fill(diff_sums(engine, reference, rtol=rtol, chunk=chunk))


def diff_sums(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int = CHUNK) -> Sums:
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
    st = Sums(rtol=float(rtol))
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
    st.sum_abs, st.sum_sq, st.sum_ape, st.sum_er, st.sum_ee, st.sum_rr = acc
    st.max_excess = max_excess if rtol else max_abs
    st.max_abs = max_abs
    st.hist = Hist.of_counts(counts)
    return st


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
