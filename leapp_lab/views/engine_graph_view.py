"""The accuracy graph of a verify view: the report's ``EngineGraph`` arranged for the front-end.

Nodes keep the graph's order; edges are node indices; graph inputs and model outputs become small
``input`` / ``output`` nodes. Module scopes become a tree of *groups* by dotted prefix
(``blocks`` ⊃ ``blocks.3`` ⊃ ``blocks.3.attn``); a group that holds a single node, or exactly
what its only child holds, is dropped, so every box the user can fold stands for two nodes or
more. ``open`` lists the groups drawn unfolded at first: every level while the drawing stays at
``FOLD_TARGET`` boxes or fewer, plus the groups around the first divergent row's node, so that the
failing node itself is on screen. Colours come from the rows' own cells (``metrics`` says which
columns may colour the nodes, and the rule's threshold for each); nothing here computes a metric.
"""
from __future__ import annotations

from typing import Any

from leapp_lab.model.columns import profile_columns, table_columns

#: boxes (nodes and folded groups) drawn at first, at most, when folding allows it
FOLD_TARGET = 48


def _groups(scopes: list[str | None]) -> tuple[dict[str, dict[str, Any]], list[str | None]]:
    """(groups by id, each node's innermost group) for the nodes' scopes."""
    count: dict[str, int] = {}
    direct: dict[str, int] = {}
    children: dict[str, set[str]] = {}
    chains = []
    for s in scopes:
        parts = s.split(".") if s else []
        chain = [".".join(parts[:k]) for k in range(1, len(parts) + 1)]
        chains.append(chain)
        for k, p in enumerate(chain):
            count[p] = count.get(p, 0) + 1
            if k + 1 < len(chain):
                children.setdefault(p, set()).add(chain[k + 1])
        if chain:
            direct[chain[-1]] = direct.get(chain[-1], 0) + 1

    def kept(p: str) -> bool:
        if count[p] < 2:
            return False
        kids = children.get(p, set())
        # a group that is exactly its only child adds a level and nothing to fold
        return not (direct.get(p, 0) == 0 and len(kids) == 1 and count[next(iter(kids))] == count[p])

    groups: dict[str, dict[str, Any]] = {}
    node_group: list[str | None] = []
    for chain in chains:
        keep = [p for p in chain if kept(p)]
        for k, p in enumerate(keep):
            if p not in groups:
                parent = keep[k - 1] if k else None
                groups[p] = {"id": p, "parent": parent, "depth": k, "size": count[p],
                             "label": p[len(parent) + 1:] if parent else p}
        node_group.append(keep[-1] if keep else None)
    return groups, node_group


def _ancestors(groups: dict[str, dict[str, Any]], gid: str | None) -> list[str]:
    out = []
    while gid is not None:
        out.append(gid)
        gid = groups[gid]["parent"]
    return out


def _boxes(groups: dict[str, dict[str, Any]], node_group: list[str | None], open_: set[str]) -> int:
    """How many boxes the drawing has with ``open_`` unfolded."""
    reps = set()
    for i, g in enumerate(node_group):
        rep: Any = i
        for a in reversed(_ancestors(groups, g)):      # outermost first
            if a not in open_:
                rep = a
                break
        reps.add(rep)
    return len(reps)


def _metrics(report: Any) -> list[dict[str, Any]]:
    """Columns that may colour the nodes, with the rule's threshold where the rule has one."""
    # the rule's own limits and sides (DivergenceRule.thresholds; an expectation's excess factor)
    thresholds = report.thresholds() if hasattr(report, "thresholds") else report.rule.thresholds()
    in_table = {c.key for c in table_columns(report)}
    out = []
    for c in profile_columns(report):
        if c.key not in in_table:
            continue
        # a local column is judged by the rule's own limit on that metric (locally_diverged)
        thr, worse = thresholds.get(c.key) or thresholds.get(c.key[len("local_"):] if c.key.startswith("local_")
                                                             else c.key, (None, "above"))
        out.append({"key": c.key, "label": c.label, "type": c.fmt, "threshold": thr, "worse": worse,
                    "description": c.description})
    out.sort(key=lambda m: m["key"] != "nrmse")      # the rule's own measure first
    return out


def engine_graph_view(report: Any) -> dict[str, Any] | None:
    """The ``engine_graph`` entry of a verify view dict (None: the report holds no graph)."""
    g = getattr(report, "graph", None)
    if g is None:
        return None
    shown = {r.name for r in report.table()}
    nodes: list[dict[str, Any]] = []
    producer: dict[str, int] = {}
    inputs = {}
    for name in g.inputs:
        inputs[name] = len(nodes)
        nodes.append({"name": name, "op": "graph input", "kind": "input", "group": None, "rows": [], "inputs": []})
    groups, node_group = _groups([n.scope for n in g.nodes])
    first_node = None
    for n, grp in zip(g.nodes, node_group):
        i = len(nodes)
        for o in n.outputs:
            producer[o] = i
        ins = list(dict.fromkeys(producer.get(x, inputs.get(x)) for x in n.inputs))
        rows = [r for r in n.rows if r in shown]
        if report.first_divergent in rows:
            first_node = i
        nodes.append({"name": n.name, "op": n.op, "kind": "op", "scope": n.scope, "group": grp, "rows": rows,
                      "inputs": [x for x in ins if x is not None]})
    for name in g.outputs:
        if name in producer:
            nodes.append({"name": name, "op": "model output", "kind": "output", "group": None, "rows": [],
                          "inputs": [producer[name]]})
    # open whole levels while the drawing stays small, then the groups around the failing node
    depth = max((x["depth"] for x in groups.values()), default=-1) + 1
    all_groups = [node_group[i] for i in range(len(node_group))]
    open_: set[str] = set()
    for d in range(1, depth + 1):
        cand = {gid for gid, x in groups.items() if x["depth"] < d}
        if _boxes(groups, all_groups, cand) > FOLD_TARGET:
            break
        open_ = cand
    if first_node is not None:
        open_.update(_ancestors(groups, nodes[first_node]["group"]))
    placed = {r for n in nodes for r in n["rows"]}
    return {
        "source": g.source, "file": g.file, "note": g.note, "total_nodes": g.total_nodes,
        "left_out": dict(g.left_out), "nodes": nodes, "groups": list(groups.values()),
        "open": sorted(open_), "first_node": first_node, "metrics": _metrics(report),
        "unplaced": [r.name for r in report.table() if r.name not in placed],
    }
