"""The numba kernel of ``numerics.kernel.diff_pass``: every sum, maximum, non-finite count and histogram
count of a run of blocks of a pair of arrays, in one pass.

``serial`` is compiled ``nogil``: ``kernel.py`` runs it on several Python threads at once, each
pulling the next run of blocks when it is free. (numba's own ``parallel=True`` pool was measured
here: on a 2-core machine shared with other work, its statically split, spinning OpenMP threads made
scoring many times slower than one thread; threads that take work as they come do not stall so.)

The summation order is part of the definition of the metrics (``kernel.py`` module doc), not of
this kernel: element ``i`` of block ``b`` adds into lane ``(i - b*block) % LANES``; each lane adds
its elements one after the other in float64; the lanes of a block are folded by the fixed tree
``lane[j] += lane[j + h]`` for h = LANES/2, ..., 1; the block partials are added by ``math.fsum``
(exactly rounded, so their order does not matter). Threads take whole blocks, so neither the
thread count nor the schedule changes a bit, and ``numpy_pass.numpy_blocks`` (no numba) computes the
same bits. Compiled without fastmath: no reassociation and no FMA contraction.

Compiled code is cached (``cache=True``) beside this file in ``__pycache__``, or, where that folder
cannot be written (a read-only install), in numba's user-wide cache (``NUMBA_CACHE_DIR`` when set,
else ``~/.cache``) or, failing that, a per-user folder under the temp dir. The first call after an
install compiles (several seconds per dtype pair); later processes load the cache.
"""
from __future__ import annotations

import math
import os
import tempfile

import numba
import numpy as np
from numba import njit
from numba.core.errors import NumbaError  # noqa: F401 - kernel.py catches it (f.NumbaError)

from leapp_lab.model.hist import NBINS, SHIFT
from leapp_lab.model.metrics import MAPE_FLOOR as FLOOR

from .sums import LANES, NSUMS

# float16 -> float64 without numba float16 support: value = (implicit bit | mantissa) * 2^(e - 25)
# (exact); exponent 31 maps to inf (a NaN becomes inf: both are just "non-finite" here).
_P2 = np.array([2.0 ** -24] + [2.0 ** (e - 25) for e in range(1, 31)] + [math.inf])


def _ensure_cache_dir() -> None:
    """numba raises at decoration when no cache folder is writable; give it a per-user temp one."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    if numba.config.CACHE_DIR or _writable(here):
        return
    user = os.path.join(os.path.expanduser("~"), ".cache")
    if _writable(user):
        return
    d = os.path.join(tempfile.gettempdir(), f"leapp_lab-numba-{os.getuid() if hasattr(os, 'getuid') else 0}")
    numba.config.CACHE_DIR = d


def _writable(d: str) -> bool:
    try:
        os.makedirs(d, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=d):
            pass
        return True
    except OSError:
        return False


_ensure_cache_dir()
# nogil: kernel.py runs it on several threads; no fastmath: no reassociation, no FMA contraction
_OPTS = dict(cache=True, nogil=True, error_model="numpy", fastmath=False)


@njit(inline="always")
def ld(a, i, half):
    """Element i of ``a`` as float64."""
    if half:  # a holds float16 bit patterns (uint16)
        h = np.int64(a[i])
        ex = (h >> 10) & 31
        mant = (h & 1023) | (np.int64(ex != 0) << 10)
        v = np.float64(mant) * _P2[ex]
        return -v if (h >> 15) else v
    return np.float64(a[i])


#: elements whose bins are counted at a time: their |d| stay in L1 between the write and the count
#: (counting once per 64 Ki-element block read them back from L2: about 10 % of the pass)
SUB = 2048
_SUB_MASK = SUB - 1


@njit(**_OPTS)
def pair(acc, j, ev, rv, rtol):
    """Pair (ev, rv) into lane j of ``acc``; returns |d|. For the block's tail and its pair-by-pair
    pass. The lane loop (``lanes``) writes the same terms out itself: called or inlined there, a
    helper kept LLVM from vectorizing it (2.2x slower, measured)."""
    ad = abs(ev - rv)
    t = abs(rv)
    acc[0, j] += ad
    acc[1, j] += ad * ad
    acc[2, j] += ad / max(t, FLOOR)
    acc[3, j] += ev * rv
    acc[4, j] += ev * ev
    acc[5, j] += rv * rv
    acc[6, j] = max(ad, acc[6, j])
    acc[7, j] = max(ad - rtol * t, acc[7, j])
    return ad


@njit(inline="always")
def lanes(e, r, he, hr, k, rtol, acc, buf, bits, hist, light):
    """The lane loop over elements 0 .. k-1 (k a multiple of LANES); bins counted every SUB
    elements unless ``light``. Returns (all finite so far, elements counted). Inlined with
    constant ``he``, ``hr``, ``light`` where it is called: the branches on them fold away (with
    them in the loop, the pass was 13 % slower)."""
    counted = 0
    ok = True
    for base in range(0, k, LANES):
        o = base & _SUB_MASK
        for j in range(LANES):
            ev = ld(e, base + j, he)
            rv = ld(r, base + j, hr)
            ad = abs(ev - rv)
            t = abs(rv)
            if not light:   # a light pass counts no bin: storing |d| was 30 % of its time
                buf[o + j] = ad
            acc[0, j] += ad
            acc[1, j] += ad * ad
            acc[2, j] += ad / max(t, FLOOR)
            acc[3, j] += ev * rv
            acc[4, j] += ev * ev
            acc[5, j] += rv * rv
            acc[6, j] = max(ad, acc[6, j])
            acc[7, j] = max(ad - rtol * t, acc[7, j])
        if not light and o + LANES == SUB:
            for j in range(LANES):
                if not (acc[0, j] < np.inf):
                    ok = False
            if not ok:
                break
            for i in range(SUB):
                hist[bits[i] >> SHIFT] += 1
            counted = base + LANES
    return ok, counted


@njit(**_OPTS)
def block(e0, r0, he, hr, lo, hi, rtol, part, wmax, nf, hist, buf, light):
    """Sums of elements lo..hi into ``part`` (NSUMS), maxima into ``wmax``, non-finite counts
    into ``nf``, bin counts into ``hist`` (not when ``light``: a light pass reports none); ``buf``
    is scratch (|d| of SUB elements)."""
    # indices from 0 on slices: numba then knows they are not negative (no wraparound select)
    e = e0[lo:hi]
    r = r0[lo:hi]
    m = hi - lo
    k = (m // LANES) * LANES
    # rows 0-5: the lane sums; 6: max |d|; 7: max(|d| - rtol |r|). Allocated here, so LLVM
    # knows it aliases nothing and vectorizes the lane loop.
    acc = np.zeros((NSUMS + 2, LANES))
    acc[NSUMS:] = -np.inf
    bits = buf.view(np.int64)
    # every pair assumed finite: no branch per element; a non-finite |d| shows up as a
    # non-finite sum|d| lane, checked before each count, and the block is then done again, pair by
    # pair. One loop, the count an if at every SUB-th step: as a nested loop LLVM did not
    # vectorize the lanes (2x slower).
    if he or hr:
        ok, counted = lanes(e, r, he, hr, k, rtol, acc, buf, bits, hist, light)
    elif light:
        ok, counted = lanes(e, r, False, False, k, rtol, acc, buf, bits, hist, True)
    else:
        ok, counted = lanes(e, r, False, False, k, rtol, acc, buf, bits, hist, False)
    if ok:
        o = k & _SUB_MASK
        for j in range(m - k):      # the last m - k pairs
            buf[o + j] = pair(acc, j, ld(e, k + j, he), ld(r, k + j, hr), rtol)
        for j in range(LANES):
            if not (acc[0, j] < np.inf):
                ok = False
        if ok and not light:
            for i in range(o + m - k):
                hist[bits[i] >> SHIFT] += 1
    if not ok:
        # again, pair by pair: non-finite pairs counted and left out; bins of the elements from
        # ``counted`` on (the ones before are counted, and were finite)
        acc[:NSUMS] = 0.0
        acc[NSUMS:] = -np.inf
        for c0 in range(0, m, SUB):
            c1 = min(c0 + SUB, m)
            for idx in range(c0, c1):
                j = idx % LANES
                ev = ld(e, idx, he)
                rv = ld(r, idx, hr)
                fe = math.isfinite(ev)
                fr = math.isfinite(rv)
                if not (fe and fr):
                    if not fe:
                        nf[0] += 1
                    if not fr:
                        nf[1] += 1
                    nf[2] += 1
                    buf[idx - c0] = -1.0  # negative: no histogram count
                    continue
                ad = pair(acc, j, ev, rv, rtol)
                buf[idx - c0] = ad if idx >= counted else -1.0
            if not light:
                for i in range(c1 - c0):
                    if bits[i] >= 0:
                        hist[bits[i] >> SHIFT] += 1
    h = LANES // 2
    while h > 0:
        for s in range(NSUMS):
            for j in range(h):
                acc[s, j] = acc[s, j] + acc[s, j + h]
        h //= 2
    for s in range(NSUMS):
        part[s] = acc[s, 0]
    for j in range(LANES):
        wmax[0] = max(wmax[0], acc[6, j])
        wmax[1] = max(wmax[1], acc[7, j])


@njit(**_OPTS)
def finish(hist):
    """First non-empty bin >= 1 and one past the last (lo == hi: none)."""
    lo = 1
    while lo < NBINS and hist[lo] == 0:
        lo += 1
    hi = NBINS
    while hi > lo and hist[hi - 1] == 0:
        hi -= 1
    return lo, hi

@njit(**_OPTS)
def serial(e, r, he, hr, ns, n, size, rtol, light):
    """Per sample, for ``ns`` consecutive samples of ``n`` elements each in 1-D ``e``, ``r``, cut
    into blocks of ``size``: (parts[ns, nblocks, NSUMS], [max|d|, max(|d| - rtol|r|)] [ns, 2],
    [non-finite e, r, pairs] [ns, 3], hist[ns, NBINS], [first non-zero bin >= 1, one past the
    last] [ns, 2]). Several small samples in one call: a call costs more than a 64 Ki-element
    block of arithmetic, so Python calls once per run of samples, not once per sample. ``light``:
    no histogram (``kernel.diff_pass_rows``)."""
    nb = (n + size - 1) // size
    parts = np.zeros((ns, nb, NSUMS))
    wmax = np.full((ns, 2), -np.inf)
    nf = np.zeros((ns, 3), np.int64)
    hist = np.zeros((ns, NBINS), np.int64)
    lohi = np.empty((ns, 2), np.int64)
    buf = np.empty(SUB)
    for s in range(ns):
        base = s * n
        for b in range(nb):
            lo = b * size
            block(e, r, he, hr, base + lo, base + min(lo + size, n), rtol, parts[s, b], wmax[s], nf[s],
                  hist[s], buf, light)
        lo, hi = finish(hist[s])
        lohi[s, 0] = lo
        lohi[s, 1] = hi
    return parts, wmax, nf, hist, lohi


def threads() -> int:
    """Worker threads for the kernel: ``NUMBA_NUM_THREADS`` (default: the core count)."""
    return max(1, int(numba.config.NUMBA_NUM_THREADS))
