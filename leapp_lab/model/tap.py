"""What a model output or a tap *is*: the one identity record shared by prepare, compile and verify.

A ``TapEntry`` is written by prepare (from the exported graph), stamped into the ONNX inside the
``Manifest``, read back by compile, which fills in how its engine exposes it (``binding`` …), and
saved in build.json; verify reads it from there and a verify row *is* a ``TapEntry`` plus its
metrics (``leapp_lab.model.verify.VerifyRow``). Model outputs use the same record with
``kind="output"``, so every table lists outputs and taps through one type.

The ONNX side (reading and stamping the manifest, stripping taps from a graph) lives in
``leapp_lab.onnxio.manifest``; this module is plain data (stdlib only), so reports open anywhere.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields
from typing import Any

from .dc import Plain

MANIFEST_VERSION = 1
#: the custom op a ``tap()`` marker exports as (taps.marker writes it, onnxio.graph_edit removes it)
TAP_DOMAIN = "leapp_lab"
TAP_OP = "Tap"
#: kinds of tap; a row's kind is one of these, ``output`` (a real model output) or ``unknown``
#: (a name in neither the manifest nor the model's outputs)
TAP_KINDS = ("manual", "plugin", "op")
ROW_KINDS = ("output", *TAP_KINDS, "unknown")
#: ``TapEntry.binding`` after compile: ``bound`` (an engine output carries it and a reference
#: exists), ``uncompared`` (an engine output carries it, but there is no reference: why in
#: ``binding_reason``), ``unbound`` (the conversion removed the tensor; no engine value)
BINDINGS = ("bound", "uncompared", "unbound")
#: the fields compile fills in; they are not part of the manifest stamped into the ONNX
BINDING_FIELDS = ("binding", "binding_reason", "bound_to", "via")
#: measured on the reference by prepare and verify (model/fp16range.py); not stamped either
RANGE_FIELDS = ("range_max", "fp16_headroom")


@dataclass
class TapEntry(Plain):
    """One model output or tap.

    ``name``: ONNX graph output name = reference npz key. ``kind``: ROW_KINDS. ``order``: index of
    the producing node in the prepared graph (model order; -1 for a graph input, None unknown).
    ``tensor``: the internal value it exposes (== name for op taps and outputs).
    ``producer_op`` / ``producer_node``: the node that computes it. ``reference_source``:
    ``torch`` | ``onnxruntime`` | None (uncompared, why in ``uncompared_reason``). ``source``:
    Python ``file:line`` (manual: the tap() call; else exporter metadata); ``producer_source``: the
    line of the code that computed the tensor; ``scope``: module path of the producing node (e.g.
    ``backbone.0``). ``dtype`` / ``shape``: per sample, without the leading sample axis.
    Compile adds ``binding`` (BINDINGS), ``binding_reason``, ``bound_to`` (the tensor of the
    *converted* graph actually exposed) and ``via`` (``direct`` | ``alias`` | ``dequantize`` for
    int8's dequantized copy of the quantized value, no kernel changed | ``unfused``: exposing it
    changed the engine's kernels).
    ``range_max``: the largest |value| of its reference over every sample (float64; NaN left out);
    ``fp16_headroom``: 65504 / range_max, how many times larger it could grow before float16
    overflows (< 1: an fp16 engine makes it inf); both filled by prepare and verify.
    """
    name: str = ""
    kind: str = "unknown"
    order: int | None = None
    tensor: str | None = None
    producer_op: str | None = None
    producer_node: str | None = None
    reference_source: str | None = None
    uncompared_reason: str | None = None
    source: str | None = None
    producer_source: str | None = None
    scope: str | None = None
    dtype: str | None = None
    shape: list[int] | None = None
    binding: str | None = None
    binding_reason: str | None = None
    bound_to: str | None = None
    via: str | None = None
    range_max: float | None = None
    fp16_headroom: float | None = None

    @property
    def value(self) -> str:
        """The internal value the entry shows (``tensor``, or the output name itself)."""
        return self.tensor or self.name

    @property
    def is_tap(self) -> bool:
        return self.kind in TAP_KINDS

    def identity(self) -> dict[str, Any]:
        """The TapEntry fields of this object (also of a subclass such as VerifyRow)."""
        return {f.name: getattr(self, f.name) for f in fields(TapEntry)}

    def bind(self, binding: str, bound_to: str | None = None, via: str | None = None,
             reason: str | None = None) -> "TapEntry":
        """A copy of this entry as an engine exposes it (BINDINGS)."""
        return dataclasses.replace(self, binding=binding, bound_to=bound_to, via=via, binding_reason=reason)

    def stamped(self) -> dict[str, Any]:
        """The entry as the manifest in the ONNX records it (no compile-time binding)."""
        return {k: v for k, v in self.identity().items() if k not in BINDING_FIELDS + RANGE_FIELDS}


def model_order_key(e: TapEntry, i: int) -> tuple:
    """Sort key of model order: by ``order`` (None last), taps before outputs of the same node,
    then by position ``i``."""
    return (e.order is None, e.order if e.order is not None else 0, 1 if e.kind == "output" else 0, i)


@dataclass
class Manifest(Plain):
    """Which ONNX outputs are model outputs and which are taps, in model order (docs/taps.md).

    ``synthesized``: the model carried no manifest (nothing was tapped); one was made from the graph.
    """
    version: int = MANIFEST_VERSION
    inputs: list[str] = field(default_factory=list)
    outputs: list[TapEntry] = field(default_factory=list)
    taps: list[TapEntry] = field(default_factory=list)
    synthesized: bool = False

    def json_dict(self) -> dict[str, Any]:
        """The manifest as stamped in the ONNX."""
        return {"version": self.version, "inputs": list(self.inputs),
                "outputs": [o.stamped() for o in self.outputs],
                "taps": [t.stamped() for t in self.taps]}

    def to_json(self) -> str:
        return json.dumps(self.json_dict(), separators=(",", ":"), allow_nan=False)

    def tap(self, name: str) -> TapEntry | None:
        return next((t for t in self.taps if t.name == name), None)

    def rows(self) -> list[TapEntry]:
        """Outputs and taps together in model order (outputs after taps of the same node; entries
        without an order last)."""
        items = list(enumerate(self.taps + self.outputs))
        return [e for i, e in sorted(items, key=lambda it: model_order_key(it[1], it[0]))]
