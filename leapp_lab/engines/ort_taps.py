"""Taps on an onnxruntime engine graph: expose each manifest tap as an output of the converted,
optimised graph, as the value the next layer really consumes (int8: the dequantized copy of the
quantized tensor), and say why when a fusion removed it."""
from __future__ import annotations

import onnx
from onnx import helper, numpy_helper

from leapp_lab.model.tap import TapEntry
from leapp_lab.onnxio.graph_edit import rename_value
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX as TAP_NODE_PREFIX

_QUANT_INPUT_SLOTS = (0, 3)  # (data, scale, zero point) triples of QLinear*/QGemm/DequantizeLinear inputs


def _data_slots(node: onnx.NodeProto):
    """Where the (data, scale, zero point) triples of a quantized node's inputs start. QLinearConcat
    puts its output's (scale, zero point) first, then one triple per input."""
    if node.op_type == "QLinearConcat":
        return range(2, len(node.input), 3)
    return _QUANT_INPUT_SLOTS


def bind_taps(engine: onnx.ModelProto, converted: onnx.ModelProto, taps: list[TapEntry]
              ) -> tuple[onnx.ModelProto, list[TapEntry]]:
    """Expose ``taps`` as outputs of a copy of the engine graph. Returns the tapped graph and a copy
    of each tap with its ``binding`` / ``bound_to`` / ``via`` / ``binding_reason`` filled in."""
    m = onnx.ModelProto()
    m.CopyFrom(engine)
    g = m.graph
    produced = {o for n in g.node for o in n.output if o}
    available = produced | {i.name for i in g.input} | {i.name for i in g.initializer}
    outputs = {o.name for o in g.output}
    # int8: the (scale, zero point) that quantized each tensor in the converted graph
    qparams = {n.input[0]: (n.input[1], n.input[2] if len(n.input) > 2 else "")
               for n in converted.graph.node if n.op_type == "QuantizeLinear"}
    producers = {o: n for n in g.node for o in n.output if o}
    converted_inits = {i.name: i for i in converted.graph.initializer}
    engine_inits = {i.name: i for i in g.initializer}
    keys: dict[tuple, tuple | None] = {}

    def scale_key(inits: dict, name: str):
        k = (id(inits), name)
        if k not in keys:
            init = inits.get(name)
            arr = numpy_helper.to_array(init) if init is not None and _small(init) else None
            keys[k] = None if arr is None else (arr.dtype.str, arr.shape, arr.tobytes())
        return keys[k]

    conv_producer = {o: n.op_type for n in converted.graph.node for o in n.output if o}
    conv_nodes = {n.name: n for n in converted.graph.node if n.name}
    bound: list[TapEntry] = []
    for t in taps:
        value = t.value
        if t.name in outputs:
            bound.append(t.bind("bound", t.name, "direct"))
            continue
        if value in outputs:
            # the tap shows a model output: an extra consumer of it (Identity) would make
            # onnxruntime duplicate a DequantizeLinear; copy the output's values instead
            bound.append(t.bind("bound", value, "alias"))
            continue
        # int8: consumers see the *quantized* value (the quantizer may even drop a Relu and let the
        # QuantizeLinear clip), so a quantized tensor is shown as DequantizeLinear of its int8 form
        q = qparams.get(value)
        found = None
        if q is not None:
            scale = q[0]
            # onnxruntime's constant sharing renames a scale (linear_9_scale -> val_181_scale):
            # match it by name or by value
            want = scale_key(converted_inits, scale)
            cands = {}
            for n in g.node:
                # a QuantizeLinear's slot 0 is the float input; an exposure node added for another
                # tap reads a tensor that is already a candidate (or is the tap's own)
                if n.op_type == "QuantizeLinear" or n.name.startswith(TAP_NODE_PREFIX):
                    continue
                for s in _data_slots(n):
                    if len(n.input) > s + 1 and (n.input[s + 1] == scale or (
                            want is not None and scale_key(engine_inits, n.input[s + 1]) == want)):
                        cands.setdefault(n.input[s], (n.input[s], n.input[s + 1],
                                                      n.input[s + 2] if len(n.input) > s + 2 else ""))
            # a scale is shared along data-movement ops (MaxPool, Reshape, Transpose ...) and by the
            # QuantizeLinear of their float outputs: those tensors hold *another* value (another
            # shape), so they are no candidates unless the tap's own value comes from such an op
            cands = {k: c for k, c in cands.items()
                     if _may_hold(k, value, producers, conv_producer, conv_nodes)}
            # one quantized tensor per scale, or the scale was shared (ConstantSharing) and the
            # match would be ambiguous: then fall back to the float value
            if len(cands) == 1:
                found = next(iter(cands.values()))
        if found:
            if t.name in available:  # the float value carries the tap's name: free the name
                rename_value(g, t.name, t.name + "__float")
                available.add(t.name + "__float")
                if found[0] == t.name:
                    found = (t.name + "__float",) + found[1:]
            ins = [found[0], found[1]] + ([found[2]] if found[2] else [])
            g.node.append(helper.make_node("DequantizeLinear", ins, [t.name], name=TAP_NODE_PREFIX + t.name))
            g.output.append(onnx.ValueInfoProto(name=t.name))
            outputs.add(t.name)
            bound.append(t.bind("bound", found[0], "dequantize"))
            continue
        if value in available:
            if value == t.name:
                g.output.append(onnx.ValueInfoProto(name=t.name))
            else:
                g.node.append(helper.make_node("Identity", [value], [t.name], name=TAP_NODE_PREFIX + t.name))
                g.output.append(onnx.ValueInfoProto(name=t.name))
            outputs.add(t.name)
            bound.append(t.bind("bound", value, "direct"))
            continue
        reason = (f"tensor {value!r} no longer exists in the engine: onnxruntime's graph optimisation "
                  f"fused it into {_fused_into(converted, value)}; move the tap to a tensor that survives "
                  f"(a module boundary, after the activation)")
        bound.append(t.bind("unbound", reason=reason))
    return m, bound


def _small(init: onnx.TensorProto) -> bool:
    # a scale or zero point is a few bytes, always inline; an external tensor is a weight left
    # unread where it lies
    if init.data_location == onnx.TensorProto.EXTERNAL:
        return False
    n = 1
    for d in init.dims:
        n *= d
    return n <= 4096


# ops that move or select int8 values and keep their input's (scale, zero point)
_SCALE_SHARING_OPS = frozenset({"MaxPool", "GlobalMaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
                                "Flatten", "Gather", "Slice", "Split", "Resize", "DepthToSpace",
                                "SpaceToDepth", "Expand", "Tile", "Identity"})


def _may_hold(tensor: str, value: str, producers: dict, conv_producer: dict, conv_nodes: dict) -> bool:
    """Could the quantized engine tensor ``tensor`` hold float ``value`` of the converted graph?"""
    n = producers.get(tensor)
    if n is None:
        return True
    if n.op_type == "QuantizeLinear":
        return n.input[0] == value
    if n.op_type in _SCALE_SHARING_OPS:
        return conv_producer.get(value) == n.op_type
    if n.op_type.startswith("QLinear") or n.op_type == "QGemm":
        # a quantized kernel's output is its own node's value: QLinearConcat shares one scale
        # between its inputs and its output, so the scale alone cannot tell a branch from the join
        c = conv_nodes.get(n.name)
        if c is not None:
            return value in c.output
    return True


def _quantized_form(converted: onnx.ModelProto, value: str):
    """The QuantizeLinear node of ``value`` in the converted (QDQ) graph, or None."""
    for n in converted.graph.node:
        if n.op_type == "QuantizeLinear" and n.input[0] == value:
            return n
    return None


def _fused_into(converted: onnx.ModelProto, value: str) -> str:
    for n in converted.graph.node:
        if value in n.output:
            cons = [c.op_type for c in converted.graph.node if value in c.input]
            return f"a fused kernel ({n.op_type}" + (f" -> {', '.join(cons)}" if cons else "") + ")"
    return "a fused kernel"
