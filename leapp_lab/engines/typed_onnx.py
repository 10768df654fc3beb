"""Precision written into the ONNX: the typed graph an engine is built from.

TensorRT 11 builds only strongly typed networks: each tensor's type is what the ONNX says (fp16
tensors, Cast nodes where a layer stays fp32, Q/DQ pairs for int8). So the precision of every
reduced-precision engine lives in one typed ONNX, written by a field library, and that file is both
what onnxruntime runs here (the ``ort-*`` engines) and what TensorRT builds on a GPU (``trt-*``).

fp16: onnxconverter-common's ``float16.convert_float_to_float16`` (the converter onnxruntime's and
ModelOpt AutoCast's fp16 paths build on), with the model's inputs and outputs kept float32
(``keep_io_types``) and the ``keep_fp32`` nodes in its node block list: those nodes compute in
float32, between a Cast to float32 of their inputs and a Cast to float16 of their outputs.
"""
from __future__ import annotations

import warnings

import onnx

from leapp_lab.onnxio.graph_edit import rename_value
from onnx import TensorProto

from .base import CompileError, EngineUnavailable

#: the largest finite float16
FP16_MAX = 65504.0
#: the smallest positive float16 (subnormal): a weight below it is rounded up to it, not to zero
FP16_TINY = 2.0 ** -24


def _float16_module():
    try:
        from onnxconverter_common import float16
    except ImportError as exc:
        raise EngineUnavailable(
            "fp16 engines write their typed ONNX with onnxconverter-common (a dependency of leapp-lab: "
            f"pip install 'onnxconverter-common>=1.14'); importing it failed: {exc}") from None
    return float16


def to_fp16(model: onnx.ModelProto, keep_fp32: frozenset[str] | set[str] = frozenset()
            ) -> tuple[onnx.ModelProto, list[str]]:
    """The typed fp16 ONNX of ``model`` and the converter's notes (weights it clipped to fp16's
    range). Weights beyond ±65504 become ±65504 (the converter's default of 1e4 would clip weights
    fp16 holds exactly); ``keep_fp32``: node names left in float32 with Casts around them."""
    float16 = _float16_module()
    keep = sorted(set(keep_fp32))
    model = _prepared_for_converter(model, set(keep))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            typed = float16.convert_float_to_float16(
                model, min_positive_val=FP16_TINY, max_finite_val=FP16_MAX, keep_io_types=True,
                node_block_list=keep, op_block_list=list(float16.DEFAULT_OP_BLOCK_LIST))
        except Exception as exc:  # noqa: BLE001 - the converter's own message, with who said it
            raise CompileError(f"fp16 conversion (onnxconverter-common float16.convert_float_to_float16) "
                               f"failed: {type(exc).__name__}: {str(exc).strip()[:600]}") from None
    notes = sorted({str(w.message) for w in caught if "truncated" in str(w.message)})
    if keep:
        _restore_kept(typed, model, set(keep))
    return typed, notes


def _prepared_for_converter(model: onnx.ModelProto, keep: set[str]) -> onnx.ModelProto:
    """A copy of ``model`` in the shape the converter handles (measured with onnxconverter-common
    1.16: both cases below made graphs onnxruntime refuses, "Type parameter (T) ... bound to
    different types"), same values:

    - an initializer read by a kept node and by a converted one: the kept nodes read a copy of
      it (the converter gives one initializer one type);
    - a graph output that nodes also read: the producer writes an inner value that the readers
      read, and an Identity makes the output (the converter keeps outputs float32 but leaves
      their readers expecting float16)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    readers: dict[str, set[bool]] = {}
    for n in g.node:
        for name in n.input:
            readers.setdefault(name, set()).add(n.name in keep)
    copies = {}
    for init in list(g.initializer):
        if init.data_type == TensorProto.FLOAT and readers.get(init.name) == {True, False}:
            c = onnx.TensorProto()
            c.CopyFrom(init)
            c.name = copies[init.name] = f"{init.name}__fp32"
            g.initializer.append(c)
    read = {name for n in g.node for name in n.input}
    inner = {o.name: f"{o.name}__inner" for o in g.output if o.name in read}
    for n in g.node:
        for i, name in enumerate(n.input):
            if n.name in keep and name in copies:
                n.input[i] = copies[name]
            elif name in inner:
                n.input[i] = inner[name]
        for j, name in enumerate(n.output):
            if name in inner:
                n.output[j] = inner[name]
    for out, name in inner.items():
        g.node.append(onnx.helper.make_node("Identity", [name], [out], name=f"{out}__output"))
    return m


def _restore_kept(typed: onnx.ModelProto, source: onnx.ModelProto, keep: set[str]) -> None:
    """Two things the converter gets wrong for block-listed nodes, put right in place (measured
    with onnxconverter-common 1.16):

    - it renames a kept node's inputs before it decides which initializers to leave float32, so
      the kept node's weights are rounded to float16 and cast back: their float32 values are put
      back and the kept node reads them directly;
    - it renames a kept node's outputs (``<node>_output_cast_<i>``) and gives the original name to
      the float16 Cast after it (or to nothing, when only kept nodes read it): the float32 value
      the kept node computes gets its original name back (a tap on it reads what the layer
      computed, and TensorRT's debug tensors find it by that name); the Cast's float16 copy is
      ``<name>__fp16``."""
    g = typed.graph
    originals = {i.name: i for i in source.graph.initializer if i.data_type == TensorProto.FLOAT}
    readers: dict[str, set[bool]] = {}
    for n in source.graph.node:
        for name in n.input:
            readers.setdefault(name, set()).add(n.name in keep)
    restore = {name for name, who in readers.items() if who == {True} and name in originals}
    for init in g.initializer:
        if init.name in restore:
            init.CopyFrom(originals[init.name])
    drop, wire = [], {}
    for n in g.node:
        if n.op_type == "Cast" and len(n.input) == 1 and n.input[0] in restore:
            drop.append(n)
            wire[n.output[0]] = n.input[0]
    for n in drop:
        g.node.remove(n)
    for n in g.node:
        for i, name in enumerate(n.input):
            if name in wire:
                n.input[i] = wire[name]
    outputs = {o.name for o in g.output}
    src_nodes = {n.name: n for n in source.graph.node if n.name in keep}
    for n in list(g.node):
        orig = src_nodes.get(n.name)
        if orig is None or n.op_type == "Cast":
            continue
        for j, (now, was) in enumerate(zip(list(n.output), list(orig.output))):
            if not was or now == was or was in outputs:
                continue
            rename_value(g, was, f"{was}__fp16")
            rename_value(g, now, was)


def cast_nodes_at(model: onnx.ModelProto, node: str) -> list[onnx.NodeProto]:
    """The Cast nodes the converter put around ``node`` (its inputs cast to float32, its outputs
    back to float16)."""
    ins = {i for n in model.graph.node if n.name == node for i in n.input}
    outs = {o for n in model.graph.node if n.name == node for o in n.output}
    return [n for n in model.graph.node if n.op_type == "Cast"
            and (set(n.output) & ins or set(n.input) & outs)]


def describe(model: onnx.ModelProto) -> str:
    """One line: how many initializers are float16 / float32 and how many Casts the graph holds."""
    kinds = [i.data_type for i in model.graph.initializer]
    casts = sum(n.op_type == "Cast" for n in model.graph.node)
    return (f"{kinds.count(TensorProto.FLOAT16)} float16 and {kinds.count(TensorProto.FLOAT)} float32 "
            f"initializers, {casts} Cast nodes")
