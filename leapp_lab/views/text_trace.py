"""Plain-text summary of a TraceReport (``str(report)``, ``leapp-lab run``, ``leapp-lab demo``).

Reads the report only; every number shown was computed when the report was made.
"""
from __future__ import annotations

from collections import Counter

from leapp_lab.model.messages import headline

from .finding import lead
from .numfmt import fmt as _g


def _ports(ports) -> str:
    out = []
    for p in ports:
        shape = _g(None) if p.shape is None else "x".join(str(s) for s in p.shape)
        extra = []
        if p.role == "state":
            extra.append("state")
        if getattr(p, "static", False):
            extra.append("static")
        if p.traced_name:
            extra.append(f"traced as {p.traced_name}")
        if p.feedback:
            extra.append(f"feedback from {p.source}")
        if p.semantics is not None:
            extra.append(p.semantics.label() or "named elements")
        out.append(f"{p.name}[{shape}]{' (' + ', '.join(extra) + ')' if extra else ''}")
    return ", ".join(out) or "-"


def _samples(ks) -> str:
    ks = sorted(ks)
    if len(ks) > 8:
        return ",".join(map(str, ks[:8])) + f",… ({len(ks)})"
    return ",".join(map(str, ks))


def fx_line(node, fx_node) -> str:
    """The line of the node's FX code that defines ``fx_node`` (its call, rebuilt if absent)."""
    for line in (node.fx.code or "").splitlines():
        s = line.strip()
        if s.startswith(f"{fx_node.name} = "):
            return s.split(";")[0]
    return f"{fx_node.name} = {fx_node.target}({', '.join(fx_node.args)})"


def render_graph(g) -> list[str]:
    L = []
    where = f"  ({g.graph_dir})" if g.graph_dir else ""
    L.append(f"Graph {g.name!r}: {g.status}, verdict {g.verdict.upper()}{where}")
    if g.run_dir:
        L.append(f"  run folder: {g.run_dir}")
    if g.error:
        first = [x for x in g.error.strip().splitlines() if x.strip()]
        label = {"refused": "LEAPP refused the trace", "error": "the traced code raised"}.get(
            g.status, "error")
        if g.status == "refused" and g.error.startswith(("the script raised", "the script started")):
            label = "not compiled"    # leapp-lab run: the script, not LEAPP, ended the session
        head = headline(g.error) or g.error
        skip = 2 if len(first) > 1 and head != first[0].strip() else 1   # headline joined two lines
        L.append(f"  {label}: {head}")
        L.extend(f"    {x}" for x in first[skip:skip + 5])
    if g.nodes:
        L.append("  nodes (completion order):")
        w = max(len(n.name) for n in g.nodes)
        for n in g.nodes:
            L.append(f"    {n.index:>2} {n.name:<{w}}  {str(n.backend or 'not exported'):<16} "
                     f"{n.verdict.upper():<7} {n.samples} sample{'s' if n.samples != 1 else ''}"
                     f"{'  artifact ' + n.artifact if n.artifact else ''}")
            L.append(f"       in:  {_ports(n.inputs())}")
            L.append(f"       out: {_ports(n.outputs())}")
            if n.dropped_inputs:
                L.append(f"       dropped inputs: {', '.join(n.dropped_inputs)}")
            if n.taps:
                L.append(f"       taps: {', '.join(f'{t.name} ({t.site})' for t in n.taps)}")
            if n.error:
                L.append(f"       error: {headline(n.error)}")
    data = [f"{e.src} -> {e.dst}" for e in g.edges if e.kind == "data"]
    fb = [f"{e.src} -> {e.dst}" for e in g.edges if e.kind == "feedback"]
    if data:
        L.append(f"  data edges: {'; '.join(data)}")
    if fb:
        L.append(f"  feedback edges: {'; '.join(fb)}")
    if g.graph_inputs or g.graph_outputs:
        L.append(f"  graph inputs: {', '.join(g.graph_inputs) or '-'}   "
                 f"outputs: {', '.join(g.graph_outputs) or '-'}")

    if g.checks:
        rtol, atol = g.checks[0].rtol, g.checks[0].atol
        L.append(f"  validation per output port (rtol={rtol:g}, atol={atol:g}; "
                 f"|exported-recorded|, FX replay in brackets):")
        by_port: dict = {}
        for c in g.checks:
            by_port.setdefault((c.node, c.port), []).append(c)
        w = max(len(f"{n}/{p}") for n, p in by_port)
        for (node, port), cs in by_port.items():
            judged = [c for c in cs if c.passed is not None]
            failed = [c for c in judged if not c.passed]
            worst = max((c.stats.get("max") or 0.0 for c in cs if c.stats), default=None)
            fxw = max((c.fx_stats.get("max") or 0.0 for c in cs if c.fx_stats), default=None)
            if not judged:
                state = "not validated"
            elif failed:
                state = f"FAIL {len(failed)}/{len(judged)} samples ({_samples(c.sample for c in failed)})"
            else:
                state = f"pass {len(judged)}/{len(judged)}"
            L.append(f"    {node + '/' + port:<{w}}  {state:<28} max {_g(worst)} [fx {_g(fxw)}]")
            if failed:
                c = failed[0]
                st = c.stats
                L.append(f"      first failing sample {c.sample}: max={_g(st.get('max'))} "
                         f"mean={_g(st.get('mean'))} p99={_g(st.get('p99'))} "
                         f"min_atol@rtol={_g(c.min_atol)}; fx-recorded max={_g(c.fx_stats.get('max'))}, "
                         f"exported-fx max={_g(c.export_vs_fx_max)}; "
                         f"recorded {_rng(c.recorded_range)} exported {_rng(c.exported_range)}")
                if c.nonfinite_recorded or c.nonfinite_exported:
                    L.append(f"      non-finite values: recorded {c.nonfinite_recorded}, "
                             f"exported {c.nonfinite_exported}")
                worst_el = worst_element_line(failed, g.semantics_of(f"{node}/{port}"))
                if worst_el:
                    L.append(f"      {worst_el}")

    from .text_nodes import render_node_engines
    L.extend(render_node_engines(g))
    suspects = [(n, f) for n in g.nodes if n.fx for f in n.fx.nodes if f.suspect]
    if suspects:
        L.append("  suspect literals in the FX graphs (a live value frozen at trace time?):")
        for n, f in suspects:
            lits = ", ".join(repr(v) for v in f.literals)
            L.append(f"    {n.name}: {fx_line(n, f)}    <- literal {lits}")

    if g.hazards:
        L.append(f"  hazards ({len(g.hazards)}):")
        for h in g.hazards:
            where = "/".join(x for x in (h.node, h.port) if x) or "graph"
            smp = f" samples {_samples(h.samples)}" if h.samples else ""
            L.append(f"    [{h.kind}] {where}{smp}: " + h.message.replace("\n", "\n      "))
    else:
        L.append("  hazards: none")
    from .text_deep import render_sections
    L.extend(render_sections(g))
    if g.log:
        counts = Counter(r.level for r in g.log)
        L.append("  log: " + ", ".join(f"{counts[k]} {k}" for k in
                                        ("FATAL", "ERROR", "WARNING", "SYSTEM", "SECTION", "INFO",
                                         "DEBUG") if counts.get(k)))
    return L


def worst_element_line(checks, semantics) -> str | None:
    """``worst element left_knee (max |diff| 0.616 at sample 2; target/joint/position, rad)``: the
    element with the largest stored |diff| over ``checks`` (each check's breakdown), or None."""
    best = None
    for c in checks:
        for e in c.elements or []:
            if e.name == c.worst_element and e.max_abs is not None and (best is None or e.max_abs > best[0]):
                best = (e.max_abs, e.name, c.sample)
    if best is None:
        return None
    label = semantics.label() if semantics is not None else None
    return (f"worst element {best[1]} (max |diff| {_g(best[0])} at sample {best[2]}"
            + (f"; {label}" if label else "") + ")")


def _rng(r) -> str:
    if not r:
        return "[-]"
    return f"[{_g(r[0])}, {_g(r[1])}]"


def render_trace(report) -> str:
    L = []
    head = f"leapp_lab trace report: {len(report.graphs)} graph{'s' if len(report.graphs) != 1 else ''}"
    if report.leapp_version:
        head += f", LEAPP {report.leapp_version}"
    L.append(head)
    if report.script:
        L.append(f"script: {report.script} (exit {report.script_exit})")
    for g in report.graphs:
        L.append("")
        L.extend(render_graph(g))
    if report.script_error:
        L.append("")
        L.append("the script raised:")
        L.extend("  " + x for x in report.script_error.rstrip().splitlines()[-12:])
    if not report.graphs:
        L.append("no graph was traced")
    return lead(report, "\n".join(L))


def render_diagnosis(report) -> str:
    """Where validation first fails and what the report says about it, in a few lines (the demo's
    closing summary; one graph)."""
    g = report.graph
    L = ["Diagnosis"]
    failing = [c for c in g.checks if c.passed is False]
    if failing:
        c = min(failing, key=lambda c: (next(n.index for n in g.nodes if n.name == c.node), c.sample))
        L.append(f"  first failing: node {c.node!r}, port {c.port!r}, sample {c.sample} "
                 f"(max |exported - recorded| = {_g(c.stats.get('max'))}; "
                 f"FX replay vs recorded {_g(c.fx_stats.get('max'))}, exported vs FX "
                 f"{_g(c.export_vs_fx_max)})")
        ok = sorted({x.sample for x in g.checks if x.node == c.node and x.port == c.port and x.passed})
        if ok:
            L.append(f"  samples that pass on that port: {', '.join(map(str, ok))}")
    else:
        L.append("  every node / port / sample validated")
    for h in g.hazards:
        if h.kind in ("frozen-constant", "trace-loss"):
            where = "/".join(x for x in (h.node, h.port) if x)
            first = h.message.split(". ")[0].rstrip(".") + "."   # the full text is above
            L.append(f"  hazard {h.kind} at {where}: {first}")
    for n in g.nodes:
        for f in (n.fx.nodes if n.fx else []):
            if f.suspect:
                L.append(f"  frozen literal in the FX graph of {n.name!r}: {fx_line(n, f)}")
    return "\n".join(L)
