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

KIND_ORDER = ("trace-refused", "trace-loss", "adapter-mismatch", "dropped-input", "single-sample", "identical-samples",
              "unfilled-cache", "mutated-after-trace", "frozen-constant", "export-mismatch",
              "tolerance-only", "constant-output", "warm-start")


def diagnose(graph: GraphReport, arrays: dict[str, np.ndarray] | None) -> list[Hazard]:
    """The hazards of one captured graph (see docs/hazards.md); sets SampleCheck.placeholder."""
    arrays = arrays or {}
    hazards: list[Hazard] = []
    hazards += trace_refused(graph)
    hazards += trace_loss(graph)
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
        hazards += node_sample_hazards(node, nports, excluded, arrays)
        suspects = suspect_literals(graph, node.name, prefix=" Suspect literals")
        for p in nports:
            hazards += port_hazards(p, excluded, unfilled=p.port in found, suspects=suspects)
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
