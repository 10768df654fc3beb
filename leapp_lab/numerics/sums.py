"""What one pass of the metric kernel yields, and how its partial sums become the six sums.

The summation order is part of the definition of the metrics (``numerics.kernel``'s module doc):
element i of a block adds into lane ``i % LANES``; the lanes of a block fold by a fixed tree
(``fold``); the block partials add up exactly rounded (``combine``). Both backends (``fused``:
numba; ``numpy_pass``: numpy) and the work split (``kernel``) share these definitions, and the
compacted per-sample output (``sample_output``) that an item hands back until its row is complete.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

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


NO_COUNTS = np.zeros(0, dtype=np.int64)
NO_COUNTS.flags.writeable = False

#: the sums a light pass leaves out (sum |d|, sum APE): NaN, never a wrong number; and the ones it keeps
LIGHT_SKIPPED = (0, 2)
LIGHT_KEPT = (1, 3, 4, 5)


def sample_output(got: tuple, light: bool) -> tuple:
    """A sample's compacted output from what a pass over it gave (``(parts, (max_abs, max_excess),
    non-finite counts, full-length bin counts, lo, hi)``, Python numbers): ``light_output`` or ``compact_output``."""
    parts, (max_abs, max_excess), nfs, hist, lo, hi = got
    return light_output(parts, max_abs, nfs) if light else compact_output(parts, max_abs, max_excess, nfs, hist, lo, hi)


def light_output(parts, max_abs: float, nfs: tuple) -> tuple:
    """A light pass's compacted output: the skipped sums NaN (set in ``parts``, which is the
    caller's own), no max_excess, no histogram."""
    parts[..., list(LIGHT_SKIPPED)] = math.nan
    return (parts, max_abs, -math.inf, nfs, 0, 1, 1, NO_COUNTS)


def compact_output(parts, max_abs: float, max_excess: float, nfs: tuple, hist, lo: int, hi: int) -> tuple:
    """A sample's output with the histogram cut to its non-empty bins ``lo`` .. ``hi`` - 1 (an
    item holds on to it until its row is complete: 64 KiB each in full)."""
    if lo >= hi:
        return (parts, max_abs, max_excess, nfs, int(hist[0]), 1, 1, NO_COUNTS)
    return (parts, max_abs, max_excess, nfs, int(hist[0]), lo, hi, np.array(hist[lo:hi], dtype=np.int64))


def combine(parts: np.ndarray) -> list[float]:
    """The six sums from the block partials: exactly rounded (math.fsum), so the same whatever
    the order; ``+ 0.0`` makes a zero sum +0.0 whatever the signs of its zero terms."""
    out = []
    for col in parts.T.tolist():
        try:
            out.append(math.fsum(col) + 0.0)
        except (OverflowError, ValueError):  # an exact sum beyond float64, or inf + -inf
            out.append(float(np.sum(col)))
    return out if out else [0.0] * NSUMS


def fold(acc: np.ndarray) -> np.ndarray:
    """The lanes of a block into one value per sum, by the kernel's fixed tree."""
    h = LANES // 2
    while h:
        acc = acc[..., :h] + acc[..., h:2 * h]
        h //= 2
    return acc[..., 0]
