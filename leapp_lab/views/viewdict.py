"""The view dict: the one plain, JSON-able structure the front-end draws (widget and HTML alike).

``build_view(report)`` dispatches on the report kind. The dict only *arranges* numbers that the
report model already holds (metrics, histograms, diagnoses); nothing here computes a metric.

Shape shared by every kind (the renderer in ``extensions/leapp_view.js`` reads exactly this)::

    {"kind", "schema": 1, "title", "subtitle", "status", "badges": [{label, value, status}],
     "notes": [str], "tabs": [{id, label}],
     "table": {"title", "columns": [{key, label, type}], "rows": [Row], "first_divergent": id|None,
               "filter_label", "rule"},
     "graphs": [{name, svg, layout}], "nodes": {name: NodePanel}, "log": {...}, "hazards": [...],
     "profile": {...} | None, "bars": {...} (repair only: see repair_view)}

    Row = {"id", "status": pass|fail|uncompared, "tap_status": str|None, "first_divergent": bool,
           "node": str|None, "group": str|None, "cells": {key: value},
           "samples": [{"key", "label", "hist": {zero, counts, edges}|None|False (False: no histogram, the
                        panel shows the metrics only), "metrics": [[label, value, fmt]],
                        "inputs": [{name, shape, dtype, range, index}], "note": str|None}],
           "default_sample": key}
"""
from __future__ import annotations

from typing import Any

VIEW_SCHEMA = 1


def build_view(report: Any) -> dict[str, Any]:
    kind = getattr(report, "kind", None)
    if kind == "trace":
        from .trace_view import trace_view
        return trace_view(report)
    if kind == "verify":
        from .verify_view import verify_view
        return verify_view(report)
    if kind == "repair":
        from .repair_view import repair_view
        return repair_view(report)
    raise TypeError(f"no view for a report of kind {kind!r} ({type(report).__name__}); "
                    f"views exist for: trace, verify, repair")


def hist_dict(h: Any) -> dict[str, Any] | None:
    """A ``leapp_lab.model.hist.Hist`` as the front-end wants it: zero bin + edges + counts."""
    if h is None:
        return None
    return {"zero": int(h.zero), "counts": [int(c) for c in h.counts], "edges": h.edges()}


def badge(label: str, value: Any, status: str | None = None) -> dict[str, Any]:
    return {"label": label, "value": value, "status": status}
