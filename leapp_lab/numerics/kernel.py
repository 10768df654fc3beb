"""One pass over a pair of arrays: the six float64 sums, two maxima, three non-finite counts and
the |diff| histogram counts every metric is made of, by either backend, with the same bits.

Backends: ``numba`` (``numerics/fused.py``: compiled, one pass over each element, on every core)
and ``numpy`` (``numerics/numpy_pass.py``: the same arithmetic block by block, for platforms without
numba); ``numerics/backend.py`` picks one. This module cuts the work into items, runs them on
threads and puts each sample's partials back together (``numerics/sums.py``).

The summation order is defined independently of the backend and the thread count: the arrays are
cut into blocks of ``chunk`` elements; element i of a block adds into lane ``i % LANES`` of that
block; each lane adds its terms one after the other in float64 (never fused multiply-adds); the
lanes of a block fold by the fixed tree lane[j] += lane[j + h], h = LANES/2 ... 1; the block
partials add up by ``math.fsum`` (exactly rounded: their order cannot matter). Maxima, counts and
the histogram are order-free. So threads take whole blocks and change no bit.
"""
from __future__ import annotations

import warnings
from typing import Any, Iterator

import numpy as np

from .backend import env_choice, fused, numba_dtype, numba_failed, resolve_backend
from .numpy_pass import numpy_2d, numpy_blocks, numpy_small_samples, step_major
from .sums import Pass, combine, sample_output


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
    forced = backend == "numba" or (backend is None and env_choice() == "numba")
    nthreads = (threads if threads is not None else (fused().threads() if use_numba else 1))
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
    """A group's samples side by side (``numpy_2d``: the bits of one call per sample), else, with
    a non-finite value among them, each sample on its own (``numpy_blocks`` counts them)."""
    n = g.n
    es, rs = [], []
    for j, s0, s1 in g.members:
        e1, r1 = prepared[j][0], prepared[j][1]
        es.extend(_samples(e1, s0, s1, n))
        rs.extend(_samples(r1, s0, s1, n))
    with np.errstate(all="ignore"):  # non-finite pairs are counted, not warned about
        got = numpy_2d(step_major(es, g.count, n, "e"), step_major(rs, g.count, n, "r"), rtol, light)
        if got is None:
            got = []
            for e, r in zip((x for p in es for x in p), (x for p in rs for x in p)):   # sample by sample
                got.append(sample_output(numpy_blocks(e, r, size, rtol, light), light))
    return got


def _samples(a, s0: int, s1: int, n: int) -> list[np.ndarray]:
    """Samples s0..s1 of a prepared side as (count, n) arrays: one view of a flat array, or one
    (1, n) view per sample of a list (``diff_pass_rows`` takes those without stacking them)."""
    if isinstance(a, list):
        return [x.reshape(1, n) for x in a[s0:s1]]
    return [a[s0 * n:s1 * n].reshape(-1, n)]


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
    f = fused()
    if use_numba and f and numba_dtype(e.dtype) and numba_dtype(r.dtype) and e.size:
        try:
            parts, wmax, nf, hist, lohi = f.serial(e, r, he, hr, ns, n, size, rtol, bool(light))
            # Python numbers from lists made once per item (this runs for every sample of every row)
            mx, nfs, spans = wmax.tolist(), [tuple(x) for x in nf.tolist()], lohi.tolist()
            return [sample_output((parts[s], mx[s], nfs[s], hist[s], *spans[s]), light) for s in range(ns)]
        except f.NumbaError as exc:
            if forced:
                raise
            # numba imports but cannot compile here: numpy from now on (same bits), said once
            if numba_failed(exc):
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
            got = (numpy_small_samples(e[s0 * n:(s0 + k) * n], r[s0 * n:(s0 + k) * n], k, n, rtol, light)
                   if k > 1 else None)
            if got is not None:
                out.extend(got)
                continue
            for s in range(s0, s0 + k):
                out.append(sample_output(numpy_blocks(e[s * n:(s + 1) * n], r[s * n:(s + 1) * n], size, rtol, light),
                                   light))
    return out


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
        passes.append(Pass(n, combine(parts), max_abs, max_excess, nfs, zero, lo, hi, counts))
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
