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

Where the tapped tensor is a layout transform (Transpose, Reshape ...) of the tensor the next layer
really reads (the engine folded the consumer's path and kept the tapped op as a side branch), the
cut goes on up that chain (``ort_local_cut.layout_chain``): the other consumers of each tensor on it
read the reference taken back through the chain's inverse. A cut that still rewires nothing, of a
tensor the prepared model (``prepared``) does read further on, leaves the rows after it inheriting
its error: they get no local value, and a reason (``ort_local_cut.not_isolated``).

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

from .base import EngineUnavailable
from leapp_lab.onnxio.split import SplitModel, load_split
#: LOCAL_PREFIX: prefix of the graph inputs that carry reference values, and of the nodes teacher
#: forcing adds
from .ort_local_cut import (LOCAL_PREFIX, ancestry, inverse_nodes, is_tap_node, layout_chain, not_isolated,
                            topo_sorted)
from .ort_session import OrtRunner



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
    #: the engine tensors up the layout chain above ``tensor`` whose other consumers read the
    #: reference taken back through it (``ort_local_cut.layout_chain``), nearest first
    through: list[str] = field(default_factory=list)
    #: how many engine consumers now read the reference (0: the cut changes nothing downstream)
    rewired: int = 0


@dataclass
class LocalGraph:
    """``model``: the teacher-forced graph; ``cuts``: in model order; ``outputs``: row name -> the
    graph output holding its (local) value; ``reasons``: row name -> why it was not cut."""
    model: onnx.ModelProto
    cuts: list[Cut]
    outputs: dict[str, str]
    reasons: dict[str, str]
    #: row name -> a note on a row that has a local value (a cut that rewired nothing)
    notes: dict[str, str] = field(default_factory=dict)
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
                   feedable: dict[str, tuple[np.dtype, tuple]],
                   prepared=None) -> LocalGraph:
    """The engine graph with every tap in ``taps`` (build.json's, with their binding) cut.

    ``engine``: the engine graph, the path of ``engine.onnx``, or that file already split
    (``onnx_split.SplitModel``: its weights are passed through as bytes, never parsed).
    ``feedable``: row name -> (dtype to feed, per-sample shape) for every row whose reference can
    be fed (compared, same shape as the engine's). Model outputs are never cut (nothing downstream
    of them is compared), but their local value is an output like any tap's. ``prepared``: the
    model the engine was compiled from (its graph only; or a function giving it or None, called only
    when a cut rewired nothing), to tell a cut that rewires nothing of a
    value read further on (the rows after it get no local value) from one of a value only watched;
    without it such rows keep their value."""
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

    outputs: dict[str, str] = {o: o for o in graph_outputs}
    reasons: dict[str, str] = {}
    cuts: dict[str, Cut] = {}           # engine tensor -> its cut
    new_inputs: list[onnx.ValueInfoProto] = []
    new_nodes: list[onnx.NodeProto] = []
    claimed: set[str] = set()           # engine tensors a cut (or its layout chain) already feeds
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
        cut = Cut(t.name, feed, tensor, np.dtype(dtype), tuple(shape), quantize, [t.name])
        # the layout chain above the tapped tensor: the engine's next layer may read one of those
        chain = layout_chain(tensor, producers, lambda x: x in in_subgraphs or x in claimed)
        inv, ups = inverse_nodes(src, chain, f"{LOCAL_PREFIX}{t.name}")
        new_nodes += inv
        chain_nodes = {id(p) for p, _ in chain}
        for x, value in [(tensor, src), *((up, v) for (_, up), v in zip(chain, ups))]:
            for n, i in consumers.get(x, []):
                if not is_tap_node(n) and id(n) not in chain_nodes:
                    n.input[i] = value
                    cut.rewired += 1
        cut.through = [up for _, up in chain]
        claimed.update([tensor, *cut.through])
        top = chain[-1][1] if chain else tensor
        qp = producers.get(top) if quantize else None
        if qp is not None and qp.op_type == "QuantizeLinear" and not is_tap_node(qp):
            # the float value quantized into q may also feed float ops directly (a QDQ graph
            # rarely does that): those read the float reference, or the cut would leak
            fl = feed
            if chain:
                finv, fups = inverse_nodes(feed, chain, f"{LOCAL_PREFIX}{t.name}/float")
                new_nodes += finv
                fl = fups[-1]
            for n, i in consumers.get(qp.input[0], []):
                if n is not qp and not is_tap_node(n):
                    n.input[i] = fl
                    cut.rewired += 1
        cuts[tensor] = cut
    g.input.extend(new_inputs)
    # the QuantizeLinear nodes read graph inputs and initializers only; a Shape of an engine tensor
    # (a reshape undone) follows its producer: sorted
    nodes = topo_sorted(new_nodes + list(g.node))
    del g.node[:]
    g.node.extend(nodes)
    notes: dict[str, str] = {}
    if prepared is not None:
        _mark_not_isolated(prepared, taps, list(cuts.values()), nodes, producers, consumers, outputs, reasons,
                           notes)
    return LocalGraph(m, list(cuts.values()), outputs, reasons, notes, source)


def _mark_not_isolated(prepared, taps, cuts, nodes, producers, consumers, outputs, reasons, notes) -> None:
    """The safety net (``ort_local_cut.not_isolated``): a row after a cut that rewired nothing, of a
    value the prepared model reads on, has no local value (out of ``outputs``, a reason instead)
    when the teacher-forced engine still computes it from a node that makes the tap's own value."""
    tensor_of = {t.name: t.tensor for t in taps if t.tensor}
    dead = {n: tensor_of[n] for c in cuts if not c.rewired for n in c.taps if n in tensor_of}
    if not dead:
        return
    prepared = prepared() if callable(prepared) else prepared
    if prepared is None:
        return
    effective = {tensor_of[n] for c in cuts if c.rewired for n in c.taps if n in tensor_of}
    hit = not_isolated(prepared, dead, effective)
    anc = ancestry(nodes)
    by_tap = {n: c for c in cuts for n in c.taps}
    hit = {row: tap for row, tap in hit.items()
           if row in outputs and anc(outputs[row]) & anc(by_tap[tap].tensor)}
    for c in cuts:
        if not c.rewired and any(n in hit.values() for n in c.taps):
            # name the tensor the engine reads instead when the tapped one is made from it
            p = producers.get(c.through[-1] if c.through else c.tensor)
            other = [x for x in (p.input[:1] if p is not None else [])
                     if any(not is_tap_node(n) and n is not p for n, _ in consumers.get(x, []))]
            via = f" ({other[0]})" if other else ""
            for n in c.taps:
                notes[n] = (f"cut, but no engine node after it reads the tapped tensor {c.tensor!r}: the "
                            f"engine reads this value through another tensor{via}; the rows after it "
                            "have no local value")
                for row, tap in hit.items():
                    if tap == n:
                        del outputs[row]
                        reasons[row] = (f"not isolated: the engine reads {n}'s value through another "
                                        f"tensor{via} than the tapped {c.tensor!r}, so this row's "
                                        f"teacher-forced value would include {n}'s error; no local error "
                                        f"past {n}")
