"""View dict of a VerifyReport: the accuracy table (one row per output and tap, in model order),
per-sample histograms, and the error-growth profile over taps."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .viewdict import VIEW_SCHEMA, badge, hist_dict

MAX_INPUT_SAMPLES = 64      # input summaries are read for this many samples at most


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
    out = [["MAPE %", m.mape], ["NRMSE (√MSE / rms reference)", m.nrmse], ["MSE", m.mse], ["max |engine − reference|", m.max_abs], ["cosine", m.cosine],
           ["mean |diff|", m.mean_abs], ["p50", m.p50], ["p90", m.p90], ["p99", m.p99], ["p99.9", m.p999],
           ["min atol that passes", m.min_atol], ["elements", m.n]]
    if m.nonfinite_engine or m.nonfinite_reference:
        out.append(["non-finite engine / reference", f"{m.nonfinite_engine} / {m.nonfinite_reference}"])
    return out


def _inputs_npz(report: Any) -> Path | None:
    """The model.npz whose samples were run: build.json's ``npz``, else beside the reference."""
    from leapp_lab.model.jsonio import read_json
    cands = []
    b = Path(report.build) if report.build else None
    if b is not None and (b / "build.json").is_file():
        try:
            npz = read_json(b / "build.json").get("npz")
            if npz:
                p = Path(npz)
                cands.append(p if p.is_absolute() else b / p)
                cands.append(p)
        except (OSError, ValueError):
            pass
    if report.reference:
        ref = Path(report.reference)
        if ref.name.endswith(".reference.npz"):
            cands.append(ref.with_name(ref.name[: -len(".reference.npz")] + ".npz"))
    return next((c for c in cands if c.is_file()), None)


def _input_summaries(report: Any) -> dict[int, list[dict[str, Any]]]:
    p = _inputs_npz(report)
    if p is None:
        return {}
    from leapp_lab.model.arraysummary import array_summary
    from leapp_lab.model.jsonio import load_npz
    try:
        arrays = load_npz(p)
    except (OSError, ValueError):
        return {}
    out: dict[int, list[dict[str, Any]]] = {}
    for name, a in arrays.items():
        if getattr(a, "ndim", 0) < 1:
            continue
        for i in range(min(a.shape[0], MAX_INPUT_SAMPLES)):
            out.setdefault(i, []).append({"name": name, **array_summary(a[i]), "index": i, "file": p.name})
    return out


def verify_view(report: Any) -> dict[str, Any]:
    inputs = _input_summaries(report)
    rows = []
    for r in report.table():
        status = row_status(r)
        samples = [{"key": "all", "label": f"all {len(r.samples)} samples" if r.samples else "all samples",
                    "hist": hist_dict(r.hist), "metrics": _metrics(r),
                    "inputs": [], "note": r.note}]
        for s in r.samples:
            samples.append({"key": str(s.sample), "label": f"sample {s.sample}",
                            "hist": hist_dict(s.hist), "metrics": _metrics(s),
                            "inputs": inputs.get(s.sample, []), "note": r.note})
        info = [["kind", r.kind], ["model order", r.order], ["status", _tap_status(r)],
                ["reference from", r.reference_source], ["source line", r.source],
                ["producer", f"{r.producer_op or '?'} {r.producer_node or ''}".strip()],
                ["tensor", r.tensor], ["shape engine / reference", f"{r.shape_engine} / {r.shape_reference}"],
                ["dtype engine / reference", f"{r.dtype_engine} / {r.dtype_reference}"],
                ["growth vs previous", r.growth]]
        flags = [n for n, on in (("worst", r.worst), ("largest jump", r.largest_jump),
                                 ("exceeds --max-mape", r.exceeded)) if on]
        if flags:
            info.append(["flags", ", ".join(flags)])
        rows.append({
            "id": r.name, "status": status, "tap_status": _tap_status(r), "first_divergent": bool(r.first_divergent),
            "node": None, "group": None,
            "cells": {"order": r.order, "name": r.name, "kind": r.kind, "status": _tap_status(r),
                      "mape": r.mape, "nrmse": r.nrmse, "mse": r.mse, "max_abs": r.max_abs, "cosine": r.cosine,
                      "min_atol": r.min_atol, "growth": r.growth, "reference_source": r.reference_source,
                      "source": r.source},
            "info": info, "samples": samples, "default_sample": "all"})
    prof = report.profile()
    status_by_id = {x["id"]: x["status"] for x in rows}
    profile = {
        "x": [p.name for p in prof],   # row ids, in model order
        "status": [status_by_id.get(p.name, "pass") for p in prof],
        "first_divergent_index": next((i for i, p in enumerate(prof) if p.name == report.first_divergent), None),
        "series": [{"key": "mape", "label": "MAPE %", "y": [p.mape for p in prof], "log": True},
                   {"key": "nrmse", "label": "NRMSE", "y": [p.nrmse for p in prof], "log": True},
                   {"key": "max_abs", "label": "max |diff|", "y": [p.max_abs for p in prof], "log": True},
                   {"key": "cosine", "label": "cosine", "y": [p.cosine for p in prof], "log": False},
                   {"key": "growth", "label": "growth (nrmse / previous)", "y": [p.growth for p in prof], "log": True}],
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
        badge_status = "fail" if report.exceeded or report.exit_code else "pass"
        badges.append(badge("--max-mape", f"{report.max_mape}% → exit {report.exit_code}", badge_status))
    notes = list(report.warnings)
    if report.self_compare_note:
        notes.append(report.self_compare_note)
    rule = report.rule.text or report.rule.describe()
    title = report.build_name or Path(report.build).name or "build"
    return {
        "kind": "verify", "schema": VIEW_SCHEMA,
        "title": f"Accuracy · {title} vs {Path(report.reference).name if report.reference else 'reference'}",
        "subtitle": " · ".join(x for x in (report.created, str(report.path) if report.path else None) if x),
        "status": status, "badges": [b for b in badges if b["value"] is not None], "notes": notes,
        "tabs": [{"id": "table", "label": "Accuracy"}, {"id": "profile", "label": "Error growth"}],
        "table": {"title": "Outputs and taps in model order (|engine − reference|)",
                  "columns": [{"key": "order", "label": "#", "type": "int"},
                              {"key": "name", "label": "output / tap", "type": "text"},
                              {"key": "kind", "label": "kind", "type": "text"},
                              {"key": "status", "label": "status", "type": "status"},
                              {"key": "mape", "label": "MAPE %", "type": "num"},
                              {"key": "nrmse", "label": "NRMSE", "type": "num"},
                              {"key": "mse", "label": "MSE", "type": "num"},
                              {"key": "max_abs", "label": "max |diff|", "type": "num"},
                              {"key": "cosine", "label": "cosine", "type": "num"},
                              {"key": "min_atol", "label": "min atol", "type": "num"},
                              {"key": "growth", "label": "growth", "type": "num"},
                              {"key": "reference_source", "label": "reference", "type": "text"},
                              {"key": "source", "label": "source line", "type": "text"}],
                  "rows": rows, "first_divergent": report.first_divergent if report.first_divergent in
                  {x["id"] for x in rows} else None,
                  "filter_label": "divergent only", "rule": "status: " + rule,
                  "status_labels": {"fail": "diverged", "pass": "ok", "uncompared": "not judged"},
                  "hist_title": "|engine − reference|"},
        "graphs": [], "nodes": {}, "hazards": [], "log": None,
        "profile": profile,
    }
