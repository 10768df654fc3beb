"""Teacher forcing on an onnxruntime engine graph: cut every tapped tensor, feed the reference.

``teacher_forced(engine, taps, feedable)`` takes the build's own engine graph (``engine.onnx``,
the artifact that produced ``sample_outputs.npz``) and returns ONE graph in which every consumer of
a tapped value reads a new graph input instead, fed with that tap's *reference* value, while the
graph still outputs the engine's own value of every tap and output (now computed from exact
inputs). One run per sample then yields every row's local value; ``leapp_lab.steps.local_error``
scores them.

Where a tap is cut is where its engine value is exposed (build.json ``via``):

* ``direct`` / ``unfused`` / ``alias``: the tensor the tap shows (an Identity's input, the output
  itself, or the model output it aliases); its consumers read the reference;
* ``dequantize`` (int8): the tap is ``DequantizeLinear(q, scale, zero_point)`` of the quantized
  tensor ``q`` the next layer consumes (QLinearConv, QGemm, DequantizeLinear ...); its consumers read
  ``QuantizeLinear(reference, scale, zero_point)`` instead, i.e. the exact value put on the grid the
  engine itself uses for that tensor. A layer's local error therefore includes rounding its input
  to int8, which no int8 engine can avoid.

A tap that cannot be cut (unbound, no reference to feed, a dtype the reference cannot take, a
value read inside a control-flow subgraph) keeps its engine wiring and gets a reason; the rows
after it then include its error, and say so.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from leapp_lab.model.tap import TapEntry
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX as TAP_NODE_PREFIX

from .base import EngineUnavailable
from leapp_lab.onnxio.split import SplitModel, load_split
from .ort_session import OrtRunner

#: prefix of the graph inputs that carry reference values, and of the nodes teacher forcing adds
LOCAL_PREFIX = "leapp_lab_local/"


@dataclass
class Cut:
    """One cut: the graph input ``feed`` receives the reference of row ``name`` (cast to ``dtype``,
    per-sample ``shape``); ``tensor``: the engine tensor whose consumers now read it (through a
    QuantizeLinear when ``quantize``); ``taps``: every tap cut at this tensor."""
    name: str
    feed: str
    tensor: str
    dtype: np.dtype
    shape: tuple
    quantize: bool = False
    taps: list[str] = field(default_factory=list)


@dataclass
class LocalGraph:
    """``model``: the teacher-forced graph; ``cuts``: in model order; ``outputs``: row name -> the
    graph output holding its (local) value; ``reasons``: row name -> why it was not cut."""
    model: onnx.ModelProto
    cuts: list[Cut]
    outputs: dict[str, str]
    reasons: dict[str, str]
    #: the engine file split into graph and weights, when ``model`` lacks the weights: they are
    #: merged back as bytes (``weights``), or read in place from the file (``external``)
    source: SplitModel | None = None

    def serialized(self) -> bytes:
        """The whole graph as onnxruntime loads it (``model`` with the source's weights merged in)."""
        return b"".join([self.model.SerializeToString(), *(self.source.weights if self.source else [])])

    def runner(self) -> OrtRunner:
        """A runner of the graph exactly as the engine runs (graph optimisations off); its
        threads do not spin (it runs beside verify's scoring: ``compare.local``). Its large
        weights are read from the engine file in place when onnxruntime can (else from bytes)."""
        return _LocalRunner(self)

    def feed(self, sample: int, references) -> dict[str, np.ndarray]:
        """The reference values of sample ``sample`` for every cut (``references[name]``: the
        row's reference array with its leading sample axis)."""
        return {c.feed: np.ascontiguousarray(np.asarray(references[c.name][sample]), dtype=c.dtype)
                for c in self.cuts}


class _LocalRunner(OrtRunner):
    """``LocalGraph.runner``: the session made with the weights as external data in the engine
    file; should onnxruntime refuse that (a version without the folder option), from bytes."""

    def __init__(self, lg: LocalGraph):
        super().__init__(b"", optimize=False, spin=False)
        self.lg = lg

    def _activate_impl(self) -> None:
        from .base import CompileError
        from .ort_session import make_session
        lg = self.lg
        src = lg.source
        if src is not None and src.external and src.folder is not None:
            try:
                self.session = make_session(b"".join([lg.model.SerializeToString(), *src.external]),
                                            optimize=False, what="the teacher-forced engine", spin=False,
                                            external_folder=src.folder)
                return
            except CompileError:
                pass
        self.session = make_session(lg.serialized(), optimize=False, what="the teacher-forced engine",
                                    spin=False)


def check_engine(engine: str | None) -> None:
    """Raise EngineUnavailable unless ``engine`` has an onnxruntime graph to cut."""
    if engine is None or not engine.startswith("ort"):
        raise EngineUnavailable(
            f"local error needs the engine's graph to cut and feed; engine {engine or 'unknown'!r} has "
            f"none this version can edit (the onnxruntime engines ort, ort-fp16 and ort-int8 do; "
            f"TensorRT engines are serialized plans)")


def _subgraph_reads(g: onnx.GraphProto) -> set[str]:
    """Names read inside If/Loop/Scan bodies of ``g``'s nodes (outer-scope values among them)."""
    out: set[str] = set()
    for n in g.node:
        for a in n.attribute:
            subs = list(a.graphs) + ([a.g] if a.HasField("g") else [])
            for sg in subs:
                out.update(x for m in sg.node for x in m.input)
                out |= _subgraph_reads(sg)
    return out


def teacher_forced(engine: onnx.ModelProto | SplitModel | str | Path, taps: list[TapEntry],
                   feedable: dict[str, tuple[np.dtype, tuple]]) -> LocalGraph:
    """The engine graph with every tap in ``taps`` (build.json's, with their binding) cut.

    ``engine``: the engine graph, the path of ``engine.onnx``, or that file already split
    (``onnx_split.SplitModel``: its weights are passed through as bytes, never parsed).
    ``feedable``: row name -> (dtype to feed, per-sample shape) for every row whose reference can
    be fed (compared, same shape as the engine's). Model outputs are never cut (nothing downstream
    of them is compared), but their local value is an output like any tap's."""
    source = None
    if isinstance(engine, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(engine)
        inits = {i.name for i in m.graph.initializer}
    else:
        source = engine if isinstance(engine, SplitModel) else load_split(engine)
        m = onnx.ModelProto()
        m.CopyFrom(source.model)        # the edit below must not touch a shared (cached) skeleton
        inits = source.initializer_names
    g = m.graph
    producers = {o: n for n in g.node for o in n.output if o}
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = defaultdict(list)
    for n in g.node:
        for i, x in enumerate(n.input):
            if x:
                consumers[x].append((n, i))
    graph_outputs = {o.name for o in g.output}
    in_subgraphs = _subgraph_reads(g)

    def is_tap_node(n: onnx.NodeProto) -> bool:
        return n.name.startswith(TAP_NODE_PREFIX)

    outputs: dict[str, str] = {o: o for o in graph_outputs}
    reasons: dict[str, str] = {}
    cuts: dict[str, Cut] = {}           # engine tensor -> its cut
    new_inputs: list[onnx.ValueInfoProto] = []
    new_nodes: list[onnx.NodeProto] = []
    for t in sorted(taps, key=lambda t: (t.order is None, t.order if t.order is not None else 0)):
        if t.binding == "unbound":
            reasons[t.name] = f"unbound in this engine ({t.binding_reason or 'no engine value'})"
            continue
        out = t.name if t.name in graph_outputs else (t.bound_to if t.bound_to in graph_outputs else None)
        if out is None:
            reasons[t.name] = "the engine graph has no output carrying this tap"
            continue
        outputs[t.name] = out
        if t.name not in feedable:
            reasons[t.name] = "no reference to feed (uncompared, or its shape/dtype differs)"
            continue
        p = producers.get(out)
        quantize, scale_zp, attrs = False, (), []
        if p is not None and is_tap_node(p) and p.op_type == "Identity":
            tensor = p.input[0]
        elif p is not None and is_tap_node(p) and p.op_type == "DequantizeLinear":
            tensor, scale_zp, attrs, quantize = p.input[0], tuple(p.input[1:]), list(p.attribute), True
        elif p is not None and is_tap_node(p):
            reasons[t.name] = f"exposed through a {p.op_type} this version cannot invert"
            continue
        else:
            tensor = out
        if tensor in inits:
            reasons[t.name] = "a constant of the engine: nothing upstream to cut"
            continue
        if tensor in in_subgraphs:
            reasons[t.name] = "read inside a control-flow subgraph (If/Loop/Scan): not cut"
            continue
        if tensor in cuts:                      # another tap on the same engine tensor
            cuts[tensor].taps.append(t.name)
            continue
        dtype, shape = feedable[t.name]
        feed = f"{LOCAL_PREFIX}{t.name}"
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        new_inputs.append(helper.make_tensor_value_info(feed, elem, list(shape)))
        src = feed
        if quantize:
            src = f"{LOCAL_PREFIX}{t.name}/quantized"
            q = helper.make_node("QuantizeLinear", [feed, *scale_zp], [src], name=f"{LOCAL_PREFIX}{t.name}/q")
            q.attribute.extend(attrs)
            new_nodes.append(q)
        for n, i in consumers.get(tensor, []):
            if not is_tap_node(n):
                n.input[i] = src
        qp = producers.get(tensor) if quantize else None
        if qp is not None and qp.op_type == "QuantizeLinear" and not is_tap_node(qp):
            # the float value quantized into q may also feed float ops directly (a QDQ graph
            # rarely does that): those read the float reference, or the cut would leak
            for n, i in consumers.get(qp.input[0], []):
                if n is not qp and not is_tap_node(n):
                    n.input[i] = feed
        cuts[tensor] = Cut(t.name, feed, tensor, np.dtype(dtype), tuple(shape), quantize, [t.name])
    g.input.extend(new_inputs)
    # the QuantizeLinear nodes read graph inputs and initializers only: first in topological order
    nodes = new_nodes + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    return LocalGraph(m, list(cuts.values()), outputs, reasons, source)
