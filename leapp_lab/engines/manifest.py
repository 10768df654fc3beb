"""Read the tap manifest (``leapp_lab.manifest`` ONNX metadata, docs/taps.md) and cut taps off.

Contract (CONTRACTS.md, written by prepare): ``{"version": 1, "inputs": [...], "outputs": [{name,
order}], "taps": [{name, kind, order, tensor, producer_op, producer_node, reference_source,
uncompared_reason, source}]}``. An ONNX without the key is a model without taps: every graph output
is a model output, in graph order.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import onnx

MANIFEST_KEY = "leapp_lab.manifest"


class ManifestError(ValueError):
    """The ONNX carries a manifest that does not fit its graph."""


@dataclass
class TapSpec:
    name: str
    kind: str = "manual"
    order: int | None = None
    tensor: str | None = None
    producer_op: str | None = None
    producer_node: str | None = None
    reference_source: str | None = None
    uncompared_reason: str | None = None
    source: str | None = None

    @property
    def value(self) -> str:
        """The internal value the tap shows (``tensor``, or the output name itself)."""
        return self.tensor or self.name


@dataclass
class Manifest:
    inputs: list[str] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    taps: list[TapSpec] = field(default_factory=list)
    raw: dict[str, Any] | None = None

    @property
    def tap_names(self) -> list[str]:
        return [t.name for t in self.taps]

    def order_of(self, name: str) -> int | None:
        for o in self.outputs:
            if o.get("name") == name:
                return o.get("order")
        for t in self.taps:
            if t.name == name:
                return t.order
        return None


def node_order(graph: onnx.GraphProto) -> dict[str, int]:
    """value name -> index of its producing node (graph nodes are topologically sorted in ONNX)."""
    out = {}
    for i, n in enumerate(graph.node):
        for o in n.output:
            if o:
                out[o] = i
    return out


def read_manifest(model: onnx.ModelProto, path: str = "model") -> Manifest:
    raw = None
    for p in model.metadata_props:
        if p.key == MANIFEST_KEY:
            try:
                raw = json.loads(p.value)
            except json.JSONDecodeError as exc:
                raise ManifestError(f"{path}: metadata {MANIFEST_KEY!r} is not valid JSON ({exc})") from None
    g = model.graph
    order = node_order(g)
    init_names = {i.name for i in g.initializer}
    inputs = [i.name for i in g.input if i.name not in init_names]
    if raw is None:
        return Manifest(inputs=inputs,
                        outputs=[{"name": o.name, "order": order.get(o.name)} for o in g.output])
    if not isinstance(raw, dict) or not isinstance(raw.get("taps", []), list):
        raise ManifestError(f"{path}: metadata {MANIFEST_KEY!r} is not a manifest object")
    taps = []
    known = {f for f in TapSpec.__dataclass_fields__}
    for t in raw.get("taps", []):
        if not isinstance(t, dict) or "name" not in t:
            raise ManifestError(f"{path}: manifest tap entry without a name: {t!r:.120}")
        taps.append(TapSpec(**{k: v for k, v in t.items() if k in known}))
    graph_outputs = [o.name for o in g.output]
    tapset = {t.name for t in taps}
    outs = raw.get("outputs")
    if not outs:
        outs = [{"name": n, "order": order.get(n)} for n in graph_outputs if n not in tapset]
    missing = [t.name for t in taps if t.name not in graph_outputs]
    if missing:
        raise ManifestError(f"{path}: manifest taps {missing} are not outputs of the graph; "
                            f"re-run prepare (graph outputs: {graph_outputs})")
    return Manifest(inputs=raw.get("inputs") or inputs, outputs=list(outs), taps=taps, raw=raw)


def strip_taps(model: onnx.ModelProto, manifest: Manifest) -> onnx.ModelProto:
    """A copy of ``model`` without the tap outputs (and nodes that only fed them)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    tapset = set(manifest.tap_names)
    keep = [o for o in m.graph.output if o.name not in tapset]
    del m.graph.output[:]
    m.graph.output.extend(keep)
    remove_dead_nodes(m.graph)
    for p in list(m.metadata_props):
        if p.key == MANIFEST_KEY:
            m.metadata_props.remove(p)
    return m


def remove_dead_nodes(graph: onnx.GraphProto) -> int:
    """Drop nodes none of whose outputs reach a graph output (e.g. Identity nodes that only exposed
    a tap). Returns how many were removed."""
    live = {o.name for o in graph.output}
    keep = []
    for n in reversed(graph.node):
        if any(o in live for o in n.output if o):
            keep.append(n)
            live.update(i for i in n.input if i)
            for a in n.attribute:  # values used inside subgraphs
                for sg in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    live.update(_subgraph_inputs(sg))
    removed = len(graph.node) - len(keep)
    if removed:
        keep.reverse()
        del graph.node[:]
        graph.node.extend(keep)
    return removed


def _subgraph_inputs(g: onnx.GraphProto) -> set[str]:
    names = set()
    for n in g.node:
        names.update(i for i in n.input if i)
        for a in n.attribute:
            for sg in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                names |= _subgraph_inputs(sg)
    return names
