"""The deep-check tabs of the trace view: replay, parity, adapters, exporters, isolation.

``deep_view(report, labels)`` -> (tabs, deep): one tab per section that at least one graph holds
(not skipped), and ``view["deep"][section]`` = one entry per graph. Entries only arrange what the
section dataclasses hold; every number was computed by the check. Rows follow the table row shape
of the view dict (``id``, ``status`` pass|fail|uncompared, ``cells``) so the front-end draws them
with the same hooks (``tr[data-leapp-row][data-leapp-section]``).
"""
from __future__ import annotations

from typing import Any

from leapp_lab.model.isolation import DECISION_TABLE
from .viewdict import column, elements_dict, hist_dict
from leapp_lab.model.sections import SECTION_NAMES

LABELS = {"replay": "Replay", "parity": "Parity", "adapters": "Adapters", "exporters": "Exporters",
          "isolation": "Isolation"}
STATUS_KIND = {"ok": "pass", "diverged": "fail", "failed": "fail", "unavailable": None, "skipped": None}
TIER_TITLE = {"a": "tier (a): closed loop over the captured trajectory (recorded observations in, "
                   "exported state fed back, compared with the recorded outputs)",
              "b": "tier (b): fresh observations and episode resets, compared with the original "
                   "pipeline (step_fn)"}


#: the columns of each section's table, (cell key, label, format): the one list. Each entry (and each
#: replay run) carries its own as ``columns`` in the view dict; the front-end names none itself.
DEEP_COLUMNS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "replay": (("step", "step", "int"), ("output", "output", "text"), ("status", "status", "status"),
               ("max_abs", "max |diff|", "num"), ("nrmse", "nrmse", "num"), ("ref_max", "max |ref|", "num"),
               ("worst_element", "worst element", "text"), ("reset", "episode", "text"), ("note", "note", "text")),
    "parity": (("output", "output", "text"), ("sample", "fresh input", "int"), ("status", "status", "status"),
               ("max_abs", "max |diff|", "num"), ("worst_element", "worst element", "text"), ("p99", "p99", "num"),
               ("mean", "mean", "num"), ("min_atol", "min atol", "num"), ("range", "original range", "text")),
    "adapters": (("function", "function", "text"), ("case", "case", "text"), ("status", "status", "status"),
                 ("max_abs", "max |diff|", "num"), ("shapes", "shapes adapter / original", "text"),
                 ("dtypes", "dtypes adapter / original", "text"), ("error", "error", "text")),
    "exporters": (("node", "node", "text"), ("backend", "backend", "text"), ("status", "outcome", "status"),
                  ("verdict", "verdict", "text"), ("max_abs", "max |diff|", "num"),
                  ("failed_samples", "failed samples", "int"), ("time_s", "time s", "num"), ("error", "error", "text")),
    "isolation": (("run", "run", "text"), ("options", "options", "text"), ("status", "verdict", "status"),
                  ("failing", "failing samples", "int"), ("fx_mismatch", "FX ≠ recorded", "int"),
                  ("same_trace", "same trace", "text"), ("hazards", "hazards", "text"), ("note", "note", "text")),
}
#: an engine's replay run: the error against the reference, against fp32, and its split
ENGINE_REPLAY_COLUMNS = (
    ("step", "step", "int"), ("output", "output", "text"), ("status", "status", "status"),
    ("max_abs", "max |diff|", "num"), ("nrmse", "nrmse", "num"), ("fp32_max_abs", "max |diff| vs fp32", "num"),
    ("own_error", "own error", "num"), ("inherited_error", "inherited error", "num"),
    ("worst_element", "worst element", "text"), ("reset", "episode", "text"), ("note", "note", "text"))


def _columns(spec: tuple[tuple[str, str, str], ...]) -> list[dict[str, Any]]:
    return [column(k, label, fmt) for k, label, fmt in spec]


def _st(passed: bool | None) -> str:
    return "uncompared" if passed is None else ("pass" if passed else "fail")


def _head(sec: Any, graph: str) -> dict[str, Any]:
    return {"graph": graph, "status": sec.status, "kind": STATUS_KIND.get(sec.status),
            "reason": sec.reason, "notes": list(getattr(sec, "notes", []) or [])}


def _label(g: Any, output: str) -> str | None:
    sem = g.semantics_of(output) if g is not None and hasattr(g, "semantics_of") else None
    return sem.label() if sem is not None else None


def _replay_run(run: Any, key: str, title: str, graph: str, g: Any, engine: str | None) -> dict[str, Any]:
    outputs = [o.output for o in run.outputs] or sorted({r.output for r in run.rows})
    series, split = [], []
    for o in outputs:
        rows = [r for r in run.rows if r.output == o]
        series.append({"output": o, "x": [r.step for r in rows], "y": [r.max_abs for r in rows],
                       "status": [_st(r.passed) for r in rows]})
        if engine is not None:
            split.append({"output": o, "x": [r.step for r in rows], "own": [r.own_error for r in rows],
                          "inherited": [r.inherited_error for r in rows], "fp32": [r.fp32_max_abs for r in rows]})
    return {
        "key": key, "tier": run.tier, "engine": engine, "title": title,
        "columns": _columns(DEEP_COLUMNS["replay"] if engine is None else ENGINE_REPLAY_COLUMNS),
        "status": run.status, "kind": STATUS_KIND.get(run.status), "reason": run.reason,
        "steps": run.steps, "seed": run.seed, "resets": list(run.resets),
        "breaks": [[k, list(v)] for k, v in run.breaks.items()], "first_divergent": run.first_divergent,
        "notes": list(run.notes), "series": series, "split": split,
        "not_comparable": [[k, list(v)] for k, v in run.not_comparable.items()],
        "outputs": [o.to_dict() for o in run.outputs],
        "rows": [{"id": f"{key}/{r.step}/{r.output}", "status": _st(r.passed),
                  "elements": elements_dict(r.elements, r.worst_element, _label(g, r.output)),
                  "cells": {**{k: getattr(r, k) for k in ("step", "output", "max_abs", "nrmse", "ref_max",
                                                          "worst_element")},
                            "reset": "reset" if r.reset else "", "note": r.note or "",
                            **({"fp32_max_abs": r.fp32_max_abs, "own_error": r.own_error,
                                "inherited_error": r.inherited_error} if engine is not None else {})}}
                 for r in run.rows]}


def _replay(sec: Any, graph: str, g: Any = None) -> dict[str, Any]:
    e = _head(sec, graph)
    e.update(tier=sec.tier, rtol=sec.rtol, atol=sec.atol, runs=[], engines=[])
    for run in sec.runs():
        e["runs"].append(_replay_run(run, f"{graph}:{run.tier}", TIER_TITLE.get(run.tier, run.tier), graph, g, None))
    for eng in getattr(sec, "engines", None) or []:
        e["engines"].append({"engine": eng.engine, "status": eng.status, "kind": STATUS_KIND.get(eng.status),
                             "reason": eng.reason, "max_nrmse": eng.max_nrmse, "notes": list(eng.notes),
                             "nodes": [n.to_dict() for n in eng.nodes], "timings_s": dict(eng.timings_s),
                             "taps": _taps(eng.taps, graph, eng.engine)})
        for run in eng.runs():
            title = (f"{eng.engine}: " + TIER_TITLE.get(run.tier, run.tier).split(":", 1)[-1].strip()
                     + f"; the pipeline's ONNX nodes on {eng.engine}, closed loop beside the fp32 export "
                       f"(a step fails when its nrmse vs the reference exceeds {eng.max_nrmse:g})")
            e["runs"].append(_replay_run(run, f"{graph}:{eng.engine}:{run.tier}", title, graph, g, eng.engine))
    return e


def _taps(t: Any, graph: str, engine: str) -> dict[str, Any] | None:
    """The steps × taps grid of an engine replay (TapsOverTime) for the heatmap."""
    if t is None:
        return None
    return {"key": f"{graph}:{engine}:taps", "node": t.node, "tier": t.tier, "taps": list(t.taps),
            "steps": list(t.steps), "nrmse": t.nrmse, "local_nrmse": t.local_nrmse, "max_abs": t.max_abs,
            "hists": [[hist_dict(h) for h in row] for row in t.hists], "max_nrmse": t.max_nrmse,
            "first": t.first, "first_local": t.first_local, "note": t.note}


def _parity(sec: Any, graph: str, g: Any = None) -> dict[str, Any]:
    e = _head(sec, graph)
    e.update(n=sec.n, seed=sec.seed, rtol=sec.rtol, atol=sec.atol, scales=list(sec.scales), shift=sec.shift,
             inputs=[i.to_dict() for i in sec.inputs], outputs=[o.to_dict() for o in sec.outputs],
             rows=[{"id": f"{graph}:{c.node}/{c.port}/{c.sample}", "status": _st(c.passed),
                    "elements": elements_dict(c.elements, c.worst_element, _label(g, f"{c.node}/{c.port}")),
                    "cells": {"output": f"{c.node}/{c.port}", "sample": c.sample, "worst_element": c.worst_element,
                              "max_abs": (c.stats or {}).get("max"), "p99": (c.stats or {}).get("p99"),
                              "mean": (c.stats or {}).get("mean"), "min_atol": c.min_atol,
                              "range": c.recorded_range, "exported_range": c.exported_range}}
                   for c in sec.checks])
    return e


def _adapters(sec: Any, graph: str, g: Any = None) -> dict[str, Any]:
    e = _head(sec, graph)
    e.update(rtol=sec.rtol, atol=sec.atol,
             adapters=[{"function": a.function, "replacement": a.replacement, "node": a.node, "calls": a.calls,
                        "status": _st(a.passed), "max_abs": a.max_abs, "worst_case": a.worst_case,
                        "error": a.error} for a in sec.adapters],
             rows=[{"id": f"{graph}:{a.function}/{c.case}", "status": _st(c.passed),
                    "cells": {"function": a.function, "case": c.case, "max_abs": c.max_abs,
                              "shapes": f"{c.adapter_shapes} / {c.original_shapes}",
                              "dtypes": f"{', '.join(c.adapter_dtypes)} / {', '.join(c.original_dtypes)}",
                              "error": c.error or ""}}
                   for a in sec.adapters for c in a.cases])
    return e


_OUTCOME = {"pass": "pass", "fail": "fail", "export-error": "fail", "error": "fail"}


def _exporters(sec: Any, graph: str, g: Any = None) -> dict[str, Any]:
    e = _head(sec, graph)
    e.update(nodes=list(sec.nodes), backends=list(sec.backends), advice=list(sec.advice), reruns=sec.reruns,
             rows=[{"id": f"{graph}:{a.node}/{a.backend}", "status": _OUTCOME.get(a.outcome, "uncompared"),
                    "outcome": a.outcome,
                    "cells": {"node": a.node, "backend": a.backend + (" (yours)" if a.current else ""),
                              "resolved": a.resolved, "outcome": a.outcome, "verdict": a.verdict,
                              "max_abs": a.max_abs, "failed_samples": a.failed_samples,
                              "time_s": a.time_s, "error": a.error or ""}} for a in sec.attempts])
    return e


def _isolation(sec: Any, graph: str, g: Any = None) -> dict[str, Any]:
    e = _head(sec, graph)
    e.update(decision=sec.decision, rule=sec.rule, explanation=sec.explanation, reruns=sec.reruns,
             table=[{"row": r, "pattern": p, "decision": d, "matched": r == sec.rule} for r, p, d in DECISION_TABLE],
             rows=[{"id": f"{graph}:{r.label}",
                    "status": "uncompared" if not r.ran or r.verdict in (None, "skipped") else
                    ("pass" if r.verdict == "pass" else "fail"),
                    "cells": {"run": r.label, "options": ", ".join(f"{k}={v}" for k, v in r.options.items()),
                              "status": r.status if r.ran else "not run", "verdict": r.verdict,
                              "failing": len(r.failing), "fx_mismatch": len(r.fx_mismatch),
                              "same_trace": r.same_trace, "hazards": ", ".join(r.hazards),
                              "note": r.note or r.error or "; ".join(r.trace_diff[:3])}} for r in sec.runs])
    return e


BUILDERS = {"replay": _replay, "parity": _parity, "adapters": _adapters, "exporters": _exporters,
            "isolation": _isolation}


def _worst(secs: list[Any]) -> tuple[str, str | None]:
    """The worst status over sections and their replays on engines, and its colour as the trace
    verdict gives it (model/trace_verdict.py): a diverged replay on an engine is no "replay ok", but
    amber (precision may explain it) where the fp32 replay itself is red."""
    own = [s.status for s in secs]
    engines = [e.status for s in secs for e in (getattr(s, "engines", None) or [])]
    for x in ("diverged", "failed"):
        if x in own:
            return x, STATUS_KIND[x]
    if "failed" in engines:
        return "failed on an engine", "warn"
    if "diverged" in engines:
        return "diverged on an engine", "warn"
    return next((x for x in ("unavailable", "ok") if x in own), "ok"), STATUS_KIND.get(
        next((x for x in ("unavailable", "ok") if x in own), "ok"))


def deep_badges(report: Any) -> list[dict[str, Any]]:
    """One header badge per deep check that ran (its worst status over the graphs)."""
    from .viewdict import badge
    out = []
    for name in SECTION_NAMES:
        secs = [s for g in report.graphs for s in [g.section(name) if hasattr(g, "section") else None]
                if s is not None and s.status != "skipped"]
        if not secs:
            continue
        st, kind = _worst(secs)
        if name == "isolation" and len(secs) == 1 and secs[0].decision:
            out.append(badge("isolation", secs[0].decision, None))
        else:
            out.append(badge(name, st, kind))
    return out


def deep_view(report: Any, labels: list[str]) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    tabs, deep = [], {}
    for name in SECTION_NAMES:
        entries = []
        for g, label in zip(report.graphs, labels):
            sec = g.section(name) if hasattr(g, "section") else None
            if sec is None or sec.status == "skipped":
                continue
            entries.append({**BUILDERS[name](sec, label, g), "columns": _columns(DEEP_COLUMNS[name])})
        if not entries:
            continue
        deep[name] = entries
        secs = [sec for g in report.graphs for sec in [g.section(name) if hasattr(g, "section") else None]
                if sec is not None and sec.status != "skipped"]
        worst = _worst(secs)[0]
        if name == "isolation" and len(entries) == 1 and entries[0].get("decision"):
            worst = entries[0]["decision"]
        tabs.append({"id": name, "label": f"{LABELS[name]} ({worst})"})
    return tabs, deep
