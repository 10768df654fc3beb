"""``leapp_lab.exporters(trace_report, body, node="all")``: the exporter matrix, as advice.

For each node (one, or all) and each backend (``onnx``, ``onnx-torchscript``, ``jit``,
``jit-trace``, ``pt2``) the body is traced again in a fresh session and output folder, the random
state of the original trace restored, with only that node's ``export_with`` changed
(``deep/body.py``). Per attempt: exported or the narrow error, LEAPP's validation verdict of the
node, the largest |exported − recorded|, the time. The user's code is never changed.
"""
from __future__ import annotations

import re
from typing import Iterable

from leapp_lab.model.messages import headline, script_site
from leapp_lab.model.exporters import BACKENDS, ExporterAttempt, ExporterMatrix
from leapp_lab.model.trace import GraphReport

from .body import SHORT, Body, RandomState, deep_dir, pick_graph, safe_dirname
from .common import Progress, report_progress
from leapp_lab.model.numfmt import fmt

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CLASS = re.compile(r"^<class '(?:[\w.]*\.)?(\w+)'>:\s*")
_OP = re.compile(r"=\s*(aten::\w+)\(")


def narrow_error(text: str | None) -> str | None:
    """The one line of an export error that names what failed (and the op, when the ONNX
    exporter shows the failing graph), without LEAPP's "Error compiling model X:" prefix."""
    if not text:
        return None
    t = _ANSI.sub("", str(text))
    line = None
    if "## Exception summary" in t:
        tail = t.split("## Exception summary", 1)[1]
        line = next((x.strip() for x in tail.splitlines() if x.strip()), None)
        if line:
            line = _CLASS.sub(lambda m: m.group(1) + ": ", line)
    if not line:
        line = headline(t) or t.strip()
    line = re.sub(r"^(?:\w+: )?Error compiling model [^:]+:\s*", "", line)
    site = script_site(t)
    if site and site not in line:
        line += f" (at {site})"
    if "Torch IR graph at exception" in t:
        ops = _OP.findall(t.split("Torch IR graph at exception", 1)[1])
        if ops and ops[-1] not in line:
            line += f" (at {ops[-1]})"
    return line if len(line) <= 400 else line[:400] + " …"


def _attempt(graph: GraphReport | None, node: str, backend: str, current: str | None,
             err: str | None) -> ExporterAttempt:
    a = ExporterAttempt(node=node, backend=backend, current=backend == current)
    if graph is None:
        a.outcome = "error"
        a.error = narrow_error(err) or "the body compiled no graph of this name"
        return a
    n = next((x for x in graph.nodes if x.name == node), None)
    if n is None:
        a.outcome, a.error = "error", (narrow_error(graph.error) or f"the re-run traced no node {node!r}")
        return a
    a.resolved = n.backend
    a.run_dir = graph.run_dir
    if graph.status in ("refused", "error"):
        # the other nodes keep backends that compiled in the trace (or none): a refused compile is
        # this node's export, unless LEAPP named another node
        other = any(x.verdict == "error" and x.error for x in graph.nodes if x.name != node)
        a.outcome = "export-error" if graph.status == "refused" and not other else "error"
        msg = n.error or graph.error or err
        a.error = narrow_error(msg)
        a.error_type = _error_type(msg)
        return a
    a.exported = bool(n.backend and n.artifact)
    a.verdict = n.verdict
    checks = [c for c in graph.checks if c.node == node]
    maxes = [c.stats.get("max") for c in checks if c.stats and c.stats.get("max") is not None]
    a.max_abs = max(maxes) if maxes else None
    a.failed_samples = sum(c.passed is False for c in checks)
    a.outcome = {"pass": "pass", "fail": "fail", "error": "error"}.get(n.verdict, "skipped")
    if n.verdict == "error":
        a.error = narrow_error(n.error)
        a.error_type = _error_type(n.error)
    return a


def _error_type(msg: str | None) -> str | None:
    if not msg:
        return None
    m = re.match(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Warning))\b", _ANSI.sub("", msg))
    return m.group(1).rsplit(".", 1)[-1] if m else None


def advice(matrix: ExporterMatrix, node: str, current: str | None) -> str:
    tried = [a for a in matrix.attempts if a.node == node]
    ok = [a.backend for a in tried if a.outcome == "pass"]
    bad = [a for a in tried if a.outcome != "pass"]
    cur = next((a for a in tried if a.current), None)
    why = "; ".join(f"{a.backend}: {a.outcome}" + (f" ({a.error})" if a.error else
                                                    f" (max |diff| {fmt(a.max_abs)})" if a.max_abs is not None else "")
                    for a in bad)
    if not ok:
        return (f"node {node!r}: no backend exports it and passes validation ({why}); the problem is "
                f"not the exporter: look at the hazards and the isolation runs")
    if cur is not None and cur.outcome == "pass":
        return (f"node {node!r}: its own backend {current} passes; "
                f"{', '.join(b for b in ok if b != current) or 'no other'} also pass"
                + (f"; {why}" if why else ""))
    return (f"node {node!r}: {(current or 'its backend')} does not pass ({why}); "
            f"{', '.join(ok)} export and validate. Advice only: your code still uses "
            f"{current or 'its own export_with'}; if your runtime accepts another format, change "
            f"export_with yourself (the guide: try the other ONNX exporter first, then pt2 or jit)")


def run_exporters(graphs: list[GraphReport], body: Body, node: str | None = "all",
                  backends: Iterable[str] = BACKENDS, progress: Progress | None = None
                  ) -> dict[str, ExporterMatrix]:
    """The exporter matrix of every graph in ``graphs`` from one series of re-runs of ``body``."""
    backends = list(backends)
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise ValueError(f"unknown backend(s) {unknown}; try any of {list(BACKENDS)}")
    out: dict[str, ExporterMatrix] = {}
    targets: list[str] = []
    for g in graphs:
        names = [n.name for n in g.nodes]
        if node in (None, "all"):
            wanted = names
        elif node in names:
            wanted = [node]
        else:
            wanted = []
        m = ExporterMatrix(status="ok", nodes=wanted, backends=backends)
        if not names:
            m.status, m.reason = "unavailable", f"graph {g.name!r} has no node to export"
        elif not wanted:
            m.status, m.reason = "unavailable", (f"graph {g.name!r} has no node {node!r}; "
                                                 f"nodes: {', '.join(names)}")
        out[g.name] = m
        targets += [n for n in wanted if n not in targets]
    if node not in (None, "all") and not targets:
        raise KeyError(f"no graph has a node {node!r}; nodes: "
                       f"{sorted({n.name for g in graphs for n in g.nodes})}")
    current = {(g.name, n.name): SHORT.get(n.backend or "", n.backend) for g in graphs for n in g.nodes}
    # a node whose own export failed in the trace would refuse every other node's attempt: it is
    # left unexported (export_with=None) there, so the rest of the graph compiles and validates
    broken = sorted({n.name for g in graphs if g.status == "refused" for n in g.nodes
                     if n.verdict == "error" and n.error})
    total = len(targets) * len(backends)
    caller = RandomState.capture()
    done = 0
    try:
        for nd in targets:
            for b in backends:
                report_progress(progress, f"exporters: {nd} with {b} ({done + 1}/{total}; "
                                          f"{body.description} runs again)", done, total)
                where = deep_dir(graphs[0], "exporters") / safe_dirname(nd) / safe_dirname(b)
                rr = body.run(where, backends={**{x: None for x in broken if x != nd}, nd: b})
                done += 1
                for g in graphs:
                    m = out[g.name]
                    if nd not in m.nodes:
                        continue
                    att = _attempt(pick_graph(rr.graphs, g.name), nd, b, current.get((g.name, nd)), rr.error)
                    att.time_s, att.export_s = rr.time_s, rr.export_s
                    m.attempts.append(att)
                    m.reruns += 1
    finally:
        caller.restore()
    report_progress(progress, "exporters: done", total, total)
    for g in graphs:
        m = out[g.name]
        if m.status != "ok":
            continue
        m.advice = [advice(m, nd, current.get((g.name, nd))) for nd in m.nodes]
        m.notes.append(f"{body.description} ran again {m.reruns} time(s), once per node and backend, "
                       f"each in a fresh LEAPP session and folder ({deep_dir(g, 'exporters')}); "
                       f"nothing in your code was changed")
        others = [x for x in broken if x in {n.name for n in g.nodes}]
        if others:
            m.notes.append(f"{', '.join(repr(x) for x in others)} failed to export in the trace, so "
                           f"the other nodes were tried with it left unexported (export_with=None)")
    return out
