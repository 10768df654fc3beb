"""The int8 grids of an ``ort-int8`` engine: the scale and zero point with which the engine stores
each quantized tensor, read from its own ``engine.onnx`` (``verify --expected int8``).

An int8 build's engine graph is onnxruntime's fused form of a QDQ model written by
``onnxruntime.quantization.quantize_static`` (S8S8: QLinearConv, QGemm, QLinearAdd ...,
docs/verify.md). Each quantized value appears there as an int8 tensor with a (scale, zero point)
pair beside it in the inputs of the kernels that read or write it. The quantizer names those
tensors after the float values of the prepared model:

* an activation ``T`` (a node output or a graph input) becomes ``T_QuantizeLinear_Output``;
* a weight or bias initializer ``W`` becomes ``W_quantized`` (a bias in int32, on the grid
  ``input scale x weight scale`` of its QLinearConv / QGemm, zero point 0).

``read_grids(engine)`` returns those pairs keyed by the prepared model's float names, so that
the reference model can be rounded exactly as the engine stores its values
(``engines.ort_fakequant``). Only the values read (scales and zero points, never a weight) are
parsed. An int8 tensor whose float name cannot be told (a name the quantizer did not write) is
listed in ``unmapped``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

ACT_SUFFIX = "_QuantizeLinear_Output"
WEIGHT_SUFFIX = "_quantized"

#: kernels whose inputs are (data, scale, zero point) triples at these slots, and whose output 0 is
#: quantized with (scale, zero point) at the last pair; None: the output is not quantized here
_TRIPLES = {
    "QLinearConv": ((0, 3), (6, 7)),
    "QLinearMatMul": ((0, 3), (6, 7)),
    "QGemm": ((0, 3), (7, 8)),
    "QLinearAdd": ((0, 3), (6, 7)),
    "QLinearMul": ((0, 3), (6, 7)),
    "QLinearAveragePool": ((0,), (3, 4)),
    "QLinearGlobalAveragePool": ((0,), (3, 4)),
    "QLinearSigmoid": ((0,), (3, 4)),
    "QLinearLeakyRelu": ((0,), (3, 4)),
    "QLinearSoftmax": ((0,), (3, 4)),
    "QLinearReduceMean": ((0,), (3, 4)),
}
#: (weight slot, bias slot) of the kernels whose bias is stored in int32 on input scale x weight scale
_BIAS = {"QLinearConv": (3, 8), "QGemm": (3, 6)}
#: ops that move int8 values and keep their input's grid
_MOVES = frozenset({"MaxPool", "GlobalMaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
                    "Gather", "Slice", "Split", "Resize", "DepthToSpace", "SpaceToDepth", "Expand", "Tile",
                    "Identity", "Concat"})


@dataclass
class Grid:
    """A quantization grid: ``value = (q - zero_point) * scale`` for ``q`` in the dtype of
    ``zero_point`` (int8, uint8, int32 for a bias); ``axis``: the per-channel axis of ``scale``
    (None: one scale for the tensor)."""
    scale: np.ndarray
    zero_point: np.ndarray
    axis: int | None = None

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1

    def same(self, other: "Grid") -> bool:
        return (self.axis == other.axis and np.array_equal(self.scale, other.scale)
                and np.array_equal(self.zero_point, other.zero_point)
                and self.zero_point.dtype == other.zero_point.dtype)


@dataclass
class Int8Grids:
    """``activations``: float tensor name -> Grid (node outputs and graph inputs of the prepared
    model); ``weights``: initializer name -> Grid (int8 weights); ``biases``: initializer name ->
    Grid (int32); ``unmapped``: int8 tensors of the engine whose float name is unknown;
    ``conflicts``: float names met with two different grids (the first is kept)."""
    activations: dict[str, Grid] = field(default_factory=dict)
    weights: dict[str, Grid] = field(default_factory=dict)
    biases: dict[str, Grid] = field(default_factory=dict)
    unmapped: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    #: activation float name -> the op type of the engine kernel that writes it in int8
    #: (QLinearSoftmax, QLinearMatMul ...; a QuantizeLinear after an fp32 op: "QuantizeLinear")
    kernels: dict[str, str] = field(default_factory=dict)
    #: the engine's tensors written by a DequantizeLinear (a tap read there sees the rounded value)
    dequantized: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.activations) + len(self.weights) + len(self.biases)


def float_name(quantized: str) -> tuple[str, str] | None:
    """(float name, ``"activation"`` | ``"initializer"``) of an int8 tensor named by the quantizer."""
    if quantized.endswith(ACT_SUFFIX) and len(quantized) > len(ACT_SUFFIX):
        return quantized[: -len(ACT_SUFFIX)], "activation"
    if quantized.endswith(WEIGHT_SUFFIX) and len(quantized) > len(WEIGHT_SUFFIX):
        return quantized[: -len(WEIGHT_SUFFIX)], "initializer"
    return None


def _attr_axis(node: onnx.NodeProto) -> int | None:
    for a in node.attribute:
        if a.name == "axis":
            return int(a.i)
    return None


def read_grids(engine: onnx.ModelProto | str | Path, label: str | None = None) -> Int8Grids:
    """The grid of every quantized tensor of ``engine`` (an int8 build's ``engine.onnx``, or the
    ModelProto: its large initializers are never converted to arrays), keyed by float name.
    UnusableInput, naming the file (``label``, else the path), when it cannot be parsed or a scale
    it stores is 0, negative or not finite (no grid to round onto: a damaged build)."""
    from google.protobuf.message import DecodeError

    from leapp_lab.model.errors import UnusableInput
    where = label or (str(engine) if not isinstance(engine, onnx.ModelProto) else "the engine graph")
    if not isinstance(engine, onnx.ModelProto):
        try:
            engine = onnx.load(str(engine), load_external_data=False)
        except (DecodeError, ValueError, OSError) as exc:
            raise UnusableInput(f"{where}: not a readable ONNX model ({type(exc).__name__}: {str(exc)[:160]}); "
                                "the build is damaged (truncated?): compile it again") from None
    g = engine.graph
    small = {i.name: i for i in g.initializer if _numel(i) <= 65536}
    arrays: dict[str, np.ndarray] = {}

    def arr(name: str) -> np.ndarray | None:
        if name not in arrays:
            init = small.get(name)
            arrays[name] = None if init is None else numpy_helper.to_array(init)
        return arrays[name]

    found: dict[str, Grid] = {}         # engine int8 tensor -> its grid
    writer: dict[str, str] = {}         # engine int8 tensor -> the op type that computes it
    dequantized: set[str] = set()
    bias_grids: dict[str, Grid] = {}

    def put(tensor: str, scale: str, zp: str | None, axis: int | None = None) -> None:
        s = arr(scale) if scale else None
        if s is None or not tensor:
            return
        if s.dtype.kind != "f" or not (np.isfinite(s).all() and (s > 0).all()):
            bad = s.reshape(-1)[~(np.isfinite(s) & (s > 0)).reshape(-1)] if s.dtype.kind == "f" else s.reshape(-1)
            raise UnusableInput(f"{where}: the int8 scale {scale!r} of {tensor!r} is {bad[0].item()!r}: an int8 grid "
                                "needs a finite scale > 0; the build is damaged: compile it again")
        z = arr(zp) if zp else None
        if z is None:       # ONNX: a missing zero point is a uint8 0
            z = np.zeros(s.shape, np.uint8)
        if s.size > 1 and axis is None:
            axis = 1        # QuantizeLinear / DequantizeLinear's default axis
        found.setdefault(tensor, Grid(np.asarray(s, np.float32), np.asarray(z), axis if s.size > 1 else None))

    def ins(n: onnx.NodeProto, i: int) -> str:
        return n.input[i] if len(n.input) > i else ""

    producers = {o: n for n in g.node for o in n.output if o}
    for n in g.node:
        op = n.op_type
        if n.output and n.output[0]:
            writer.setdefault(n.output[0], op)
            if op == "DequantizeLinear":
                dequantized.add(n.output[0])
        if op == "QuantizeLinear":
            put(n.output[0], ins(n, 1), ins(n, 2), _attr_axis(n))
        elif op == "DequantizeLinear":
            put(n.input[0], ins(n, 1), ins(n, 2), _attr_axis(n))
        elif op == "QLinearConcat":
            put(n.output[0], ins(n, 0), ins(n, 1))
            for s in range(2, len(n.input), 3):
                put(n.input[s], ins(n, s + 1), ins(n, s + 2))
        elif op in _TRIPLES:
            slots, out = _TRIPLES[op]
            for s in slots:
                weight = op in _BIAS and s == _BIAS[op][0]
                put(n.input[s], ins(n, s + 1), ins(n, s + 2), 0 if weight else None)
            if out is not None and len(n.input) > out[0] and n.input[out[0]]:
                put(n.output[0], ins(n, out[0]), ins(n, out[1]))
            if op in _BIAS and ins(n, _BIAS[op][1]):
                ws, bs = _BIAS[op]
                xs, w_s = arr(ins(n, 1)), arr(ins(n, ws + 1))
                if xs is not None and w_s is not None:
                    scale = (np.asarray(xs, np.float32) * np.asarray(w_s, np.float32)).astype(np.float32)
                    bias_grids.setdefault(n.input[bs], Grid(scale, np.zeros(scale.shape, np.int32),
                                                            0 if scale.size > 1 else None))
    # data-movement ops on int8 values keep their input's grid
    changed = True
    while changed:
        changed = False
        for n in g.node:
            if n.op_type in _MOVES and n.input and n.input[0] in found:
                for o in n.output:
                    if o and o not in found:
                        found[o] = found[n.input[0]]
                        changed = True
    inits = {i.name for i in g.initializer}
    dq_by_input = {n.input[0]: n.output[0] for n in g.node if n.op_type == "DequantizeLinear" and n.input
                   and n.output and not n.output[0].endswith("_DequantizeLinear_Output")}
    out = Int8Grids(dequantized=dequantized)
    for tensor, grid in [*found.items(), *bias_grids.items()]:
        named = float_name(tensor)
        if named is None and tensor not in inits and dq_by_input.get(tensor):
            # an int8 value onnxruntime named itself (``QuantizeLinear_out0``), read back by a
            # DequantizeLinear that writes a float name: that float tensor is stored on this grid
            named = (dq_by_input[tensor], "activation")
        if named is None:
            # an int8 value the quantizer did not name (onnxruntime's own), or a float tensor a
            # DequantizeLinear reads (a weight it left as DQ): unmapped unless it is quantized data
            p = producers.get(tensor)
            if tensor not in inits and (p is None or p.op_type not in ("DequantizeLinear",)):
                out.unmapped.append(tensor)
            continue
        name, kind = named
        if kind == "activation" and tensor in writer and writer[tensor] not in _MOVES:
            out.kernels.setdefault(name, writer[tensor])
        if kind == "initializer":
            table = out.biases if tensor in bias_grids else out.weights
        else:
            table = out.activations
        prev = table.get(name)
        if prev is None:
            table[name] = grid
        elif not prev.same(grid):
            out.conflicts.append(name)
    return out


def _numel(init: onnx.TensorProto) -> int:
    n = 1
    for d in init.dims:
        n *= d
    return n


def quantize(x: np.ndarray, grid: Grid) -> np.ndarray:
    """ONNX QuantizeLinear in numpy: ``saturate(round_half_even(x / scale) + zero_point)``."""
    s, z = _bcast(grid, x.ndim)
    info = np.iinfo(grid.zero_point.dtype)
    q = np.rint(np.asarray(x, np.float32) / s) + z.astype(np.float64)
    return np.clip(q, info.min, info.max).astype(grid.zero_point.dtype)


def dequantize(q: np.ndarray, grid: Grid) -> np.ndarray:
    """ONNX DequantizeLinear in numpy: ``(q - zero_point) * scale`` in float32."""
    s, z = _bcast(grid, q.ndim)
    return ((q.astype(np.int64) - z.astype(np.int64)).astype(np.float32) * s).astype(np.float32)


def fake_quantize(x: np.ndarray, grid: Grid) -> np.ndarray:
    """``x`` rounded onto ``grid`` (quantized, then dequantized), float32."""
    return dequantize(quantize(x, grid), grid)


def _bcast(grid: Grid, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    s, z = np.asarray(grid.scale, np.float32), np.asarray(grid.zero_point)
    if grid.axis is None or s.size == 1:
        return s.reshape(()) if s.size == 1 else s, z.reshape(()) if z.size == 1 else z
    shape = [1] * ndim
    shape[grid.axis % ndim] = s.size
    return s.reshape(shape), z.reshape(shape)
