"""What every deep check shares: finding the graph, comparing two arrays the way LEAPP does,
reporting progress, and turning an exception into a section that says why."""
from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from leapp_lab.model.messages import error_text, failed_reason  # noqa: F401  (every deep check's)
from leapp_lab.model.trace import GraphReport, TraceReport

Progress = Callable[..., None]     # progress(stage, done, total): the magics' and CLI's signature


class Unavailable(Exception):
    """The check cannot run for this graph; the message says why and what to do."""


def resolve(report: Any, graph: str | None = None) -> tuple[TraceReport, GraphReport]:
    """(report, graph) from a TraceReport or a run folder path; ``graph`` names one of several."""
    if isinstance(report, (str, os.PathLike)):
        from leapp_lab.model.base import load
        report = load(report)
    if getattr(report, "kind", None) != "trace":
        raise TypeError(f"expected a trace report (leapp_lab.trace / leapp-lab run / leapp_lab.load "
                        f"of a trace run), got {type(report).__name__}")
    graphs = report.graphs
    if graph is not None:
        found = [g for g in graphs if g.name == graph]
        if not found:
            raise KeyError(f"the report has no graph {graph!r}; graphs: {[g.name for g in graphs]}")
        return report, found[0]
    if len(graphs) != 1:
        raise ValueError(f"the report holds {len(graphs)} graphs ({[g.name for g in graphs]}); "
                         f"pass graph=NAME")
    return report, graphs[0]


def tolerances(graph: GraphReport, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """The caller's tolerances, else the ones the graph was validated with (LEAPP's defaults)."""
    opts = graph.options or {}
    r = rtol if rtol is not None else opts.get("rtol", 1e-3)
    a = atol if atol is not None else opts.get("atol", 1e-5)
    return float(1e-3 if r is None else r), float(1e-5 if a is None else a)


def f64(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def diff_numbers(value: np.ndarray | None, ref: np.ndarray | None) -> dict[str, Any]:
    """max |value − ref| and nrmse over the finite pairs, max |ref|, in float64.

    nrmse = sqrt(mean((value − ref)²)) / sqrt(mean(ref²)), None when ref is all zero (the same
    definition as leapp_lab.numerics.metrics)."""
    if value is None or ref is None:
        return {"max_abs": None, "nrmse": None, "ref_max": None}
    v, r = f64(value).reshape(-1), f64(ref).reshape(-1)
    if v.shape != r.shape:
        return {"max_abs": None, "nrmse": None, "ref_max": None}
    ok = np.isfinite(v) & np.isfinite(r)
    if not ok.any():
        return {"max_abs": None, "nrmse": None, "ref_max": None}
    d = v[ok] - r[ok]
    rr = float(np.mean(r[ok] ** 2))
    return {"max_abs": float(np.max(np.abs(d))),
            "nrmse": float(np.sqrt(np.mean(d ** 2)) / np.sqrt(rr)) if rr > 0 else None,
            "ref_max": float(np.max(np.abs(r[ok])))}


def leapp_passes(value: np.ndarray | None, ref: np.ndarray | None, rtol: float, atol: float) -> bool | None:
    """LEAPP's validation rule in float64: any NaN/Inf on either side fails, else
    ``|value − ref| <= atol + rtol·|ref|`` element-wise with equal shapes. None: a side is missing."""
    if value is None or ref is None:
        return None
    v, r = f64(value), f64(ref)
    if v.shape != r.shape:
        return False
    if not (np.isfinite(v).all() and np.isfinite(r).all()):
        return False
    return bool(np.allclose(v, r, rtol=rtol, atol=atol, equal_nan=False))


def report_progress(progress: Progress | None, stage: str, done: int, total: int) -> None:
    if progress is not None:
        try:
            progress(stage, done, total)
        except Exception:   # a display problem never costs the user the check
            pass
