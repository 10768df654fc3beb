"""One pass over a pair of arrays: the six float64 sums, two maxima, three non-finite counts and
the |diff| histogram counts every metric is made of, by either backend, with the same bits.

Backends: ``numba`` (``compare/fused.py``: compiled, one pass over each element, on every core)
and ``numpy`` (here: the same arithmetic block by block, for platforms without numba).
``LEAPP_LAB_METRICS`` = ``numba`` | ``numpy`` | ``auto`` (the default: numba when it imports; see
``resolve_backend``) picks one.

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
import threading
import warnings
from typing import Any, Iterator, NamedTuple

import numpy as np

from leapp_lab.model.hist import NBINS as _NBINS
from leapp_lab.model.hist import SHIFT as _SHIFT
from leapp_lab.model.metrics import MAPE_FLOOR

LANES = 16                       # sequential float64 accumulators per sum and block
NSUMS = 6                        # sum|d|, sum d^2, sum ape, sum e*r, sum e*e, sum r*r


class Pass(NamedTuple):
    """What one pass yields. ``sums``: (sum|d|, sum d^2, sum |d|/max(|r|, 1e-6), sum e*r, sum e*e,
    sum r*r) over finite pairs; ``max_abs`` / ``max_excess`` (max(|d| - rtol|r|)): -inf when no
    finite pair; ``nonfinite``: (engine, reference, pairs); ``zero``: exact-zero |d| count;
    ``counts``: counts of global bins ``lo`` .. ``hi`` - 1 (the first and last non-empty ones >= 1;
    empty when lo == hi)."""
    n: int
    sums: list
    max_abs: float
    max_excess: float
    nonfinite: tuple
    zero: int
    lo: int
    hi: int
    counts: np.ndarray


#: most blocks per work item: a sample larger than this is shared out in runs of blocks
PIECE = 8


def diff_pass(engine: Any, reference: Any, *, rtol: float = 0.0, chunk: int, backend: str | None = None,
              threads: int | None = None) -> Pass:
    """The pass over ``engine`` and ``reference`` (same shape; any real/int/bool dtype)."""
    e = np.asarray(engine)
    r = np.asarray(reference)
    if e.shape != r.shape:
        raise ValueError(f"shape mismatch: {e.shape} vs {r.shape}")
    rows = [(np.ascontiguousarray(e).reshape(1, -1), np.ascontiguousarray(r).reshape(1, -1))]
    for _, passes in diff_pass_rows(rows, rtol=rtol, chunk=chunk, backend=backend, threads=threads):
        return passes[0]
    raise AssertionError("unreachable")


def diff_pass_rows(rows: list, *, rtol: float = 0.0, chunk: int, backend: str | None = None,
                   threads: int | None = None, light: bool = False) -> Iterator[tuple[int, list[Pass]]]:
    """``diff_pass`` of every sample (index along the leading axis) of every (engine, reference)
    pair of ``rows``; yields ``(row index, [Pass per sample])`` as rows complete.

    The work is cut into items: a run of whole samples of at most ``PIECE`` blocks in all (small
    samples: one kernel call scores several), or, for a sample larger than that, a run of at most
    ``PIECE`` whole blocks of it; ``threads`` threads (default: numba's thread count; numpy: 1)
    take items one after the other as they come free; the kernel releases the GIL. Items start on
    block boundaries, so they change no bit: each sample's partials are put back in block order.

    ``light``: only what an nrmse, a cosine and a max |d| need (sums of d², e·r, e², r², max |d|,
    non-finite counts), for records that report nothing else (local error): sum |d| and the APE sum
    are NaN, ``max_excess`` -inf, the histogram empty. The sums it keeps have the full pass's bits
    (each sum is its own lanes); the numpy backend then skips the rest of the arithmetic.
    """
    size = max(1, int(chunk))
    rtol = float(rtol)
    rows = [(e if isinstance(e, list) else np.asarray(e), np.asarray(r)) for e, r in rows]
    use_numba = resolve_backend(backend, pairs=sum(r.size for _, r in rows)) == "numba"
    forced = backend == "numba" or (backend is None and _env() == "numba")
    nthreads = (threads if threads is not None else (_fused.threads() if use_numba else 1))
    prepared = [_prepare(e, r, use_numba, size) for e, r in rows]
    items: list = []    # (row, first sample, end sample, first block, end block), or a group
    groups: dict = {}   # numpy: elements per sample -> the group item being filled
    for j, (_, _, ns, n, _, _, contiguous) in enumerate(prepared):
        nb = -(-n // size)
        if not use_numba and contiguous and 0 < n <= size:
            # numpy: one-block samples of every row of this size are scored together, a dozen
            # numpy calls for many rows (per-call overhead, not arithmetic, is what small taps cost)
            cap = max(1, min(GROUP_SAMPLES, GROUP_ELEMENTS // n))
            s = 0
            while s < ns:
                g = groups.get(n)
                if g is None or g.count >= cap:
                    g = groups[n] = _Group(n)
                    items.append(g)
                take = min(ns - s, cap - g.count)
                g.members.append((j, s, s + take))
                g.count += take
                s += take
        elif isinstance(prepared[j][0], list):
            # per-sample arrays (not stacked): each sample's runs of blocks, read in place
            for s in range(ns):
                items.extend((j, s, s + 1, b, min(b + PIECE, nb)) for b in range(0, max(nb, 1), PIECE))
        elif contiguous and 0 < nb <= PIECE:
            per = max(1, PIECE // nb)
            items.extend((j, s, min(s + per, ns), 0, nb) for s in range(0, ns, per))
        else:
            step = PIECE if contiguous else max(nb, 1)  # a strided sample is copied once, as a whole
            for s in range(ns):
                items.extend((j, s, s + 1, b, min(b + step, nb)) for b in range(0, max(nb, 1), step))
    left = [0] * len(prepared)      # items not yet done, per row
    for it in items:
        for j in ({m[0] for m in it.members} if isinstance(it, _Group) else (it[0],)):
            left[j] += 1
    pieces: dict = {}   # row -> sample -> [(first block, compacted output)]

    def work(k: int):
        if isinstance(items[k], _Group):
            return _group(items[k], prepared, size, rtol, light)
        j, s0, s1, b0, b1 = items[k]
        e1, r1, _, n, he, hr, contiguous = prepared[j]
        if isinstance(e1, list):        # one sample, a run of its blocks
            lo, hi = b0 * size, min(b1 * size, n)
            e, r = e1[s0][lo:hi], r1[s0 * n + lo:s0 * n + hi]
        elif contiguous:
            lo, hi = s0 * n + b0 * size, (s1 - 1) * n + min(b1 * size, n)
            e, r = e1[lo:hi], r1[lo:hi]
        else:
            e, r = np.ascontiguousarray(e1[s0]).reshape(-1), np.ascontiguousarray(r1[s0]).reshape(-1)
        k_n = n if s1 - s0 > 1 else int(e.size)   # elements per sample of this item
        return _blocks(e, r, he, hr, s1 - s0, k_n, size, rtol, use_numba, forced, light)

    for j in (j for j, c in enumerate(left) if c == 0):  # rows without samples
        yield j, []
    for k, outs in _side_by_side(range(len(items)), work, nthreads):
        it = items[k]
        got = ([(j, s0, 0, outs[i]) for (j, s0, _), i in zip(it.members, it.offsets())]
               if isinstance(it, _Group) else [(it[0], it[1], it[3], outs)])
        for j, s0, b0, outs_j in got:
            mine = pieces.setdefault(j, {})
            for i, out in enumerate(outs_j):
                mine.setdefault(s0 + i, []).append((b0, out))
        for j in dict.fromkeys(g[0] for g in got):
            left[j] -= 1
            if left[j] == 0:
                mine = pieces.pop(j)
                yield j, _assemble(prepared[j][3], [[o for _, o in sorted(mine[s], key=lambda t: t[0])]
                                                    for s in range(prepared[j][2])])


#: numpy backend: most samples, and most elements, one call scores side by side (bounds memory:
#: about a dozen float64 arrays of this many elements, all within SCRATCH_MAX, so reused)
GROUP_SAMPLES = 64
GROUP_ELEMENTS = 1 << 16


class _Group:
    """A numpy work item: runs of one-block samples of ``n`` elements from several rows,
    ``members`` (row, first sample, end sample), ``count`` samples in all."""

    def __init__(self, n: int):
        self.n = n
        self.members: list = []
        self.count = 0

    def offsets(self) -> list[slice]:
        out, at = [], 0
        for _, s0, s1 in self.members:
            out.append(slice(at, at + s1 - s0))
            at += s1 - s0
        return out


def _group(g: _Group, prepared: list, size: int, rtol: float, light: bool) -> list:
    """A group's samples side by side (``_numpy_2d``: the bits of one call per sample), else, with
    a non-finite value among them, each sample on its own (``_numpy_blocks`` counts them)."""
    n = g.n
    es, rs = [], []
    for j, s0, s1 in g.members:
        e1, r1 = prepared[j][0], prepared[j][1]
        es.extend(_samples(e1, s0, s1, n))
        rs.extend(_samples(r1, s0, s1, n))
    with np.errstate(all="ignore"):  # non-finite pairs are counted, not warned about
        got = _numpy_2d(_step_major(es, g.count, n, "e"), _step_major(rs, g.count, n, "r"), rtol, light)
        if got is None:
            got = []
            for e, r in zip((x for p in es for x in p), (x for p in rs for x in p)):   # sample by sample
                got.append(_output(_numpy_blocks(e, r, size, rtol, light), light))
    return got


def _samples(a, s0: int, s1: int, n: int) -> list[np.ndarray]:
    """Samples s0..s1 of a prepared side as (count, n) arrays: one view of a flat array, or one
    (1, n) view per sample of a list (``diff_pass_rows`` takes those without stacking them)."""
    if isinstance(a, list):
        return [x.reshape(1, n) for x in a[s0:s1]]
    return [a[s0 * n:s1 * n].reshape(-1, n)]


def _step_major(pieces: list, ns: int, n: int, tag: str) -> tuple[np.ndarray, np.ndarray]:
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


def _prepare(e: Any, r: Any, use_numba: bool, size: int):
    """(engine, reference) as the kernel reads them: flat when C-contiguous (else kept, copied per
    sample), float16 as its bits; with the sample count, elements per sample, float16 flags.
    ``e`` may be a list of per-sample arrays (local values, as the engine returned them): kept as
    a list of flat arrays, never stacked (copying ~100 MB of local values cost more than scoring
    them); the numpy backend copies one-block samples once, into its groups."""
    r = np.asarray(r)
    if isinstance(e, list):
        if len(e) != (r.shape[0] if r.ndim else -1) or any(np.shape(x) != r.shape[1:] for x in e):
            raise ValueError(f"shape mismatch: {len(e)} samples of {[np.shape(x) for x in e[:3]]} vs {r.shape}")
        n = int(np.prod(r.shape[1:], dtype=np.int64))
        if r.flags.c_contiguous:
            flat = [np.ascontiguousarray(x).reshape(-1) for x in e]
            he = use_numba and bool(flat) and all(x.dtype == np.float16 for x in flat)
            if use_numba and not he:    # one flag per row: float16 among others is widened (exactly)
                flat = [x.astype(np.float32) if x.dtype == np.float16 else x for x in flat]
            hr = use_numba and r.dtype == np.float16
            return ([x.view(np.uint16) for x in flat] if he else flat), (r.view(np.uint16) if hr else r).reshape(-1), \
                len(e), n, bool(he), bool(hr), True
        e = np.stack(e) if e else np.empty(r.shape, dtype=r.dtype)
    e = np.asarray(e)
    if e.shape != r.shape or e.ndim < 1:
        raise ValueError(f"shape mismatch: {e.shape} vs {r.shape} (or no leading sample axis)")
    ns = e.shape[0]
    n = int(np.prod(e.shape[1:], dtype=np.int64))
    he = use_numba and e.dtype == np.float16
    hr = use_numba and r.dtype == np.float16
    e = e.view(np.uint16) if he else e
    r = r.view(np.uint16) if hr else r
    contiguous = e.flags.c_contiguous and r.flags.c_contiguous
    if contiguous:
        e, r = e.reshape(-1), r.reshape(-1)
    return e, r, ns, n, bool(he), bool(hr), contiguous


def _blocks(e, r, he, hr, ns, n, size, rtol, use_numba, forced, light=False) -> list:
    """One item: ``ns`` consecutive samples of ``n`` elements in 1-D ``e``, ``r``; the kernel's
    compacted output per sample (numba where it takes the dtypes)."""
    global _fused, _fused_error
    f = _fused
    if use_numba and f and _numba_dtype(e.dtype) and _numba_dtype(r.dtype) and e.size:
        try:
            parts, wmax, nf, hist, lohi = f.serial(e, r, he, hr, ns, n, size, rtol, bool(light))
            # Python numbers from lists made once per item (this runs for every sample of every row)
            mx, nfs, spans = wmax.tolist(), [tuple(x) for x in nf.tolist()], lohi.tolist()
            return [_output((parts[s], mx[s], nfs[s], hist[s], *spans[s]), light) for s in range(ns)]
        except f.NumbaError as exc:
            if forced:
                raise
            # numba imports but cannot compile here: numpy from now on (same bits), said once
            if _fused:
                _fused, _fused_error = False, f"{type(exc).__name__}: {exc}"
                warnings.warn(f"leapp_lab metrics: numba failed ({str(exc).splitlines()[0]}); "
                              f"using numpy", RuntimeWarning, stacklevel=2)
    if he:
        e = e.view(np.float16)
    if hr:
        r = r.view(np.float16)
    out = []
    # one-block samples go side by side, at most one block's worth of elements at a time (memory
    # stays that of one block, as on the per-sample path)
    per = max(1, size // n) if 0 < n <= size else 1
    with np.errstate(all="ignore"):  # non-finite pairs are counted, not warned about
        for s0 in range(0, ns, per):
            k = min(per, ns - s0)
            got = (_numpy_small_samples(e[s0 * n:(s0 + k) * n], r[s0 * n:(s0 + k) * n], k, n, rtol, light)
                   if k > 1 else None)
            if got is not None:
                out.extend(got)
                continue
            for s in range(s0, s0 + k):
                out.append(_output(_numpy_blocks(e[s * n:(s + 1) * n], r[s * n:(s + 1) * n], size, rtol, light),
                                   light))
    return out


_NO_COUNTS = np.zeros(0, dtype=np.int64)
_NO_COUNTS.flags.writeable = False

#: the sums a light pass leaves out (sum |d|, sum APE): NaN, never a wrong number; and the ones it keeps
_LIGHT_SKIPPED = (0, 2)
_LIGHT_KEPT = (1, 3, 4, 5)


def _output(got: tuple, light: bool) -> tuple:
    """A sample's compacted output from what a pass over it gave (``(parts, (max_abs, max_excess),
    non-finite counts, full-length bin counts, lo, hi)``, Python numbers): ``_light`` or ``_compact``."""
    parts, (max_abs, max_excess), nfs, hist, lo, hi = got
    return _light(parts, max_abs, nfs) if light else _compact(parts, max_abs, max_excess, nfs, hist, lo, hi)


def _light(parts, max_abs: float, nfs: tuple) -> tuple:
    """A light pass's compacted output: the skipped sums NaN (set in ``parts``, which is the
    caller's own), no max_excess, no histogram."""
    parts[..., list(_LIGHT_SKIPPED)] = math.nan
    return (parts, max_abs, -math.inf, nfs, 0, 1, 1, _NO_COUNTS)


def _compact(parts, max_abs: float, max_excess: float, nfs: tuple, hist, lo: int, hi: int) -> tuple:
    """A sample's output with the histogram cut to its non-empty bins ``lo`` .. ``hi`` - 1 (an
    item holds on to it until its row is complete: 64 KiB each in full)."""
    if lo >= hi:
        return (parts, max_abs, max_excess, nfs, int(hist[0]), 1, 1, _NO_COUNTS)
    return (parts, max_abs, max_excess, nfs, int(hist[0]), lo, hi, np.array(hist[lo:hi], dtype=np.int64))


def _assemble(n: int, by_sample: list) -> list[Pass]:
    """Per sample, its items' (compacted) outputs, in block order, put back together."""
    passes = []
    for pieces in by_sample:
        if len(pieces) == 1:
            parts, max_abs, max_excess, nfs, zero, lo, hi, counts = pieces[0]
        else:
            parts = np.concatenate([p[0] for p in pieces])
            max_abs = max(p[1] for p in pieces)
            max_excess = max(p[2] for p in pieces)
            nfs = tuple(sum(p[3][i] for p in pieces) for i in range(3))
            zero = sum(p[4] for p in pieces)
            spans = [p for p in pieces if p[5] < p[6]]  # items with a non-zero bin
            lo, hi = (min(p[5] for p in spans), max(p[6] for p in spans)) if spans else (1, 1)
            counts = np.zeros(hi - lo, dtype=np.int64)
            for p in spans:
                counts[p[5] - lo: p[6] - lo] += p[7]
        passes.append(Pass(n, _combine(parts), max_abs, max_excess, nfs, zero, lo, hi, counts))
    return passes


def _side_by_side(items, fn, nthreads: int):
    """Yield (item, fn(item)) as they complete, from ``nthreads`` threads pulling items off one
    shared iterator; in order on this thread when 1 (or one item)."""
    items = list(items)
    if nthreads <= 1 or len(items) <= 1:
        for k in items:
            yield k, fn(k)
        return
    import queue
    import threading
    todo = iter(items)  # next() on a list iterator is atomic under the GIL
    done: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    def run() -> None:
        for k in todo:
            if stop.is_set():
                return
            try:
                done.put((k, fn(k), None))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                done.put((k, None, exc))

    workers = [threading.Thread(target=run, daemon=True, name="leapp-lab-metrics")
               for _ in range(min(nthreads, len(items)))]
    for w in workers:
        w.start()
    try:
        for _ in range(len(items)):
            k, out, exc = done.get()
            if exc is not None:
                raise exc
            yield k, out
    finally:
        stop.set()
        for w in workers:
            w.join()


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


#: ``auto`` does not import numba for a call of fewer element pairs than this (loading numba and its
#: cached kernel takes longer than numpy takes over so few); once numba is loaded, every call uses it
AUTO_MIN_PAIRS = 1 << 24


def resolve_backend(backend: str | None = None, pairs: int | None = None) -> str:
    """The metrics backend a call with ``backend`` uses: the argument, else ``$LEAPP_LAB_METRICS``
    (``numba`` | ``numpy`` | ``auto``), else ``auto``: numba when it imports, numpy otherwise (and
    numpy for a call of ``pairs`` < AUTO_MIN_PAIRS while numba is not loaded yet)."""
    want = (backend or _env() or "auto").lower()
    if want == "numpy":
        return "numpy"
    if want not in ("numba", "auto"):
        src = "backend" if backend else BACKEND_ENV
        raise ValueError(f"{src}={want!r}: the metrics backend is one of numba, numpy, auto")
    if want == "auto" and _fused is None and pairs is not None and pairs < AUTO_MIN_PAIRS:
        return "numpy"
    if _load_fused():
        return "numba"
    if want == "numba":
        src = "backend='numba'" if backend else f"{BACKEND_ENV}=numba"
        raise RuntimeError(f"{src}, but numba cannot be used here ({_fused_error}); install numba "
                           f"(pip install numba) or set {BACKEND_ENV}=numpy")
    return "numpy"


def backend_threads(backend: str | None = None) -> int:
    """Threads ``diff_pass_rows`` uses by default (numba: ``NUMBA_NUM_THREADS``; numpy: 1)."""
    return _fused.threads() if resolve_backend(backend) == "numba" else 1


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


def _numpy_blocks(e_all: np.ndarray, r_all: np.ndarray, size: int, rtol: float, light: bool = False):
    """The kernel's arithmetic in numpy, block by block; returns what ``fused.run`` returns
    (``light``: the sums of ``_LIGHT_SKIPPED``, max_excess and the histogram not computed).

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
            parts[b, list(_LIGHT_KEPT)] = _fold(_lane_sums(_terms_light, *_one_sample((e, r, d)),
                                                           len(_LIGHT_KEPT)))[:, 0]
        else:
            np.abs(r, out=t)
            parts[b] = _fold(_lane_sums(_terms, *_one_sample((e, r, d, t)), NSUMS))[:, 0]
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
    """The terms a light pass keeps (``_LIGHT_KEPT``, in that order) into ``x[0]`` .. ``x[3]``,
    in ``_terms``' operations."""
    np.multiply(d, d, out=x[0])
    np.multiply(e, r, out=x[1])
    np.multiply(e, e, out=x[2])
    np.multiply(r, r, out=x[3])


def _span(counts: np.ndarray) -> tuple[int, int]:
    """First non-empty bin >= 1 of a full-length count array and one past the last ((1, 1): none)."""
    nz = np.flatnonzero(counts[1:])
    return (int(nz[0]) + 1, int(nz[-1]) + 2) if nz.size else (1, 1)


def _numpy_small_samples(e: np.ndarray, r: np.ndarray, ns: int, n: int, rtol: float,
                         light: bool = False) -> list | None:
    """``_numpy_blocks`` of ``ns`` samples of one block each (ns * n at most a block), as (ns, n)
    arrays: the same operations in the same order per sample (so the same bits), a dozen numpy
    calls for the run instead of a dozen per sample. None when a value is non-finite (the
    per-sample path counts it)."""
    return _numpy_2d(_step_major([e[:ns * n].reshape(ns, n)], ns, n, "e"),
                     _step_major([r[:ns * n].reshape(ns, n)], ns, n, "r"), rtol, light)


def _numpy_2d(E: tuple, R: tuple, rtol: float, light: bool = False) -> list | None:
    """``_numpy_small_samples`` of samples laid out by ``_step_major`` (engine ``E``, reference
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
        parts[list(_LIGHT_KEPT)] = _fold(_lane_sums(_terms_light, (Eq, Rq, Dq), (Et, Rt, Dt),
                                                       len(_LIGHT_KEPT)))
        return [_light(parts[:, s].reshape(1, NSUMS), float(max_abs[s]), (0, 0, 0)) for s in range(ns)]
    Tq, Tt = np.abs(Rq, out=_scratch("tq", Rq.shape)), np.abs(Rt, out=_scratch("tt", Rt.shape))
    parts = _fold(_lane_sums(_terms, (Eq, Rq, Dq, Tq), (Et, Rt, Dt, Tt), NSUMS))     # (NSUMS, ns)
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


def _fold(acc: np.ndarray) -> np.ndarray:
    """The lanes of a block into one value per sum, by the kernel's fixed tree."""
    h = LANES // 2
    while h:
        acc = acc[..., :h] + acc[..., h:2 * h]
        h //= 2
    return acc[..., 0]
