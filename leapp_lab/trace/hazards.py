"""Hazards: what a captured LEAPP trace says is wrong, or cannot be trusted, and what to do.

``diagnose(graph, arrays)`` reads one captured :class:`GraphReport` and its arrays
(``<node>/<port>/<sample>/recorded|exported|fx`` for output ports, ``<node>/<port>/<sample>/input``
for input ports) and returns :class:`Hazard` records. It also sets ``SampleCheck.placeholder`` on
the samples LEAPP never really recorded. The rules are documented one by one in docs/hazards.md;
keep the two in step.

Three values per node / output port / sample are compared (``allclose`` means
``|a - ref| <= atol + rtol * |ref|`` element-wise with the SampleCheck's own rtol / atol, NaN
equal to NaN, shapes equal):

- *recorded*: what the Python code returned while tracing (LEAPP's "source");
- *FX replay*: the node's traced FX graph run again on the recorded inputs of that sample;
- *exported*: the exported model on the same inputs.

FX ≠ recorded means the trace itself is wrong (a live value was frozen, or state changed after
tracing); exported ≠ FX means the export backend computes something else than the trace.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from leapp_lab.model.trace import GraphReport, Hazard, NodeReport, SampleCheck

from leapp_lab.model.episodes import captured_steps, feedback_pairs, read_resets, unrecorded_pairs
from leapp_lab.numerics.checks import allclose, min_atol

# "tolerance-only": every sample would pass with an atol at most this many times the given one.
TOLERANCE_FACTOR = 10.0

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
)
_RE_NODE_INIT = re.compile(r"Node context initialized: (?P<node>.+)$")
_RE_NODE_DONE = re.compile(r"Compiled graph module for (?P<node>.+?):")
# FATAL records that are LEAPP's strict validation verdict, not a refused trace.
_VALIDATION_FATAL = re.compile(r"^Model validation failed for")

KIND_ORDER = ("trace-refused", "trace-loss", "adapter-mismatch", "dropped-input", "single-sample", "identical-samples",
              "unfilled-cache", "mutated-after-trace", "frozen-constant", "export-mismatch",
              "tolerance-only", "constant-output", "warm-start")


# -- array helpers --------------------------------------------------------------------------------

def _is_all_zero(a) -> bool:
    a = np.asarray(a)
    return a.size > 0 and not np.any(a)


def _fmt_samples(samples: Iterable[int]) -> str:
    s = sorted(samples)
    if not s:
        return "no sample"
    return ("sample " if len(s) == 1 else "samples ") + ", ".join(str(x) for x in s)


def _g(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


# -- per-port view of the checks --------------------------------------------------------------------

@dataclass
class _Port:
    """Everything the sample rules need about one node / output port."""

    node: str
    port: str
    checks: dict[int, SampleCheck] = field(default_factory=dict)
    recorded: dict[int, np.ndarray] = field(default_factory=dict)
    exported: dict[int, np.ndarray] = field(default_factory=dict)
    fx: dict[int, np.ndarray] = field(default_factory=dict)

    def fx_agrees(self, k: int) -> bool | None:
        """FX replay ≈ recorded at sample k (None: unknown)."""
        c = self.checks[k]
        if k in self.fx and k in self.recorded:
            return allclose(self.fx[k], self.recorded[k], c.rtol, c.atol)
        return _close_from_stats(c.fx_stats.get("max") if c.fx_stats else None, c.recorded_range, c)

    def export_agrees_fx(self, k: int) -> bool | None:
        """exported ≈ FX replay at sample k (None: unknown)."""
        c = self.checks[k]
        if k in self.exported and k in self.fx:
            return allclose(self.exported[k], self.fx[k], c.rtol, c.atol)
        return _close_from_stats(c.export_vs_fx_max, c.fx_range, c)

    def min_atol(self, k: int) -> float | None:
        c = self.checks[k]
        if k in self.exported and k in self.recorded:
            return min_atol(self.exported[k], self.recorded[k], c.rtol)
        if c.nonfinite_exported or c.nonfinite_recorded:
            return None   # LEAPP fails non-finite values whatever the atol
        return c.min_atol


def _close_from_stats(max_abs: float | None, ref_range, c: SampleCheck) -> bool | None:
    """Fallback without arrays: a bound from the max |diff| and the reference's value range."""
    if max_abs is None:
        return None
    if max_abs <= c.atol:
        return True
    mag = max([abs(v) for v in (ref_range or []) if v is not None] or [0.0])
    return max_abs <= c.atol + c.rtol * mag


def _ports_of(graph: GraphReport, arrays: dict) -> dict[tuple[str, str], _Port]:
    ports: dict[tuple[str, str], _Port] = {}
    for c in graph.checks:
        p = ports.setdefault((c.node, c.port), _Port(c.node, c.port))
        p.checks[c.sample] = c
        for kind, store in (("recorded", p.recorded), ("exported", p.exported), ("fx", p.fx)):
            a = arrays.get(f"{c.node}/{c.port}/{c.sample}/{kind}")
            if a is not None:
                store[c.sample] = a
    return ports


def _inputs_of(node: NodeReport, arrays: dict, samples: Iterable[int]) -> dict[int, dict[str, np.ndarray]]:
    """Recorded input arrays per sample (only samples where every input port is stored)."""
    names = [p.name for p in node.inputs()]
    out: dict[int, dict[str, np.ndarray]] = {}
    if not names:
        return out
    for k in samples:
        vals = {n: arrays.get(f"{node.name}/{n}/{k}/input") for n in names}
        if all(v is not None for v in vals.values()):
            out[k] = vals
    return out


def _same_inputs(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return all(np.asarray(a[n]).shape == np.asarray(b[n]).shape
               and np.array_equal(a[n], b[n], equal_nan=np.asarray(a[n]).dtype.kind in "fc")
               for n in a)


def _input_groups(inputs: dict[int, dict[str, np.ndarray]]) -> list[list[int]]:
    """Samples grouped by exactly equal inputs, in sample order."""
    groups: list[list[int]] = []
    for k in sorted(inputs):
        for g in groups:
            if _same_inputs(inputs[g[0]], inputs[k]):
                g.append(k)
                break
        else:
            groups.append([k])
    return groups


# -- the rules ------------------------------------------------------------------------------------

# graph.error prefixes written by leapp_lab.trace.attach for sessions that never reached compile_graph
_SCRIPT_RAISED = "the script raised before compile_graph()"
_NEVER_COMPILED = "the script started a LEAPP session but never called compile_graph()"


def _trace_refused(graph: GraphReport) -> list[Hazard]:
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
                      "Fix the exception above (its traceback is in the report), then trace again.")
    elif not fatals and err.startswith(_SCRIPT_RAISED):
        # leapp-lab run: the user's own script raised; LEAPP itself refused nothing
        what, todo = ("the script raised before compile_graph()",
                      "Fix the exception in the script's traceback, then run it again.")
    elif not fatals and err.startswith(_NEVER_COMPILED):
        what, todo = ("the session was never compiled",
                      "Call leapp.stop() and leapp.compile_graph() after the traced loop, then run "
                      "the script again.")
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


def _trace_loss(graph: GraphReport) -> list[Hazard]:
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
        suspects = _suspect_literals(graph, node)
        msg = (f"{where}: a value left the traced graph while tracing: {listed}. "
               f"Whatever was computed from it is frozen into the export as the value it had "
               f"on the traced pass{suspects}. Keep the computation in torch operations on the "
               f"traced tensors (e.g. x / x.abs().max() instead of x / x.abs().max().item(); "
               f"torch.where instead of if), or wrap an unsupported function with "
               f"leapp.FunctionPatch, then trace again with several different samples.")
        out.append(Hazard("trace-loss", node, None, [], msg))
    return out


def _suspect_literals(graph: GraphReport, node: str | None,
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


def _dropped_inputs(graph: GraphReport) -> list[Hazard]:
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


def _placeholders(node: NodeReport, ports: list[_Port], arrays: dict) -> dict[str, list[int]]:
    """Per output port: samples whose recorded value is LEAPP's unfilled zero placeholder."""
    found: dict[str, list[int]] = {}
    roles = {p.name: p.role for p in node.outputs()}

    def zero_input(k: int) -> bool | None:
        vals = [arrays.get(f"{node.name}/{p.name}/{k}/input") for p in node.inputs()]
        vals = [v for v in vals if v is not None]
        return any(_is_all_zero(v) for v in vals) if vals else None

    for p in ports:
        for k, c in sorted(p.checks.items()):
            if k == 0:
                continue   # sample 0 is the trace itself: always really recorded
            never_written = node.samples > 0 and k >= node.samples
            if k in p.recorded and k in p.fx:
                zero_not_fx = _is_all_zero(p.recorded[k]) and not _is_all_zero(p.fx[k])
            else:   # no arrays: the stored value ranges say the same
                zero_not_fx = (c.recorded_range == [0.0, 0.0] and not c.nonfinite_recorded
                               and c.fx_range is not None and c.fx_range != [0.0, 0.0])
            # LEAPP leaves state unrecorded on both sides (input and next state), so a placeholder
            # output comes with an all-zero input; without that, an all-zero output that the FX
            # replay does not reproduce is a frozen value that happened to be zero, not a slot.
            if zero_not_fx and roles.get(p.port) != "state" and zero_input(k) is False:
                zero_not_fx = False
            if never_written or zero_not_fx:
                found.setdefault(p.port, []).append(k)
    return found


def _unfilled_cache(graph: GraphReport, node: NodeReport, found: dict[str, list[int]],
                    arrays: dict) -> list[Hazard]:
    out = []
    all_samples = sorted({k for ks in found.values() for k in ks})
    zero_inputs = []
    for p in node.inputs():
        stored = [arrays[key] for key in (f"{node.name}/{p.name}/{k}/input" for k in all_samples)
                  if key in arrays]
        if stored and all(_is_all_zero(a) for a in stored):
            zero_inputs.append(p.name)
    zin = (f" The input(s) {', '.join(repr(z) for z in zero_inputs)} are all-zero there as well."
           if zero_inputs else "")
    for port, ks in found.items():
        out.append(Hazard(
            "unfilled-cache", node.name, port, ks,
            f"node {node.name!r} / {port!r}: LEAPP never recorded {_fmt_samples(ks)}; the cached "
            f"value is its zero placeholder (exactly all-zero, while the FX replay of the same "
            f"sample is not).{zin} This is what state tracked with annotate.module() looks like in "
            f"LEAPP 0.7.2 (re-entries do not record it). The verdicts of every port of "
            f"{node.name!r} on {_fmt_samples(all_samples)} are not evidence either way and are "
            f"ignored. Declare the state with annotate.state_tensors()/update_state() to have every "
            f"sample recorded, then trace again."))
    return out


def _node_sample_hazards(node: NodeReport, ports: list[_Port], excluded: set[int],
                         arrays: dict) -> list[Hazard]:
    out = []
    if node.samples == 1:
        out.append(Hazard(
            "single-sample", node.name, None, [0],
            f"node {node.name!r} was recorded on a single sample: validation compared one pair of "
            f"tensors, which cannot characterise the error nor show a value frozen at the first "
            f"pass. Loop the annotated code over several different inputs (and set max_cached_io "
            f"to keep them)."))
    sample_ids = sorted({k for p in ports for k in p.checks} | set(range(node.samples)))
    real = [k for k in sample_ids if k not in excluded]
    inputs = _inputs_of(node, arrays, real)
    groups = _input_groups(inputs)
    dup = [g for g in groups if len(g) > 1]
    if dup:
        ks = sorted(k for g in dup for k in g)
        desc = "; ".join(f"{_fmt_samples(g[1:])} repeat{'s' if len(g) == 2 else ''} the inputs "
                         f"of sample {g[0]}" for g in dup)
        out.append(Hazard(
            "identical-samples", node.name, None, ks,
            f"node {node.name!r}: {_fmt_samples(ks)} have identical inputs ({desc} exactly). Repeated samples add no evidence: a value frozen "
            f"at the first pass passes on them. Feed different inputs on every pass (different "
            f"observations, state and commands, as in deployment)."))
    # constant-output: needs at least two samples whose inputs differ
    if len(groups) >= 2:
        varying = sorted(k for g in groups for k in g)
        for p in ports:
            ks = [k for k in varying if k in p.recorded]
            if len(ks) < 2 or len(ks) != len(varying):
                continue
            first = p.recorded[ks[0]]
            if all(np.asarray(p.recorded[k]).shape == np.asarray(first).shape
                   and np.array_equal(p.recorded[k], first, equal_nan=np.asarray(first).dtype.kind in "fc")
                   for k in ks[1:]):
                out.append(Hazard(
                    "constant-output", node.name, p.port, ks,
                    f"node {node.name!r} / {p.port!r}: the recorded output is identical on "
                    f"{_fmt_samples(ks)} although their inputs differ. The output does not depend "
                    f"on what varies (lost tracing, a clamp/saturation that always hits, or a "
                    f"value computed outside the graph). If it is meant to be constant, declare it "
                    f"with output_tensors(..., static_outputs=...); otherwise find where the "
                    f"dependence on the inputs is lost."))
    return out


def _port_hazards(p: _Port, excluded: set[int], unfilled: bool, suspects: str = "") -> list[Hazard]:
    ks = [k for k in sorted(p.checks) if k not in excluded]
    if not ks:
        return []
    c0 = p.checks.get(0)
    out: list[Hazard] = []
    fails = [k for k in ks if p.checks[k].passed is False]
    where = f"node {p.node!r} / {p.port!r}"

    # mutated-after-trace: the trace no longer reproduces its own first pass
    mutated: list[int] = []
    if 0 in ks and p.fx_agrees(0) is False:
        mutated = [k for k in ks if p.fx_agrees(k) is False]
        out.append(Hazard(
            "mutated-after-trace", p.node, p.port, mutated,
            f"{where}: the FX replay of the traced graph already differs from the recorded output "
            f"on sample 0 (max |fx - recorded| = {_g(c0.fx_stats.get('max') if c0 else None)}), and "
            f"on {_fmt_samples(mutated)} in all. The trace holds module state by reference "
            f"(buffers, parameters) and that state changed after it was traced, e.g. a running "
            f"normaliser that keeps updating, or an optimiser step. The export uses the state at "
            f"compile time. Freeze the state while tracing (update statistics outside the traced "
            f"passes, or only after compile_graph), or make it an explicit input / state "
            f"(annotate.state_tensors) if it must evolve."))

    # frozen-constant: sample 0 passes, later ones fail, and there the export equals the FX replay
    frozen: list[int] = []
    if c0 is not None and 0 in ks and c0.passed is True:
        frozen = [k for k in fails if k >= 1 and p.export_agrees_fx(k) is True
                  and p.fx_agrees(k) is False]
        if frozen:
            worst = max((p.checks[k].stats.get("max") or 0.0) for k in frozen)
            out.append(Hazard(
                "frozen-constant", p.node, p.port, frozen,
                f"{where}: sample 0 passes but {_fmt_samples(frozen)} fail (max |exported - "
                f"recorded| = {_g(worst)}), and there the exported model agrees with the FX replay "
                f"of the trace: the trace itself is wrong. A value that changes from pass to pass "
                f"was baked into the graph as the constant it had on the first pass (a .item(), "
                f"float(), a Python branch, a NumPy call, or an unannotated input). Keep it in "
                f"torch operations on the traced tensors, or declare it with "
                f"annotate.input_tensors() for this node.{suspects}"))

    # tolerance-only: every sample would pass with atol <= 10x the given one
    tol_only = False
    if fails and not unfilled and not frozen:
        need = [p.min_atol(k) for k in ks]
        if all(m is not None and m <= TOLERANCE_FACTOR * p.checks[k].atol for m, k in zip(need, ks)):
            tol_only = True
            c = p.checks[fails[0]]
            out.append(Hazard(
                "tolerance-only", p.node, p.port, fails,
                f"{where}: fails on {_fmt_samples(fails)} at rtol={c.rtol:g}, atol={c.atol:g}, but "
                f"every sample passes with atol={_g(max(need))} (at most {TOLERANCE_FACTOR:g}x the "
                f"given atol): numeric noise of the export backend, not a bug. Validate with a "
                f"tolerance that fits the values (e.g. atol={_g(max(need))}), or keep the tight one "
                f"if the deployment really needs it and change the exporter/precision."))

    # export-mismatch: the trace reproduces Python, the exported model does not
    if not tol_only:
        mism = [k for k in fails if p.fx_agrees(k) is True and p.export_agrees_fx(k) is False]
        if mism:
            worst = max((p.checks[k].stats.get("max") or 0.0) for k in mism)
            out.append(Hazard(
                "export-mismatch", p.node, p.port, mism,
                f"{where}: on {_fmt_samples(mism)} the FX replay of the trace matches the recorded "
                f"Python output but the exported model does not (max |exported - recorded| = "
                f"{_g(worst)}): the trace is right, the export backend computes something else. "
                f"Find the op in the FX graph whose exported lowering differs (integer division, "
                f"rounding, casts, ...), try the other exporter (onnx <-> onnx-torchscript, jit, "
                f"pt2) or patch the op with leapp.FunctionPatch."))
    return out


def warm_start(graph: GraphReport, arrays: dict) -> list[Hazard]:
    """``warm-start``: the recording holds an episode reset (:func:`read_resets`) at which a
    feedback input went back to zeros while the value LEAPP saved as its initial value (sample 0)
    is not zero: the trace began mid-episode, so the shipped initial values are not the reset state
    and a deployed runtime starts every episode from the wrong state. Without a reset in the
    recording there is no evidence (the replay's tier b with a step_fn says it)."""
    fb = feedback_pairs(graph)
    if not fb:
        return []
    skip = unrecorded_pairs(graph, arrays)
    resets, _, _ = read_resets(arrays, fb, captured_steps(graph), skip)
    out = []
    for src, dst in fb:
        init = arrays.get(f"{dst}/0/input")
        if init is None or _is_all_zero(init) or not np.all(np.isfinite(np.asarray(init, np.float64))):
            continue
        ks = [k for k in resets if (dst, k) not in skip and arrays.get(f"{dst}/{k}/input") is not None
              and _is_all_zero(arrays[f"{dst}/{k}/input"])]
        if not ks:
            continue
        node, port = dst.split("/", 1)
        big = float(np.max(np.abs(np.asarray(init, np.float64))))
        when = ("step " if len(ks) == 1 else "steps ") + ", ".join(map(str, ks))
        out.append(Hazard(
            "warm-start", node, port, ks,
            f"node {node!r} / {port!r}: the trace started mid-episode (warm start). At {when} the "
            f"Python loop started an episode and reset {port!r} to zeros, but LEAPP saved its value "
            f"at the first traced pass (max |value| {big:.3g}, fed back from {src!r}) as the "
            f"initial value: a deployed runtime resets to that, so every episode starts from another "
            f"state than the Python policy's. Start tracing at an episode start (reset the policy "
            f"before the first traced pass), then trace again."))
    return out


def diagnose(graph: GraphReport, arrays: dict[str, np.ndarray] | None) -> list[Hazard]:
    """The hazards of one captured graph (see docs/hazards.md); sets SampleCheck.placeholder."""
    arrays = arrays or {}
    hazards: list[Hazard] = []
    hazards += _trace_refused(graph)
    hazards += _trace_loss(graph)
    hazards += _dropped_inputs(graph)
    refused = graph.status in ("refused", "error")

    ports = _ports_of(graph, arrays)
    for node in graph.nodes:
        nports = [p for (n, _), p in ports.items() if n == node.name]
        found = _placeholders(node, nports, arrays)
        excluded = {k for ks in found.values() for k in ks}
        for p in nports:
            for k in found.get(p.port, ()):
                p.checks[k].placeholder = True
        if refused:
            continue   # an incomplete session: its samples are not evidence of anything
        hazards += _unfilled_cache(graph, node, found, arrays) if found else []
        hazards += _node_sample_hazards(node, nports, excluded, arrays)
        suspects = _suspect_literals(graph, node.name, prefix=" Suspect literals")
        for p in nports:
            hazards += _port_hazards(p, excluded, unfilled=p.port in found, suspects=suspects)
    if not refused:     # after the placeholders are marked: a reset is never read from them
        hazards += warm_start(graph, arrays)

    return sort_hazards(graph, hazards)


def sort_hazards(graph: GraphReport, hazards: list[Hazard]) -> list[Hazard]:
    """Graph-level first, then by node order, port order and KIND_ORDER (in place; returned)."""
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    ports_order = {(n.name, pi.name): j for n in graph.nodes for j, pi in enumerate(n.ports)}
    hazards.sort(key=lambda h: (h.node is not None, order.get(h.node, len(order)),
                                ports_order.get((h.node, h.port), -1 if h.port is None else 1 << 20),
                                KIND_ORDER.index(h.kind)))
    return hazards
