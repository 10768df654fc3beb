"""Where a ``--local`` cut must reach so that what comes after a tap really reads its reference
(``ort_local.teacher_forced``).

* ``layout_chain``: the tapped tensor is often a pure layout transform (Transpose, Reshape, Squeeze,
  Unsqueeze, Flatten, Identity) of the tensor the engine's next layer reads: onnxruntime folds
  ``Transpose -> Transpose`` of the consumer's path away and keeps the tapped Transpose only as a side
  branch for the tap. The cut then goes on up that chain: every other consumer of a tensor on it
  reads the reference pushed back through the chain's inverse (``inverse_nodes``), exact (a
  permutation or a reshape of the same values).
* ``not_isolated``: the safety net for the rest. A cut that rewires no consumer at all, of a tensor
  that the prepared model's next layers do read, means the engine reads that value through some
  other tensor: the rows after it would still include the tap's error, so they get no local value
  (``ort_local`` gives them a reason instead of a misleading number).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import onnx
from onnx import helper

from leapp_lab.onnxio.manifest import IDENTITY_PREFIX as TAP_NODE_PREFIX

#: the prefix of what teacher forcing adds (``ort_local.LOCAL_PREFIX``)
LOCAL_PREFIX = "leapp_lab_local/"
#: single-data-input ops that only move or relabel the values of their input (invertible exactly)
LAYOUT_OPS = frozenset({"Identity", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten"})


def is_tap_node(n: onnx.NodeProto) -> bool:
    return n.name.startswith(TAP_NODE_PREFIX)


def layout_chain(tensor: str, producers: dict, stop) -> list[tuple[onnx.NodeProto, str]]:
    """[(layout node, its input tensor)] from ``tensor`` upwards, nearest first: the walk stops at
    a node that is not a plain layout op, a tap node, a graph input or initializer (no producer), or
    an input ``stop(name)`` refuses (read inside a subgraph, already cut)."""
    chain: list[tuple[onnx.NodeProto, str]] = []
    cur = tensor
    while True:
        p = producers.get(cur)
        if p is None or is_tap_node(p) or p.op_type not in LAYOUT_OPS or p.domain not in ("", "ai.onnx"):
            return chain
        up = p.input[0] if p.input else ""
        if not up or up not in producers or stop(up):
            return chain
        chain.append((p, up))
        cur = up


def inverse_nodes(src: str, chain: list[tuple[onnx.NodeProto, str]], tag: str) -> tuple[list, list[str]]:
    """Nodes taking ``src`` (the value of the chain's first output) back through ``chain``: (nodes,
    the name holding the value of each chain input, in chain order). A reshape-like op is undone by
    a Reshape to the engine tensor's own shape (``Shape`` of it: its shape only, never its values)."""
    nodes, names = [], []
    cur = src
    for k, (p, up) in enumerate(chain):
        name = f"{tag}/up{k}"
        if p.op_type == "Identity":
            names.append(cur)
            continue
        if p.op_type == "Transpose":
            perm = next((list(a.ints) for a in p.attribute if a.name == "perm"), None)
            kw = {} if perm is None else {"perm": [int(i) for i in np.argsort(perm)]}
            nodes.append(helper.make_node("Transpose", [cur], [name], name=f"{tag}/inv{k}", **kw))
        else:
            nodes += [helper.make_node("Shape", [up], [f"{name}/shape"], name=f"{tag}/shape{k}"),
                      helper.make_node("Reshape", [cur, f"{name}/shape"], [name], name=f"{tag}/inv{k}")]
        names.append(name)
        cur = name
    return nodes, names


def topo_sorted(nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
    """``nodes`` in an order where each node follows the producers of its inputs (stable: the given
    order wherever it already is one)."""
    made = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    deps = [{made[x] for x in n.input if x in made and made[x] != i} for i, n in enumerate(nodes)]
    users: dict[int, list[int]] = defaultdict(list)
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    left = [len(d) for d in deps]
    import heapq
    ready = [i for i, c in enumerate(left) if c == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(nodes[i])
        for u in users[i]:
            left[u] -= 1
            if left[u] == 0:
                heapq.heappush(ready, u)
    return out if len(out) == len(nodes) else nodes     # a cycle: not ours to fix


def ancestry(nodes: list[onnx.NodeProto]):
    """A function: tensor -> the ids of the nodes it is computed from (a ``Shape`` a cut added
    passes on a shape, not values: not followed)."""
    made = {o: n for n in nodes for o in n.output if o}
    memo: dict[str, frozenset] = {}

    def of(tensor: str) -> frozenset:
        if tensor in memo:
            return memo[tensor]
        out: set[int] = set()
        todo, seen = [tensor], {tensor}
        while todo:
            n = made.get(todo.pop())
            if n is None or id(n) in out:
                continue
            out.add(id(n))
            if n.op_type == "Shape" and n.name.startswith(LOCAL_PREFIX):
                continue
            for x in n.input:
                if x and x not in seen:
                    seen.add(x)
                    todo.append(x)
        memo[tensor] = frozenset(out)
        return memo[tensor]
    return of


def not_isolated(prepared: onnx.ModelProto, dead: dict[str, str], effective: set[str]) -> dict[str, str]:
    """Rows whose teacher-forced value would still include a dead cut's error: row -> the tap it
    inherits from. ``dead``: tap name -> its tensor in ``prepared`` (the model the engine was
    compiled from), for every tap whose cut rewired nothing in the engine; ``effective``: the
    prepared tensors of the cuts that did. A dead tap whose tensor feeds nothing in ``prepared``
    either (a value only watched) leaks nothing. From each other one, the rows downstream in
    ``prepared`` up to and including the taps of the next effective cut."""
    g = prepared.graph
    consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for n in g.node:
        for x in n.input:
            if x:
                consumers[x].append(n)
    outputs = {o.name for o in g.output}
    out: dict[str, str] = {}
    for tap, tensor in dead.items():
        if not any(not is_tap_node(n) for n in consumers.get(tensor, [])):
            continue
        seen, todo = {tensor}, [tensor]
        while todo:
            x = todo.pop()
            for n in consumers.get(x, []):
                if is_tap_node(n):
                    if x != tensor:
                        out.update({o: tap for o in n.output if o and o not in dead})
                    continue
                if x in effective and x != tensor:
                    continue            # its consumers read that cut's reference
                for o in n.output:
                    if o and o not in seen:
                        seen.add(o)
                        todo.append(o)
                        if o in outputs:
                            out.setdefault(o, tap)
    return out
