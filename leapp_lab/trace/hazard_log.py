"""Hazard rules that read LEAPP's log and the traced graph: ``trace-refused`` (a FATAL record, a
session never compiled), ``trace-loss`` (a value left the traced graph: .item(), a boolean context,
a NumPy call without torch equivalent...), ``dropped-input`` (an input LEAPP trimmed). No array is
read here; ``trace.hazards.diagnose`` runs these and the sample rules (``trace.hazard_samples``).
docs/hazards.md documents each rule; keep the two in step.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from leapp_lab.model.finding_trace import export_fix
from leapp_lab.model.messages import exporter_cause
from leapp_lab.model.trace import GraphReport, Hazard

# Methods named in LEAPP's DEBUG line "while tracing for <node> detected method_descriptor or
# builtin_function_or_method <method> but failed to find equivalent torch function". The same line
# appears for harmless calls (dim, size, view, linear, ...); only these take a value out of the graph.
LOSS_METHODS = {
    "item": ".item()",
    "__float__": "float()",
    "__int__": "int()",
    "__index__": "int()/index (__index__)",
    "__complex__": "complex()",
    "__bool__": "bool()",
    "tolist": ".tolist()",
    "__array__": "numpy.asarray() (__array__)",
}

_RE_METHOD = re.compile(r"while tracing for (?P<node>.+?) detected method_descriptor or "
                        r"builtin_function_or_method (?P<method>\S+) but failed to find equivalent")
_RE_BOOL = re.compile(r"Attempted to use (?P<cls>\w+) '(?P<value>[^']*)' from node '(?P<node>[^']*)' "
                      r"in a boolean context")
_RE_NUMPY = re.compile(r"No torch equivalent for numpy (?P<what>ufunc|function) (?P<fn>\S+?)\.? "
                       r"Operation will not be traced")
_RE_NP_SCALAR = re.compile(r"TracedNpArray '(?P<value>[^']*)'\.(?P<method>tolist|item)\(\) called "
                           r"during tracing")
_RE_SCRIPTFN = re.compile(r"Detected pre-compiled TorchScript ScriptFunction\(s\) in scope: [ \t]*"
                          r"(?P<what>.*?)[ \t]*$", re.M)
# LEAPP 0.7.2 tries to trace into a torch.jit.script'ed module (TS2EPConverter); when that fails
# the module's whole computation is missing from the graph
_RE_SCRIPTMETHOD = re.compile(r"Failed to decompose TorchScript (?P<what>ScriptMethod|ScriptFunction|ScriptModule)")
# The other trace-loss hints: (regex, hint key, hint text), key and text formatted with the
# match's groups. A hint whose regex names no node is charged to the node being traced.
_LOSS_HINTS = (
    (_RE_BOOL, "b:{value}", "the traced value {value!r} was used in a boolean context "
                            "(if/while/and/or/not): only the branch taken while tracing was recorded"),
    (_RE_NUMPY, "n:{fn}", "NumPy {what} {fn} has no torch equivalent: its result was not traced"),
    (_RE_NP_SCALAR, "s:{method}", "NumPy .{method}() on the traced array {value!r} returned plain "
                                  "Python values"),
    (_RE_SCRIPTFN, "j:script", "pre-compiled TorchScript function(s) in scope ({what}) bypass "
                               "tracing"),
    (_RE_SCRIPTMETHOD, "j:decompose", "a TorchScript {what} (a module compiled with torch.jit.script) "
                                      "could not be traced into, so its computation is missing from the "
                                      "graph: call torch.jit._state.disable() before importing the "
                                      "library that scripts it (as Isaac Lab's export scripts do), or use "
                                      "the plain nn.Module"),
)
_RE_NODE_INIT = re.compile(r"Node context initialized: (?P<node>.+)$")
_RE_NODE_DONE = re.compile(r"Compiled graph module for (?P<node>.+?):")
# FATAL records that are LEAPP's strict validation verdict, not a refused trace.
_VALIDATION_FATAL = re.compile(r"^Model validation failed for")
# LEAPP's FATAL when a node's exporter fails (leapp_node.compile_model): the trace is complete.
EXPORT_FATAL = re.compile(r"^(?:\w+: )?Error compiling model (?P<node>.+?):")


# graph.error prefixes written by leapp_lab.trace.attach for sessions that never reached compile_graph
_SCRIPT_RAISED = "the script raised before compile_graph()"
_NEVER_COMPILED = "the script started a LEAPP session but never called compile_graph()"


def trace_refused(graph: GraphReport) -> list[Hazard]:
    fatals = [r.message.strip() for r in graph.log
              if (r.level == "FATAL" or r.levelno == 41) and not _VALIDATION_FATAL.match(r.message.strip())]
    refused = graph.status in ("refused", "error")
    if not fatals and not refused:
        return []
    leapp_msg = fatals[0] if fatals else (graph.error or f"the session ended with status {graph.status!r}")
    more = f" ({len(fatals) - 1} more FATAL record(s) in the log)" if len(fatals) > 1 else ""
    err = (graph.error or "").strip()
    if graph.status == "error" and not fatals:
        what, todo = ("the traced code raised before compile_graph",
                      "Fix the exception the traced code raised (its traceback is where the code ran: "
                      "under the view in a notebook), then trace again.")
    elif not fatals and err.startswith(_SCRIPT_RAISED):
        # leapp-lab run: the user's own script raised; LEAPP itself refused nothing
        what, todo = ("the script raised before compile_graph()",
                      "Fix the exception in the script's traceback, then run it again.")
    elif not fatals and err.startswith(_NEVER_COMPILED):
        what, todo = ("the session was never compiled",
                      "Call leapp.stop() and leapp.compile_graph() after the traced loop, then run "
                      "the script again.")
    elif (m := EXPORT_FATAL.match(leapp_msg)) is not None:
        node = m.group("node")
        backend = next((n.backend for n in graph.nodes if n.name == node and n.backend), None)
        what = f"LEAPP could not export node {node!r}" + (f" with {backend}" if backend else "")
        cause, op = exporter_cause(graph.error or leapp_msg)
        if cause:
            what += f" ({cause})"
        fix = export_fix(graph, node, backend, op, cause)
        todo = f"The trace completed; its exporter failed. {fix[:1].upper()}{fix[1:]}."
    else:
        what = ("LEAPP refused the trace" if refused else
                "LEAPP logged a FATAL error while tracing and the script caught it and went on")
        todo = ("Fix the cause LEAPP names above (re-entries must keep the names, shapes, dtypes and "
                "call site of the first pass; every node must reach output_tensors() before "
                "stop()), then trace again.")
    # The graph or its samples are incomplete: whatever was exported does not reflect the script.
    msg = f"{leapp_msg}{more}\n-- {what}: graph {graph.name!r} is not a faithful export of the script. {todo}"
    return [Hazard("trace-refused", None, None, [], msg)]


@dataclass
class _Hint:
    text: str
    count: int = 0


def trace_loss(graph: GraphReport) -> list[Hazard]:
    by_node: dict[str | None, dict[str, _Hint]] = {}
    tracing: str | None = None   # the node whose first trace is in progress (for node-less hints)

    def add(node: str | None, key: str, text: str) -> None:
        h = by_node.setdefault(node, {}).setdefault(key, _Hint(text))
        h.count += 1

    for r in graph.log:
        msg = r.message
        m = _RE_NODE_INIT.search(msg)
        if m:
            tracing = m.group("node").strip()
            continue
        if _RE_NODE_DONE.search(msg):
            tracing = None
            continue
        m = _RE_METHOD.search(msg)
        if m:
            meth = m.group("method")
            if meth in LOSS_METHODS:
                add(m.group("node").strip(), f"m:{meth}",
                    f"{LOSS_METHODS[meth]} turned a traced value into a Python number")
            continue
        for rx, key, text in _LOSS_HINTS:
            m = rx.search(msg)
            if m:
                groups = m.groupdict()
                add(groups.pop("node", tracing), key.format(**groups), text.format(**groups))
                break

    out = []
    node_names = [n.name for n in graph.nodes]
    for node in sorted(by_node, key=lambda n: (node_names.index(n) if n in node_names else len(node_names), str(n))):
        hints = by_node[node]
        listed = "; ".join(f"{h.text}" + (f" ({h.count}x)" if h.count > 1 else "") for h in hints.values())
        where = f"node {node!r}" if node else f"graph {graph.name!r} (node unknown)"
        suspects = suspect_literals(graph, node)
        msg = (f"{where}: a value left the traced graph while tracing: {listed}. "
               f"Whatever was computed from it is frozen into the export as the value it had "
               f"on the traced pass{suspects}. Keep the computation in torch operations on the "
               f"traced tensors (e.g. x / x.abs().max() instead of x / x.abs().max().item(); "
               f"torch.where instead of if), or wrap an unsupported function with "
               f"leapp.FunctionPatch, then trace again with several different samples.")
        out.append(Hazard("trace-loss", node, None, [], msg))
    return out


def suspect_literals(graph: GraphReport, node: str | None,
                      prefix: str = "; suspect literals") -> str:
    if node is None:
        return ""
    try:
        fx = graph.node(node).fx
    except KeyError:
        return ""
    if fx is None:
        return ""
    sus = [n for n in fx.nodes if n.suspect]
    if not sus:
        return ""
    shown = ", ".join(f"{n.name} = {n.target}({', '.join(n.args)})" for n in sus[:3])
    return f"{prefix} in its FX graph: {shown}" + ("." if prefix.startswith(" ") else "")


def dropped_inputs(graph: GraphReport) -> list[Hazard]:
    out = []
    for node in graph.nodes:
        for name in node.dropped_inputs:
            out.append(Hazard(
                "dropped-input", node.name, name, [],
                f"node {node.name!r}: input {name!r} is not used by the traced computation; LEAPP "
                f"trimmed it, so the exported model has no such input. If the output should depend "
                f"on it, its use was lost while tracing (a Python branch, .item(), a NumPy call); "
                f"otherwise remove it from annotate.input_tensors()."))
    return out
