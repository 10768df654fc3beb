"""Small, explicit edits of an exported ONNX graph: tap markers out, values renamed, types read."""
from __future__ import annotations

import re
from dataclasses import dataclass

import onnx
from onnx import helper

from ..model.tap import TAP_DOMAIN, TAP_OP

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass
class Marker:
    name: str
    tensor: str          # the value the marker was put on (after resolving marker chains)
    site: str | None     # the tap() call site recorded by ExportMode


def _subgraphs(node: onnx.NodeProto):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def _rename_inputs(graph: onnx.GraphProto, mapping: dict[str, str]) -> None:
    for n in graph.node:
        for i, name in enumerate(n.input):
            if name in mapping:
                n.input[i] = mapping[name]
        for sg in _subgraphs(n):
            _rename_inputs(sg, mapping)


def remove_tap_markers(model: onnx.ModelProto) -> list[Marker]:
    """Delete every ``leapp_lab::Tap`` node, wiring its consumers to its input; return the markers.

    A marker whose output is a graph output becomes an Identity that keeps the output's name.
    """
    g = model.graph
    alias: dict[str, str] = {}
    markers: list[Marker] = []
    outputs = {o.name for o in g.output}
    produced = {o for n in g.node if not (n.domain == TAP_DOMAIN and n.op_type == TAP_OP)
                for o in n.output if o}
    # a marker that produced a graph output: its input takes the output's name (as it has in the
    # untapped export), unless that input is a graph input / weight / output or already renamed
    renames: dict[str, str] = {}
    kept: list[onnx.NodeProto] = []
    for n in g.node:
        if n.domain == TAP_DOMAIN and n.op_type == TAP_OP:
            src = alias.get(n.input[0], n.input[0])
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            name = attrs.get("name", b"").decode()
            site = attrs.get("site", b"").decode() or None
            markers.append(Marker(name, src, site))
            out = n.output[0]
            if out in outputs:
                if src in produced and src not in outputs and src not in renames:
                    renames[src] = out
                else:
                    kept.append(helper.make_node("Identity", [renames.get(src, src)], [out], name=n.name))
            else:
                alias[out] = src
            continue
        kept.append(n)
    if not markers:
        return markers
    del g.node[:]
    g.node.extend(kept)
    _rename_inputs(g, alias)
    vis = [v for v in g.value_info if v.name not in alias]
    del g.value_info[:]
    g.value_info.extend(vis)
    for old, new in renames.items():
        rename_value(g, old, new)
    for m in markers:
        m.tensor = renames.get(m.tensor, m.tensor)
    vis = [v for v in g.value_info if v.name not in outputs]
    del g.value_info[:]
    g.value_info.extend(vis)
    if not any(n.domain == TAP_DOMAIN for n in g.node):
        ops = [o for o in model.opset_import if o.domain != TAP_DOMAIN]
        del model.opset_import[:]
        model.opset_import.extend(ops)
    return markers


def value_names(graph: onnx.GraphProto) -> set[str]:
    names = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    names |= {o.name for o in graph.output}
    for n in graph.node:
        names.update(o for o in n.output if o)
    return names


def rename_value(graph: onnx.GraphProto, old: str, new: str) -> None:
    """Rename an internal value everywhere it appears (producer, consumers, value_info)."""
    for n in graph.node:
        for i, o in enumerate(n.output):
            if o == old:
                n.output[i] = new
    _rename_inputs(graph, {old: new})
    for v in graph.value_info:
        if v.name == old:
            v.name = new


def value_types(model: onnx.ModelProto) -> dict[str, tuple[int, list[int] | None]]:
    """name -> (ONNX elem type, static shape or None), from shape inference plus the graph itself.
    Shape inference only runs when some node output has no typed value_info: the dynamo exporter
    types every value, and inferring would copy the whole model, weights included, twice."""
    g0 = model.graph
    typed = {v.name for v in list(g0.value_info) + list(g0.output)
             if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type}
    if all(o in typed for n in g0.node for o in n.output if o):
        inferred = model
    else:
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        except Exception:  # custom domains without schemas: keep what the exporter wrote
            inferred = model
    out: dict[str, tuple[int, list[int] | None]] = {}
    g = inferred.graph
    for v in list(g.value_info) + list(g.input) + list(g.output):
        tt = v.type.tensor_type
        if not v.type.HasField("tensor_type"):
            continue
        shape = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            shape = None if any(d is None for d in dims) else [int(d) for d in dims]
        if v.name not in out or out[v.name][0] == 0:
            out[v.name] = (tt.elem_type, shape)
    for init in g.initializer:
        out[init.name] = (init.data_type, list(init.dims))
    return out


def frames(stack_trace: str | None) -> list[tuple[str, int]]:
    return [(f, int(line)) for f, line in _FRAME.findall(stack_trace or "")]


def node_meta(node: onnx.NodeProto) -> dict[str, str]:
    return {p.key: p.value for p in node.metadata_props}
