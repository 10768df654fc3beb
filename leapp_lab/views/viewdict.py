"""The view dict: the one plain, JSON-able structure the front-end draws (widget and HTML alike).

``build_view(report)`` is the registry's ``view`` target (``leapp_lab.views.registry``: one
renderer per report kind). The dict only *arranges* numbers that the
report model already holds (metrics, histograms, diagnoses); nothing here computes a metric.

Shape shared by every kind (the renderer in ``extensions/leapp_view.js`` reads exactly this;
schema 2 is the compact one: labels once per table, histograms without edges, inputs once)::

    {"kind", "schema": 2, "title", "subtitle", "status",
     "finding": {"text", "status": fail|warn|pass, "links": [{text, row}]},   # views/finding.py
     "badges": [{label, value, status, row?, title?}],   # row: a click selects that row
     "notes": [str], "tabs": [{id, label}],
     "table": {"title", "columns": [{key, label, type, description, pinned?, hidden?}],
               "panel_columns": [{key, label, type, description}],   # a sample's "m" values
               "info_columns": [{key, label, type}],                 # a row's "info" values
               "rows": [Row], "first_divergent": id|None, "filter_label", "jump_label"?, "rule",
               "status_labels", "hist_title", "nonfinite_label", "reasons": {key: words},
               "search_keys": [cell keys the search box looks in],
               "open"?: the row the view opens on (default first_divergent; verify --local /
               --expected: the row the finding names),
               "jump_status"?: the verdict n / p jump to (default fail), "row_noun"?: what a row is
               ("segment"; default row)},
     "inputs": {sample key: [{name, shape, dtype, range, index, file}]},
     "graphs": [{name, svg, layout}], "nodes": {name: NodePanel}, "log": {...}, "hazards": [...],
     "profile": {...} | None, "bars": {...} (repair only: see repair_view)}

    Row = {"id", "status": pass|fail|uncompared, "tap_status": str|None, "first_divergent": bool,
           "node": str|None, "group": str|None, "sub": str|None (what the name is: op · scope),
           "reason": str|None, "why"?: str (the verdict in the view's own words, before the reasons),
           "cells": {key: value}, "info": [value per info column],
           "samples": [{"key", "label", "hist": Hist|None|False (False: no histogram, the panel shows the metrics only), "m": [value per panel column],
                        "inputs"?: [...], "note": str|None,
                        "elements"?: {names, max_abs, nrmse, worst, label} (per-element breakdown)}],
           "default_sample": key}
    Hist = {"zero", "first_bin", "counts", "nonfinite"}   # edges: bin b starts at the float64
                                                           # whose bits are b << 50 (model.hist)
"""
from __future__ import annotations

from typing import Any

from .registry import render

VIEW_SCHEMA = 2


def build_view(report: Any) -> dict[str, Any]:
    """The view dict of ``report``: the ``view`` renderer registered for its kind (views.registry)."""
    return render(report, "view")


def hist_dict(h: Any, nonfinite: int = 0) -> dict[str, Any] | None:
    """A ``leapp_lab.model.hist.Hist`` as the front-end wants it: zero bin, first global bin and
    counts (the front-end derives the edges from the bin numbers, as ``Hist.edges`` does), and the
    elements left out of the bins because a side is non-finite."""
    if h is None and not nonfinite:
        return None
    if h is None:
        return {"zero": 0, "first_bin": 0, "counts": [], "nonfinite": int(nonfinite)}
    return {"zero": int(h.zero), "first_bin": int(h.first_bin), "counts": [int(c) for c in h.counts],
            "nonfinite": int(nonfinite)}


def badge(label: str, value: Any, status: str | None = None, row: str | None = None,
          title: str | None = None, tab: str | None = None) -> dict[str, Any]:
    """A header badge; ``row``: a click selects that row; ``tab``: a click opens that tab."""
    return {"label": label, "value": value, "status": status, "row": row, "title": title,
            **({"tab": tab} if tab else {})}


def column(key: str, label: str, type_: str, description: str = "", **flags: Any) -> dict[str, Any]:
    """A column of the view's table (``pinned``: stays left while scrolling sideways; ``hidden``:
    off until the user shows it)."""
    return {"key": key, "label": label, "type": type_, "description": description,
            **{k: v for k, v in flags.items() if v}}


def elements_dict(elements: list[Any], worst: str | None, label: str | None) -> dict[str, Any] | None:
    """A row's per-element breakdown for the panel's bar chart (``samples[].elements``)."""
    if not elements:
        return None
    return {"names": [e.name for e in elements], "max_abs": [e.max_abs for e in elements],
            "nrmse": [e.nrmse for e in elements], "worst": worst, "label": label}
