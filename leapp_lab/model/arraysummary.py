"""Summaries of stored arrays (shape, dtype, range) for views that show a sample's inputs.

Views never compute numbers; this is the model-side helper they call instead. Computed in float64
over finite values; non-finite values are counted, never silently dropped.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def array_summary(a: Any) -> dict[str, Any]:
    arr = np.asarray(a)
    out: dict[str, Any] = {"shape": list(arr.shape), "dtype": str(arr.dtype), "range": None, "nonfinite": 0}
    if arr.size == 0:
        return out
    if arr.dtype.kind in "biuf":
        x = arr.astype(np.float64, copy=False).ravel()
        finite = np.isfinite(x)
        n_bad = int(x.size - int(finite.sum()))
        out["nonfinite"] = n_bad
        if n_bad < x.size:
            xf = x[finite] if n_bad else x
            out["range"] = [float(xf.min()), float(xf.max())]
    return out
