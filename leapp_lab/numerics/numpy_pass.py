"""The kernel's arithmetic in numpy, for platforms without numba: the same operations in the same
order, so the same bits (``numerics.kernel``'s module doc defines the order).

``numpy_blocks`` scores one sample block by block; ``numpy_small_samples`` / ``numpy_2d`` score many
one-block samples side by side in long contiguous vectors (per-call overhead, not arithmetic, is
what small taps cost). Scratch arrays are reused per thread (``_scratch``).
"""
from __future__ import annotations

import math
import threading

import numpy as np

from leapp_lab.model.hist import NBINS as _NBINS
from leapp_lab.model.hist import SHIFT as _SHIFT
from leapp_lab.model.metrics import MAPE_FLOOR

from .sums import LANES, LIGHT_KEPT, NSUMS, fold, light_output


def step_major(pieces: list, ns: int, n: int, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """float64 copies of ``pieces`` ((count, n) arrays, ``ns`` samples in all), laid out for the
    lane sums: the whole rows of LANES as (step, sample, lane), the last n % LANES elements of each
    sample as (sample, element); in this thread's scratch buffers ``tag``."""
    q = n // LANES
    k = q * LANES
    A = _scratch(tag + "q", (q, ns, LANES))
    B = _scratch(tag + "t", (ns, n - k))
    at = 0
    for p in pieces:
        c = p.shape[0]
        if q:
            A[:, at:at + c] = p[:, :k].reshape(c, q, LANES).transpose(1, 0, 2)
        if k < n:
            B[at:at + c] = p[:, k:]
        at += c
    return A, B


def numpy_blocks(e_all: np.ndarray, r_all: np.ndarray, size: int, rtol: float, light: bool = False):
    """The kernel's arithmetic in numpy, block by block; returns what ``fused.run`` returns
    (``light``: the sums of ``LIGHT_SKIPPED``, max_excess and the histogram not computed).

    Per block, the six terms go into lanes (``_lane_sums`` of the block as one sample: each lane
    adds its terms one after the other, the kernel's lane order). Pairs with
    a non-finite side are set to zero before the sums (adding +0.0 changes no lane: a lane is never
    -0.0) and left out of the maxima and the histogram.
    """
    n = int(e_all.size)
    nb = -(-n // size)
    parts = np.zeros((nb, NSUMS))
    counts = np.zeros(_NBINS, dtype=np.int64)
    max_abs = max_excess = -math.inf
    nfe = nfr = nfp = 0
    cap = min(size, n) or 1
    be, br, bd, bt = (_scratch(k, (cap,)) for k in ("be", "br", "bd", "bt"))
    for b in range(nb):
        lo = b * size
        m = min(size, n - lo)
        e, r, d, t = be[:m], br[:m], bd[:m], bt[:m]
        e[...] = e_all[lo:lo + m]
        r[...] = r_all[lo:lo + m]
        np.subtract(e, r, out=d)
        np.abs(d, out=d)
        ok = None
        if not d.max() < math.inf:  # NaN or inf somewhere (NaN propagates into max)
            fe, fr = np.isfinite(e), np.isfinite(r)
            ok = fe & fr
            k = int(np.count_nonzero(ok))
            nfe += m - int(np.count_nonzero(fe))
            nfr += m - int(np.count_nonzero(fr))
            nfp += m - k
            bad = ~ok
            e[bad] = 0.0
            r[bad] = 0.0
            d[bad] = 0.0
        if light:
            parts[b, list(LIGHT_KEPT)] = fold(_lane_sums(_terms_light, *_one_sample((e, r, d)),
                                                           len(LIGHT_KEPT)))[:, 0]
        else:
            np.abs(r, out=t)
            parts[b] = fold(_lane_sums(_terms, *_one_sample((e, r, d, t)), NSUMS))[:, 0]
        if ok is not None:
            d, t = d[ok], t[ok]
            if not d.size:
                continue
        max_abs = max(max_abs, float(d.max()))
        if light:
            continue
        np.multiply(t, rtol, out=t)
        np.subtract(d, t, out=t)
        max_excess = max(max_excess, float(t.max()))
        counts += np.bincount(np.right_shift(d.view(np.int64), _SHIFT), minlength=_NBINS)
    return parts, (max_abs, max_excess), (nfe, nfr, nfp), counts, *_span(counts)


def _terms(e: np.ndarray, r: np.ndarray, d: np.ndarray, t: np.ndarray, x: np.ndarray) -> None:
    """The six summed terms of the pairs (``e``, ``r``; ``d`` = |e - r|, ``t`` = |r|, any shape)
    into ``x[0]`` .. ``x[5]``, in the kernel's operations."""
    x[0] = d
    np.multiply(d, d, out=x[1])
    np.fmax(t, MAPE_FLOOR, out=x[2])
    np.divide(d, x[2], out=x[2])
    np.multiply(e, r, out=x[3])
    np.multiply(e, e, out=x[4])
    np.multiply(r, r, out=x[5])


def _terms_light(e: np.ndarray, r: np.ndarray, d: np.ndarray, x: np.ndarray) -> None:
    """The terms a light pass keeps (``LIGHT_KEPT``, in that order) into ``x[0]`` .. ``x[3]``,
    in ``_terms``' operations."""
    np.multiply(d, d, out=x[0])
    np.multiply(e, r, out=x[1])
    np.multiply(e, e, out=x[2])
    np.multiply(r, r, out=x[3])


def _span(counts: np.ndarray) -> tuple[int, int]:
    """First non-empty bin >= 1 of a full-length count array and one past the last ((1, 1): none)."""
    nz = np.flatnonzero(counts[1:])
    return (int(nz[0]) + 1, int(nz[-1]) + 2) if nz.size else (1, 1)


def numpy_small_samples(e: np.ndarray, r: np.ndarray, ns: int, n: int, rtol: float,
                         light: bool = False) -> list | None:
    """``numpy_blocks`` of ``ns`` samples of one block each (ns * n at most a block), as (ns, n)
    arrays: the same operations in the same order per sample (so the same bits), a dozen numpy
    calls for the run instead of a dozen per sample. None when a value is non-finite (the
    per-sample path counts it)."""
    return numpy_2d(step_major([e[:ns * n].reshape(ns, n)], ns, n, "e"),
                     step_major([r[:ns * n].reshape(ns, n)], ns, n, "r"), rtol, light)


def numpy_2d(E: tuple, R: tuple, rtol: float, light: bool = False) -> list | None:
    """``numpy_small_samples`` of samples laid out by ``step_major`` (engine ``E``, reference
    ``R``): every array operation runs over all samples at once, in long contiguous vectors."""
    (Eq, Et), (Rq, Rt) = E, R
    ns = Et.shape[0]
    Dq, Dt = _scratch("dq", Eq.shape), _scratch("dt", Et.shape)
    for E_, R_, D_ in ((Eq, Rq, Dq), (Et, Rt, Dt)):
        np.subtract(E_, R_, out=D_)
        np.abs(D_, out=D_)
    if not (Dq.max(initial=0.0) < math.inf and Dt.max(initial=0.0) < math.inf):   # NaN propagates
        return None
    max_abs = _sample_max(Dq, Dt)
    if light:
        parts = np.zeros((NSUMS, ns))
        parts[list(LIGHT_KEPT)] = fold(_lane_sums(_terms_light, (Eq, Rq, Dq), (Et, Rt, Dt),
                                                       len(LIGHT_KEPT)))
        return [light_output(parts[:, s].reshape(1, NSUMS), float(max_abs[s]), (0, 0, 0)) for s in range(ns)]
    Tq, Tt = np.abs(Rq, out=_scratch("tq", Rq.shape)), np.abs(Rt, out=_scratch("tt", Rt.shape))
    parts = fold(_lane_sums(_terms, (Eq, Rq, Dq, Tq), (Et, Rt, Dt, Tt), NSUMS))     # (NSUMS, ns)
    for D, T in ((Dq, Tq), (Dt, Tt)):
        np.multiply(T, rtol, out=T)
        np.subtract(D, T, out=T)
    max_excess = _sample_max(Tq, Tt)
    # bins per sample, offset by sample over the group's range of bins only (not 8192 a sample)
    # the bins overwrite T (no longer needed): an int64 view of the same scratch
    bq = np.right_shift(Dq.view(np.int64), _SHIFT, out=Tq.view(np.int64))
    bt = np.right_shift(Dt.view(np.int64), _SHIFT, out=Tt.view(np.int64))
    b0 = int(min(bq.min(initial=_NBINS), bt.min(initial=_NBINS)))
    width = int(max(bq.max(initial=0), bt.max(initial=0))) - b0 + 1
    off = np.arange(ns, dtype=np.int64) * width - b0
    bq += off[None, :, None]
    bt += off[:, None]
    counts = (np.bincount(bq.reshape(-1), minlength=ns * width)
              + np.bincount(bt.reshape(-1), minlength=ns * width)).reshape(ns, width)
    out = []
    for s in range(ns):
        c = counts[s]
        nz = np.flatnonzero(c)
        zero = int(c[0]) if b0 == 0 else 0
        nz = nz[nz + b0 >= 1]
        lo, hi = (int(nz[0]) + b0, int(nz[-1]) + b0 + 1) if nz.size else (1, 1)
        out.append((parts[:, s].reshape(1, NSUMS), float(max_abs[s]), float(max_excess[s]), (0, 0, 0), zero,
                    lo, hi, np.array(c[lo - b0:hi - b0], dtype=np.int64)))
    return out


def _one_sample(arrays: tuple) -> tuple[tuple, tuple]:
    """1-D arrays as one sample laid out step-major (views, no copy): the (step, 1, lane) parts
    and the (1, element) tails."""
    m = arrays[0].shape[0]
    k = (m // LANES) * LANES
    return (tuple(a[:k].reshape(-1, 1, LANES) for a in arrays), tuple(a[k:].reshape(1, -1) for a in arrays))


def _sample_max(q: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per sample, the max of a (step, sample, lane) part and its (sample, element) tail (-inf
    for none), over the long axis first."""
    a = np.maximum.reduce(q, axis=0).max(axis=1) if q.shape[0] else np.full(t.shape[0], -math.inf)
    return np.maximum(a, t.max(axis=1)) if t.shape[1] else a


def _lane_sums(terms, q_args: tuple, t_args: tuple, nterms: int) -> np.ndarray:
    """(nterms, samples, LANES) lane sums of ``terms`` (``_terms``-like: inputs, then the output
    with one row per term) over samples laid out step-major (``q_args``: the (step, sample, lane)
    parts; ``t_args``: the (sample, element) tails, added last): element i of each sum into lane
    i % LANES, added in order.

    numpy adds a reduced axis that is not the contiguous one step after step, in order (never
    pairwise), so the slab is laid out for long vectors: with several samples, each term written
    whole and the reduction's inner loop over every sample's lanes; with one sample, (step, term,
    lane), so each add of the reduction covers every term's lanes (16-element adds were 5x slower).
    Both give the same bits."""
    q, ns = q_args[0].shape[:2]
    if q and ns > 1:
        slab = _scratch("slab", (nterms, q, ns, LANES))
        terms(*q_args, slab)
        acc = np.add.reduce(slab, axis=1)
    elif q:
        slab = _scratch("slab", (q, nterms, ns, LANES))
        terms(*q_args, np.moveaxis(slab, 0, 1))
        acc = np.add.reduce(slab, axis=0)
    else:
        acc = np.zeros((nterms, ns, LANES))
    t = t_args[0].shape[1]
    if t:
        tail = _scratch("tail", (nterms, ns, t))
        terms(*t_args, tail)
        acc[..., :t] += tail
    return acc


#: scratch arrays up to this many float64s (4 MiB) are kept per thread and reused
SCRATCH_MAX = 1 << 19
_tls = threading.local()


def _scratch(key: str, shape: tuple) -> np.ndarray:
    """A float64 array of ``shape`` (contents undefined), from this thread's reusable buffer
    ``key`` when small enough. A fresh array over 128 KiB is a new memory map that is page-faulted
    in on every call: on one-block samples that, not the arithmetic, dominated the numpy backend."""
    size = 1
    for d in shape:
        size *= int(d)
    if size > SCRATCH_MAX:
        return np.empty(shape)
    bufs = _tls.__dict__.setdefault("bufs", {})
    b = bufs.get(key)
    if b is None or b.size < size:
        b = bufs[key] = np.empty(max(size, 1 << 12))
    return b[:size].reshape(shape)
