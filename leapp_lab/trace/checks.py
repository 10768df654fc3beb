"""Per node / output port / sample numbers: recorded Python vs FX replay vs exported model.

All numbers in float64 from the stored arrays. Percentiles are exact (numpy, linear
interpolation, the same rule as LEAPP's ``torch.quantile`` in its mismatch log) over the finite
element pairs; the pre-binned histogram comes from ``leapp_lab.compare.metrics.diff_stats``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from leapp_lab.compare.metrics import diff_stats
from leapp_lab.model.trace import PERCENTILE_KEYS, SampleCheck

_QS = (50.0, 75.0, 90.0, 99.0, 99.5)


def abs_diff_stats(a: np.ndarray | None, ref: np.ndarray | None) -> dict[str, float | None]:
    """|a - ref| statistics under PERCENTILE_KEYS; empty when either side is missing."""
    if a is None or ref is None or np.shape(a) != np.shape(ref):
        return {}
    a64 = np.asarray(a, dtype=np.float64).reshape(-1)
    r64 = np.asarray(ref, dtype=np.float64).reshape(-1)
    ok = np.isfinite(a64) & np.isfinite(r64)
    d = np.abs(a64[ok] - r64[ok])
    if d.size == 0:
        return {k: None for k in PERCENTILE_KEYS}
    ps = np.percentile(d, _QS)
    out = {k: float(v) for k, v in zip(PERCENTILE_KEYS[:5], ps)}
    out["max"] = float(d.max())
    out["mean"] = float(d.mean())
    return out


def value_range(a: np.ndarray | None) -> list[float | None] | None:
    if a is None:
        return None
    f = np.asarray(a, dtype=np.float64).reshape(-1)
    f = f[np.isfinite(f)]
    if f.size == 0:
        return [None, None]
    return [float(f.min()), float(f.max())]


def nonfinite(a: np.ndarray | None) -> int:
    if a is None:
        return 0
    f = np.asarray(a, dtype=np.float64)
    return int(f.size - np.count_nonzero(np.isfinite(f)))


def to_numpy(t: Any) -> np.ndarray | None:
    """A tensor (or anything array-like) as a detached CPU numpy array; bfloat16 widened."""
    if t is None:
        return None
    import torch
    if isinstance(t, torch.Tensor):
        t = torch.Tensor.cpu(t.detach())
        if type(t) is not torch.Tensor and isinstance(getattr(t, "tensor", None), torch.Tensor):
            t = t.tensor  # a LEAPP TracedTensor: its plain payload
        try:
            return torch.Tensor.numpy(t).copy()
        except TypeError:  # bfloat16 / float8: numpy has no such dtype
            return torch.Tensor.numpy(t.float()).copy()
    a = np.asarray(t)
    return None if a.dtype == object else a


def sample_check(node: str, port: str, sample: int, *, recorded: np.ndarray | None,
                 exported: np.ndarray | None, fx: np.ndarray | None, passed: bool | None,
                 rtol: float, atol: float) -> SampleCheck:
    c = SampleCheck(node=node, port=port, sample=sample, passed=passed, rtol=float(rtol),
                    atol=float(atol))
    if recorded is not None:
        c.shape, c.dtype = list(recorded.shape), str(recorded.dtype)
        c.recorded_range = value_range(recorded)
        c.nonfinite_recorded = nonfinite(recorded)
    if exported is not None:
        c.exported_shape, c.exported_dtype = list(exported.shape), str(exported.dtype)
        c.exported_range = value_range(exported)
        c.nonfinite_exported = nonfinite(exported)
    if fx is not None:
        c.fx_range = value_range(fx)
    c.stats = abs_diff_stats(exported, recorded)
    c.fx_stats = abs_diff_stats(fx, recorded)
    if exported is not None and fx is not None and exported.shape == fx.shape:
        c.export_vs_fx_max = abs_diff_stats(exported, fx).get("max")
    if exported is not None and recorded is not None and exported.shape == recorded.shape:
        st = diff_stats(exported, recorded, rtol=rtol)
        c.min_atol = st.min_atol
        c.hist = st.hist.to_dict()
    return c
