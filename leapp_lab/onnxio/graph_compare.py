"""Is a prepared graph, without its taps, the graph LEAPP exported? (prepare --from-trace)

Two ONNX graphs are the same when their nodes (op, domain, inputs, outputs, attributes, in order),
initializers, graph inputs and outputs are; node names, doc strings and metadata (stack traces,
name scopes) do not count.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any


def same_as_leapp(proto: Any, manifest: Any, leapp_onnx: Path) -> tuple[bool, str | None]:
    """Is ``proto`` without its taps the graph of LEAPP's artifact? (nodes, their inputs, outputs
    and attributes, initializers, graph inputs and outputs; metadata and doc strings aside)"""
    import onnx
    from leapp_lab.onnxio.manifest import strip_taps
    bare = strip_taps(proto, manifest) if manifest.taps else proto
    theirs = onnx.load(str(leapp_onnx))
    a, b = _graph_key(bare), _graph_key(theirs)
    if a == b:
        return True, None
    for part in ("inputs", "outputs", "initializers", "nodes"):
        if a[part] != b[part]:
            return False, f"its {part} differ from LEAPP's artifact"
    return False, "it differs from LEAPP's artifact"


def _graph_key(m: Any) -> dict:
    import onnx

    def node_key(n):
        c = onnx.NodeProto()
        c.CopyFrom(n)
        c.doc_string = ""
        del c.metadata_props[:]
        c.name = ""
        return c.SerializeToString()
    g = m.graph
    return {"inputs": [i.SerializeToString() for i in g.input],
            "outputs": [o.SerializeToString() for o in g.output],
            "initializers": sorted(i.SerializeToString() for i in g.initializer),
            "nodes": [node_key(n) for n in g.node]}
