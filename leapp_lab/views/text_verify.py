"""Plain-text rendering of prepare, build and verify reports (terminals, ``str(report)``). Reads
fields only."""
from __future__ import annotations

from leapp_lab.model.columns import JUMP_RANKS, WORST_RANKS, table_columns

from .finding import lead
from .numfmt import fmt

_LEFT = ("text", "status", "bool")


def _largest_local(report) -> str:
    """``largest local error: X``; worst_local ranks taps first, so when a model output (the layers
    after the last tap) adds more of its own, the line says "(taps)" and names it with both values,
    as the view's badge does (it said 'largest local error: a_out' at 0.006 beside an output at 0.72)."""
    w = next((r for r in report.rows if r.name == report.worst_local), None) if report.worst_local else None
    if w is None or report.expected is not None or not w.is_tap or w.local_nrmse is None:
        return f"largest local error: {report.worst_local or 'none'}"
    more = [r for r in report.rows if not r.is_tap and r.in_rule and r.local_nrmse is not None
            and r.local_nrmse > w.local_nrmse]
    if not more:
        return f"largest local error: {w.name}"
    o = max(more, key=lambda r: r.local_nrmse)
    return (f"largest local error (taps): {w.name}; {o.name}, a model output (the layers after the last "
            f"tap), adds more of its own: local NRMSE {fmt(o.local_nrmse)} against {fmt(w.local_nrmse)}")


def _table(header: list[str], rows: list[list[str]], left: list[bool]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if lj else c.rjust(w)
                         for c, w, lj in zip(cells, widths, left)).rstrip()
    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]


def render_verify(report, verbose: bool | None = None) -> str:
    name = report.build_name or report.build
    lines = [f"verify [{name}] engine={report.engine or '?'}  samples={report.samples}  "
             f"reference={report.reference}"]
    cols = table_columns(report)
    body = []
    for r in report.table(verbose):
        mark = ">>" if r.first_divergent else ("!!" if r.exceeded else ("~ " if r.self_compare else "  "))
        cells = []
        for c in cols:
            v = getattr(r, c.key)
            if c.key == "status" and v != "compared":
                v = v.upper()
            cells.append(fmt(v, c.fmt))
        body.append([mark, *cells])
    # the last column (the source line) is left open-ended: no padding after it
    lines += _table(["", *(c.label for c in cols)], body, [True, *(c.fmt in _LEFT for c in cols)])
    rule = report.rule
    marks = [m for m, used in ((">> first divergent", report.first_divergent),
                               ("!! above --max-mape", report.exceeded),
                               ("~ ort compared with itself", report.self_compare_note)) if used]
    if marks:
        lines.append("   ".join(marks))
    lines.append("")
    lines.append(f"first divergent ({' or '.join(rule.criteria())}): {report.first_divergent or 'none'}")
    if report.worst_tap or report.largest_jump:
        lines.append(f"worst row ({WORST_RANKS}): {report.worst_tap or 'none'}")
        lines.append(f"largest jump ({JUMP_RANKS}): {report.largest_jump or 'none'}")
    if report.local:
        lines.append(f"first locally divergent (the same rule on each row's local error): "
                     f"{report.first_locally_divergent or 'none'}   {_largest_local(report)}")
    if report.expected is not None:
        ex = report.expected
        lines.append(f"beyond expected {ex.dtype} drift ({ex.text or ex.describe()}): "
                     + (", ".join(report.beyond_expected) if report.beyond_expected else "none"))
        if getattr(report, "sim", False):
            departs = [r for r in report.rows if r.departs_sim]
            lines.append(f"departs from its own int8 simulation at: "
                         f"{', '.join(r.name for r in departs) if departs else 'no row'}   largest sim excess "
                         f"(sim local nrmse / max(expected local nrmse, {fmt(ex.floor, 'num')})): "
                         f"{report.worst_local or 'none'}")
            unsim = [r for r in report.rows if r.in_rule and r.sim_note]
            for r in unsim[:3]:
                lines.append(f"  {r.name}: not judged by the simulation: {r.sim_note}")
            if len(unsim) > 3:
                lines.append(f"  ... {len(unsim) - 3} more rows not judged by the simulation")
        if any(r.local_excess is not None for r in report.rows):
            lines.append(f"largest local excess (local nrmse / max(expected local nrmse, "
                         f"{fmt(ex.floor, 'num')})): {report.worst_excess or 'none'}")
    if report.self_compare_note:
        lines.append(f"~ {report.self_compare_note}")
    mism = [r.name for r in report.rows if r.status == "shape-mismatch"]
    if mism:
        lines.append(f"shape mismatches: {len(mism)} row{'' if len(mism) == 1 else 's'} not compared (the engine "
                     f"value has another shape than the reference): {', '.join(mism)}")
    for r in report.table(verbose):
        if r.worst_element and r.verdict == "fail":
            lines.append(f"  {r.name}: {_worst_element(r)}")
        if r.note and (r.status != "compared" or r.exceeded):
            lines.append(f"  {r.name}: {r.note}")
        nf = r.nonfinite_engine + r.nonfinite_reference
        if nf:
            lines.append(f"  {r.name}: {r.nonfinite_engine} non-finite engine values, "
                         f"{r.nonfinite_reference} non-finite reference values (left out of the metrics)")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if report.max_mape is not None:
        scope = "outputs and taps" if report.max_mape_taps else "model outputs"
        if report.exceeded:
            row = {r.name: r for r in report.rows}
            over = [n for n in report.exceeded if n in row and row[n].status == "compared"
                    and row[n].mape is not None and row[n].mape > report.max_mape]
            unjudged = [f"{n} ({_unjudged(row[n])})" for n in report.exceeded if n in row and n not in over
                        and (row[n].status in ("compared", "dtype-unsupported"))]
            unchecked = [f"{n} ({row[n].status})" for n in report.exceeded if n in row and n not in over
                         and row[n].status not in ("compared", "dtype-unsupported") and not row[n].is_tap]
            misbound = [n for n in report.exceeded if n in row and row[n].is_tap
                        and row[n].status == "shape-mismatch"]
            if over:
                lines.append(f"FAIL: mape above --max-mape {report.max_mape:g}% ({scope}): "
                             + ", ".join(over))
            if unchecked:
                lines.append("FAIL: model outputs not compared, so not verified (is this the reference "
                             "of the model this build came from?): " + ", ".join(unchecked))
            if misbound:
                lines.append("FAIL: taps whose engine value has another shape than the reference (the "
                             "build bound them to another tensor: compile again), so not verified: "
                             + ", ".join(misbound))
            if unjudged:
                lines.append("FAIL: values that cannot be judged (a dtype that cannot be compared, no "
                             "finite value, NaN/Inf on one side), so not verified: " + ", ".join(unjudged))
        elif report.exit_code:
            lines.append("FAIL: --max-mape judged nothing (no model output was compared, or none "
                         "held a value: zero samples), so nothing was verified")
        else:
            lines.append(f"PASS: every judged mape <= --max-mape {report.max_mape:g}% ({scope})")
    if getattr(report, "metrics_backend", None):
        lines.append(f"metrics backend: {report.metrics_backend}")
    if report.path:
        lines.append(f"run folder: {report.path}")
    return lead(report, "\n".join(lines))


def _worst_element(r) -> str:
    """``worst element left_knee (max |diff| 0.616; target/joint/position, rad)``"""
    e = next((x for x in r.elements if x.name == r.worst_element), None)
    parts = [f"max |diff| {fmt(e.max_abs)}"] if e is not None and e.max_abs is not None else []
    parts += [r.meaning] if r.meaning else []
    return f"worst element {r.worst_element}" + (f" ({'; '.join(parts)})" if parts else "")


def _unjudged(r) -> str:
    if r.status != "compared":
        return r.status
    return "nothing finite" if r.mape is None else "non-finite on one side"


def render_build(report) -> str:
    lines = [f"build engine={report.engine}  artifact={report.artifact}  samples={report.samples}  "
             f"onnx={report.onnx}"]
    c = getattr(report, "cache", None)
    if c is not None and c.hit:
        lines.append(f"reused the build of {c.reused_from or 'the previous compile'}: nothing changed "
                     f"(cache key {(c.key or '')[:12]}; --force builds again)")
    if report.taps:
        body = [[t.name, t.kind, fmt(t.order, "int"), t.binding or "", t.via or "", t.source or ""]
                for t in report.taps]
        lines += _table(["tap", "kind", "order", "binding", "via", "source"], body,
                        [True, True, False, True, True, True])
        for t in report.taps:
            if t.binding_reason:
                lines.append(f"  {t.name}: {t.binding_reason}")
    ob = report.observer
    if ob.checked:
        agree = "agree" if ob.outputs_agree else "DIFFER"
        lines.append(f"observer effect: outputs with and without taps {agree}; "
                     + ("same kernels" if not ob.kernels_differ else
                        "kernels differ: " + ", ".join(map(str, ob.kernels_differ))))
        if ob.naive is not None and ob.naive.kernels_differ:
            lines.append("  (taps added before conversion would have changed: "
                         + ", ".join(map(str, ob.naive.kernels_differ))
                         + ")")
    elif ob.note:
        lines.append(f"observer effect: {ob.note}")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if report.path:
        kind = "build archive" if str(report.path).endswith((".tgz", ".tar.gz")) else "build folder"
        lines.append(f"{kind}: {report.path}")
    return lead(report, "\n".join(lines))


def render_prepare(r) -> str:
    n_taps = len(r.taps)
    kinds = {}
    for t in r.taps:
        kinds[t.kind] = kinds.get(t.kind, 0) + 1
    from leapp_lab.model.finding import plural
    head = [f"prepare {r.model}: {plural(r.samples, 'sample')}, exporter {r.exporter}"
            + (f" (fallback: {r.fallback_reason})" if r.fallback_reason else ""),
            f"  onnx      {r.onnx}" + ("" if r.manifest_stamped else "  (no taps: identical to the untapped export)"),
            f"  inputs    {r.npz}  [" + ", ".join(f"{i.name} {i.dtype}{i.shape}" for i in r.inputs) + "]",
            f"  reference {r.reference}",
            f"  {plural(len(r.outputs), 'output')}, {plural(n_taps, 'tap')}"
            + (" (" + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())) + ")" if kinds else "")
            + (f", {len(r.uncompared)} uncompared" if r.uncompared else "")]
    off = list(getattr(r, "unexposed_taps", None) or [])
    if off:     # taps are off unless asked for: a first prepare of a tapped model says how to turn them on
        head.append(f"  not exposed: {plural(len(off), 'tap')} of the model ({', '.join(off[:6])}"
                    f"{', …' if len(off) > 6 else ''}); --debug-taps all (or --debug-taps NAME) exposes them")
    c = getattr(r, "cache", None)
    if c is not None and c.hit:
        head.insert(1, f"  reused    the export of {c.reused_from or 'the previous prepare'}: nothing changed "
                       f"(cache key {(c.key or '')[:12]}; --force exports again)")
    o = getattr(r, "from_trace", None)
    if o is not None:
        what = ("LEAPP's own artifact" if o.onnx_source == "leapp" else
                "a re-export of the traced graph" + ("" if o.same_as_leapp is None else
                                                     ", same graph as LEAPP's artifact" if o.same_as_leapp
                                                     else ", NOT the same graph as LEAPP's artifact"))
        head.insert(1, f"  from      node {o.node!r} of graph {o.graph!r}, trace run {o.run}")
        head.insert(2, f"  onnx is   {what}" + (f" ({o.note})" if o.note else ""))
    w_name = max([4] + [len(x.name) for x in r.rows])
    w_name = min(w_name, 40)
    # as wide as the longest op (InstanceNormalization, DynamicQuantizeLinear), never cut
    w_op = max([2] + [len(x.producer_op or "") for x in r.rows])
    lines = [f"  {'order':>5}  {'name':<{w_name}}  {'kind':<6}  {'ref':<11}  {'op':<{w_op}}  source"]
    for x in r.rows:
        ref = x.reference_source or "-"
        src = x.source or ""
        line = (f"  {x.order:>5}  {x.name[:w_name]:<{w_name}}  {x.kind:<6}  {ref:<11}  "
                f"{x.producer_op or '':<{w_op}}  {src}")
        if x.uncompared_reason:
            line += f"\n  {'':>5}  {'':<{w_name}}  uncompared: {x.uncompared_reason}"
        lines.append(line)
    tail = [f"  warning: {w}" for w in r.warnings]
    return lead(r, "\n".join(head + lines + tail))
