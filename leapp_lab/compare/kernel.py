"""One pass over a pair of arrays: the six float64 sums, two maxima, three non-finite counts and
the |diff| histogram counts every metric is made of, by either backend, with the same bits.

Backends: ``numba`` (``compare/fused.py``: compiled, one pass, all cores) and ``numpy`` (here:
the same arithmetic block by block, for platforms without numba). ``LEAPP_LAB_METRICS`` =
``numba`` | ``numpy`` | ``auto`` (the default: numba when it imports) picks one.

The summation order is defined independently of the backend and the thread count: the arrays are
cut into blocks of ``chunk`` elements; element i of a block adds into lane ``i % LANES`` of that
block; each lane adds its terms one after the other in float64 (never fused multiply-adds); the
lanes of a block fold by the fixed tree lane[j] += lane[j + h], h = LANES/2 ... 1; the block
partials add up by ``math.fsum`` (exactly rounded: their order cannot matter). Maxima, counts and
the histogram are order-free. So threads take whole blocks and change no bit.
"""
from __future__ import annotations

import math
import os
import warnings
from typing import Any, NamedTuple

import numpy as np

from .metrics import _NBINS, _SHIFT, MAPE_FLOOR

LANES = 16                       # sequential float64 accumulators per sum and block
NSUMS = 6                        # sum|d|, sum d^2, sum ape, sum e*r, sum e*e, sum r*r


class Pass(NamedTuple):
    """What one pass yields. ``sums``: (sum|d|, sum d^2, sum |d|/max(|r|, 1e-6), sum e*r, sum e*e,
    sum r*r) over finite pairs; ``max_abs`` / ``max_excess`` (max(|d| - rtol|r|)): -inf when no
    finite pair; ``nonfinite``: (engine, reference, pairs); ``counts``: per global bin (NBINS),
    ``lo``..``hi``: the non-empty non-zero bins."""
    n: int
    sums: list
    max_abs: float
    max_excess: float
    nonfinite: tuple
    counts: np.ndarray
    lo: int
    hi: int


def diff_pass(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int, backend: str | None = None,
              threads: int | None = None) -> Pass:
    """The pass over ``engine`` and ``reference`` (same shape; any real/int/bool dtype)."""
    e_all = np.asarray(engine).reshape(-1)
    r_all = np.asarray(reference).reshape(-1)
    if e_all.shape != r_all.shape:
        raise ValueError(f"shape mismatch: {np.shape(engine)} vs {np.shape(reference)}")
    size = max(1, int(chunk))
    rtol = float(rtol)
    out = None
    if resolve_backend(backend) == "numba":
        out = _numba_blocks(e_all, r_all, size, rtol, threads,
                            forced=backend == "numba" or _env() == "numba")
    if out is None:
        with np.errstate(all="ignore"):  # non-finite pairs are counted, not warned about
            out = _numpy_blocks(e_all, r_all, size, rtol)
    parts, (max_abs, max_excess), (nfe, nfr, nfp), counts, lo, hi = out
    return Pass(int(e_all.size), _combine(parts), float(max_abs), float(max_excess),
                (int(nfe), int(nfr), int(nfp)), counts, int(lo), int(hi))


def diff_pass_samples(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int,
                      backend: str | None = None) -> list[Pass]:
    """``diff_pass`` of every sample (index along the leading axis) of two same-shape arrays, in
    one call where numba can (samples side by side on the cores); the same bits as sample by sample."""
    e2 = np.asarray(engine)
    r2 = np.asarray(reference)
    if e2.shape != r2.shape or e2.ndim < 1:
        raise ValueError(f"shape mismatch: {e2.shape} vs {r2.shape} (or no sample axis)")
    ns = e2.shape[0]
    size = max(1, int(chunk))
    rtol = float(rtol)
    n = int(e2.size // ns) if ns else 0
    if (ns > 1 and n > 0 and resolve_backend(backend) == "numba" and _fused
            and _numba_dtype(e2.dtype) and _numba_dtype(r2.dtype)
            and e2.flags.c_contiguous and r2.flags.c_contiguous and _fused.by_sample(ns, n, size)):
        he, hr = e2.dtype == np.float16, r2.dtype == np.float16
        e1 = (e2.view(np.uint16) if he else e2).reshape(-1)
        r1 = (r2.view(np.uint16) if hr else r2).reshape(-1)
        try:
            parts, mx, nf, hist, lohi = _fused.samples(e1, r1, bool(he), bool(hr), ns, size, rtol)
        except _fused.NumbaError:
            pass  # diff_pass below decides: raise when forced, else warn and use numpy
        else:
            sums = _combine_many(parts)
            mx, nf, lohi = mx.tolist(), nf.tolist(), lohi.tolist()
            return [Pass(n, sums[s], mx[s][0], mx[s][1], tuple(nf[s]), hist[s], lohi[s][0], lohi[s][1])
                    for s in range(ns)]
    return [diff_pass(e2[s], r2[s], rtol=rtol, chunk=size, backend=backend) for s in range(ns)]


BACKEND_ENV = "LEAPP_LAB_METRICS"
BACKENDS = ("numba", "numpy")
_fused: Any = None        # the compare.fused module once imported; False when numba is unusable
_fused_error: str = ""


def _env() -> str:
    return os.environ.get(BACKEND_ENV, "").strip().lower()


def _load_fused():
    global _fused, _fused_error
    if _fused is None:
        try:
            from . import fused as _f
            _fused = _f
        except Exception as exc:  # noqa: BLE001 - absent, or present but unusable (e.g. a numpy it does not support)
            _fused, _fused_error = False, f"{type(exc).__name__}: {exc}"
    return _fused


def resolve_backend(backend: str | None = None) -> str:
    """The metrics backend a call with ``backend`` uses: the argument, else ``$LEAPP_LAB_METRICS``
    (``numba`` | ``numpy`` | ``auto``), else ``auto``: numba when it imports, numpy otherwise."""
    want = (backend or _env() or "auto").lower()
    if want == "numpy":
        return "numpy"
    if want not in ("numba", "auto"):
        src = "backend" if backend else BACKEND_ENV
        raise ValueError(f"{src}={want!r}: the metrics backend is one of numba, numpy, auto")
    if _load_fused():
        return "numba"
    if want == "numba":
        src = "backend='numba'" if backend else f"{BACKEND_ENV}=numba"
        raise RuntimeError(f"{src}, but numba cannot be used here ({_fused_error}); install numba "
                           f"(pip install numba) or set {BACKEND_ENV}=numpy")
    return "numpy"


def backend_threads(backend: str | None = None) -> int:
    """Threads the backend scores one large pair with (numba: its thread pool; numpy: 1)."""
    return _fused.threads() if resolve_backend(backend) == "numba" else 1


def _numba_blocks(e: np.ndarray, r: np.ndarray, size: int, rtol: float, threads: int | None,
                  forced: bool):
    """The compiled kernel, or None for arrays it does not take (those go through numpy: same bits)."""
    global _fused, _fused_error
    f = _fused
    he, hr = e.dtype == np.float16, r.dtype == np.float16
    if not (_numba_dtype(e.dtype) and _numba_dtype(r.dtype)):
        return None
    e = np.ascontiguousarray(e.view(np.uint16) if he else e)
    r = np.ascontiguousarray(r.view(np.uint16) if hr else r)
    try:
        return f.run(e, r, bool(he), bool(hr), size, rtol, threads)
    except f.NumbaError as exc:
        if forced:
            raise
        # numba imports but cannot compile here: numpy from now on (same bits), said once
        _fused, _fused_error = False, f"{type(exc).__name__}: {exc}"
        warnings.warn(f"leapp_lab metrics: numba failed ({str(exc).splitlines()[0]}); using numpy",
                      RuntimeWarning, stacklevel=3)
        return None


def _numba_dtype(dt: np.dtype) -> bool:
    # native-endian bool/int/uint/float up to 8 bytes (float16 is read as its bits)
    return dt.kind in "biuf" and dt.itemsize <= 8 and dt.isnative


def _combine(parts: np.ndarray) -> list[float]:
    """The six sums from the block partials: exactly rounded (math.fsum), so the same whatever
    the order; ``+ 0.0`` makes a zero sum +0.0 whatever the signs of its zero terms."""
    out = []
    for col in parts.T.tolist():
        try:
            out.append(math.fsum(col) + 0.0)
        except (OverflowError, ValueError):  # an exact sum beyond float64, or inf + -inf
            out.append(float(np.sum(col)))
    return out if out else [0.0] * NSUMS


def _combine_many(parts: np.ndarray) -> list[list[float]]:
    """``_combine`` of each sample's (nblocks, NSUMS) partials; one block: the partial itself (what
    fsum returns for one term), + 0.0."""
    if parts.shape[1] == 1:
        return (parts[:, 0, :] + 0.0).tolist()
    return [_combine(p) for p in parts]


def _numpy_blocks(e_all: np.ndarray, r_all: np.ndarray, size: int, rtol: float):
    """The kernel's arithmetic in numpy, block by block; returns what ``fused.run`` returns.

    Per block, each of the six terms goes into one row of ``X``; ``np.add.reduce`` over the
    (rows of LANES) axis adds each lane row after row, which is the kernel's lane order. Pairs with
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
    be, br, bd, bt = (np.empty(cap) for _ in range(4))
    X = np.empty((NSUMS, cap))
    floor = np.full(cap, MAPE_FLOOR)
    for b in range(nb):
        lo = b * size
        m = min(size, n - lo)
        e, r, d, t, x = be[:m], br[:m], bd[:m], bt[:m], X[:, :m]
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
        np.abs(r, out=t)
        x[0] = d
        np.multiply(d, d, out=x[1])
        np.fmax(t, floor[:m], out=x[2])
        np.divide(d, x[2], out=x[2])
        np.multiply(e, r, out=x[3])
        np.multiply(e, e, out=x[4])
        np.multiply(r, r, out=x[5])
        parts[b] = _fold(_lanes(x, m))
        if ok is not None:
            d, t = d[ok], t[ok]
            if not d.size:
                continue
        max_abs = max(max_abs, float(d.max()))
        np.multiply(t, rtol, out=t)
        np.subtract(d, t, out=t)
        max_excess = max(max_excess, float(t.max()))
        counts += np.bincount(np.right_shift(d.view(np.int64), _SHIFT), minlength=_NBINS)
    nz = np.flatnonzero(counts[1:])
    lo_bin, hi_bin = (int(nz[0]) + 1, int(nz[-1]) + 2) if nz.size else (1, 1)
    return parts, (max_abs, max_excess), (nfe, nfr, nfp), counts, lo_bin, hi_bin


def _lanes(x: np.ndarray, m: int) -> np.ndarray:
    """(NSUMS, LANES) lane sums of the (NSUMS, m) terms: element i into lane i % LANES, in order."""
    k = (m // LANES) * LANES
    if k:
        acc = np.add.reduce(x[:, :k].reshape(NSUMS, k // LANES, LANES), axis=1)
    else:
        acc = np.zeros((NSUMS, LANES))
    if k < m:
        acc[:, :m - k] += x[:, k:m]
    return acc


def _fold(acc: np.ndarray) -> np.ndarray:
    """The lanes of a block into one value per sum, by the kernel's fixed tree."""
    h = LANES // 2
    while h:
        acc = acc[:, :h] + acc[:, h:2 * h]
        h //= 2
    return acc[:, 0]
