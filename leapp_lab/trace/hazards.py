"""Hazards: what a captured LEAPP trace says is wrong, or cannot be trusted, and what to do.

``diagnose(graph, arrays)`` reads one captured :class:`GraphReport` and its arrays
(``<node>/<port>/<sample>/recorded|exported|fx`` for output ports, ``<node>/<port>/<sample>/input``
for input ports) and returns :class:`Hazard` records. It also sets ``SampleCheck.placeholder`` on
the samples LEAPP never really recorded. The rules are documented one by one in docs/hazards.md;
keep the two in step. The rules are in two modules: ``hazard_log`` (LEAPP's log and the traced
graph) and ``hazard_samples`` (the captured samples and their trajectory); this one runs them in
order and sorts what they find (``KIND_ORDER``).

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

import numpy as np

from leapp_lab.model.trace import GraphReport, Hazard

from .hazard_log import dropped_inputs, suspect_literals, trace_loss, trace_refused
from .hazard_samples import (node_sample_hazards, placeholders, port_hazards, ports_of, unfilled_cache,
                             warm_start)
from .hazard_state import mutated_state, undeclared_state

KIND_ORDER = ("trace-refused", "trace-loss", "adapter-mismatch", "dropped-input", "single-sample", "identical-samples",
              "unfilled-cache", "undeclared-state", "mutated-after-trace", "frozen-constant", "export-mismatch",
              "tolerance-only", "constant-output", "warm-start")


def diagnose(graph: GraphReport, arrays: dict[str, np.ndarray] | None) -> list[Hazard]:
    """The hazards of one captured graph (see docs/hazards.md); sets SampleCheck.placeholder."""
    arrays = arrays or {}
    hazards: list[Hazard] = []
    hazards += trace_refused(graph)
    loss = trace_loss(graph)
    hazards += loss
    lossy = {h.node for h in loss}
    hazards += dropped_inputs(graph)
    refused = graph.status in ("refused", "error")

    ports = ports_of(graph, arrays)
    for node in graph.nodes:
        nports = [p for (n, _), p in ports.items() if n == node.name]
        found = placeholders(node, nports, arrays)
        excluded = {k for ks in found.values() for k in ks}
        for p in nports:
            for k in found.get(p.port, ()):
                p.checks[k].placeholder = True
        if refused:
            continue   # an incomplete session: its samples are not evidence of anything
        hazards += unfilled_cache(graph, node, found, arrays) if found else []
        sample_level = node_sample_hazards(node, nports, excluded, arrays)
        suspects = suspect_literals(graph, node.name, prefix=" Suspect literals")
        # one root cause, one hazard: the ports an undeclared state or watched state change explain
        # get no per-port frozen-constant / mutated-after-trace of their own
        found_state, claimed = undeclared_state(node, nports, excluded)
        found_mut, claimed_mut = mutated_state(node, [p for p in nports if p.port not in claimed],
                                               excluded, graph.state_changes)
        claimed |= claimed_mut
        # an output made constant (all NaN) by the same cause is not a second finding
        hazards += [h for h in sample_level if not (h.kind == "constant-output" and h.port in claimed)]
        per_port = []
        for p in nports:
            per_port += port_hazards(p, excluded, unfilled=p.port in found, suspects=suspects,
                                     explained=p.port in claimed)
        if node.name in lossy and not found_mut:
            # a computation missing from the graph (a TorchScript module LEAPP could not trace
            # into) also makes the FX replay differ on sample 0: that is the trace-loss, not state
            per_port = [h for h in per_port if h.kind != "mutated-after-trace"]
        hazards += found_state + found_mut + merge_mutated(per_port)
    if not refused:     # after the placeholders are marked: a reset is never read from them
        hazards += warm_start(graph, arrays)

    return sort_hazards(graph, hazards)


def merge_mutated(hazards: list[Hazard]) -> list[Hazard]:
    """The per-port ``mutated-after-trace`` hazards of one node as one hazard (one root cause: the
    node's module state), its samples the union, its message the evidence of every port."""
    mut = [h for h in hazards if h.kind == "mutated-after-trace"]
    if len(mut) < 2:
        return hazards
    first = mut[0]
    ports = [h.port for h in mut]
    merged = Hazard(first.kind, first.node, first.port, sorted({k for h in mut for k in h.samples}),
                    first.message + " The same holds on " + ", ".join(
                        f"{h.port!r} ({', '.join(map(str, h.samples))})" for h in mut[1:]) + ".",
                    ports=ports)
    return [h for h in hazards if h.kind != "mutated-after-trace"] + [merged]


def sort_hazards(graph: GraphReport, hazards: list[Hazard]) -> list[Hazard]:
    """Graph-level first, then by node order, port order and KIND_ORDER (in place; returned)."""
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    ports_order = {(n.name, pi.name): j for n in graph.nodes for j, pi in enumerate(n.ports)}
    hazards.sort(key=lambda h: (h.node is not None, order.get(h.node, len(order)),
                                ports_order.get((h.node, h.port), -1 if h.port is None else 1 << 20),
                                KIND_ORDER.index(h.kind)))
    return hazards
