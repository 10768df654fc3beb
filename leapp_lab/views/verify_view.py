"""View dict of a VerifyReport: the accuracy table (one row per output and tap, in model order),
per-sample histograms, and the error-growth profile over taps."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from leapp_lab.model.columns import panel_columns, profile_columns, table_columns

from .engine_graph_view import engine_graph_view
from .viewdict import VIEW_SCHEMA, badge, hist_dict


def row_status(r: Any) -> str:
    """pass | fail | uncompared under the report's divergence rule (docs/verify.md).

    Rows the rule does not judge (no reference, not in the engine, shape or dtype mismatch, or a row
    that compares onnxruntime with itself) are ``uncompared``; ``data-leapp-tap-status`` carries
    the exact status.
    """
    if not r.in_rule:
        return "uncompared"
    return "fail" if r.diverged else "pass"


def _tap_status(r: Any) -> str:
    return "self-compare" if r.status == "compared" and r.self_compare else r.status


def _metrics(m: Any) -> list[list[Any]]:
    """The panel columns of a row or a sample: [label, value, fmt]."""
    return [[c.label, getattr(m, c.key), c.fmt] for c in panel_columns()]


def _column(c: Any) -> dict[str, Any]:
    return {"key": c.key, "label": c.label, "type": c.fmt, "description": c.description}


def _inputs(report: Any, sample: int) -> list[dict[str, Any]]:
    return [{"name": i.name, "shape": i.shape, "dtype": i.dtype, "range": i.range, "index": i.sample,
             "file": i.file} for i in report.sample_inputs(sample)]


def verify_view(report: Any) -> dict[str, Any]:
    cols = table_columns()
    rows = []
    for r in report.table():
        status = row_status(r)
        samples = [{"key": "all", "label": f"all {len(r.samples)} samples" if r.samples else "all samples",
                    "hist": hist_dict(r.hist), "metrics": _metrics(r),
                    "inputs": [], "note": r.note}]
        for s in r.samples:
            samples.append({"key": str(s.sample), "label": f"sample {s.sample}",
                            "hist": hist_dict(s.hist), "metrics": _metrics(s),
                            "inputs": _inputs(report, s.sample), "note": r.note})
        info = [["kind", r.kind], ["model order", r.order], ["status", _tap_status(r)],
                ["reference from", r.reference_source], ["source line", r.source],
                ["producer", f"{r.producer_op or '?'} {r.producer_node or ''}".strip()],
                ["tensor", r.tensor], ["shape engine / reference", f"{r.shape_engine} / {r.shape_reference}"],
                ["dtype engine / reference", f"{r.dtype_engine} / {r.dtype_reference}"],
                ["growth vs previous", r.growth, "x"]]
        flags = [n for n, on in (("worst", r.worst), ("largest jump", r.largest_jump),
                                 ("exceeds --max-mape", r.exceeded)) if on]
        if flags:
            info.append(["flags", ", ".join(flags)])
        rows.append({
            "id": r.name, "status": status, "tap_status": _tap_status(r), "first_divergent": bool(r.first_divergent),
            "node": None, "group": None,
            "cells": {c.key: _tap_status(r) if c.key == "status" else getattr(r, c.key) for c in cols},
            "info": info, "samples": samples, "default_sample": "all"})
    prof = report.profile()
    status_by_id = {x["id"]: x["status"] for x in rows}
    profile = {
        "x": [p.name for p in prof],   # row ids, in model order
        "status": [status_by_id.get(p.name, "pass") for p in prof],
        "first_divergent_index": next((i for i, p in enumerate(prof) if p.name == report.first_divergent), None),
        "series": [{"key": c.key, "label": c.label, "y": [getattr(p, c.key) for p in prof], "log": c.log,
                    "type": c.fmt, "description": c.description} for c in profile_columns()],
    } if prof else None
    n_fail = sum(x["status"] == "fail" for x in rows)
    n_cmp = sum(x["status"] != "uncompared" for x in rows)
    status = "fail" if (n_fail or report.exit_code) else "pass"
    badges = [badge("engine", report.engine or "?"), badge("samples", report.samples),
              badge("rows judged", f"{n_cmp}/{len(rows)}"),
              badge("divergent", n_fail, "fail" if n_fail else "pass"),
              badge("first divergent", report.first_divergent or "none", "fail" if report.first_divergent else "pass"),
              badge("worst", report.worst_tap), badge("largest jump", report.largest_jump)]
    if report.max_mape is not None:
        badge_status = "fail" if report.exceeded else "pass"
        badges.append(badge("--max-mape", f"{report.max_mape}% → exit {report.exit_code}", badge_status))
    notes = list(report.warnings)
    if report.self_compare_note:
        notes.append(report.self_compare_note)
    rule = report.rule.text or report.rule.describe()
    title = report.build_name or Path(report.build).name or "build"
    graph = engine_graph_view(report)
    return {
        "kind": "verify", "schema": VIEW_SCHEMA,
        "title": f"Accuracy · {title} vs {Path(report.reference).name if report.reference else 'reference'}",
        "subtitle": " · ".join(x for x in (report.created, str(report.path) if report.path else None) if x),
        "status": status, "badges": [b for b in badges if b["value"] is not None], "notes": notes,
        "tabs": [{"id": "table", "label": "Accuracy"}, {"id": "profile", "label": "Error growth"}]
        + ([{"id": "graph", "label": "Graph"}] if graph is not None else []),
        "table": {"title": "Outputs and taps in model order (|engine − reference|)",
                  "columns": [_column(c) for c in cols],
                  "rows": rows, "first_divergent": report.first_divergent if report.first_divergent in
                  {x["id"] for x in rows} else None,
                  "filter_label": "divergent only", "rule": "status: " + rule,
                  "status_labels": {"fail": "diverged", "pass": "ok", "uncompared": "not judged"},
                  "hist_title": "|engine − reference|"},
        "graphs": [], "nodes": {}, "hazards": [], "log": None,
        "profile": profile, "engine_graph": graph,
    }
