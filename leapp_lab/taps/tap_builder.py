"""The taps of one exported graph: manual, plugin and op entries, their references, the manifest.

``TapBuilder`` works on the marker-free graph: it names each tap, finds its producing node,
source line and module scope, holds the per-sample reference arrays found for it (eager values
here; FX or onnxruntime values come from ``tap_references``), and finally adds the tap outputs
and returns the manifest.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import onnx
import torch

from leapp_lab.onnxio import graph_edit as ge
from .eager_capture import EagerRuns, flat_tensor_args, to_numpy
from .errors import PrepareError, TapError
from .loader import ModelSource
from ..model.tap import Manifest, TapEntry
from leapp_lab.onnxio.manifest import add_output, module_scope, numpy_dtype_name, producer_index
from .marker import short_path
from .tap_selection import short_site

DEFAULT_DOMAINS = ("", "ai.onnx")
FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16}


class TapBuilder:
    def __init__(self, proto: onnx.ModelProto, src: ModelSource, eager: EagerRuns, program: Any,
                 samples: list[tuple]):
        """``proto``: the exported graph with its tap markers already removed."""
        self.proto, self.src, self.eager, self.program, self.samples = proto, src, eager, program, samples
        self.taps: list[TapEntry] = []
        self.refs: dict[str, list[np.ndarray]] = {}   # tap name -> per-sample arrays
        self.warnings: list[str] = []
        self._inputs: dict[str, np.ndarray] | None = None
        self._index()

    # graph lookups -------------------------------------------------------------------------
    def _index(self) -> None:
        g = self.proto.graph
        self.prod = producer_index(g)
        self.inits = {i.name for i in g.initializer}
        self.graph_inputs = [i.name for i in g.input if i.name not in self.inits]
        self.types = ge.value_types(self.proto)

    def op_of(self, value: str) -> str | None:
        i = self.prod.get(value)
        return self.proto.graph.node[i].op_type if i is not None else None

    def node_of(self, value: str) -> str | None:
        i = self.prod.get(value)
        return self.proto.graph.node[i].name if i is not None else None

    def source_of(self, value: str) -> str | None:
        i = self.prod.get(value)
        if i is None:
            return None
        meta = ge.node_meta(self.proto.graph.node[i])
        return self._pick_frame(meta.get("pkg.torch.onnx.stack_trace"))

    def scope_of(self, value: str) -> str | None:
        """The module path of the producing node, from the exporter's name-scope metadata."""
        i = self.prod.get(value)
        return module_scope(self.proto.graph.node[i]) if i is not None else None

    def _pick_frame(self, stack: str | None) -> str | None:
        # the user's line is the deepest frame outside torch and outside this package's tap code
        torch_dir = os.path.dirname(torch.__file__)
        here = os.path.dirname(os.path.abspath(__file__))
        user = [(f, n) for f, n in ge.frames(stack)
                if not f.startswith(torch_dir) and not f.startswith(here)]
        if not user:
            return None
        f, n = user[-1]
        return f"{short_path(f, self.src.base_dir)}:{n}"

    def _entry(self, name: str, kind: str, tensor: str, source: str | None) -> TapEntry:
        et, shape = self.types.get(tensor, (0, None))
        i = self.prod.get(tensor, -1)
        node = self.proto.graph.node[i] if i >= 0 else None
        return TapEntry(name=name, kind=kind, order=i, tensor=tensor,
                        producer_op=node.op_type if node is not None else (
                            "input" if tensor in self.graph_inputs else "initializer"
                            if tensor in self.inits else None),
                        producer_node=node.name if node is not None else None,
                        source=source, producer_source=self.source_of(tensor),
                        scope=self.scope_of(tensor),
                        dtype=numpy_dtype_name(et), shape=shape)

    def _taken(self) -> tuple[set[str], set[str]]:
        return {t.name for t in self.taps}, {t.tensor for t in self.taps}

    # manual --------------------------------------------------------------------------------
    def add_manual(self, markers: list[ge.Marker]) -> None:
        g = self.proto.graph
        outputs = {o.name for o in g.output}
        for m in markers:
            existing = ge.value_names(g)
            if m.name in existing and m.name != m.tensor:
                if m.name in outputs or m.name in self.graph_inputs or m.name in self.inits:
                    raise TapError(f"debug tap {m.name!r} (at {m.site}): the name is already an "
                                   f"ONNX graph input, output or weight; rename the tap")
                # an internal value already has the tap's name: it moves aside, the tap keeps it
                new = _fresh(f"{m.name}__value", existing)
                ge.rename_value(g, m.name, new)
                for other in markers:
                    if other.tensor == m.name:
                        other.tensor = new
                self._index()
        for m in markers:
            values = [s.get(m.name) for s in self.eager.taps]
            site = self.eager.sites.get(m.name)
            if m.name == m.tensor and m.name in outputs:
                # tap(y, "action") on the value returned as "action": exposing it would give the
                # graph two outputs of one name (no runtime loads it); the output's row is the tap
                self.warnings.append(f"tap {m.name!r} (tap() at {short_site(site, self.src)}) marks "
                                     f"the output {m.name!r} itself: compared as that output's row, not "
                                     f"exposed a second time")
                continue
            if site is None:  # "all": a tap the export reached but the eager runs did not
                raise TapError(f"debug tap {m.name!r}: reached while exporting but by no eager sample")
            if any(v is None for v in values):
                i = next(i for i, v in enumerate(values) if v is None)
                raise TapError(f"debug tap {m.name!r}: branch not taken on sample {i} (tap() at {site})")
            arrs = [to_numpy(v, f"debug tap {m.name!r} (tap() at {site})") for v in values]
            e = self._entry(m.name, "manual", m.tensor, short_site(site, self.src))
            e.reference_source = "torch"
            if e.dtype is None:
                e.dtype = str(arrs[0].dtype)
            if e.shape is None:
                e.shape = list(arrs[0].shape)
            self.taps.append(e)
            self.refs[m.name] = arrs

    # plugin --------------------------------------------------------------------------------
    def add_plugin(self) -> None:
        g = self.proto.graph
        names, _ = self._taken()
        existing = ge.value_names(g)
        for node in g.node:
            if node.domain in DEFAULT_DOMAINS:
                continue
            meta = ge.node_meta(node)
            src = self._pick_frame(meta.get("pkg.torch.onnx.stack_trace"))
            ports = [(f"in{i}", v) for i, v in enumerate(node.input)] + \
                    [(f"out{i}", v) for i, v in enumerate(node.output)]
            for role, value in ports:
                if not value:
                    continue
                name = _fresh(f"{node.name or node.op_type}__{role}", existing | names)
                e = self._entry(name, "plugin", value, src)
                e.producer_source = self.source_of(value)
                self.taps.append(e)
                names.add(name)

    # op --------------------------------------------------------------------------------------
    def add_op(self) -> None:
        g = self.proto.graph
        names, tensors = self._taken()
        outputs = {o.name for o in g.output}
        varying = _input_dependent(g)
        for node in g.node:
            if node.op_type == "Constant":
                continue
            for value in node.output:
                if not value or value in outputs or value in tensors or value in names:
                    continue
                # weights only (Transpose(lm_head.weight)): the same on every sample and never
                # an engine's error in the making; per sample it was most of a tied-embedding
                # model's tap bytes
                if value not in varying:
                    continue
                et, _ = self.types.get(value, (0, None))
                if et not in FLOAT_TYPES:
                    continue
                e = self._entry(value, "op", value, self.source_of(value))
                if et == onnx.TensorProto.BFLOAT16:
                    e.uncompared_reason = "bfloat16, which numpy cannot hold"
                self.taps.append(e)
                names.add(value)
                tensors.add(value)

    # references ------------------------------------------------------------------------------
    def pending(self) -> list[TapEntry]:
        """Taps still without a reference and not yet given a reason for having none."""
        return [t for t in self.taps if t.name not in self.refs and t.uncompared_reason is None]

    def input_arrays(self) -> dict[str, np.ndarray]:
        """Every graph input, stacked over the samples (computed once; callers only read it)."""
        if self._inputs is None:
            self._inputs = self._stack_inputs()
        return self._inputs

    def _stack_inputs(self) -> dict[str, np.ndarray]:
        names = self.graph_inputs
        per_sample = [flat_tensor_args(s) for s in self.samples]
        if per_sample and len(per_sample[0]) != len(names):
            raise PrepareError(
                f"{self.src.label}: the ONNX graph has inputs {names} but the forward arguments hold "
                f"{len(per_sample[0])} tensor(s); non-tensor arguments are baked into the graph")
        out = {}
        for j, n in enumerate(names):
            arrs = [to_numpy(p[j], f"input {n!r}") for p in per_sample]
            _check_same_shape(arrs, f"input {n!r}", self.src.label)
            out[n] = np.stack(arrs)
        return out

    # final ----------------------------------------------------------------------------------
    def finish(self) -> Manifest:
        g = self.proto.graph
        for t in self.pending():
            t.uncompared_reason = "no torch value has this name and no onnxruntime reference was computed"
        for t in self.taps:
            if t.reference_source is None and t.uncompared_reason is None:
                t.uncompared_reason = "no reference"
        for t in self.taps:
            add_output(g, t.name, t.tensor, t.dtype, t.shape)
        self.taps.sort(key=lambda t: t.order)
        outs = []
        for o in g.output:
            if o.name in self.eager.output_names:
                e = self._entry(o.name, "output", o.name, self.source_of(o.name))
                e.reference_source = "torch"
                outs.append(e)
        return Manifest(inputs=list(self.graph_inputs), outputs=outs, taps=list(self.taps))

    def reference_arrays(self) -> dict[str, np.ndarray]:
        """The reference npz's arrays (leading sample axis). Each tap's per-sample values are
        released as it is stacked, so the taps are held once, not twice; call it once."""
        out: dict[str, np.ndarray] = {}
        onnx_outputs = [o.name for o in self.proto.graph.output]
        for j, name in enumerate(self.eager.output_names):
            if name not in onnx_outputs:
                raise PrepareError(f"{self.src.label}: output {name!r} is not an output of the "
                                   f"exported graph {onnx_outputs}")
            arrs = [s[j] for s in self.eager.outputs]
            _check_same_shape(arrs, f"output {name!r}", self.src.label)
            out[name] = np.stack(arrs)
        for t in self.taps:
            if t.name in self.refs and t.reference_source is not None:
                arrs = self.refs.pop(t.name)
                _check_same_shape(arrs, f"tap {t.name!r}", self.src.label)
                out[t.name] = np.stack(arrs)
                del arrs
        return out


def _input_dependent(g: onnx.GraphProto) -> set[str]:
    """The values of ``g`` computed from a graph input (the rest come from weights and constants
    alone). A node with a subgraph counts as input-dependent: its body may read outer values."""
    inits = {i.name for i in g.initializer}
    varying = {i.name for i in g.input if i.name not in inits}
    for node in g.node:   # ONNX nodes are in topological order
        if any(i in varying for i in node.input if i) or any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            varying.update(o for o in node.output if o)
    return varying


def _check_same_shape(arrs: list[np.ndarray], what: str, label: str) -> None:
    for i, a in enumerate(arrs[1:], 1):
        if a.shape != arrs[0].shape or a.dtype != arrs[0].dtype:
            raise PrepareError(f"{label}: {what} is {a.dtype}{list(a.shape)} on sample {i} but "
                               f"{arrs[0].dtype}{list(arrs[0].shape)} on sample 0; the exported graph "
                               f"has static shapes, so every sample must match")


def _fresh(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    i = 1
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"
