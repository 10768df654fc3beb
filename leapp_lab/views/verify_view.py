"""View dict of a VerifyReport: the accuracy table (one row per output and tap, in model order),
per-sample histograms, and the error-growth profile over taps."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from leapp_lab.model.columns import JUMP_RANKS, WORST_RANKS, panel_columns, profile_columns, table_columns
from leapp_lab.model.numfmt import fmt

from .engine_graph_view import engine_graph_view
from .finding import finding_view
from .viewdict import VIEW_SCHEMA, badge, column, elements_dict, hist_dict


def row_status(r: Any) -> str:
    """pass | fail | uncompared under the report's divergence rule (docs/verify.md).

    Rows the rule does not judge (no reference, not in the engine, shape or dtype mismatch, or a row
    that compares onnxruntime with itself) are ``uncompared``; ``data-leapp-tap-status`` carries
    the exact status.
    """
    return r.verdict


def row_tone(report: Any, r: Any) -> str | None:
    """The colour of a divergent row, the same rule as the finding's (Deliver 3 of issue 21):
    ``fail`` (red) a defect the finding names, ``warn`` (amber) diverged but within what precision
    explains: with an expectation, a row not beyond it; with local error, a row that only inherits
    (its own error within the rule). None for a row that does not diverge."""
    if row_status(r) != "fail":
        return None
    if report.expected is not None:
        return "fail" if r.beyond_expected else "warn"
    if report.local and r.local_nrmse is not None:
        return "fail" if r.locally_diverged else "warn"
    return "fail"


def amber_why(report: Any, r: Any, words: dict[str, str]) -> str | None:
    """An amber row's verdict in words (the side panel and the status tooltip): the reason words,
    then why it is amber, not red. None for any other row (its reason words say it all)."""
    if row_tone(report, r) != "warn":
        return None
    base = "; ".join(words.get(k, k) for k in (r.reason or "").split(", ") if k)
    if report.expected is not None:
        tail = f"within what {report.expected.dtype} precision explains (not beyond the expected drift)"
    else:
        tail = (f"inherited: its own error (local NRMSE {fmt(r.local_nrmse)}) is within the rule, "
                "so it comes from the rows before it")
    return f"{base}; {tail}" if base else tail


def _tone_of(report: Any, name: str | None, none: str | None = "pass") -> str | None:
    """A badge naming a row takes that row's colour (``none`` when it names none)."""
    row = next((r for r in report.rows if r.name == name), None) if name else None
    return none if row is None else (row_tone(report, row) or "pass")


def _local_badge(report: Any) -> tuple[str, str | None]:
    """The label and title of the "largest local error" badge. ``worst_local`` ranks taps first; a
    model output whose own error is larger (the layers after the last tap, which the finding may
    name) makes the badge say so, so it never calls a tap the largest while the finding names more."""
    w = next((r for r in report.rows if r.name == report.worst_local), None) if report.worst_local else None
    if w is None or report.expected is not None or not w.is_tap or w.local_nrmse is None:
        return "largest local error", None
    more = [r for r in report.rows if not r.is_tap and r.in_rule and r.local_nrmse is not None
            and r.local_nrmse > w.local_nrmse]
    if not more:
        return "largest local error", None
    o = max(more, key=lambda r: r.local_nrmse)
    return ("largest local error (taps)",
            f"the tap with the largest local error; {o.name}, a model output (the layers after the last tap), "
            f"adds more of its own: local NRMSE {fmt(o.local_nrmse)} against {fmt(w.local_nrmse)}")


def _local_key(key: str) -> str:
    """The rule's metric a local column is judged by (``local_nrmse`` -> ``nrmse``)."""
    return key[len("local_"):] if key.startswith("local_") else key


def limit(thresholds: dict, key: str) -> tuple:
    """(limit, side) of column ``key``: its own (``local_excess``: the expectation's factor), else
    the rule's limit on the metric a local column is judged by; (None, "above") when none."""
    return thresholds.get(key) or thresholds.get(_local_key(key), (None, "above"))


_limit = limit


def _tap_status(r: Any) -> str:
    return "self-compare" if r.status == "compared" and r.self_compare else r.status


#: the table's columns that stay left while the table scrolls sideways
PINNED = ("name", "status")
#: what a row's histogram shows, and its bar of non-finite pairs (the view and the figures)
HIST_TITLE = "|engine − reference|"
NONFINITE_LABEL = "non-finite pairs (left out of every metric)"
#: the cells the search box looks in (besides the status label and the row's op · scope line)
SEARCH_KEYS = ("name", "scope", "kind", "status", "reason")
#: a row's side panel, besides its metrics: (key, label, format) of the "info" values
INFO_COLUMNS = (("kind", "kind", "text"), ("order", "model order", "int"), ("status", "status", "text"),
                ("reason", "why", "text"), ("scope", "scope", "text"), ("producer", "producer", "text"),
                ("source", "source line", "text"), ("producer_source", "computed at", "text"),
                ("reference_source", "reference from", "text"), ("tensor", "tensor", "text"),
                ("shapes", "shape engine / reference", "text"), ("dtypes", "dtype engine / reference", "text"),
                ("growth", "growth vs previous", "x"), ("flags", "flags", "text"),
                ("local", "local error", "text"), ("expected", "expected drift", "text"),
                ("meaning", "meaning (kind, unit)", "text"))


_VERBOSE = re.compile(r"missing in the (reference|sample output)(.*?) \(--verbose lists them\)")


def page_note(warning: str) -> str:
    """A verify warning as a page says it: the rows it counts are in the table (no CLI advice)."""
    def rows(m: re.Match) -> str:
        status = "no-reference" if m.group(1) == "reference" else "not-in-engine"
        return f"missing in the {m.group(1)}{m.group(2)}: the rows with status {status} (search status:{status})"
    return _VERBOSE.sub(rows, warning)


def _column(c: Any, hidden: bool = False) -> dict[str, Any]:
    return column(c.key, c.label, c.fmt, c.description, pinned=c.key in PINNED, hidden=hidden)


#: the columns a verify view shows first, by what the verify measured (the finding's columns lead:
#: Deliver 2 of issue 21); every other table column is behind the "columns" control
LEAD_PLAIN = ("nrmse", "reason", "cosine", "max_abs", "mape", "growth")
#: how many columns fit beside the side panel at 1400 px (name and status included)
LEAD_BUDGET = 7


def lead_columns(report: Any) -> list[str]:
    """The keys of the columns shown when the view opens, in order: the row (name, status), the
    columns the finding cites (beyond and the expected or excess it is judged by, local NRMSE and
    own share), then the plain metrics while there is room."""
    keys = ["name", "status"]
    if report.expected is not None:
        has_excess = any(getattr(r, "local_excess", None) is not None for r in report.rows)
        keys += ["beyond_expected", "nrmse", "sim_excess" if getattr(report, "sim", False) else
                 "local_excess" if has_excess else "expected_nrmse"]
    if report.local:
        keys += ["local_nrmse", "local_share"]
    for k in LEAD_PLAIN:
        if len(keys) >= LEAD_BUDGET - (1 if report.local or report.expected is not None else 0):
            break
        if k not in keys:
            keys.append(k)
    return keys


def view_columns(report: Any) -> list[dict[str, Any]]:
    """The table's columns: ``lead_columns`` first, in that order, then the rest hidden."""
    cols = {c.key: c for c in table_columns(report)}
    lead = [k for k in lead_columns(report) if k in cols]
    return [_column(cols[k]) for k in lead] + [_column(c, hidden=True) for k, c in cols.items() if k not in lead]


def _inputs(report: Any, sample: int) -> list[dict[str, Any]]:
    return [{"name": i.name, "shape": i.shape, "dtype": i.dtype, "range": i.range, "index": i.sample,
             "file": i.file} for i in report.sample_inputs(sample)]


def _sub(r: Any) -> str | None:
    """What the row is, beside its name: the op and the module scope that computed it."""
    parts = [x for x in (r.producer_op, r.scope) if x]
    return " · ".join(parts) or None


def _info(r: Any, words: dict[str, str], report: Any = None) -> list[Any]:
    dtype = report.expected.dtype if report is not None and report.expected is not None else ""
    flags = [n for n, on in (("worst", r.worst), ("largest jump", r.largest_jump),
                             ("exceeds --max-mape", r.exceeded),
                             ("first locally divergent", r.first_locally_divergent),
                             ("largest local error", report is not None and report.local and r.name == report.worst_local),
                             (f"beyond expected {dtype} drift", r.beyond_expected)) if on]
    why = "; ".join(words.get(k, k) for k in (r.reason or "").split(", ") if k) or None
    values = {"kind": r.kind, "order": r.order, "status": _tap_status(r), "reason": why, "scope": r.scope,
              "producer": f"{r.producer_op or '?'} {r.producer_node or ''}".strip(), "source": r.source,
              "producer_source": r.producer_source, "reference_source": r.reference_source,
              "tensor": r.tensor, "shapes": f"{r.shape_engine} / {r.shape_reference}",
              "dtypes": f"{r.dtype_engine} / {r.dtype_reference}", "growth": r.growth,
              "flags": ", ".join(flags) or None, "local": r.local_note, "expected": r.expected_note,
              "meaning": r.meaning}
    return [values[k] for k, _, _ in INFO_COLUMNS]


def profile_view(report: Any) -> dict[str, Any] | None:
    """The error-growth profile of the view dict: the rows the rule judges, in model order."""
    status_by_id = {r.name: row_status(r) for r in report.rows}
    prof = report.profile()
    if not prof:
        return None
    names = [p.name for p in prof]
    thresholds = report.thresholds()      # the rule's own limits: drawn, never restated
    local = report.first_locally_divergent        # set when the verify measured local error
    beyond = report.first_beyond_expected
    keys = [c.key for c in profile_columns(report)]
    return {
        "x": names,   # row ids, in model order
        "status": [status_by_id.get(p.name, "pass") for p in prof],
        "tone": [row_tone(report, p) for p in prof],
        "scope": [p.scope for p in prof],
        "reason": [p.reason for p in prof],
        "nonfinite": [p.nonfinite for p in prof],
        "first_divergent_index": names.index(report.first_divergent) if report.first_divergent in names else None,
        "first_local_divergent_index": names.index(local) if local in names else None,
        "first_beyond_expected_index": names.index(beyond) if beyond in names else None,
        "beyond_label": report.expected.headline() if report.expected is not None else None,
        "default": "nrmse" if "nrmse" in keys else keys[0],
        "series": [{"key": c.key, "label": c.label, "y": [getattr(p, c.key) for p in prof], "log": c.log,
                    "type": c.fmt, "description": c.description,
                    # a local column is judged by the same rule (locally_diverged): its line and colours;
                    # local_excess by the expectation's factor (beyond_expected)
                    "threshold": _limit(thresholds, c.key)[0],
                    "worse": _limit(thresholds, c.key)[1],
                    **({"status": [None if p.local_excess is None else "fail" if p.beyond_expected else "pass"
                                   for p in prof]} if c.key == "local_excess" else
                       {"status": [None if p.sim_excess is None else "fail" if p.departs_sim else "pass"
                                   for p in prof]} if c.key == "sim_excess" else
                       {"status": [None if p.local_nrmse is None else "fail" if p.locally_diverged else "pass"
                                   for p in prof]} if c.key.startswith("local_") else {})}
                   for c in profile_columns(report)],
    }


def view_row(report: Any, r: Any, inputs: dict[str, list] | None = None,
             words: dict[str, str] | None = None) -> dict[str, Any]:
    """The view dict row of one VerifyRow (``inputs``: collects the samples' inputs, once each;
    ``words``: the rule's reason words, ``report.rule.reason_words()``)."""
    cols, panel = table_columns(report), panel_columns()
    words = words if words is not None else report.rule.reason_words()
    samples = [{"key": "all", "label": f"all {len(r.samples)} samples" if r.samples else "all samples",
                "hist": hist_dict(r.hist, r.nonfinite_pairs), "m": [getattr(r, c.key) for c in panel],
                "elements": elements_dict(r.elements, r.worst_element, r.meaning)}]
    for s in r.samples:
        key = str(s.sample)
        if inputs is not None and key not in inputs:
            inputs[key] = _inputs(report, s.sample)
        samples.append({"key": key, "label": f"sample {s.sample}",
                        "hist": hist_dict(s.hist, s.nonfinite_pairs), "m": [getattr(s, c.key) for c in panel]})
    return {"id": r.name, "status": row_status(r), "tap_status": _tap_status(r), "tone": row_tone(report, r),
            "local_status": None if r.local_nrmse is None else ("fail" if r.locally_diverged else "pass"),
            "first_divergent": bool(r.first_divergent), "node": None, "group": None, "sub": _sub(r),
            "reason": _reason(r, words), "note": r.note,
            **({"why": why} if (why := amber_why(report, r, words)) else {}),
            "cells": {c.key: _tap_status(r) if c.key == "status" else getattr(r, c.key) for c in cols},
            "info": _info(r, words, report),
            "samples": samples, "default_sample": "all"}


def _reason(r: Any, words: dict[str, str]) -> str | None:
    """The row's reason keys, and on a diverged output with a per-element breakdown one more key
    naming its worst element (its words go into ``words``, the table's ``reasons``)."""
    if not (r.worst_element and r.verdict == "fail"):
        return r.reason
    key = f"worst:{r.name}:{r.worst_element}".replace(",", ";")
    words[key] = f"worst element {r.worst_element}" + (f" ({r.meaning})" if r.meaning else "")
    return ", ".join(x for x in (r.reason, key) if x)


def verify_view(report: Any) -> dict[str, Any]:
    cols = table_columns(report)
    panel = panel_columns()
    words = report.rule.reason_words()
    inputs: dict[str, list] = {}
    # every row, the unpaired ones too (taps fused away or not in the engine, names without a
    # reference): each is a row with its status and reason, never only a note (status:not-in-engine)
    every = report.table(verbose=True)
    rows = [view_row(report, r, inputs, words) for r in every]
    profile = profile_view(report)
    n_fail = sum(x["status"] == "fail" for x in rows)
    n_cmp = sum(x["status"] != "uncompared" for x in rows)
    n_nonfinite = sum(1 for r in every if r.nonfinite)
    status = "fail" if (n_fail or report.exit_code) else "pass"
    shown = {x["id"] for x in rows}
    badges = [badge("engine", report.engine or "?"), badge("samples", report.samples),
              badge("rows judged", f"{n_cmp}/{len(rows)}"),
              badge("divergent", n_fail, "fail" if n_fail else "pass"),
              badge("first divergent", report.first_divergent or "none", _tone_of(report, report.first_divergent),
                    row=report.first_divergent if report.first_divergent in shown else None,
                    title="the first row in model order that the rule finds divergent (click: go to it)"),
              badge("worst (non-finite, then nrmse)", report.worst_tap,
                    row=report.worst_tap if report.worst_tap in shown else None, title="worst: " + WORST_RANKS),
              badge("largest jump (nrmse growth)", report.largest_jump,
                    row=report.largest_jump if report.largest_jump in shown else None,
                    title="largest jump: " + JUMP_RANKS),
              badge("non-finite rows", n_nonfinite, "fail" if n_nonfinite else None,
                    title="rows with NaN/Inf values on either side (left out of every metric)")]
    if report.local:
        local_label, local_title = _local_badge(report)
        badges += [badge("first locally divergent", report.first_locally_divergent or "none",
                         "fail" if report.first_locally_divergent else "pass",
                         row=report.first_locally_divergent if report.first_locally_divergent in shown else None,
                         title="the first row whose own (local) error crosses the rule (click: go to it)"),
                   badge(local_label, report.worst_local, _tone_of(report, report.worst_local, None),
                         row=report.worst_local if report.worst_local in shown else None, title=local_title)]
    if report.expected is not None:
        n_beyond = len(report.beyond_expected)
        # with an expectation its verdict comes first (the finding leads with it too): the first
        # divergent row is where every engine of that precision diverges
        badges.insert(0, badge(f"beyond expected {report.expected.dtype}",
                               f"{n_beyond} (first: {report.first_beyond_expected})" if n_beyond else "nothing",
                               "fail" if n_beyond else "pass", row=report.first_beyond_expected
                               if report.first_beyond_expected in shown else None,
                               title="rule: " + (report.expected.text or report.expected.describe())))
        if getattr(report, "sim", False):
            first = next((r.name for r in report.rows if r.departs_sim), None)
            badges.insert(1, badge("departs from its own int8 simulation at", first or "no row",
                                   "fail" if first else "pass", row=first if first in shown else None,
                                   title="the engine against the model rounded onto its own int8 grids, both "
                                         "fed the reference at the row's inputs: their rounding cancels"))
    if report.max_mape is not None:
        badge_status = "fail" if report.exceeded or report.exit_code else "pass"
        badges.append(badge("--max-mape", f"{report.max_mape}% → exit {report.exit_code}", badge_status))
    notes = [page_note(w) for w in report.warnings]
    if report.self_compare_note:
        notes.append(report.self_compare_note)
    rule = report.rule.text or report.rule.describe()
    title = report.build_name or Path(report.build).name or "build"
    graph = engine_graph_view(report)
    finding = finding_view(report, lambda n: n if n in shown else None)
    # with local error or an expectation the view opens on the row the finding names (the layer that
    # adds the error), not on the first divergent row every engine of that precision has
    opens = (finding["links"][0]["row"] if finding["links"] and (report.local or report.expected is not None)
             else None)
    return {
        "kind": "verify", "schema": VIEW_SCHEMA, "finding": finding,
        "title": f"Accuracy · {title} vs {Path(report.reference).name if report.reference else 'reference'}",
        "subtitle": " · ".join(x for x in (report.created, str(report.path) if report.path else None) if x),
        "status": status, "badges": [b for b in badges if b["value"] is not None], "notes": notes,
        "tabs": [{"id": "table", "label": "Accuracy"}, {"id": "profile", "label": "Error growth"}]
        + ([{"id": "graph", "label": "Graph"}] if graph is not None else []),
        "table": {"title": "Outputs and taps in model order (|engine − reference|)",
                  "columns": view_columns(report),
                  "panel_columns": [column(c.key, c.label, c.fmt, c.description) for c in panel],
                  "info_columns": [column(k, label, fmt) for k, label, fmt in INFO_COLUMNS],
                  "rows": rows, "first_divergent": report.first_divergent if report.first_divergent in
                  shown else None, **({"open": opens} if opens else {}),
                  "filter_label": "divergent only", "rule": "status: " + rule,
                  "status_labels": {"fail": "diverged", "pass": "ok", "uncompared": "not judged"},
                  "hist_title": HIST_TITLE,
                  "nonfinite_label": NONFINITE_LABEL,
                  "reasons": words,
                  "search_keys": list(SEARCH_KEYS) + (["worst_element"] if report.elements else [])},
        "inputs": inputs,
        "graphs": [], "nodes": {}, "hazards": [], "log": None,
        "profile": profile, "engine_graph": graph,
    }
