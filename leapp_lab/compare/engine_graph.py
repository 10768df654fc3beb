"""The graph behind a verify report's rows, read from the build once, at verify time.

``engine_graph(build, rows)`` reads the build's ONNX engine graph (onnxruntime engines:
``engine.onnx``; engines without an ONNX artifact, such as TensorRT: the prepared ONNX the build
was made from) and returns the compact ``EngineGraph`` the report stores, so that views draw the
accuracy graph without opening the ONNX. Every row with an engine value is placed on the node that
computes it: the node of the tap's ``producer_node`` when the engine kept it, else the producer of
the tapped tensor (onnxruntime fuses ``Conv`` + ``Relu``: the fused node), else the producer of the
tensor the build exposed (``bound_to``). The nodes leapp_lab added to expose taps, and nodes
computed from weights alone, are left out (counted in ``left_out``). Only the top-level graph is
read (no If/Loop bodies).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from leapp_lab.model.graph import MAX_GRAPH_NODES, EngineGraph, GraphNode
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX, module_scope

from .buildio import OpenBuild

_DEFAULT_DOMAINS = ("", "ai.onnx")
_FLOAT_SUFFIX = "__float"     # bind_taps renames a tapped float value aside when int8 shows its quantized form


def engine_graph(build: OpenBuild, rows: Iterable[Any]) -> EngineGraph:
    """The build's graph with ``rows`` (VerifyRow) placed on their nodes; never raises for a
    missing or unreadable graph: the returned record's ``note`` says what went wrong. An engine
    graph that is no regular file (a FIFO, a device, a dangling link) is refused (``NotAFile``)."""
    engine_file = _engine_onnx(build)
    prepared = _prepared_onnx(build)
    path, source = (engine_file, "engine") if engine_file is not None else (prepared, "prepared")
    if path is None:
        return EngineGraph(source="", note="no ONNX graph found for this build (neither an .onnx engine "
                                            "artifact nor the prepared ONNX named in build.json)")
    # read from the wire format, not with onnx: `import onnx` alone costs more than a small verify
    from leapp_lab.onnxio.wire import read_graph
    try:
        graph = read_graph(path)     # names and metadata only: no weight is decoded
    except Exception as exc:      # a truncated or foreign file: the report is still worth having
        return EngineGraph(source=source, file=str(path), note=f"{path}: not a readable ONNX model ({exc})")
    scopes = None
    if source == "engine" and prepared is not None and not _has_scopes(graph):
        # int8 conversion drops node metadata; the prepared graph's node and tensor names survive
        try:
            scopes = _scope_index(read_graph(prepared))
        except Exception:
            scopes = None
    return graph_of(graph, rows, source=source, file=_shown_path(build, path), scopes=scopes)


def graph_of(graph: Any, rows: Iterable[Any], source: str = "engine", file: str = "",
             scopes: tuple[dict[str, str | None], dict[str, str | None]] | None = None,
             max_nodes: int = MAX_GRAPH_NODES, initializers: set[str] | None = None) -> EngineGraph:
    """``EngineGraph`` of an ``onnx.GraphProto`` (or the ``engines.onnx_wire.Graph`` verify reads)
    with ``rows`` placed on their nodes. ``scopes``: (node name -> scope, tensor -> scope) of the
    prepared graph, for nodes without metadata.
    ``initializers``: the weights' names when ``graph`` was read without them (``onnx_split``)."""
    inits = set(initializers) if initializers is not None else {i.name for i in graph.initializer}
    graph_inputs = [i.name for i in graph.input if i.name not in inits]
    exposure = [n.name.startswith(IDENTITY_PREFIX) for n in graph.node]
    # constant nodes: every input a weight (or another constant node's output), no input at all
    constant = set(inits)
    is_const = []
    for n, exp in zip(graph.node, exposure):
        c = not exp and all((not x) or x in constant for x in n.input)
        is_const.append(c)
        if c:
            constant.update(o for o in n.output if o)
    prod: dict[str, int] = {}
    by_name: dict[str, int] = {}
    for i, n in enumerate(graph.node):
        if exposure[i]:
            continue
        by_name.setdefault(n.name, i)
        for o in n.output:
            if o:
                prod[o] = i
    placed: dict[int, list[str]] = {}
    for r in rows:
        if getattr(r, "status", "compared") == "not-in-engine":
            continue
        i = _place(r, by_name, prod)
        if i is not None:
            placed.setdefault(i, []).append(r.name)
    keep = [i for i, n in enumerate(graph.node) if not exposure[i] and (not is_const[i] or i in placed)]
    left_out = {k: v for k, v in (("tap exposure", sum(exposure)),
                                  ("constant", sum(1 for i, c in enumerate(is_const) if c and i not in placed)))
                if v}
    tap_rows = {r.name for r in rows if getattr(r, "kind", "") != "output"}
    outputs = [o.name for o in graph.output if o.name not in tap_rows and o.name in prod]
    g = EngineGraph(source=source, file=file, inputs=graph_inputs, outputs=outputs,
                    total_nodes=len(graph.node), left_out=left_out)
    if len(keep) > max_nodes:
        g.note = (f"the graph has {len(keep)} nodes, more than the {max_nodes} a report keeps for its graph "
                  f"view; open {file or 'the ONNX'} in Netron or Model Explorer")
        return g
    kept = set(keep)
    known = set(graph_inputs) | {o for i in keep for o in graph.node[i].output if o}
    names = _unique_names(graph.node, keep)
    node_scope: dict[int, str | None] = {}
    for i in keep:
        n = graph.node[i]
        scope = module_scope(n)
        if scope is None and scopes is not None:
            scope = _prepared_scope(n, *scopes)
            if scope is _UNKNOWN:
                # a Quantize/DequantizeLinear the converter added belongs where the value it
                # (de)quantizes was made
                src = next((prod[x] for x in n.input if x in prod and prod[x] in kept), None)
                scope = node_scope.get(src) if src is not None else None
        node_scope[i] = scope
        g.nodes.append(GraphNode(
            name=names[i], op=n.op_type if n.domain in _DEFAULT_DOMAINS else f"{n.domain}::{n.op_type}",
            scope=scope, inputs=[x for x in dict.fromkeys(n.input) if x and x in known],
            outputs=[o for o in n.output if o], rows=placed.get(i, [])))
    return g


def _place(r: Any, by_name: dict[str, int], prod: dict[str, int]) -> int | None:
    value = getattr(r, "tensor", None) or r.name
    for cand in (by_name.get(r.producer_node) if r.producer_node else None, prod.get(value),
                 prod.get(value + _FLOAT_SUFFIX), prod.get(r.bound_to) if r.bound_to else None,
                 prod.get(r.name)):
        if cand is not None:
            return cand
    return None


def _unique_names(nodes: Any, keep: list[int]) -> dict[int, str]:
    seen: dict[str, int] = {}
    out = {}
    for i in keep:
        n = nodes[i]
        base = n.name or f"{n.op_type}_{i}"
        seen[base] = seen.get(base, 0) + 1
        out[i] = base if seen[base] == 1 else f"{base}#{seen[base]}"
    return out


_UNKNOWN: Any = object()


def _prepared_scope(n: Any, by_node: dict[str, str | None], by_tensor: dict[str, str | None]) -> Any:
    """The scope the prepared graph gives this engine node (None: top level), or _UNKNOWN."""
    if n.name in by_node:
        return by_node[n.name]
    for o in n.output:
        for t in (o, o[: -len(_FLOAT_SUFFIX)] if o.endswith(_FLOAT_SUFFIX) else None):
            if t in by_tensor:
                return by_tensor[t]
    return _UNKNOWN


def _has_scopes(graph: Any) -> bool:
    return any(module_scope(n) is not None for n in graph.node)


def _scope_index(graph: Any) -> tuple[dict[str, str | None], dict[str, str | None]]:
    by_node: dict[str, str | None] = {}
    by_tensor: dict[str, str | None] = {}
    for n in graph.node:
        if n.name.startswith(IDENTITY_PREFIX):
            continue
        s = module_scope(n)
        by_node.setdefault(n.name, s)
        for o in n.output:
            if o:
                by_tensor[o] = s
    return by_node, by_tensor


def _engine_onnx(build: OpenBuild) -> Path | None:
    from leapp_lab.model.safepaths import check_input_file, present
    art = build.report.artifact if build.report is not None else ""
    if art.endswith(".onnx") and present(build.folder / art):
        # a FIFO, a device or a dangling link there is refused, never read nor passed over
        return check_input_file(build.folder / art, "the build's engine graph (an ONNX file)")
    return None


def _prepared_onnx(build: OpenBuild) -> Path | None:
    name = build.report.onnx if build.report is not None else ""
    if not name:
        return None
    p = Path(name)
    cands = [p] if p.is_absolute() else [p, build.path.parent / p, build.path.parent / p.name]
    return next((c for c in cands if c.is_file()), None)


def _shown_path(build: OpenBuild, path: Path) -> str:
    """The file as the user knows it (a member of a .tgz build is named inside the archive)."""
    try:
        return str(build.path / path.relative_to(build.folder))
    except ValueError:
        return str(path)
