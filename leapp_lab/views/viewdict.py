"""The view dict: the one plain, JSON-able structure the front-end draws (widget and HTML alike).

``build_view(report)`` dispatches on the report kind. The dict only *arranges* numbers that the
report model already holds (metrics, histograms, diagnoses); nothing here computes a metric.

Shape shared by every kind (the renderer in ``extensions/leapp_view.js`` reads exactly this)::

    {"kind", "schema": 1, "title", "subtitle", "status", "badges": [{label, value, status}],
     "notes": [str], "tabs": [{id, label}],
     "table": {"title", "columns": [{key, label, type}], "rows": [Row], "first_divergent": id|None,
               "filter_label", "rule"},
     "graphs": [{name, svg, layout}], "nodes": {name: NodePanel}, "log": {...}, "hazards": [...],
     "profile": {...} | None}

    Row = {"id", "status": pass|fail|uncompared, "tap_status": str|None, "first_divergent": bool,
           "node": str|None, "group": str|None, "cells": {key: value},
           "samples": [{"key", "label", "hist": LogHistogram dict|None, "metrics": [[label, value]],
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
    raise TypeError(f"no view for a report of kind {kind!r} ({type(report).__name__}); "
                    f"views exist for: trace, verify")


def hist_dict(h: Any) -> dict[str, Any] | None:
    """A LogHistogram (object or its dict) as the front-end wants it: zero bin + edges + counts."""
    if h is None:
        return None
    if not isinstance(h, dict):
        h = h.to_dict()
    counts = [int(c) for c in h.get("counts") or []]
    edges = h.get("edges")
    if counts and (not edges or len(edges) != len(counts) + 1):
        from leapp_lab.compare.metrics import LogHistogram   # edges are a property of the binning
        edges = [float(x) for x in LogHistogram.from_dict(h).edges()]
    return {"zero": int(h.get("zero", 0) or 0), "counts": counts, "edges": list(edges or [])}


def badge(label: str, value: Any, status: str | None = None) -> dict[str, Any]:
    return {"label": label, "value": value, "status": status}
