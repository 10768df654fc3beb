"""The largest |value| of an array (a reference's range, for the fp16 headroom of a row)."""
from __future__ import annotations

import numpy as np


def abs_max(a) -> float | None:
    """max |a| over every finite or infinite element, NaN left out, in float64; None for an empty
    or non-float array. Two reductions, no |a| copy (a reference may be a memory map of GiBs)."""
    a = np.asarray(a)
    if a.dtype.kind != "f" or a.size == 0:
        return None
    with np.errstate(invalid="ignore"):
        hi, lo = np.nanmax(a), np.nanmin(a)
    if np.isnan(hi):
        return None
    return float(max(abs(float(hi)), abs(float(lo))))
