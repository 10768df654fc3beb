"""The engine graph a verify report keeps for its views (docs/schema-verify.md, ``graph``).

Verify reads the build's ONNX graph once (``leapp_lab.compare.engine_graph``) and stores a compact
node list here: each node's name, op, module scope, the tensors it reads and writes (only those
that connect stored nodes or graph inputs; weights are left out), and the verify rows whose value
it computes. Views draw the accuracy graph from this record alone; they never open the ONNX.
Stdlib only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .dc import Plain

#: graphs with more nodes than this are not stored (``EngineGraph.note`` says so): report.json and
#: the HTML report grow by about 0.2 KB per node, and a browser takes seconds to lay out thousands of
#: unfolded nodes; open engine.onnx in Netron or Model Explorer instead.
MAX_GRAPH_NODES = 3000


@dataclass
class GraphNode(Plain):
    """One node of the engine graph.

    ``name``: the ONNX node name (made unique: an empty name becomes ``<op>_<index>``, a repeated
    one gets ``#2``, ``#3``...). ``op``: the op type, ``domain::op`` outside the default domain.
    ``scope``: the module path that made it (``blocks.3.attn``; the exporter's name scopes, or
    inherited from the node it quantizes; None: top level or unknown). ``inputs`` / ``outputs``:
    tensor names. ``rows``: names of the verify rows (outputs and taps) this node computes, in
    model order.
    """
    name: str
    op: str
    scope: str | None = None
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)


@dataclass
class EngineGraph(Plain):
    """The graph behind a verify report's rows.

    ``source``: ``engine`` (the build's onnxruntime engine graph, ``engine.onnx``) or ``prepared``
    (the prepared ONNX, for engines without an ONNX artifact such as TensorRT). ``file``: the path
    read. ``inputs`` / ``outputs``: graph input / model output tensor names. ``nodes``: in the
    graph's (topological) order. ``total_nodes``: nodes of the ONNX graph's top level.
    ``left_out``: nodes not stored, by reason (``tap exposure``: the nodes leapp_lab added to expose
    taps; ``constant``: nodes computed from weights alone, e.g. int8 weight DequantizeLinear).
    ``note``: why ``nodes`` is empty or partial (no ONNX found, too many nodes...), else None.
    """
    source: str = "engine"
    file: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    nodes: list[GraphNode] = field(default_factory=list)
    total_nodes: int = 0
    left_out: dict[str, int] = field(default_factory=dict)
    note: str | None = None

    def node_of(self, row: str) -> GraphNode | None:
        """The node that computes verify row ``row``, or None."""
        return next((n for n in self.nodes if row in n.rows), None)
