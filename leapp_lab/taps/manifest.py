"""The tap manifest: which ONNX outputs are taps, of what kind, in which model order.

It rides in the ONNX model's ``metadata_props`` under ``leapp_lab.manifest`` (JSON, see
docs/taps.md), so compile and verify need no tap flags. A model prepared without any exposed tap
carries no manifest at all (its bytes equal the untapped export); ``read_manifest`` then
synthesises one from the graph (inputs, outputs in model order, no taps).

Helpers for engines that must convert the *untapped* model first (the observer effect):
``strip_taps(model)`` removes every tap output (and the Identity nodes that named them);
``expose_taps(model, taps)`` re-exposes taps on a converted graph by their internal tensor name.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable

import onnx
from onnx import helper

from ..model.dc import Plain

MANIFEST_KEY = "leapp_lab.manifest"
MANIFEST_VERSION = 1
TAP_KINDS = ("manual", "plugin", "op")
IDENTITY_PREFIX = "leapp_lab_tap/"


@dataclass
class OutputEntry(Plain):
    name: str
    order: int
    source: str | None = None


@dataclass
class TapEntry(Plain):
    name: str                        # ONNX graph output name = reference npz key
    kind: str                        # manual | plugin | op
    order: int                       # index of the producing node in the prepared graph (-1: input)
    tensor: str                      # internal value the tap exposes (== name for op taps)
    producer_op: str | None = None
    producer_node: str | None = None
    reference_source: str | None = None   # torch | onnxruntime | None (uncompared)
    uncompared_reason: str | None = None
    source: str | None = None        # Python file:line (manual: the tap() call; else exporter metadata)
    producer_source: str | None = None   # file:line of the code that computed the tensor
    scope: str | None = None         # module path of the producing node, e.g. "backbone.0"
    dtype: str | None = None
    shape: list[int] | None = None


@dataclass
class Manifest(Plain):
    version: int = MANIFEST_VERSION
    inputs: list[str] = field(default_factory=list)
    outputs: list[OutputEntry] = field(default_factory=list)
    taps: list[TapEntry] = field(default_factory=list)
    synthesized: bool = False        # True: the model carried no manifest (nothing was tapped)

    def to_json(self) -> str:
        d = self.to_dict()
        d.pop("synthesized", None)
        return json.dumps(d, separators=(",", ":"), allow_nan=False)

    def tap(self, name: str) -> TapEntry | None:
        return next((t for t in self.taps if t.name == name), None)

    def rows(self) -> list[OutputEntry | TapEntry]:
        """Outputs and taps together in model order (outputs after taps of the same node)."""
        items: list[Any] = [(t.order, 0, i, t) for i, t in enumerate(self.taps)]
        items += [(o.order, 1, i, o) for i, o in enumerate(self.outputs)]
        return [it[3] for it in sorted(items, key=lambda it: it[:3])]


def _load(model: onnx.ModelProto | str | os.PathLike) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    return onnx.load(os.fspath(model), load_external_data=False)


def producer_index(graph: onnx.GraphProto) -> dict[str, int]:
    """value name -> index of the node that produces it."""
    idx: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for o in node.output:
            if o:
                idx[o] = i
    return idx


def read_manifest(model: onnx.ModelProto | str | os.PathLike) -> Manifest:
    """The manifest stamped by prepare, or one synthesised from the graph when there is none."""
    m = _load(model)
    for p in m.metadata_props:
        if p.key == MANIFEST_KEY:
            try:
                d = json.loads(p.value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"ONNX metadata {MANIFEST_KEY} is not valid JSON ({exc})") from None
            if not isinstance(d, dict) or d.get("version") != MANIFEST_VERSION:
                raise ValueError(f"ONNX metadata {MANIFEST_KEY}: unsupported manifest version "
                                 f"{d.get('version') if isinstance(d, dict) else d!r}")
            return Manifest.from_dict(d)
    prod = producer_index(m.graph)
    inits = {i.name for i in m.graph.initializer}
    return Manifest(
        inputs=[i.name for i in m.graph.input if i.name not in inits],
        outputs=[OutputEntry(o.name, prod.get(o.name, -1)) for o in m.graph.output],
        taps=[], synthesized=True)


def write_manifest(model: onnx.ModelProto, manifest: Manifest) -> None:
    for i, p in enumerate(list(model.metadata_props)):
        if p.key == MANIFEST_KEY:
            del model.metadata_props[i]
            break
    entry = model.metadata_props.add()
    entry.key = MANIFEST_KEY
    entry.value = manifest.to_json()


def strip_taps(model: onnx.ModelProto, manifest: Manifest | None = None) -> onnx.ModelProto:
    """A copy of ``model`` without tap outputs (the graph the engine should really be built from)."""
    manifest = manifest or read_manifest(model)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    names = {t.name for t in manifest.taps}
    keep = [o for o in out.graph.output if o.name not in names]
    del out.graph.output[:]
    out.graph.output.extend(keep)
    nodes = [n for n in out.graph.node
             if not (n.op_type == "Identity" and n.name.startswith(IDENTITY_PREFIX)
                     and n.output[0] in names)]
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    for i, p in enumerate(list(out.metadata_props)):
        if p.key == MANIFEST_KEY:
            del out.metadata_props[i]
            break
    return out


def expose_taps(model: onnx.ModelProto, taps: Iterable[TapEntry]) -> tuple[onnx.ModelProto, dict[str, str]]:
    """Expose ``taps`` on a (converted) copy of ``model`` by their internal tensor names.

    Returns the new model and ``{tap name: why it could not be exposed}`` for taps whose tensor no
    longer exists (an engine conversion fused or renamed it).
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    available = {o for n in g.node for o in n.output if o} | {i.name for i in g.input} | \
        {i.name for i in g.initializer}
    existing_outputs = {o.name for o in g.output}
    missing: dict[str, str] = {}
    for t in taps:
        if t.name in existing_outputs:
            continue
        if t.tensor not in available:
            missing[t.name] = f"tensor {t.tensor!r} is not in the converted graph (fused or renamed)"
            continue
        add_output(g, t.name, t.tensor, t.dtype, t.shape)
    return out, missing


_DTYPES = {
    "float32": onnx.TensorProto.FLOAT, "float16": onnx.TensorProto.FLOAT16,
    "float64": onnx.TensorProto.DOUBLE, "bfloat16": onnx.TensorProto.BFLOAT16,
    "int64": onnx.TensorProto.INT64, "int32": onnx.TensorProto.INT32, "int8": onnx.TensorProto.INT8,
    "uint8": onnx.TensorProto.UINT8, "bool": onnx.TensorProto.BOOL,
}


def onnx_dtype(name: str | None) -> int:
    return _DTYPES.get(name or "", onnx.TensorProto.UNDEFINED)


def numpy_dtype_name(elem_type: int) -> str | None:
    for k, v in _DTYPES.items():
        if v == elem_type:
            return k
    return None


def add_output(graph: onnx.GraphProto, name: str, tensor: str, dtype: str | None,
               shape: list[int] | None = None) -> None:
    """Make ``tensor`` a graph output called ``name`` (through an Identity node when they differ).

    ONNX requires a type with a shape on graph outputs; both are written when known (prepare
    always knows them for taps with a reference)."""
    if name != tensor:
        graph.node.append(helper.make_node("Identity", [tensor], [name], name=IDENTITY_PREFIX + name))
    et = onnx_dtype(dtype)
    if et == onnx.TensorProto.UNDEFINED:
        vi = graph.output.add()
        vi.name = name
        return
    graph.output.append(helper.make_tensor_value_info(name, et, shape))
