"""View dict of a RepairReport: the ranked segment table (round 1), the error of each candidate as
bars against the target, and the error before / after each greedy choice and the final build."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from leapp_lab.model.repair import table_columns

from .numfmt import fmt
from .finding import finding_view
from .viewdict import VIEW_SCHEMA, badge, column

_PRECISION = {"ort-int8": "int8", "ort-fp16": "fp16", "trt-fp16": "fp16"}


def _status(rec: dict[str, Any], trial: Any) -> str:
    """pass: kept in fp32 by the final engine; fail: its build failed or its error is unmeasurable;
    uncompared: stays in reduced precision."""
    if rec["chosen"]:
        return "pass"
    if trial is not None and trial.error is None:
        return "fail"
    return "uncompared"


def _column(c: Any) -> dict[str, Any]:
    return column(c.key, c.label, c.fmt, c.description)


#: a candidate's row panel: what the segment is (the labels once per table, values per row)
INFO_COLUMNS = (("segment", "segment", "text"), ("kind", "kind", "text"), ("order", "model order", "int"),
                ("taps", "taps", "text"), ("source", "source line", "text"), ("ops", "ops", "text"),
                ("nodes", "nodes in the segment", "text"), ("keep", "nodes kept in fp32 with it", "text"))


def _why(seg: Any, rec: dict[str, Any], alone: Any, steps: list[Any], before: float | None, n_ranked: int,
         low: str) -> str:
    """A segment's verdict in words, in its own panel: why the final engine keeps it in fp32 (the
    greedy round that chose it and what it did to the output error), or why not."""
    ranked = (f"alone in fp32 it ranked {alone.rank} of {n_ranked} (output nrmse {fmt(alone.error)})"
              if alone is not None and alone.rank is not None else None)
    if rec["chosen"]:
        for k, t in enumerate(steps):
            if t.added == seg.name:
                if k == 0:
                    text = (f"chosen in greedy round {t.round}: kept in fp32 it takes the largest output nrmse from "
                            f"{fmt(before)} (as built) to {fmt(t.error)}")
                else:
                    text = (f"chosen in greedy round {t.round}: added to {', '.join(x.added for x in steps[:k])}, it "
                            f"takes the largest output nrmse from {fmt(steps[k - 1].error)} to {fmt(t.error)}")
                return text + (f"; {ranked}" if ranked else "")
        return "kept in fp32 by the final engine" + (f"; {ranked}" if ranked else "")
    if alone is not None and alone.error is None:
        return f"its build failed or its error is unmeasurable: {rec['note'] or alone.reason or 'no reason recorded'}"
    if alone is None:
        return f"stays {low}: {rec['note'] or 'not swept'}"
    return f"stays {low}: no greedy round chose it; " + (ranked or "")


def repair_view(report: Any) -> dict[str, Any]:
    r = report
    cols = table_columns()
    ranked = {t.added: t for t in r.ranking()}
    outputs = list(dict.fromkeys(k for t in ranked.values() for k in t.outputs))
    panel = ([column(f"{k}.nrmse", f"{k} nrmse", "num") for k in outputs]
             + [column("output_nrmse", "largest output nrmse", "num"), column("gain", "gain", "num"),
                column("seconds", "build + verify s", "num")])
    low = _PRECISION.get(r.engine, r.engine)
    steps = r.steps()
    rows = []
    for rec in r.records():
        seg = r.segment(rec["segment"])
        t = ranked.get(seg.name)
        status = _status(rec, t)
        m = [(t.outputs.get(k) if t else None) for k in outputs] + [rec["output_nrmse"], rec["gain"], rec["seconds"]]
        names = ", ".join(seg.nodes[:12]) + (" …" if len(seg.nodes) > 12 else "")
        readers = len(set(seg.keep) - set(seg.nodes))
        keep = f"{len(seg.keep)}" + (f" (its {len(seg.nodes)} and {readers} that read its values)" if readers else "")
        info = {"segment": seg.name, "kind": seg.kind, "order": seg.order, "taps": ", ".join(seg.taps),
                "source": seg.source, "ops": ", ".join(f"{k} {v}" for k, v in seg.ops.items()),
                "nodes": f"{len(seg.nodes)}: {names}" if seg.nodes else "0", "keep": keep}
        rows.append({
            "id": seg.name, "status": status, "tap_status": None, "first_divergent": False,
            "node": None, "group": None, "note": rec["note"],
            "why": _why(seg, rec, t, steps, r.before, len(ranked), low),
            "cells": {c.key: (", ".join(rec[c.key]) if isinstance(rec[c.key], list) else rec[c.key]) for c in cols},
            "info": [info[k] for k, _, _ in INFO_COLUMNS],
            # no histogram: a candidate is a whole build; its numbers are in the metrics panel
            "samples": [{"key": "all", "label": "alone in fp32", "hist": False, "m": m}],
            "default_sample": "all"})
    ranking = r.ranking()
    by_id = {x["id"]: x["status"] for x in rows}
    steps_x = ["as built"] + [f"+ {t.added}" for t in r.steps()]
    steps_y = [r.before] + [t.error for t in r.steps()]
    steps_status = ["fail" if not (r.baseline and r.baseline.met) else "pass"] + [
        "pass" if t.error is not None and t.error <= r.target_nrmse else "uncompared" for t in r.steps()]
    if r.final is not None and r.final is not r.baseline:
        steps_x.append("final build")
        steps_y.append(r.final.error)
        steps_status.append("pass" if r.final.met else "fail")
    bars = {
        "title": "Largest output nrmse with each segment alone in fp32 (round 1, best first)",
        "x": [t.added for t in ranking], "y": [t.error for t in ranking],
        "status": [by_id.get(t.added, "uncompared") for t in ranking],
        "ylabel": "output nrmse", "log": True,
        "lines": [{"label": f"target {r.target_nrmse:g}", "y": r.target_nrmse, "color": "#c62828", "dash": "dash"},
                  {"label": "as built", "y": r.before, "color": "#616161", "dash": "dot"}],
        "steps": {"title": "Output nrmse as segments are added (greedy rounds) and on the final build",
                  "x": steps_x, "y": steps_y, "status": steps_status},
        "caption": "green: kept in fp32 by the final engine; grey: stays " + low + "; red: build failed or "
                   "unmeasurable; click a bar to open its row",
    }
    n_chosen, n_all = len(r.chosen), len(r.segments)
    verdict = {"met": "met", "already-met": "already met", "not-met": "not met"}.get(r.status, r.status)
    badges = [badge("engine", r.engine), badge("target nrmse", r.target_nrmse),
              badge("result", verdict, "pass" if r.met else "fail"),
              badge("before", r.before), badge("after", r.after, "pass" if r.met else "fail"),
              badge("kept in fp32", f"{n_chosen} of {n_all} segments"),
              badge("builds", r.builds if r.budget is None else f"{r.builds} (budget {r.budget})"),
              badge("seconds", r.seconds), badge("workers", f"{r.workers} ({r.executor})")]
    # the verdict, the segments kept and the rebuild command are the finding (no red bullets for a
    # result met): the notes are warnings only; where the final build lies goes in the subtitle
    notes = list(r.warnings)
    where = (f"final build {r.final.build} · verify run {r.final.verify_run}"
             if r.final is not None and r.final.build and r.final is not r.baseline else None)
    return {
        "kind": "repair", "schema": VIEW_SCHEMA, "finding": finding_view(r, lambda n: n if n in by_id else None),
        "title": f"Repair · {Path(r.onnx).name} on {r.engine}, target nrmse {r.target_nrmse:g}",
        "subtitle": " · ".join(x for x in (r.created, str(r.path) if r.path else None, where) if x),
        "status": "pass" if r.met else "fail", "badges": [b for b in badges if b["value"] is not None],
        "notes": [n for n in notes if n],
        "tabs": [{"id": "table", "label": "Ranking"}, {"id": "bars", "label": "Error per segment"}],
        "table": {"title": "Segments ranked by the output error left with each alone in fp32",
                  "columns": [_column(c) for c in cols], "rows": rows, "first_divergent": None,
                  "panel_columns": panel,
                  "info_columns": [column(k, label, fmt) for k, label, fmt in INFO_COLUMNS],
                  "filter_label": "failed builds only",
                  # n / p go from kept segment to kept segment; counts and messages say "segments"
                  "jump_status": "pass", "jump_label": "kept", "row_noun": "segment",
                  "rule": f"each candidate build keeps one segment in fp32, the rest in {low}; the final "
                          f"engine keeps {n_chosen} of {n_all} (built and verified again on its own)",
                  "status_labels": {"pass": "kept in fp32", "uncompared": "stays " + low, "fail": "failed"},
                  "hist_title": "segment"},
        "graphs": [], "nodes": {}, "hazards": [], "log": None, "profile": None,
        "bars": bars,
    }
