"""Per node / output port / sample numbers: recorded Python vs FX replay vs exported model.

All numbers in float64 from the stored arrays, from the same fused pass as verify's
(``leapp_lab.numerics.metrics.diff_stats``: max, mean, min_atol, non-finite counts, the pre-binned
histogram). Only the percentiles differ: exact here (numpy, linear interpolation, the same rule as
LEAPP's ``torch.quantile`` in its mismatch log, over the finite element pairs), because a trace's
arrays are small and its numbers sit next to LEAPP's own log.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from leapp_lab.numerics.metrics import diff_stats
from leapp_lab.model.metrics import Metrics
from leapp_lab.model.semantics import PortSemantics, breakdown
from leapp_lab.model.trace import PERCENTILE_KEYS, SampleCheck

_QS = (50.0, 75.0, 90.0, 99.0, 99.5)


def abs_diff_stats(a: np.ndarray | None, ref: np.ndarray | None, m: Metrics | None = None
                   ) -> dict[str, float | None]:
    """|a - ref| statistics under PERCENTILE_KEYS; empty when either side is missing. ``m``: the
    pair's metric record when the caller already has it."""
    if a is None or ref is None or np.shape(a) != np.shape(ref):
        return {}
    m = m if m is not None else diff_stats(a, ref)
    if m.max_abs is None:
        return {k: None for k in PERCENTILE_KEYS}
    a64 = np.asarray(a, dtype=np.float64).reshape(-1)
    r64 = np.asarray(ref, dtype=np.float64).reshape(-1)
    ok = np.isfinite(a64) & np.isfinite(r64)
    ps = np.percentile(np.abs(a64[ok] - r64[ok]), _QS)
    out = {k: float(v) for k, v in zip(PERCENTILE_KEYS[:5], ps)}
    out["max"] = m.max_abs
    out["mean"] = m.mean_abs
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
                 rtol: float, atol: float, semantics: PortSemantics | None = None) -> SampleCheck:
    """The check of one node / output port / sample. ``semantics``: the port's, which names the
    per-element breakdown (else by index when the port is small: model/semantics.py)."""
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
    m = None
    if exported is not None and recorded is not None and exported.shape == recorded.shape:
        m = diff_stats(exported, recorded, rtol=rtol)
        c.min_atol = m.min_atol
        c.hist = m.hist
    c.stats = abs_diff_stats(exported, recorded, m)
    c.fx_stats = abs_diff_stats(fx, recorded)
    if exported is not None and fx is not None and exported.shape == fx.shape:
        c.export_vs_fx_max = diff_stats(exported, fx).max_abs
    c.elements, c.worst_element = breakdown(semantics, exported, recorded)
    return c


# LEAPP's own comparison, in float64 (the hazards and the isolation runs judge with it)

def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def allclose(a, ref, rtol: float, atol: float) -> bool:
    """torch.allclose(a, ref) semantics in float64, NaN equal to NaN, shapes must be equal."""
    if a is None or ref is None:
        raise ValueError("allclose needs two arrays")
    a, ref = _f64(a), _f64(ref)
    if a.shape != ref.shape:
        return False
    return bool(np.allclose(a, ref, rtol=rtol, atol=atol, equal_nan=True))


def min_atol(a, ref, rtol: float) -> float | None:
    """Smallest atol with which LEAPP's check of ``a`` against ``ref`` passes at this rtol.

    None when no atol can pass: shapes differ, or a NaN/Inf on either side (LEAPP fails any
    non-finite value before it compares).
    """
    a, ref = _f64(a), _f64(ref)
    if a.shape != ref.shape or not (np.isfinite(a).all() and np.isfinite(ref).all()):
        return None
    if a.size == 0:
        return 0.0
    return float(max(0.0, np.max(np.abs(a - ref) - rtol * np.abs(ref))))
