"""View dict of a TraceReport: connectivity graph, node panels (FX graph + code), validation table
(one row per node / output port / sample), hazards and the LEAPP log."""
from __future__ import annotations

import re
from typing import Any

from leapp_lab.model.arraysummary import array_summary
from leapp_lab.model.finding_trace import advice, reason_words
from leapp_lab.model.trace import graph_labels  # noqa: F401  (the views' name for it)
from leapp_lab.model.trace_verdict import graph_verdict, not_evidence

from .graphs import Arrow, Box, Drawing, render_svg
from .numfmt import NONE
from .trace_layers import layer_budget, layer_views, pipeline_view
from .finding import finding_view
from .viewdict import VIEW_SCHEMA, badge, column, elements_dict, hist_dict

MAX_LOG_RECORDS = 5000
MAX_FX_NODES = 400          # bigger FX graphs show their code only
_VERDICT_KIND = {"pass": "pass", "fail": "fail", "error": "error", "skipped": "skipped"}


def _status(passed: bool | None) -> str:
    return "uncompared" if passed is None else ("pass" if passed else "fail")


def _port_text(p: Any) -> str:
    shape = NONE if p.shape is None else "[" + ",".join(str(s) for s in p.shape) + "]"
    arrow = "in " if p.direction == "in" else "out"
    role = " (state)" if p.role == "state" else " (static)" if getattr(p, "static", False) else ""
    return f"{arrow} {p.name}: {p.dtype or '?'}{shape}{role}"


def connectivity_drawing(graph: Any, prefix: str = "") -> Drawing:
    d = Drawing(rankdir="LR")
    names = {n.name for n in graph.nodes}
    for n in graph.nodes:
        lines = [f"{n.backend or 'not exported'} · {n.verdict}"] + [_port_text(p) for p in n.ports]
        d.boxes.append(Box(key=prefix + n.name, title=n.name, lines=lines,
                           kind=_VERDICT_KIND.get(n.verdict, "plain"),
                           hover=f"{n.name} · {n.backend or 'not exported'} · verdict {n.verdict}"))
    io_boxes: set[str] = set()
    ports = {(n.name, p.direction, p.name): p for n in graph.nodes for p in n.ports}

    # One ellipse per graph input / output *port*: LEAPP names them node/port, and two nodes may each
    # take an input of the same name (two different `obs`, [1,8] and [1,4]): one box would wire both.
    def io_box(endpoint: str, direction: str) -> str:
        key = f"{prefix}{direction}:{endpoint}"
        if key not in io_boxes:
            io_boxes.add(key)
            node, _, port = endpoint.rpartition("/")
            p = ports.get((node, "in" if direction == "input" else "out", port))
            shape = "" if p is None or p.shape is None else " [" + ",".join(str(x) for x in p.shape) + "]"
            d.boxes.append(Box(key=key, title=port or endpoint, lines=[f"graph {direction}{shape}"], kind="io",
                               attr="data-leapp-io", shape="ellipse",
                               hover=f"graph {direction} {port or endpoint}" + (f" of {node}" if node else "") + shape))
        return key

    def node_of(endpoint: str) -> str | None:
        head = endpoint.split("/", 1)[0]
        return head if head in names else None

    for e in graph.edges:
        s, t = node_of(e.src), node_of(e.dst)
        src = prefix + s if s else io_box(e.src, "input")
        dst = prefix + t if t else io_box(e.dst, "output")
        sp, tp = e.src.split("/", 1)[-1], e.dst.split("/", 1)[-1]
        d.arrows.append(Arrow(src, dst, label=sp if sp == tp else f"{sp}→{tp}", feedback=e.kind == "feedback"))
    for g in graph.graph_inputs:
        n = node_of(g)
        if n:
            d.arrows.append(Arrow(io_box(g, "input"), prefix + n))
            continue
        # a bare port name (no node): every node that takes an unfed input of that name
        for x in graph.nodes:
            if any(p.direction == "in" and p.name == g and not p.source for p in x.ports):
                d.arrows.append(Arrow(io_box(f"{x.name}/{g}", "input"), prefix + x.name))
    for g in graph.graph_outputs:
        n = node_of(g)
        if n:
            d.arrows.append(Arrow(prefix + n, io_box(g, "output")))
    return d


def fx_drawing(fx: Any) -> Drawing:
    d = Drawing(rankdir="TB")
    known = {x.name for x in fx.nodes}
    for x in fx.nodes:
        kind = "suspect" if x.suspect else "weight" if x.weight else "io" if x.op in ("placeholder", "output") else "plain"
        lines = [f"{x.op}: {x.target}"[:60]]
        if x.literals:
            lines.append("literals: " + ", ".join(repr(v) for v in x.literals)[:60])
        verdict = ("flagged: a literal probably frozen at trace time" if x.suspect else
                   "weight" if x.weight else "ok")
        d.boxes.append(Box(key=x.name, title=x.name, lines=lines, kind=kind, attr="data-leapp-fx",
                           hover=f"{x.name} · {x.op} {x.target} · {verdict}"))
    for x in fx.nodes:
        for u in x.users:
            if u in known:
                d.arrows.append(Arrow(x.name, u))
    return d


def _node_panel(graph: Any, node: Any, hazards: list[dict], budget: list[int]) -> dict[str, Any]:
    fx = None
    if node.fx is not None:
        svg, layout = ("", "none")
        if 0 < len(node.fx.nodes) <= MAX_FX_NODES:
            svg, layout = render_svg(fx_drawing(node.fx))
        suspects = [x for x in node.fx.nodes if x.suspect]
        code = node.fx.code.strip("\n")
        marks = [i for i, line in enumerate(code.splitlines()) if any(_assigns(line, s.name) for s in suspects)]
        fx = {"svg": svg, "layout": layout, "code": code, "code_marks": marks,
              "weights": list(node.fx.weights), "n_nodes": len(node.fx.nodes),
              "suspects": [{"name": s.name, "target": s.target, "args": list(s.args),
                            "literals": [repr(v) for v in s.literals]} for s in suspects]}
    return {"name": node.name, "graph": graph.name, "index": node.index, "backend": node.backend,
            "verdict": node.verdict, "artifact": node.artifact, "sha256": node.sha256, "error": node.error,
            "samples": node.samples, "dropped_inputs": list(node.dropped_inputs),
            "taps": [{"name": t.name, "site": t.site} for t in node.taps],
            "engines": [e.to_dict() for e in node.engines],
            "layers": layer_views(node, graph.run_dir, budget),
            "ports": [{"name": p.name, "direction": p.direction, "dtype": p.dtype, "shape": p.shape,
                       "role": p.role, "traced_name": p.traced_name, "source": p.source,
                       "feedback": p.feedback, "meaning": _meaning(p.semantics)} for p in node.ports],
            "hazards": [h for h in hazards if h["node"] == node.name], "fx": fx}


def _meaning(sem: Any) -> str | None:
    """A port's declared meaning in one line: kind, unit, element names (model/semantics.py)."""
    if sem is None:
        return None
    parts = [x for x in (sem.kind, sem.unit and f"unit {sem.unit}") if x]
    if sem.element_names:
        axes = []
        for a in sem.element_names:
            axes.append(f"time ({sem.temporal_period_ms:g} ms)" if a == "__temporal_axis__" and sem.temporal_period_ms
                        else "time" if a == "__temporal_axis__" else
                        ", ".join(map(str, a)) if isinstance(a, list) else "unnamed")
        parts.append("elements " + " × ".join(f"[{x}]" for x in axes))
    return "; ".join(parts) or None


def worst_reason(port: str, worst: str | None, label: str | None, reasons: dict[str, str]) -> str | None:
    """The reason key naming a failing row's worst element; its words go into ``reasons``."""
    if worst is None:
        return None
    key = f"worst:{port}:{worst}".replace(",", ";")
    reasons[key] = f"worst element {worst}" + (f" ({label})" if label else "")
    return key


def _assigns(line: str, name: str) -> bool:
    """Is this FX code line the one that computes ``name``?"""
    return re.match(rf"\s*{re.escape(name)}\s*=", line) is not None


def _inputs(report: Any, graph: Any, node: Any, sample: int) -> list[dict[str, Any]]:
    arrays = report.graph_arrays(graph) if hasattr(report, "graph_arrays") else {}
    out = []
    for p in node.inputs():
        a = arrays.get(f"{node.name}/{p.name}/{sample}/input")
        if a is None:
            continue
        out.append({"name": p.name, **array_summary(a), "index": sample})
    return out


#: a trace row's side panel: (key, label, format) of its sample's "m" values
PANEL = (("max", "max |exported − recorded|", "num"), ("mean", "mean", "num"), ("p50", "p50", "num"),
         ("p90", "p90", "num"), ("p99", "p99", "num"), ("p995", "p99.5", "num"),
         ("fx_max", "max |fx − recorded|", "num"), ("export_vs_fx", "max |exported − fx|", "num"),
         ("min_atol", "min atol that passes", "num"), ("rtol", "rtol", "num"), ("atol", "atol", "num"),
         ("shape", "shape (recorded)", "shape"), ("exported_shape", "shape (exported)", "shape"),
         ("dtype", "dtype (recorded)", "text"), ("exported_dtype", "dtype (exported)", "text"),
         ("recorded_range", "range (recorded)", "num"), ("exported_range", "range (exported)", "num"),
         ("nonfinite", "non-finite recorded / exported", "text"))


def _sample_metrics(c: Any) -> list[Any]:
    """The PANEL values of one check (the percentiles here are exact: trace.checks)."""
    st, fx = c.stats or {}, c.fx_stats or {}
    values = {"max": st.get("max"), "mean": st.get("mean"), "p50": st.get("p50"), "p90": st.get("p90"),
              "p99": st.get("p99"), "p995": st.get("p995"), "fx_max": fx.get("max"),
              "export_vs_fx": c.export_vs_fx_max, "min_atol": c.min_atol, "rtol": c.rtol, "atol": c.atol,
              "shape": c.shape, "exported_shape": c.exported_shape, "dtype": c.dtype,
              "exported_dtype": c.exported_dtype, "recorded_range": c.recorded_range,
              "exported_range": c.exported_range,
              "nonfinite": (f"{c.nonfinite_recorded} / {c.nonfinite_exported}"
                            if c.nonfinite_recorded or c.nonfinite_exported else None)}
    return [values[k] for k, _, _ in PANEL]


#: the validation table's columns: the row, its verdict, the hazards that explain it and their advice
#: first (what the finding cites: Deliver 2 of issue 21), then the errors; the rest behind "columns"
TRACE_COLUMNS = [
    column("node", "node", "text", "the LEAPP node", pinned=True),
    column("port", "port", "text", "its output port", pinned=True),
    column("sample", "sample", "int", "the recorded call", pinned=True),
    column("status", "status", "status", "allclose(exported, recorded, rtol, atol)", pinned=True),
    column("hazards", "hazards", "text", "hazards that concern this row"),
    column("advice", "advice", "text", "what to do about the hazard that explains this row best"),
    column("max", "max", "num", "max |exported − recorded|"),
    column("fx_max", "fx max", "num", "max |FX replay − recorded|"),
    column("export_vs_fx", "exp−fx max", "num", "max |exported − FX replay|"),
    column("min_atol", "min atol", "num", "the smallest atol that passes"),
    column("worst_element", "worst element", "text",
           "the element with the largest |exported − recorded| (named by the port's LEAPP semantics, else by index)"),
    column("p99", "p99", "num", "99th percentile of |exported − recorded| (exact)", hidden=True),
    column("mean", "mean", "num", "mean |exported − recorded|", hidden=True),
    column("atol", "atol", "num", "the atol of the check", hidden=True),
    column("rtol", "rtol", "num", "the rtol of the check", hidden=True)]


def trace_view(report: Any) -> dict[str, Any]:
    many = len(report.graphs) > 1
    rows: list[dict[str, Any]] = []
    reasons = {"allclose": "allclose(exported, recorded, rtol, atol) fails"}
    graphs, nodes, hazards_all, log = [], {}, [], []
    budget = layer_budget()             # the embedded Layers views, all nodes together
    for g, label in zip(report.graphs, graph_labels(report.graphs)):
        prefix = f"{label}:" if many else ""
        hz = [{"kind": h.kind, "node": h.node, "port": h.port, "samples": list(h.samples),
               "message": h.message, "graph": label} for h in g.hazards]
        hazards_all += hz
        reasons.update({h["kind"]: reason_words(h["kind"]) for h in hz})
        svg, layout = render_svg(connectivity_drawing(g, prefix))
        graphs.append({"name": label, "svg": svg, "layout": layout, "status": g.status, "error": g.error,
                       "verdict": g.verdict})
        order = {n.name: (n.index, i) for i, n in enumerate(g.nodes)}
        port_order = {(n.name, p.name): j for n in g.nodes for j, p in enumerate(n.ports)}
        by_node = {n.name: n for n in g.nodes}
        for n in g.nodes:
            nodes[prefix + n.name] = _node_panel(g, n, hz, budget)
        checks = sorted(g.checks, key=lambda c: (order.get(c.node, (1 << 30, 0)),
                                                 port_order.get((c.node, c.port), 1 << 30), c.sample))
        skip = not_evidence(g)
        for c in checks:
            counted = (c.node, c.sample) not in skip
            kinds = sorted({h["kind"] for h in hz if h["node"] in (None, c.node)
                            and h["port"] in (None, c.port) and (not h["samples"] or c.sample in h["samples"])})
            node = by_node.get(c.node)
            note = ("the recorded value is LEAPP's unfilled zero placeholder, not a real sample"
                    if c.placeholder else None if counted else
                    f"LEAPP never recorded sample {c.sample} of {c.node} (unfilled-cache): no evidence either way")
            status = _status(c.passed) if counted else "uncompared"
            sem = g.semantics_of(f"{c.node}/{c.port}")
            label = sem.label() if sem is not None else None
            wr = (worst_reason(f"{c.node}/{c.port}", c.worst_element, label, reasons)
                  if c.passed is False and counted else None)
            rows.append({
                "id": f"{prefix}{c.node}/{c.port}/{c.sample}", "status": status, "tap_status": None,
                "first_divergent": False, "node": prefix + c.node, "group": f"{prefix}{c.node}/{c.port}",
                "sub": label, "reason": ", ".join((["allclose"] if c.passed is False and counted else []) + kinds
                                                  + ([wr] if wr else [])) or None,
                "note": None, "info": [],
                **({"why": "allclose passes on this sample; a hazard concerns its node"} if kinds and c.passed else {}),
                "cells": {"node": c.node, "port": c.port, "sample": c.sample, "status": status,
                          "max": (c.stats or {}).get("max"), "p99": (c.stats or {}).get("p99"),
                          "mean": (c.stats or {}).get("mean"), "fx_max": (c.fx_stats or {}).get("max"),
                          "export_vs_fx": c.export_vs_fx_max, "min_atol": c.min_atol, "atol": c.atol,
                          "rtol": c.rtol, "hazards": ", ".join(kinds), "worst_element": c.worst_element,
                          "advice": advice(kinds) if c.passed is False or kinds else None},
                "samples": [{"key": str(c.sample), "label": f"sample {c.sample}",
                             "hist": hist_dict(c.hist, c.nonfinite_exported), "m": _sample_metrics(c),
                             "inputs": _inputs(report, g, node, c.sample) if node is not None else [],
                             "note": note, "elements": elements_dict(c.elements, c.worst_element, label)}],
                "default_sample": str(c.sample)})
        for r in g.log[-MAX_LOG_RECORDS:]:
            log.append({"level": r.level, "levelno": r.levelno, "section": r.section, "message": r.message,
                        "graph": label})
    first = next((r for r in rows if r["status"] == "fail"), None)
    if first is not None:
        first["first_divergent"] = True
    n_fail = sum(r["status"] == "fail" for r in rows)
    n_pass = sum(r["status"] == "pass" for r in rows)
    # the header reads the one verdict of every result the run holds (model/trace_verdict.py)
    status = report.verdict().status
    title = ", ".join(g.name for g in report.graphs) or "(no graph)"
    badges = []
    for g in report.graphs:
        badges.append(badge(f"{g.name}" if many else "graph", g.status,
                            "fail" if g.status in ("refused", "error") else None))
        # LEAPP's own node verdicts count the samples it never recorded: the tone is the graph's
        # verdict (model/trace_verdict.py), never redder than the finding
        badges.append(badge("verdict", g.verdict, graph_verdict(g).status if g.verdict in ("fail", "error")
                            else _VERDICT_KIND.get(g.verdict)))
    badges += [badge("nodes", sum(len(g.nodes) for g in report.graphs)),
               badge("checks passed", f"{n_pass}/{len(rows)}", "fail" if n_fail else "pass" if rows else None),
               badge("hazards", len(hazards_all), "warn" if hazards_all else "pass",
                     title="every diagnosis with its explanation and fix (click: the Hazards tab)" if hazards_all else None,
                     tab="hazards" if hazards_all else None)]
    from .deep_view import deep_badges, deep_view
    badges += deep_badges(report)
    notes = [f"{g.name}: {g.error}" for g in report.graphs if g.error]
    if report.script_error:
        notes.append("the traced code raised: " + report.script_error.strip().splitlines()[-1])
    total_log = sum(len(g.log) for g in report.graphs)
    deep_tabs, deep = deep_view(report, graph_labels(report.graphs))
    pipeline = pipeline_view(report.graphs, graph_labels(report.graphs))
    layer_tabs = ([{"id": "layers", "label": "Layers"}] if any(n["layers"] for n in nodes.values()) else []) + (
        [{"id": "pipeline", "label": "Pipeline on engines"}] if pipeline else [])
    return {
        "kind": "trace", "schema": VIEW_SCHEMA, "title": f"LEAPP trace · {title}",
        "finding": finding_view(report, lambda n: n if any(r["id"] == n for r in rows) else None),
        "subtitle": " · ".join(x for x in (report.created, report.leapp_version and f"leapp {report.leapp_version}",
                                           str(report.path) if report.path else None) if x),
        "status": status, "badges": badges, "notes": notes,
        "tabs": [{"id": "table", "label": "Validation"}, {"id": "graph", "label": "Graph"},
                 {"id": "node", "label": "Node"}, {"id": "hazards", "label": f"Hazards ({len(hazards_all)})"},
                 {"id": "log", "label": "Log"}] + layer_tabs + deep_tabs,
        "table": {"title": "Validation: node / output port / sample (|exported − recorded|)",
                  "columns": [dict(c) for c in TRACE_COLUMNS],   # a view's own copy: callers edit it
                  "panel_columns": [column(k, label, fmt) for k, label, fmt in PANEL],
                  "info_columns": [],
                  "rows": rows, "first_divergent": first["id"] if first else None,
                  "filter_label": "failing only", "jump_label": "failing",
                  "rule": "pass/fail is LEAPP's allclose(exported, recorded, rtol, atol) on each sample",
                  "hist_title": "|exported − recorded|",
                  "nonfinite_label": "non-finite exported values (left out of the bins)", "reasons": reasons,
                  "search_keys": ["node", "port", "status", "hazards", "worst_element"]},
        "inputs": {},
        "graphs": graphs, "nodes": nodes, "hazards": hazards_all,
        "log": {"records": log, "truncated": max(0, total_log - len(log)),
                "levels": sorted({r["level"] for r in log}, key=lambda lv: min(x["levelno"] for x in log if x["level"] == lv)),
                "sections": sorted({r["section"] for r in log if r["section"]})},
        "profile": None,
        "deep": deep,
        # --engine: the pipeline on each engine, node by node (steps/pipeline_engines.py); the
        # nodes' Layers views are under nodes[NAME].layers (views/trace_layers.py)
        "pipeline_engines": pipeline,
    }
