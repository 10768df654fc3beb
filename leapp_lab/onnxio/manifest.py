"""The tap manifest: which ONNX outputs are taps, of what kind, in which model order.

This module is the one reader and writer of the manifest; prepare stamps it, compile and verify
read it from here. It rides in the ONNX model's ``metadata_props`` under ``leapp_lab.manifest``
(JSON, see docs/taps.md), so compile and verify need no tap flags. A model prepared without any
exposed tap carries no manifest at all (its bytes equal the untapped export); ``read_manifest``
then synthesises one from the graph (inputs, outputs in model order, no taps): every graph output
is a model output.

Engines convert the *untapped* model first (the observer effect): ``strip_taps(model)`` removes
every tap output (and the nodes that only fed them); each engine then exposes the taps on its
converted graph itself (``leapp_lab.engines.ort_taps``).

onnx is imported inside the functions that touch graphs: verify parses the manifest a build
recorded in build.json (``parse_manifest``) and should not pay for importing onnx (nor torch,
which this module never imports).
"""
from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING, Any

from ..model.tap import MANIFEST_VERSION, Manifest, TapEntry

if TYPE_CHECKING:
    import onnx

MANIFEST_KEY = "leapp_lab.manifest"
IDENTITY_PREFIX = "leapp_lab_tap/"


class ManifestError(ValueError):
    """A manifest that is not JSON, not of a supported version, or does not fit its graph."""


def _load(model: onnx.ModelProto | str | os.PathLike) -> onnx.ModelProto:
    import onnx
    if isinstance(model, onnx.ModelProto):
        return model
    return onnx.load(os.fspath(model), load_external_data=False)


def producer_index(graph: onnx.GraphProto) -> dict[str, int]:
    """value name -> index of the node that produces it (ONNX graphs are topologically sorted, so
    this is the model order)."""
    idx: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for o in node.output:
            if o:
                idx[o] = i
    return idx


#: node metadata where torch's exporter records the module path of each node
NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"


def module_scope(node: onnx.NodeProto) -> str | None:
    """The module path (``blocks.3.attn``) of an exported node: the deepest module of the
    exporter's name-scope metadata (its last entry names the op itself), None at the top level or
    without the metadata. A tap's ``scope`` and the verify graph's node scopes both come from here."""
    import ast
    raw = next((p.value for p in node.metadata_props if p.key == NAME_SCOPES_KEY), None)
    try:
        scopes = ast.literal_eval(raw) if raw else []
    except (ValueError, SyntaxError):
        return None
    if not isinstance(scopes, (list, tuple)):
        return None
    scopes = [x for x in scopes[:-1] if isinstance(x, str) and x]
    return scopes[-1] if scopes else None


def read_manifest(model: onnx.ModelProto | str | os.PathLike, path: str | os.PathLike | None = None
                  ) -> Manifest:
    """The manifest stamped by prepare, or one synthesised from the graph when there is none.

    Raises ManifestError naming ``path`` (default: the file ``model`` was loaded from) when the
    metadata is not JSON, not a version-1 manifest, or names taps that are not graph outputs.
    """
    where = os.fspath(path) if path is not None else (
        "model" if not isinstance(model, (str, os.PathLike)) else os.fspath(model))
    m = _load(model)
    for p in m.metadata_props:
        if p.key == MANIFEST_KEY:
            try:
                raw = json.loads(p.value)
            except json.JSONDecodeError as exc:
                raise ManifestError(f"{where}: metadata {MANIFEST_KEY!r} is not valid JSON ({exc}); "
                                    "re-run prepare") from None
            return parse_manifest(raw, where, m.graph)
    prod = producer_index(m.graph)
    inits = {i.name for i in m.graph.initializer}
    return Manifest(
        inputs=[i.name for i in m.graph.input if i.name not in inits],
        outputs=[TapEntry(o.name, "output", prod.get(o.name, -1), reference_source="torch")
                 for o in m.graph.output],
        taps=[], synthesized=True)


def parse_manifest(raw: Any, where: str = "manifest", graph: onnx.GraphProto | None = None) -> Manifest:
    """Check and load a manifest's JSON value. With ``graph`` (the ONNX it rides in): every tap
    must be a graph output; missing inputs / outputs / tap orders are taken from the graph."""
    def bad(msg: str) -> ManifestError:
        return ManifestError(f"{where}: metadata {MANIFEST_KEY!r}: {msg}")
    if not isinstance(raw, dict):
        raise bad(f"not a manifest object (got {type(raw).__name__}); re-run prepare")
    if raw.get("version") != MANIFEST_VERSION:
        raise bad(f"unsupported manifest version {raw.get('version')!r} (this leapp_lab reads "
                  f"version {MANIFEST_VERSION}); re-run prepare")
    taps_raw, outs_raw = raw.get("taps") or [], raw.get("outputs") or []
    if not isinstance(taps_raw, list) or not isinstance(outs_raw, list):
        raise bad("'taps' and 'outputs' must be lists; re-run prepare")
    order = producer_index(graph) if graph is not None else {}
    taps = []
    for t in taps_raw:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise bad(f"tap entry without a name: {t!r:.120}")
        t = {"kind": "manual", **t}
        t["tensor"] = t.get("tensor") or t["name"]
        if t.get("order") is None and graph is not None:
            t["order"] = order.get(t["tensor"], -1)
        t.setdefault("order", None)
        taps.append(_entry(TapEntry, t, bad))
    outputs = []
    for o in outs_raw:
        if not isinstance(o, dict) or not isinstance(o.get("name"), str):
            raise bad(f"output entry without a name: {o!r:.120}")
        outputs.append(_entry(TapEntry, {"order": None, "reference_source": "torch", **o, "kind": "output"}, bad))
    for e in taps + outputs:  # rows are sorted by it
        if e.order is not None and (isinstance(e.order, bool) or not isinstance(e.order, int)):
            raise bad(f"{e.name!r} has order {e.order!r}, not a node index; re-run prepare")
    inputs = raw.get("inputs") or []
    if graph is not None:
        graph_outputs = [o.name for o in graph.output]
        missing = [t.name for t in taps if t.name not in graph_outputs]
        if missing:
            raise ManifestError(f"{where}: manifest taps {missing} are not outputs of the graph; "
                                f"re-run prepare (graph outputs: {graph_outputs})")
        if not outputs:  # an older/hand-made manifest: every non-tap graph output is a model output
            tapset = {t.name for t in taps}
            outputs = [TapEntry(n, "output", order.get(n, -1), reference_source="torch")
                       for n in graph_outputs if n not in tapset]
        if not inputs:
            inits = {i.name for i in graph.initializer}
            inputs = [i.name for i in graph.input if i.name not in inits]
    return Manifest(version=MANIFEST_VERSION, inputs=list(inputs), outputs=outputs, taps=taps)


def _entry(cls: type, d: dict[str, Any], bad) -> Any:
    try:
        return cls.from_dict(d)
    except (TypeError, ValueError) as exc:
        raise bad(f"bad {cls.__name__} {d.get('name')!r} ({exc})") from None


def write_manifest(model: onnx.ModelProto, manifest: Manifest) -> None:
    for i, p in enumerate(list(model.metadata_props)):
        if p.key == MANIFEST_KEY:
            del model.metadata_props[i]
            break
    entry = model.metadata_props.add()
    entry.key = MANIFEST_KEY
    entry.value = manifest.to_json()


def strip_taps(model: onnx.ModelProto, manifest: Manifest | None = None) -> onnx.ModelProto:
    """A copy of ``model`` without tap outputs, the nodes that only fed them (the
    ``leapp_lab_tap/`` Identity nodes, exporter Identities of a tap on an output's value) and the
    manifest: the graph the engine should really be built from."""
    import onnx
    manifest = manifest or read_manifest(model)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    names = {t.name for t in manifest.taps}
    keep = [o for o in out.graph.output if o.name not in names]
    del out.graph.output[:]
    out.graph.output.extend(keep)
    remove_dead_nodes(out.graph)
    for i, p in enumerate(list(out.metadata_props)):
        if p.key == MANIFEST_KEY:
            del out.metadata_props[i]
            break
    return out


def remove_dead_nodes(graph: onnx.GraphProto) -> int:
    """Drop nodes none of whose outputs reach a graph output. Returns how many were removed."""
    live = {o.name for o in graph.output}
    keep = []
    for n in reversed(graph.node):
        if any(o in live for o in n.output if o):
            keep.append(n)
            live.update(i for i in n.input if i)
            for a in n.attribute:  # values used inside subgraphs (If/Loop/Scan bodies)
                for sg in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    live.update(_subgraph_inputs(sg))
    removed = len(graph.node) - len(keep)
    if removed:
        keep.reverse()
        del graph.node[:]
        graph.node.extend(keep)
    return removed


def _subgraph_inputs(g: onnx.GraphProto) -> set[str]:
    names = set()
    for n in g.node:
        names.update(i for i in n.input if i)
        for a in n.attribute:
            for sg in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                names |= _subgraph_inputs(sg)
    return names


@functools.cache
def _dtypes() -> dict[str, int]:
    from onnx import TensorProto as T
    return {"float32": T.FLOAT, "float16": T.FLOAT16, "float64": T.DOUBLE, "bfloat16": T.BFLOAT16,
            "int64": T.INT64, "int32": T.INT32, "int8": T.INT8, "uint8": T.UINT8, "bool": T.BOOL}


def onnx_dtype(name: str | None) -> int:
    from onnx import TensorProto
    return _dtypes().get(name or "", TensorProto.UNDEFINED)


def numpy_dtype_name(elem_type: int) -> str | None:
    for k, v in _dtypes().items():
        if v == elem_type:
            return k
    return None


def add_output(graph: onnx.GraphProto, name: str, tensor: str, dtype: str | None,
               shape: list[int] | None = None) -> None:
    """Make ``tensor`` a graph output called ``name`` (through an Identity node when they differ).

    ONNX requires a type with a shape on graph outputs; both are written when known (prepare
    always knows them for taps with a reference)."""
    import onnx
    from onnx import helper
    if name != tensor:
        graph.node.append(helper.make_node("Identity", [tensor], [name], name=IDENTITY_PREFIX + name))
    et = onnx_dtype(dtype)
    if et == onnx.TensorProto.UNDEFINED:
        vi = graph.output.add()
        vi.name = name
        return
    graph.output.append(helper.make_tensor_value_info(name, et, shape))
