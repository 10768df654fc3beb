"""View dict of a CompareReport: one table with a column group per run (engine) and a change group per
run against the baseline, and a side panel that shows every run's metrics and histograms together.

The table is the verify table's structure (``verify_view``): the same rows hooks, and columns taken
from the registry (``leapp_lab.model.columns``): identity columns once, the per-side table columns
once per side (``group`` = the side's key), then per non-baseline side its verdict flip and, for each
numeric per-side table column, the ratio to the baseline (magnitudes) or the difference (cosine).
The numbers are the report's (``CompareRow.changes``); nothing is computed here.

Compare-only keys (extensions/leapp_view.js draws them in its compare section)::

    table.groups = [{key, label, title, kind: side|change}]
    column.group = a group key;  column.type "verdict" (a side's verdict) | "flip" (to-fail | to-pass)
    table.filter_key = "flip" (the filter keeps rows whose row[filter_key] is set), filter_id = "flipped"
    Row.attrs = {data-leapp-flip, data-leapp-first-divergent-in, data-leapp-missing-in}
    Row.flip, Row.sides = {side: {status, tap_status, first_divergent}}
    Row.samples[i] = {key, label, sides: {side: {hist, present, note}},
                      metrics: {head: [str], rows: [{label, cells: [[value, fmt]]}]}}
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from leapp_lab.model.columns import panel_columns, table_columns
from leapp_lab.model.compare import RATIO_FMTS, change_columns, identity_columns
from leapp_lab.model.hist import Hist

from .verify_view import _column, _tap_status, page_note
from .finding import finding_view
from .viewdict import VIEW_SCHEMA, badge, hist_dict

def beyond_words(dtype: str) -> str:
    """``beyond what int8 rounding explains`` (ExpectedRule.headline, from a side's dtype)."""
    return "beyond what " + ("int8 rounding" if dtype == "int8" else f"{dtype} precision") + " explains"


STATUS_LABELS = {"fail": "diverged", "pass": "ok", "uncompared": "not judged", "absent": "absent"}
FLIP_WORDS = {"to-fail": "pass → fail", "to-pass": "fail → pass"}


def _split_columns(report: Any = None) -> tuple[list, list, list]:
    """(identity columns before the first per-side column, per-side table columns, identity after).
    A column that only some runs computed (``--local``, ``--expected``) is shown when any run has it."""
    ident = {c.key for c in identity_columns()}
    reports = [s.report for s in getattr(report, "sides", []) if s.report is not None]
    cols = [c for c in table_columns() if c.needs is None or not reports
            or any(getattr(r, c.needs, None) for r in reports)]
    first = next((i for i, c in enumerate(cols) if c.key not in ident), len(cols))
    return ([c for c in cols[:first] if c.key in ident], [c for c in cols if c.key not in ident],
            [c for c in cols[first:] if c.key in ident])


def _change_group(report: Any, s: Any) -> str:
    return f"{s.key}-{report.baseline.key}"


def _columns(report: Any) -> tuple[list[dict], list[dict]]:
    head, per_side, tail = _split_columns(report)
    base = report.baseline
    changed = {c.key for c in change_columns()}
    columns = [_column(c) for c in head]
    groups = []
    for s in report.sides:
        groups.append({"key": s.key, "kind": "side", "title": s.title,
                       "label": s.key if s.label == s.key else f"{s.key} · {s.label}"})
        for c in per_side:
            # a run's columns stay in its group: only the row's identity (head) is pinned
            columns.append({**_column(c), "pinned": False, "key": f"{s.key}.{c.key}", "group": s.key,
                            "type": "verdict" if c.key == "status" else c.fmt,
                            "description": f"{s.label}: {c.description}"})
    for s in report.sides[1:]:
        g = _change_group(report, s)
        groups.append({"key": g, "kind": "change", "label": f"change {s.key} vs {base.key}",
                       "title": f"{s.label} against the baseline {base.label}"})
        columns.append({"key": f"{s.key}.flip", "label": "verdict", "type": "flip", "group": g,
                        "description": f"verdict flipped: pass in {base.key} → fail in {s.key} or back"})
        for c in per_side:
            if c.key not in changed:
                continue
            if c.fmt in RATIO_FMTS:
                columns.append({"key": f"{s.key}.{c.key}.ratio", "label": f"{c.label} ×", "type": "x",
                                "group": g, "description": f"{s.key} / {base.key}: {c.description}"})
            else:
                columns.append({"key": f"{s.key}.{c.key}.delta", "label": f"{c.label} Δ", "type": "num",
                                "group": g, "description": f"{s.key} − {base.key}: {c.description}"})
    columns += [_column(c) for c in tail]
    return compact(columns), groups


#: what a compare view shows when it opens (Deliver 2 of issue 21): the row's model order and name,
#: per run a compact group (its verdict and nrmse), per change group the flip and the nrmse ratio;
#: every other column (the full metrics of each run) is behind the "columns" control
COMPACT_KEYS = ("order", "name")
COMPACT_SIDE = ("status", "nrmse", "flip", "nrmse.ratio", "nrmse.delta")


def compact(columns: list[dict]) -> list[dict]:
    """``columns`` with everything but the compact ones hidden (the text table keeps them all)."""
    out = []
    for c in columns:
        keep = (c["key"] in COMPACT_KEYS if c.get("group") is None
                else c["key"].partition(".")[2] in COMPACT_SIDE)
        out.append(c if keep else {**c, "hidden": True})
    return out


def _aligned(hists: dict[str, Any]) -> dict[str, Any]:
    """The sides' histograms on one bin range (zero-padded), so their plots share the x axis."""
    spans = [(h.first_bin, h.first_bin + len(h.counts)) for h in hists.values() if h is not None and h.counts]
    if not spans:
        return {k: hist_dict(h) for k, h in hists.items()}
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    out = {}
    for k, h in hists.items():
        if h is None:
            out[k] = None
            continue
        counts = [0] * (hi - lo)
        counts[h.first_bin - lo: h.first_bin - lo + len(h.counts)] = h.counts
        out[k] = hist_dict(Hist(h.zero, lo, counts))
    return out


def _samples(report: Any, row: Any) -> list[dict]:
    sides = report.sides
    cells = {s.key: report.cell(row.name, s.key) for s in sides}
    keys = sorted({sm.sample for c in cells.values() if c is not None for sm in c.samples})
    n = max((len(c.samples) for c in cells.values() if c is not None), default=0)
    pcols = panel_columns()
    out = []
    for key in ["all", *map(str, keys)]:
        recs = {}
        for s in sides:
            c = cells[s.key]
            if c is None:
                recs[s.key] = None
            elif key == "all":
                recs[s.key] = c
            else:
                recs[s.key] = next((sm for sm in c.samples if sm.sample == int(key)), None)
        hists = _aligned({k: (m.hist if m is not None else None) for k, m in recs.items()})
        head = ["metric", *(s.key for s in sides)]
        changes = key == "all"
        if changes:
            for s in sides[1:]:
                head += [f"{s.key} − {report.baseline.key}", f"{s.key} / {report.baseline.key}"]
        rows = []
        for c in pcols:
            vals = [[getattr(recs[s.key], c.key) if recs[s.key] is not None else None, c.fmt] for s in sides]
            if changes:
                for s in sides[1:]:
                    ch = row.changes.get(s.key, {}).get(c.key)
                    vals += [[ch.delta if ch else None, "num"],
                             [ch.ratio if ch else None, "x"]]
            rows.append({"label": c.label, "cells": vals})
        out.append({"key": key, "label": f"all {n} samples" if key == "all" else f"sample {key}",
                    "sides": {s.key: {"present": recs[s.key] is not None, "hist": hists[s.key],
                                      "note": cells[s.key].note if cells[s.key] is not None else
                                      f"no row {row.name!r} in {s.key} ({s.label})"} for s in sides},
                    "metrics": {"head": head, "rows": rows}})
    return out


def _row(report: Any, r: Any, columns: list[dict], panel: bool = True) -> dict[str, Any]:
    """One table row; ``panel=False`` leaves out what only the side panel needs (samples, info)."""
    sides = report.sides
    cells_by_side = {s.key: report.cell(r.name, s.key) for s in sides}
    taps = {k: (_tap_status(c) if c is not None else "absent") for k, c in cells_by_side.items()}
    cells: dict[str, Any] = {}
    for col in columns:
        side, _, rest = col["key"].partition(".")
        if col.get("group") is None:
            cells[col["key"]] = getattr(r, col["key"])
        elif col["type"] == "verdict":
            cells[col["key"]] = r.verdicts.get(side)
        elif col["type"] == "flip":
            cells[col["key"]] = r.flips.get(side)
        elif rest.endswith((".ratio", ".delta")):
            metric, _, part = rest.rpartition(".")
            ch = r.changes.get(side, {}).get(metric)
            cells[col["key"]] = getattr(ch, part) if ch is not None else None
        else:
            c = cells_by_side[side]
            cells[col["key"]] = getattr(c, rest) if c is not None else None
    last = sides[-1].key
    # a diff's row is coloured by what run B says now (a fail → pass row is green, not red beside its
    # green flip); an engines compare's by the worst run
    status = (r.verdicts[last] if report.mode == "diff" and r.verdicts.get(last) in ("pass", "fail")
              else r.status)
    row = {"id": r.name, "status": status, "cells": cells,
           "sides": {s.key: {"status": r.verdicts.get(s.key), "tap_status": taps[s.key],
                             "first_divergent": s.key in r.first_divergent_in} for s in sides}}
    if not panel:
        return row
    base = report.baseline.key
    info = [["kind", r.kind], ["model order", r.order], ["reference from", r.reference_source],
            ["source line", r.source], ["producer", f"{r.producer_op or '?'} {r.producer_node or ''}".strip()],
            ["tensor", r.tensor]]
    info += [[s.key if s.label == s.key else f"{s.key} ({s.label})", taps[s.key] + (" · first divergent" if s.key in r.first_divergent_in else "")]
             for s in sides]
    info += [[f"{k} vs {base}", FLIP_WORDS[v]] for k, v in r.flips.items()]
    if r.missing_in:
        info.append(["missing in", ", ".join(r.missing_in)])
    tap_set = set(taps.values())
    attrs = {"data-leapp-flip": r.flip,
             "data-leapp-first-divergent-in": " ".join(r.first_divergent_in) or None,
             "data-leapp-missing-in": " ".join(r.missing_in) or None}
    return {**row, "tap_status": tap_set.pop() if len(tap_set) == 1 else "mixed",
            "first_divergent": False, "node": None, "group": None,
            "attrs": {k: v for k, v in attrs.items() if v}, "flip": r.flip,
            "info": info, "samples": _samples(report, r), "default_sample": "all"}


def _opening_row(report: Any) -> str | None:
    """The row the view opens on: the first flip to fail, else to pass, else the last run's first
    divergent row."""
    for to in ("to-fail", "to-pass"):
        names = report.to_fail if to == "to-fail" else report.to_pass
        if names:
            return names[0]
    last = report.sides[-1].first_divergent
    return last if any(r.name == last for r in report.rows) else None


def compare_view(report: Any) -> dict[str, Any]:
    columns, groups = _columns(report)
    rows = [_row(report, r, columns) for r in report.rows]
    sides = report.sides
    n_fail, n_pass = len(report.to_fail), len(report.to_pass)
    badges = []
    for s in sides:
        if s.expected:
            # a run with an expectation leads with the rows beyond it (verify_view's lead)
            badges.append(badge(s.key, f"{s.label if s.label != s.key else s.build_name} · "
                                   f"{beyond_words(s.expected)}: {', '.join(s.beyond_expected) or 'nothing'}",
                                "fail" if s.beyond_expected else "pass"))
            continue
        badges.append(badge(s.key, f"{s.label if s.label != s.key else s.build_name} · first divergent "
                               f"{s.first_divergent or 'none'}", "fail" if s.first_divergent else "pass"))
    badges += [badge("flipped to fail", n_fail, "fail" if n_fail else "pass"),
               badge("flipped to pass", n_pass, "pass" if n_pass else None)]
    for s in sides:
        only = report.only_in(s.key)
        if only:
            badges.append(badge(f"only in {s.key}", len(only)))
    if report.exit_code or report.fail_on_flip:
        badges.append(badge("exit", report.exit_code, "fail" if report.exit_code else "pass"))
    rules = {s.rule for s in sides}
    rule = ("status per run: " + (rules.pop() if len(rules) == 1 else
                                  "; ".join(f"{s.key}: {s.rule}" for s in sides)))
    status = "fail" if (report.exit_code or n_fail or any(s.first_divergent for s in sides)) else "pass"
    if report.mode == "diff":
        title = f"Diff · A {sides[0].build_name} → B {sides[1].build_name}"
    else:
        ref = Path(sides[0].reference).name if sides[0].reference else "reference"
        title = f"Engines · {' · '.join(s.label for s in sides)} vs {ref}"
    notes = [page_note(w) for w in report.warnings]
    return {
        "kind": "compare", "schema": VIEW_SCHEMA, "title": title,
        "finding": finding_view(report, lambda n: n if n in {x["id"] for x in rows} else None),
        "subtitle": " · ".join(x for x in (report.created, str(report.path) if report.path else None) if x),
        "status": status, "badges": [b for b in badges if b["value"] is not None], "notes": notes,
        "tabs": [{"id": "table", "label": "Compare"}],
        "table": {"title": "Outputs and taps in model order, per run (|engine − reference|)",
                  "columns": columns, "groups": groups, "rows": rows,
                  "first_divergent": _opening_row(report),
                  "filter_label": "flipped only", "filter_key": "flip", "filter_id": "flipped",
                  "rule": rule, "status_labels": STATUS_LABELS, "flip_labels": FLIP_WORDS,
                  "hist_title": "|engine − reference|"},
        "graphs": [], "nodes": {}, "hazards": [], "log": None, "profile": None,
    }
