"""Plain-text lines for the deep-check sections of one graph (``str(report)``, ``leapp-lab run``).

Reads the sections only; every number was computed by the check."""
from __future__ import annotations

from typing import Any

from leapp_lab.model.finding import plural
from leapp_lab.model.sections import SECTION_NAMES
from leapp_lab.model.numfmt import fmt


def _g(x: Any) -> str:
    return fmt(x)       # the one number format (model/numfmt.py): "–" when missing


def _head(name: str, sec: Any) -> str:
    return f"  {name}: {sec.status.upper()}"


def _replay(sec: Any) -> list[str]:
    # a failed replay names the tier that failed (sec.tier is the highest that ran: "a" when b raised)
    tier = next((r.tier for r in sec.runs() if r.status == "failed"), None) if sec.status == "failed" else None
    tier = tier or sec.tier
    L = [_head("replay", sec) + (f" (tier {tier})" if tier else "")
         + (f": {sec.reason}" if sec.reason and sec.status in ("unavailable", "failed") else "")]
    for run in sec.runs():
        what = "closed loop over the captured steps" if run.tier == "a" else "fresh observations"
        head = f"    tier ({run.tier}) {what}: {run.steps} steps"
        if run.resets:
            head += f", resets at {', '.join(map(str, run.resets))}"
        if run.status in ("unavailable", "failed"):
            L.append(f"{head}: {run.status} ({run.reason})")
            continue
        fd = run.first_divergent
        if fd is None:
            worst = max((o.max_abs for o in run.outputs if o.max_abs is not None), default=None)
            L.append(f"{head}: ok (max |diff| {_g(worst)})")
        else:
            o = next((x for x in run.outputs if x.output == fd["output"]), None)
            L.append(f"{head}: DIVERGES at step {fd['step']} on {fd['output']}"
                     + (f" (max |diff| {_g(o.max_abs)} at step {o.max_step}{', grows' if o.grows else ''})"
                        if o is not None and o.max_abs is not None else ""))
        for n in run.notes:
            L.append(f"      {n}")
    for e in getattr(sec, "engines", None) or []:
        L.extend(_engine(e))
    return L


def _engine(e: Any) -> list[str]:
    """One engine of the replay: where the nodes ran, each sequence, its notes (the trend, own vs
    inherited error, the worst element)."""
    nodes = ", ".join(f"{n.node} on {n.runs_on}" for n in e.nodes)
    L = [f"    on {e.engine}: {e.status.upper()}" + (f" ({nodes})" if nodes else "")
         + (f": {e.reason}" if e.reason and e.status in ("failed", "unavailable") else "")]
    for run in e.runs():
        what = "captured steps" if run.tier == "a" else "fresh observations"
        head = f"      tier ({run.tier}) {what}: {run.steps} steps"
        if run.resets:
            head += f", resets at {', '.join(map(str, run.resets))}"
        if run.status in ("unavailable", "failed"):
            L.append(f"{head}: {run.status} ({run.reason})")
            continue
        fd = run.first_divergent
        L.append(f"{head}: " + ("ok" if fd is None else f"beyond nrmse {e.max_nrmse:g} from step {fd['step']} on {fd['output']}"))
        for n in run.notes:
            L.append(f"        {n}")
    for n in getattr(e, "notes", None) or []:     # across the tiers (fresh vs recorded: the calibration)
        L.append(f"      {n}")
    if e.taps is not None:
        L.append("      " + taps_line(e.taps))
    return L


def taps_line(t: Any) -> str:
    """``taps of policy over 12 steps (tier a): first beyond nrmse 0.01 at step 0, tap c_next; ...``"""
    head = f"taps of {t.node} over {len(t.steps)} steps (tier {t.tier}, {plural(len(t.taps), 'tap')})"
    if not t.taps:
        return head + (f": {t.note}" if t.note else ": none compared")

    if not t.first and not t.first_local:       # was "first beyond nrmse 0.01 at none; local ...: none"
        return (f"{head}: every tap within nrmse {fmt(t.max_nrmse)} at every step, from its own state and "
                f"from the fp32 state" + (f"; {t.note}" if t.note else ""))

    def first(f: Any) -> str:
        return f"step {f['step']}, tap {f['tap']}" if f else "none"
    return (f"{head}: first beyond nrmse {fmt(t.max_nrmse)} at {first(t.first)}; "
            f"local (from the fp32 state): {first(t.first_local)}" + (f"; {t.note}" if t.note else ""))


def _parity(sec: Any) -> list[str]:
    if sec.status in ("unavailable", "failed"):
        return [_head("parity", sec) + f": {sec.reason}"]
    L = [_head("parity", sec) + f" ({sec.n} fresh inputs, seed {sec.seed})"]
    for o in sec.outputs:
        L.append(f"    {o.output}: {o.failed}/{o.samples} fail, max |diff| {_g(o.max_abs)}"
                 + (f" (input {o.worst_sample})" if o.worst_sample is not None else ""))
    L.extend(f"      {n}" for n in sec.notes)
    return L


def _adapters(sec: Any) -> list[str]:
    if sec.status in ("unavailable", "failed"):
        return [_head("adapters", sec) + f": {sec.reason}"]
    L = [_head("adapters", sec)]
    for a in sec.adapters:
        bad = sum(c.passed is False for c in a.cases)
        state = "no cases" if not a.cases else (f"FAIL {bad}/{len(a.cases)} cases" if bad else f"pass {len(a.cases)} cases")
        L.append(f"    {a.function} <- {a.replacement}: {state}, max |diff| {_g(a.max_abs)}"
                 + (f" (worst: {a.worst_case})" if bad else "") + (f"; {a.error}" if a.error else ""))
    return L


def _exporters(sec: Any) -> list[str]:
    if sec.status in ("unavailable", "failed"):
        return [_head("exporters", sec) + f": {sec.reason}"]
    L = [_head("exporters", sec) + f" (the body ran again {sec.reruns} times; advice only)"]
    for n in sec.nodes:
        cells = [f"{a.backend}{'*' if a.current else ''} {a.outcome}" for a in sec.attempts if a.node == n]
        L.append(f"    {n}: {', '.join(cells)}")
    for a in sec.advice:
        L.append(f"    - {a}")
    return L


def _isolation(sec: Any) -> list[str]:
    if sec.status in ("unavailable", "failed"):
        return [_head("isolation", sec) + f": {sec.reason}"]
    L = [f"  isolation: decision {str(sec.decision).upper()} (row {sec.rule}; the body ran again "
         f"{sec.reruns} times): {sec.explanation}"]
    for r in sec.runs:
        if not r.ran:
            L.append(f"    {r.label}: not run ({r.note})")
            continue
        L.append(f"    {r.label}: {r.status}, verdict {r.verdict}, {len(r.failing)} failing, "
                 f"{len(r.fx_mismatch)} FX≠recorded" + ("" if r.same_trace is None else
                                                        f", same trace: {'yes' if r.same_trace else 'no'}"))
    return L


_RENDER = {"replay": _replay, "parity": _parity, "adapters": _adapters, "exporters": _exporters,
           "isolation": _isolation}


def render_sections(graph: Any) -> list[str]:
    out = []
    for name in SECTION_NAMES:
        sec = graph.section(name) if hasattr(graph, "section") else None
        if sec is None or sec.status == "skipped":
            continue
        out.extend(_RENDER[name](sec))
    return out
