"""The finding of a trace report (``leapp_lab.model.finding``): the first failing node / port /
sample, the hazard that explains it, the suspect literal as the FX graph prints it with the FX code
line it sits on, and the fix.

A row is cited by its id in the validation table: ``node/port/sample`` (``graph:node/port/sample``
when the report holds several graphs), so the views can link it.
"""
from __future__ import annotations

import re
from typing import Any

from .finding import Finding, num, plural
from .messages import exporter_cause, headline, script_site
from .trace import graph_labels

#: which hazard explains a failing row best, most specific first (the sample-level diagnoses before
#: the log's general ones)
EXPLAINS = ("undeclared-state", "frozen-constant", "mutated-after-trace", "unfilled-cache", "export-mismatch",
            "tolerance-only", "trace-loss", "adapter-mismatch", "dropped-input", "warm-start", "constant-output",
            "identical-samples", "single-sample", "trace-refused")

#: the fix of each hazard kind, in a few words (the hazard's own message has the long form)
FIXES = {
    "undeclared-state": "declare the recurrent state of {node}: annotate.state_tensors() before the forward "
                        "pass and annotate.update_state() with the new state after it, then trace again",
    "frozen-constant": "keep that value in torch operations on the traced tensors (no .item(), float(), "
                       "NumPy call or Python branch), or declare it with annotate.input_tensors() for {node}, "
                       "then trace again",
    "trace-loss": "keep the computation in torch operations on the traced tensors (x / x.abs().max() instead "
                  "of x / x.abs().max().item(); torch.where instead of if), or wrap it with leapp.FunctionPatch, "
                  "then trace again with several different samples",
    "mutated-after-trace": "freeze the module state while tracing (update statistics outside the traced "
                           "passes), or make it an explicit input / state (annotate.state_tensors)",
    "export-mismatch": "find the op whose exported lowering differs (integer division, rounding, casts), try "
                       "the other exporter, or patch the op with leapp.FunctionPatch",
    "unfilled-cache": "record more samples than the cache holds (max_cached_io) before compiling, or read "
                      "only the filled slots",
    "dropped-input": "use the input in the traced computation, or remove it from annotate.input_tensors()",
}
#: the fix of each hazard kind in a table cell (the trace view's "advice" column)
ADVICE = {
    "undeclared-state": "annotate.state_tensors() / update_state()",
    "frozen-constant": "torch ops, or annotate.input_tensors()",
    "trace-loss": "torch ops, not .item() / if",
    "mutated-after-trace": "freeze the state while tracing, or annotate.state_tensors()",
    "export-mismatch": "the other exporter, or leapp.FunctionPatch",
    "tolerance-only": "a larger atol (see min atol)",
    "unfilled-cache": "record more samples than max_cached_io",
    "dropped-input": "use the input, or drop it from input_tensors()",
    "adapter-mismatch": "fix the FunctionPatch adapter",
    "warm-start": "trace from the state the deployment starts in",
}


def advice(kinds: list[str]) -> str | None:
    """The advice of the hazard among ``kinds`` that explains a row best (EXPLAINS), or None."""
    rank = {k: i for i, k in enumerate(EXPLAINS)}
    for k in sorted(kinds, key=lambda k: rank.get(k, len(rank))):
        if k in ADVICE:
            return ADVICE[k]
    return None


#: a hazard kind in a few words (the views' reason words)
HAZARD_WORDS = {
    "undeclared-state": "a recurrent state that is not declared was frozen into the graph as a constant",
    "frozen-constant": "a value that changes from pass to pass was frozen into the graph as a constant",
    "trace-loss": "a value left the traced graph while tracing",
    "mutated-after-trace": "module state changed after it was traced",
    "export-mismatch": "the trace reproduces Python but the exported model computes something else",
    "tolerance-only": "numeric noise of the export backend, not a bug",
    "unfilled-cache": "the recorded value is LEAPP's unfilled zero placeholder",
    "dropped-input": "an input the traced computation does not use",
}


def reason_words(kind: str) -> str:
    """``frozen-constant: a value … frozen into the graph as a constant; fix: keep the value in torch
    ops, or annotate.input_tensors()`` (a trace row's reason key in words)."""
    words = HAZARD_WORDS.get(kind)
    fix = ADVICE.get(kind)
    return kind + (f": {words}" if words else "") + (f"; fix: {fix}" if fix else "")


# LEAPP's refusal when a node's exporter fails: "RuntimeError: Error compiling model NODE: CAUSE"
_EXPORT_ERROR = re.compile(r"^(?:\w+: )?Error compiling model (?P<node>.+?):\s*(?P<cause>.*)$")


def _first_sentence(message: str) -> str:
    body = message.split(": ", 1)[1] if re.match(r"^(node|graph) '", message) and ": " in message else message
    return re.split(r"(?<=[.!?])\s", body.strip(), maxsplit=1)[0].rstrip(".")


def _last_sentence(message: str) -> str:
    parts = [p for p in re.split(r"(?<=[.!?])\s", message.strip()) if p]
    return parts[-1].rstrip(".") if parts else message


def _fix(todo: str) -> str:
    """``Fix: <what to do>.``: a hazard's advice that already starts with "Fix" stands as it is
    (not "Fix: Fix the exception"); other advice continues the sentence ("Fix: try ...", not
    "Fix: Try ...") unless it starts with a name ("LEAPP", "FX")."""
    todo = todo.strip().rstrip(".")
    if re.match(r"fix\b", todo, re.I):
        return todo[:1].upper() + todo[1:] + "."
    if len(todo) > 1 and todo[0].isupper() and todo[1].islower():
        todo = todo[0].lower() + todo[1:]
    return f"Fix: {todo}."


def fx_line(node: Any, fx_node: Any) -> str:
    """The line of the node's FX code that defines ``fx_node``, as the FX graph prints it."""
    for line in (node.fx.code or "").splitlines():
        s = line.strip()
        if s.startswith(f"{fx_node.name} = "):
            return s.split(";")[0]
    return f"{fx_node.name} = {fx_node.target}({', '.join(fx_node.args)})"


def _check_order(g: Any):
    order = {n.name: (n.index, i) for i, n in enumerate(g.nodes)}
    ports = {(n.name, p.name): j for n in g.nodes for j, p in enumerate(n.ports)}
    return lambda c: (order.get(c.node, (1 << 30, 0)), ports.get((c.node, c.port), 1 << 30), c.sample)


def _concerns(h: Any, node: str, port: str | None, sample: int | None) -> bool:
    return (h.node in (None, node) and (h.port is None or port is None or h.port == port)
            and (not h.samples or sample is None or sample in h.samples))


def _explaining(g: Any, node: str, port: str | None, sample: int | None) -> Any:
    found = [h for h in g.hazards if _concerns(h, node, port, sample)]
    rank = {k: i for i, k in enumerate(EXPLAINS)}
    return min(found, key=lambda h: rank.get(h.kind, len(rank)), default=None)


def _suspect(g: Any, node: str) -> tuple[Any, Any] | None:
    for n in g.nodes:
        if n.name == node and n.fx is not None:
            for x in n.fx.nodes:
                if x.suspect:
                    return n, x
    return None


def _cause_and_fix(g: Any, h: Any, node: str, check: Any = None) -> list[str]:
    """The sentences naming the hazard (with the frozen literal and its FX line) and the fix."""
    out = []
    sus = _suspect(g, node)
    if h is not None and h.kind in ("frozen-constant", "trace-loss") and sus is not None:
        n, x = sus
        lits = ", ".join(repr(v) for v in x.literals if isinstance(v, float)) or ", ".join(map(repr, x.literals))
        out.append(f"Cause, {h.kind}: the FX graph of {node} holds the literal {lits}, a live value frozen at "
                   f"trace time, in the line {fx_line(n, x)}.")
    elif h is not None:
        out.append(f"Cause, {h.kind}: {_first_sentence(h.message)}.")
    elif check is not None:
        fx_ok = (check.fx_stats or {}).get("max")
        out.append(f"No hazard explains it: FX replay vs recorded {num(fx_ok)}, exported vs FX replay "
                   f"{num(check.export_vs_fx_max)} (min atol that passes {num(check.min_atol)}).")
    if h is not None:
        fix = FIXES.get(h.kind)
        if h.kind == "tolerance-only":
            m = re.search(r"atol=([0-9.eE+-]+)\)?,? or keep", h.message) or re.search(r"e\.g\. (atol=[^)]+)\)", h.message)
            fix = f"validate with a tolerance that fits the values ({m.group(1) if m else 'a larger atol'})"
        out.append(_fix(fix.format(node=node) if fix else _last_sentence(h.message)))
    return out


def export_fix(g: Any, node: str, backend: str | None, op: str | None, cause: str = "") -> str:
    """What to do when a node's exporter failed: another exporter only where the exporter matrix
    (``--exporters``) saw one export and validate the node; else the op to replace or patch."""
    if "TracedTensor" in cause:
        # a LEAPP carrier reached the exporter as a constant: a value computed while tracing was
        # stored outside the graph (a buffer or attribute assigned during the traced passes)
        return (f"a value traced in node {node!r} was stored in a module buffer or attribute during the "
                f"traced passes (running statistics updated while exporting, say) and reached the "
                f"exporter as a constant: keep state updates out of the traced passes (the policy in "
                f"eval mode), or declare the state with annotate.state_tensors() / update_state(), "
                f"then trace again")
    what = f"{op} in node {node!r}" if op else f"the call the exporter rejects in node {node!r}"
    rewrite = (f"replace {what} with ops {backend or 'the exporter'} supports, or wrap that call with "
               f"leapp.FunctionPatch, then trace again")
    matrix = g.section("exporters") if hasattr(g, "section") else None
    if matrix is not None and node in (matrix.nodes or []):
        passing = [b for b in matrix.passing(node) if b != backend]
        if passing:
            return (f"export node {node!r} with {' or '.join(passing)} (export_with=\"{passing[0]}\"), which "
                    f"exported and validated it in the exporter matrix, then trace again")
        return f"no other exporter exported and validated it either (the exporter matrix): {rewrite}"
    return (f"{rewrite}; whether another exporter (onnx-torchscript, jit, jit-trace, pt2) exports and "
            f"validates it: `leapp-lab run SCRIPT --exporters {node}`")


def _graph_finding(g: Any, prefix: str, chain: str | None = None) -> Finding | None:
    """The finding of one graph when it has something to say (None: it validates, no hazard)."""
    if g.status in ("refused", "error") and not g.checks:
        line = headline(g.error).rstrip(".") or g.status
        export = _EXPORT_ERROR.match(line)
        if g.status == "refused" and line.startswith(("the script raised", "the script started")):
            what = line                      # leapp-lab run: the script, not LEAPP, ended the session
        elif export is not None:
            node = export.group("node")
            backend = next((n.backend for n in g.nodes if n.name == node and n.backend), None)
            site = script_site(g.error)
            cause, op = exporter_cause(g.error, chain)
            what = (f"LEAPP could not export node '{node}'" + (f" with {backend}" if backend else "")
                    + f": {cause or export.group('cause').rstrip('.') or line}" + (f" (at {site})" if site else ""))
            return Finding(f"Graph '{g.name}' was not compiled: {what}. "
                           f"{_fix(export_fix(g, node, backend, op, cause))}", "fail")
        else:
            what = ("LEAPP refused the trace: " if g.status == "refused" else "the traced code raised: ") + line
        h = next((x for x in g.hazards if x.kind == "trace-refused"), None)
        fix = f" {_fix(_last_sentence(h.message))}" if h is not None else ""
        return Finding(f"Graph '{g.name}' was not compiled: {what}.{fix}", "fail")
    from .trace_verdict import evidence_checks
    counted = evidence_checks(g)
    failing = sorted((c for c in counted if c.passed is False), key=_check_order(g))
    if failing:
        c = failing[0]
        row = f"{prefix}{c.node}/{c.port}/{c.sample}"
        port = [x for x in counted if x.node == c.node and x.port == c.port]
        bad = sorted(x.sample for x in port if x.passed is False)
        good = sorted(x.sample for x in port if x.passed)
        spread = (f"; {plural(len(bad), 'sample')} of {c.node}/{c.port} fail"
                  + (f", sample{'s' if len(good) > 1 else ''} {', '.join(map(str, good))} pass{'es' if len(good) == 1 else ''}"
                     if good else ""))
        lead = (f"{row} is the first failing node/port/sample (max |exported − recorded| "
                f"{num((c.stats or {}).get('max'))}{spread}).")
        h = _explaining(g, c.node, c.port, c.sample)
        return Finding(" ".join([lead, *_cause_and_fix(g, h, c.node, c)]), "fail", [row])
    errors = [n for n in g.nodes if n.verdict == "error"]
    if errors:
        n = errors[0]
        return Finding(f"Node {n.name} of graph '{g.name}' failed to validate: "
                       f"{headline(n.error) or 'error'}.", "fail")
    if g.hazards:
        h = _explaining(g, g.hazards[0].node, None, None) if g.hazards[0].node else g.hazards[0]
        where = "/".join(x for x in (h.node, h.port) if x) or f"graph '{g.name}'"
        ignored = len(g.checks) - len(counted)
        skip = (f" ({plural(ignored, 'check')} on samples LEAPP never recorded are no evidence either way)"
                if ignored else "")
        text = (f"Every node/port/sample of graph '{g.name}' validates{skip}, but {h.kind} at {where}: "
                f"{_first_sentence(h.message)}.")
        fix = _cause_and_fix(g, h, h.node or "", None)
        return Finding(" ".join([text, *fix[-1:]]), "warn")
    if not g.checks:
        return Finding(f"Graph '{g.name}' {g.status}: nothing was validated (no recorded sample to compare).",
                       "warn")
    return None


def _lead(graphs: list[Any], g: Any | None = None) -> str:
    from .trace_verdict import evidence_checks
    within = [g] if g is not None else graphs
    checks = sum(len(evidence_checks(x)) for x in within)
    ignored = sum(len(x.checks) for x in within) - checks
    where = (f"graph '{g.name}'" if g is not None else
             f"the {len(graphs)} graphs" if len(graphs) > 1 else f"graph '{graphs[0].name}'")
    skip = (f"; {plural(ignored, 'check')} on samples LEAPP never recorded, no evidence either way"
            if ignored else "")
    return f"Every node/port/sample of {where} validates ({plural(checks, 'check')}{skip})"


def _not_compiled_with_checks(g: Any) -> Finding:
    line = headline(g.error).rstrip(".") or g.status
    h = next((x for x in g.hazards if x.kind == "trace-refused"), None)
    fix = f" {_fix(_last_sentence(h.message))}" if h is not None else ""
    who = "LEAPP refused the trace" if g.status == "refused" else "the traced code raised"
    return Finding(f"Graph '{g.name}' is not a faithful export of the script: {who}: {line}.{fix}", "fail")


def _section_finding(graphs: list[Any], g: Any, name: str) -> Finding:
    sec = g.section(name)
    what = "diverged" if sec.status == "diverged" else "could not run"
    why = headline(sec.reason).rstrip(".") if sec.reason else ""
    return Finding(f"{_lead(graphs)}, but the {name} of graph '{g.name}' {what}" + (f": {why}" if why else "")
                   + f". Its {name} section (the view's {name.capitalize()} tab) says where.", "fail")


def _engine_finding(graphs: list[Any], g: Any, ev: Any, status: str) -> Finding:
    where = ev.where or ""
    why = headline(ev.why).rstrip(".") if ev.why else ""
    engine = where.rsplit(" on ", 1)[-1]
    if ev.kind == "engine-failed":
        return Finding(f"{_lead(graphs, g)}, but {where} could not be built or run"
                       + (f": {why}" if why else "") + ".", status)
    precision = next((p for p in ("int8", "fp16") if p in engine), None)
    if where.startswith("replay on "):
        return Finding(f"{_lead(graphs, g)}, but the {where} diverges" + (f" ({why})" if why else "")
                       + f". Its Replay tab (on {engine}) shows the step and the output where it starts"
                       + (f"; the node's build verified with --expected {precision} tells {precision} "
                          f"rounding carried by the state from a defect." if precision else "."), status)
    nxt = (f" Verify that build with --local --expected {precision} to tell {precision} rounding from a "
           f"defect (the Layers tab shows its rows)." if precision
           else " A build in fp32 that diverges is a defect of the engine or of the export.")
    return Finding(f"{_lead(graphs, g)}, but {where} diverges" + (f" ({why})" if why else "") + "." + nxt,
                   status)


def trace_finding(report: Any) -> Finding:
    from .trace_verdict import trace_verdict
    graphs = list(report.graphs)
    verdict = trace_verdict(report)
    if not graphs:
        err = (report.script_error or "").strip().splitlines()
        return Finding("No graph was traced" + (f": the script raised {err[-1]}" if err else "") + ".", "fail")
    many = len(graphs) > 1
    top = verdict.first()
    if top is None:
        return Finding(f"{_lead(graphs)}; no hazard.", "pass")
    idx = next(i for i, g in enumerate(graphs) if g.name == top.graph)
    g, label = graphs[idx], graph_labels(graphs)[idx]
    if top.kind == "not-compiled" and g.checks:
        return _not_compiled_with_checks(g)
    if top.kind in ("replay", "parity"):
        return _section_finding(graphs, g, top.kind)
    if top.kind in ("engine-failed", "engine-diverged"):
        return _engine_finding(graphs, g, top, verdict.status)
    found = _graph_finding(g, f"{label}:" if many else "", getattr(report, "script_error", None))
    return found if found is not None else Finding(f"{_lead(graphs)}; no hazard.", "pass")
