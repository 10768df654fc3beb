"""The prepared (fp32) model rounded the way an int8 engine stores its values, run in fp32
onnxruntime (``verify --expected int8``): what int8 rounding alone would do to each row.

``expected_graph(model, grids, cuts)`` returns ONE graph with three chains over the same inputs:

* ``fp32``: the prepared model as it is (its outputs prefixed ``leapp_lab_fp32/``), run on one
  sample to check that this ONNX still is the model of the reference;
* ``cumulative``: every weight rounded onto the engine's weight grid (``W_quantized``'s scale and
  zero point), every bias onto its int32 grid (input scale x weight scale), and every activation
  the engine quantizes sent through ``QuantizeLinear -> DequantizeLinear`` with the engine's own
  scale and zero point (``int8_grids``); the rest computes in fp32. Its outputs keep the model's
  names: each row's ``expected`` value;
* ``local`` (prefixed ``leapp_lab_expected_local/``): the same rounded model cut at the taps
  ``--local`` cuts: each consumer of a cut tensor reads the tap's *reference* value, rounded onto
  that tensor's grid when the engine quantizes it. A row's value there is its layer computed from
  exact inputs on the input grid, with the weights as stored and the output on its output grid.

One run per sample gives every row's cumulative and local expected value.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

from leapp_lab.onnxio.manifest import IDENTITY_PREFIX as TAP_NODE_PREFIX

from .int8_grids import Grid, Int8Grids, fake_quantize

FP32 = "leapp_lab_fp32/"
LOCAL = "leapp_lab_expected_local/"
_FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                onnx.TensorProto.DOUBLE)
FQ = "leapp_lab_fq/"


@dataclass
class ExpectedGraph:
    """``model``: the three chains; ``fp32`` / ``cumulative`` / ``local``: row (graph output) name
    -> the output holding its value in that chain; ``feeds``: (graph input, row name) of every cut;
    ``rounded``: the activations rounded (float names); ``missing``: grid names the model lacks."""
    model: onnx.ModelProto
    fp32: dict[str, str] = field(default_factory=dict)
    cumulative: dict[str, str] = field(default_factory=dict)
    local: dict[str, str] = field(default_factory=dict)
    feeds: list[tuple[str, str]] = field(default_factory=list)
    rounded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    #: int8 tensors of the engine with no float name (``Int8Grids.unmapped``), for the warning
    unmapped: list[str] = field(default_factory=list)
    #: row -> an int8 kernel on its local path that the simulation does not reproduce (``unreproduced``)
    unreproduced: dict[str, str] = field(default_factory=dict)


def _qdq(src: str, dst: str, grid: Grid, tag: str, inits: list) -> list[onnx.NodeProto]:
    """QuantizeLinear -> DequantizeLinear of ``src`` onto ``grid`` into ``dst``."""
    s, z = f"{FQ}{tag}/scale", f"{FQ}{tag}/zero_point"
    scale = grid.scale.astype(np.float32)
    zp = grid.zero_point
    inits += [numpy_helper.from_array(scale.reshape(()) if scale.size == 1 else scale, s),
              numpy_helper.from_array(zp.reshape(()) if zp.size == 1 else zp, z)]
    axis = {} if grid.axis is None else {"axis": grid.axis}
    return [helper.make_node("QuantizeLinear", [src, s, z], [f"{FQ}{tag}/q"], name=f"{FQ}{tag}/Q", **axis),
            helper.make_node("DequantizeLinear", [f"{FQ}{tag}/q", s, z], [dst], name=f"{FQ}{tag}/DQ", **axis)]


#: the int8 kernels whose output the simulation reproduces step for step from the same int8 inputs
#: (measured on clean builds: every element equal but the rare tie an fp32 sum rounds the other way,
#: docs/verify.md); a row computed through any other int8 kernel is not judged by the simulation
REPRODUCED = frozenset({"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "QGemm",
                        "QLinearAdd", "QLinearMul", "QLinearSoftmax", "QLinearConcat", "QLinearSigmoid"})


def unreproduced(model: onnx.ModelProto, rows: list[str], cuts: set[str], kernels: dict[str, str]) -> dict[str, str]:
    """row -> an int8 kernel the simulation does not reproduce (``REPRODUCED``) that computes part of
    the row from its upstream cuts (``cuts``: the tensors ``--local`` feeds the reference at), for the
    rows that have one. ``kernels``: ``Int8Grids.kernels``."""
    producer = {o: n for n in model.graph.node for o in n.output if o}
    out: dict[str, str] = {}
    for row in rows:
        seen, stack = set(), [row]
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            k = kernels.get(t)
            if k is not None and k not in REPRODUCED:
                out[row] = k
                break
            n = producer.get(t)
            if n is None or (t in cuts and t != row):
                continue
            stack += [x for x in n.input if x]
    return out


def _const(inits: list, name: str, value) -> str:
    inits.append(numpy_helper.from_array(np.asarray(value), name))
    return name


def emulate_kernel(node: onnx.NodeProto, in_grids: list, out: str, grid: Grid, kernel: str | None,
                   inits: list) -> list[onnx.NodeProto]:
    """Nodes computing ``out`` (on ``grid``) from ``node``'s inputs (on ``in_grids``) as the engine's
    int8 kernel rounds it, where its arithmetic differs from the float op followed by
    QuantizeLinear at a tie; [] where it does not apply (the float op and a QuantizeLinear then).

    * ``QLinearMatMul`` (MLAS): the int8 product summed exactly in int32, times the float32
      multiplier ``a_scale * b_scale / y_scale``, rounded half to even: MatMulInteger, Cast, Mul,
      QuantizeLinear with scale 1 and the output zero point;
    * ``QLinearAdd`` (MLAS, AVX2): ``fma(a, a_scale / c_scale, fma(b, b_scale / c_scale, fixed))``
      on the int8 values, ``fixed = c_zero_point - (ratio_a * a_zero_point + ratio_b * b_zero_point)``
      in float32, rounded half to even. Each fma is one rounding of an exact sum: computed here in
      float64 (the product of an int8 value and a float32 ratio is exact there) and cast to float32.

    Per-tensor grids only (a per-channel weight of a MatMul goes through the float op)."""
    if kernel not in ("QLinearMatMul", "QLinearAdd") or node.op_type not in ("MatMul", "Add") or len(node.input) != 2:
        return []
    ga, gb = in_grids
    if ga is None or gb is None or any(g.scale.size != 1 for g in (ga, gb, grid)):
        return []
    if any(g.zero_point.dtype != np.int8 for g in (ga, gb, grid)):
        return []
    f32 = np.float32
    sa, sb, sc = (f32(g.scale.reshape(())) for g in (ga, gb, grid))
    za, zb, zc = (int(g.zero_point.reshape(())) for g in (ga, gb, grid))
    t = f"{FQ}{out}/{kernel}"
    nodes = []
    qs = []
    for i, g in enumerate((ga, gb)):
        s_, z_ = _const(inits, f"{t}/s{i}", g.scale.reshape(()).astype(f32)), _const(inits, f"{t}/z{i}", g.zero_point.reshape(()))
        nodes.append(helper.make_node("QuantizeLinear", [node.input[i], s_, z_], [f"{t}/q{i}"], name=f"{t}/Q{i}"))
        qs.append((f"{t}/q{i}", z_))
    one = _const(inits, f"{t}/one", f32(1.0))
    zc_ = _const(inits, f"{t}/zc", np.int8(zc))
    if kernel == "QLinearMatMul":
        mult = _const(inits, f"{t}/multiplier", f32(f32(sa * sb) / sc))
        nodes += [helper.make_node("MatMulInteger", [qs[0][0], qs[1][0], qs[0][1], qs[1][1]], [f"{t}/acc"],
                                   name=f"{t}/MatMulInteger"),
                  helper.make_node("Cast", [f"{t}/acc"], [f"{t}/accf"], to=onnx.TensorProto.FLOAT, name=f"{t}/Cast"),
                  helper.make_node("Mul", [f"{t}/accf", mult], [f"{t}/scaled"], name=f"{t}/Mul")]
    else:
        ra, rb = f32(sa / sc), f32(sb / sc)
        fixed = f32(f32(zc) - f32(f32(ra * f32(za)) + f32(rb * f32(zb))))
        ra_, rb_ = _const(inits, f"{t}/ra", np.float64(ra)), _const(inits, f"{t}/rb", np.float64(rb))
        fx = _const(inits, f"{t}/fixed", np.float64(fixed))
        d = onnx.TensorProto.DOUBLE
        nodes += [helper.make_node("Cast", [qs[0][0]], [f"{t}/a"], to=d, name=f"{t}/CastA"),
                  helper.make_node("Cast", [qs[1][0]], [f"{t}/b"], to=d, name=f"{t}/CastB"),
                  helper.make_node("Mul", [f"{t}/b", rb_], [f"{t}/b_r"], name=f"{t}/MulB"),
                  helper.make_node("Add", [f"{t}/b_r", fx], [f"{t}/inner64"], name=f"{t}/AddB"),
                  helper.make_node("Cast", [f"{t}/inner64"], [f"{t}/inner32"], to=onnx.TensorProto.FLOAT,
                                   name=f"{t}/Round1"),
                  helper.make_node("Cast", [f"{t}/inner32"], [f"{t}/inner"], to=d, name=f"{t}/Widen"),
                  helper.make_node("Mul", [f"{t}/a", ra_], [f"{t}/a_r"], name=f"{t}/MulA"),
                  helper.make_node("Add", [f"{t}/a_r", f"{t}/inner"], [f"{t}/outer64"], name=f"{t}/AddA"),
                  helper.make_node("Cast", [f"{t}/outer64"], [f"{t}/scaled_zc"], to=onnx.TensorProto.FLOAT,
                                   name=f"{t}/Round2")]
        # the kernel's sum already holds the output zero point: round it with none
        zc_ = _const(inits, f"{t}/z_none", np.int8(0))
        nodes.append(helper.make_node("Identity", [f"{t}/scaled_zc"], [f"{t}/scaled"], name=f"{t}/Sum"))
    sc_, zcd = _const(inits, f"{t}/sc", grid.scale.reshape(()).astype(f32)), _const(inits, f"{t}/zcd", grid.zero_point.reshape(()))
    nodes += [helper.make_node("QuantizeLinear", [f"{t}/scaled", one, zc_], [f"{t}/qc"], name=f"{t}/Qc"),
              helper.make_node("DequantizeLinear", [f"{t}/qc", sc_, zcd], [out], name=f"{t}/DQc")]
    return nodes


def kernel_rounding(src: str, tensor: str, grid: Grid, kernel: str | None,
                    inits: list) -> tuple[str, list[onnx.NodeProto]]:
    """(the value to round, the nodes making it) where the engine's int8 kernel that writes
    ``tensor`` computes something else than the float op before it rounds.

    onnxruntime's ``QLinearSoftmax`` writes ``nearbyint(p * floor(1 / y_scale)) + zero_point``
    (contrib_ops/cpu/quantization/qlinear_softmax.cc): with the usual grid 1/255 in float32,
    ``floor`` gives 254, so every probability is stored 254/255 of its value and about 6 % of them
    land one step lower than QuantizeLinear(p) would put them. The simulation scales ``p`` by
    ``floor(1 / s) * s`` before rounding it, which gives the kernel's steps (its exp comes from a
    table of exp((q - max) * x_scale), the same values as the float op on the dequantized input)."""
    if kernel == "QLinearSoftmax" and grid.scale.size == 1:
        s = np.float32(grid.scale.reshape(()))
        c = np.float32(np.floor(np.float32(1.0) / s) * s)
        if c != np.float32(1.0):
            name = f"{FQ}{tensor}/kernel_scale"
            inits.append(numpy_helper.from_array(np.asarray(c, np.float32), name))
            return f"{FQ}{tensor}/kernel", [helper.make_node("Mul", [src, name], [f"{FQ}{tensor}/kernel"],
                                                             name=f"{FQ}{tensor}/QLinearSoftmax")]
    return src, []


def expected_graph(model: onnx.ModelProto, grids: Int8Grids, cuts: dict[str, str],
                   local: bool = True, unrounded: frozenset[str] | set[str] = frozenset(),
                   fp32: bool = True) -> ExpectedGraph:
    """The three chains of ``model`` (the prepared ONNX with its tap outputs, weights loaded).
    ``cuts``: tap name -> the tensor it shows (manifest ``tensor``), for every tap ``--local``
    cuts; ``local=False`` leaves the local chain out. ``unrounded``: taps the engine shows as the
    float value before its QuantizeLinear (build.json ``via`` direct / unfused): their value is
    read before the rounding, as the engine's is. ``fp32=False`` leaves the fp32 chain out."""
    g0 = model.graph
    inits = {i.name: i for i in g0.initializer}
    graph_inputs = [i.name for i in g0.input if i.name not in inits]
    outputs = [o.name for o in g0.output]
    produced = {o for n in g0.node for o in n.output if o}
    out = ExpectedGraph(onnx.ModelProto())
    new_inits: list[onnx.TensorProto] = []

    # rounded weights and biases: copies beside the originals (the fp32 chain reads those), or in
    # their place when there is no fp32 chain
    wname: dict[str, str] = {}
    replaced: dict[str, onnx.TensorProto] = {}
    for table in (grids.weights, grids.biases):
        for name, grid in table.items():
            init = inits.get(name)
            if init is None:
                out.missing.append(name)
                continue
            w = numpy_helper.to_array(init)
            if w.dtype != np.float32:
                continue
            rounded_w = fake_quantize(w, grid).astype(np.float32)
            if fp32:
                wname[name] = f"{FQ}{name}"
                new_inits.append(numpy_helper.from_array(rounded_w, wname[name]))
            else:
                replaced[name] = numpy_helper.from_array(rounded_w, name)

    # the cumulative chain: the model's nodes, weights renamed, each quantized activation rounded
    rounded = {t: grid for t, grid in grids.activations.items() if t in produced or t in graph_inputs}
    out.missing += [t for t in grids.activations if t not in rounded]
    out.rounded = list(rounded)
    raw = {t: f"{FQ}{t}/raw" for t in rounded if t in produced}
    cum_nodes: list[onnx.NodeProto] = []
    rename_in: dict[str, str] = {**wname}
    for t in rounded:
        if t in graph_inputs:
            rename_in[t] = f"{FQ}{t}/rounded"
            cum_nodes += _qdq(t, rename_in[t], rounded[t], t, new_inits)
    for n in g0.node:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        for i, x in enumerate(c.input):
            if x in rename_in:
                c.input[i] = rename_in[x]
        if (c.name.startswith(TAP_NODE_PREFIX) and c.name[len(TAP_NODE_PREFIX):] in unrounded
                and c.input and c.input[0] in raw):
            c.input[0] = raw[c.input[0]]
        after = []
        in_grids = [rounded.get(x) or grids.weights.get(x) or grids.biases.get(x) for x in n.input]
        for j, o in enumerate(c.output):
            if o in raw:
                c.output[j] = raw[o]
                same = emulate_kernel(c, in_grids, o, rounded[o], grids.kernels.get(o), new_inits)
                if same:
                    after += same
                    continue
                src, fix = kernel_rounding(raw[o], o, rounded[o], grids.kernels.get(o), new_inits)
                after += [*fix, *_qdq(src, o, rounded[o], o, new_inits)]
        cum_nodes += [c, *after]

    # the fp32 chain: the model unchanged, every node output prefixed
    fp_nodes = _prefixed(list(g0.node), FP32, produced) if fp32 else []
    # the local chain: the cumulative chain prefixed, cut at every tap of ``cuts``
    loc_nodes: list[onnx.NodeProto] = []
    loc_inputs: list[onnx.ValueInfoProto] = []
    if local:
        cum_produced = {o for n in cum_nodes for o in n.output if o}
        loc_nodes = _prefixed(cum_nodes, LOCAL, cum_produced)
        vinfo = {v.name: v for v in [*g0.value_info, *g0.output, *g0.input]}
        consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
        for n in loc_nodes:
            for i, x in enumerate(n.input):
                consumers.setdefault(x, []).append((n, i))
        done: set[str] = set()
        for tap, tensor in cuts.items():
            if tensor in graph_inputs or tensor in inits or tensor not in cum_produced or tensor in done:
                continue
            vi = vinfo.get(tap) or vinfo.get(tensor)
            elem = vi.type.tensor_type.elem_type if vi is not None else onnx.TensorProto.FLOAT
            if elem not in _FLOAT_TYPES:
                continue    # an integer or bool tap (a count, an argmax) is never rounded: no cut
            done.add(tensor)
            feed = f"{LOCAL}feed/{tap}"
            loc_inputs.append(helper.make_tensor_value_info(feed, elem, None))
            src = feed
            if tensor in rounded:
                src = f"{LOCAL}feed/{tap}/rounded"
                loc_nodes[:0] = _qdq(feed, src, rounded[tensor], f"feed/{tap}", new_inits)
            for n, i in consumers.get(LOCAL + tensor, []):
                if not n.name.startswith(LOCAL + TAP_NODE_PREFIX):
                    n.input[i] = src
            out.feeds.append((feed, tap))

    m = out.model
    m.CopyFrom(model)
    g = m.graph
    if replaced:
        kept = [replaced.get(i.name, i) for i in g.initializer]
        del g.initializer[:]
        g.initializer.extend(kept)
    del g.node[:]
    g.node.extend([*fp_nodes, *cum_nodes, *loc_nodes])
    g.initializer.extend(new_inits)
    g.input.extend(loc_inputs)
    del g.output[:]
    for o in outputs:
        out.cumulative[o] = o
        g.output.append(onnx.ValueInfoProto(name=o))
        if o not in produced:
            # a constant (an initializer) or an input passed through: no node makes it, so no chain
            # has a prefixed copy; it is the same value in all three
            out.fp32[o] = out.local[o] = o
            continue
        if fp32:
            out.fp32[o] = FP32 + o
            g.output.append(onnx.ValueInfoProto(name=FP32 + o))
        if local:
            out.local[o] = LOCAL + o
            g.output.append(onnx.ValueInfoProto(name=LOCAL + o))
    # the value_info of a renamed tensor would describe its rounded twin: drop them all
    del g.value_info[:]
    return out


def _prefixed(nodes: list[onnx.NodeProto], prefix: str, produced: set[str]) -> list[onnx.NodeProto]:
    """Copies of ``nodes`` whose node outputs (and the reads of them) carry ``prefix``; graph
    inputs and initializers are read as they are."""
    res = []
    for n in nodes:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        c.name = prefix + c.name if c.name else c.name
        for i, x in enumerate(c.input):
            if x in produced:
                c.input[i] = prefix + x
        for j, o in enumerate(c.output):
            if o:
                c.output[j] = prefix + o
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in c.attribute):
            _prefix_subgraph_reads(c, prefix, produced)
        res.append(c)
    return res


def _prefix_subgraph_reads(node: onnx.NodeProto, prefix: str, produced: set[str]) -> None:
    """Outer-scope values an If/Loop/Scan body reads are renamed with their producers."""
    for a in node.attribute:
        for sg in [*a.graphs, *([a.g] if a.HasField("g") else [])]:
            inner = {o for n in sg.node for o in n.output} | {i.name for i in sg.input}
            for n in sg.node:
                for i, x in enumerate(n.input):
                    if x in produced and x not in inner:
                        n.input[i] = prefix + x
                for b in n.attribute:
                    if b.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                        _prefix_subgraph_reads(n, prefix, produced - inner)
