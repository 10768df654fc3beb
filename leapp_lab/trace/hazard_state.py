"""Hazards of state: module state updated while LEAPP recorded, and recurrent state left undeclared.

``StateWatch`` notes every buffer and parameter of the live ``torch.nn.Module`` trees when a
session starts and, at ``compile_graph``, which of them changed (in place: torch's version counter;
reassigned: another tensor under the same name) and which node's traced graph reads them (the
graph's ``get_attr`` tensors share their storage). That is ``GraphReport.state_changes``, the
evidence ``mutated_state`` names: an observation normaliser left in training mode, a scaler called
with ``train=True``, an optimiser step.

``undeclared_state`` reads a node's FX graph: a recurrent op (LSTM / GRU / RNN, cell or layer)
whose hidden state does not depend on any input or state of the node is fed a constant, the state
the first pass had, so the export never carries it. docs/hazards.md documents both rules.
"""
from __future__ import annotations

import gc
import re
import warnings
import weakref
from typing import Any

from leapp_lab.model.trace import Hazard, NodeReport, StateChange

# aten / torch / _VF spellings of the recurrent ops; their hidden state is argument 1
_RECURRENT = re.compile(r"(^|\.)(lstm|gru|rnn_tanh|rnn_relu)(_cell)?(\.default|\.input)?$")
_REF = re.compile(r"%(\w+)")


def _version(t) -> int | None:
    try:
        return int(t._version)
    except Exception:       # an inference tensor has no version counter
        return None


def _roots() -> list:
    import torch
    from torch.fx import GraphModule
    with warnings.catch_warnings():     # isinstance() on some deprecated torch objects warns
        warnings.simplefilter("ignore")
        mods = [o for o in gc.get_objects() if isinstance(o, torch.nn.Module) and not isinstance(o, GraphModule)]
    inner = {id(c) for m in mods for c in m.children()}
    return [m for m in mods if id(m) not in inner]


def _tensors(root) -> dict[str, Any]:
    out = {}
    try:
        for kind in (root.named_buffers, root.named_parameters):
            for name, t in kind(remove_duplicate=False):
                out[name] = t
    except Exception:       # a module whose named_* raise: not ours to judge
        pass
    return out


def _ptr(t) -> int | None:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return None


class StateWatch:
    """The module state at ``leapp.start()``, compared at ``compile_graph()``."""

    def __init__(self) -> None:
        self._start: list[tuple[Any, str, dict[str, tuple[Any, int | None]]]] = []

    @classmethod
    def begin(cls) -> "StateWatch":
        w = cls()
        try:
            for root in _roots():
                ts = {n: (t, _version(t)) for n, t in _tensors(root).items()}
                if ts:
                    w._start.append((weakref.ref(root), type(root).__name__, ts))
        except Exception:      # watching is evidence, never a reason for the session to fail
            w._start = []
        return w

    def changes(self, graphs: dict[str, Any] | None = None) -> list[StateChange]:
        """What changed since :meth:`begin`; ``graphs``: node name -> its traced GraphModule, to
        say which node reads each changed tensor."""
        reads = {name: _graph_storages(gm) for name, gm in (graphs or {}).items()}
        out: list[StateChange] = []
        out += self._new_modules(reads)
        for ref, cls_name, before in self._start:
            root = ref()
            if root is None:
                continue
            now = _tensors(root)
            for name, (t0, v0) in before.items():
                t1 = now.get(name)
                if t1 is None:
                    continue
                if t1 is not t0:
                    how, updates = "reassigned", None
                else:
                    v1 = _version(t1)
                    if v0 is None or v1 is None or v1 == v0:
                        continue
                    how, updates = "in place", v1 - v0
                ptrs = {p for p in (_ptr(t0), _ptr(t1)) if p}
                nodes = [n for n, s in reads.items() if ptrs & s]
                path, _, leaf = name.rpartition(".")
                out.append(StateChange(module=cls_name + (f".{path}" if path else ""), name=leaf, how=how,
                                       updates=updates, nodes=nodes))
        return out


    def _new_modules(self, reads: dict[str, set[int]]) -> list[StateChange]:
        """Modules made after ``leapp.start()`` have no state to compare with: a buffer of theirs
        that a node's graph reads and that was updated in place since it was made (its version
        counter) is reported with that count."""
        known = {id(r()) for r, _, _ in self._start if r() is not None}
        out = []
        try:
            roots = [r for r in _roots() if id(r) not in known]
        except Exception:
            return out
        for root in roots:
            for name, t in _tensors(root).items():
                v, p = _version(t), _ptr(t)
                nodes = [n for n, s in reads.items() if p and p in s]
                if v and nodes:
                    path, _, leaf = name.rpartition(".")
                    out.append(StateChange(module=type(root).__name__ + (f".{path}" if path else ""), name=leaf,
                                           how="in place", updates=v, nodes=nodes))
        return out


def state_changes(watch: StateWatch | None) -> list[StateChange]:
    """The module state changed since ``leapp.start()`` (``watch``; None: not watched), with the
    nodes of the session whose traced graph reads it."""
    if watch is None:
        return []
    try:
        from . import lifecycle
        nodes = lifecycle.manager().get_nodes()
        return watch.changes({name: getattr(node, "m", None) for name, node in nodes.items()})
    except Exception:      # evidence only: a failure here never costs the session
        return []


def _graph_storages(gm) -> set[int]:
    out: set[int] = set()
    if gm is None:
        return out
    try:
        for n in gm.graph.nodes:
            if n.op == "get_attr":
                obj = gm
                for part in str(n.target).split("."):
                    obj = getattr(obj, part)
                p = _ptr(obj)
                if p:
                    out.add(p)
    except Exception:
        pass
    return out


def describe(changes: list[StateChange], limit: int = 4) -> str:
    """``MLPModel.obs_normalizer._mean (in place, 5 updates), ...``"""
    parts = [f"{c.module}.{c.name} ({c.how}" + (f", {c.updates} update{'s' if c.updates != 1 else ''}"
                                                   if c.updates else "") + ")" for c in changes[:limit]]
    more = f" and {len(changes) - limit} more" if len(changes) > limit else ""
    return ", ".join(parts) + more


def _fmt(ks) -> str:
    ks = sorted(ks)
    return ("sample " if len(ks) == 1 else "samples ") + ", ".join(map(str, ks))


def _diverging(ports: list, excluded: set[int], nonfinite: bool = False) -> dict[str, list[int]]:
    """Per output port: the samples whose FX replay does not reproduce the recorded output (and,
    with ``nonfinite``, those whose recorded output holds NaN / Inf)."""
    out = {}
    for p in ports:
        ks = [k for k in sorted(p.checks) if k not in excluded
              and (p.fx_agrees(k) is False or (nonfinite and bool(p.checks[k].nonfinite_recorded)))]
        if ks:
            out[p.port] = ks
    return out


def _ordered(node: NodeReport, ports: list, evidence: dict[str, list[int]]) -> list[str]:
    """The evidence ports in the node's port order, a port LEAPP fails first: the finding starts
    from the first failing row, so the hazard's ``port`` is that row's port when it has one."""
    order = {q.name: i for i, q in enumerate(node.ports)}
    failing = {p.port for p in ports if any(c.passed is False for c in p.checks.values())}
    return sorted(evidence, key=lambda name: (name not in failing, order.get(name, 1 << 20)))


def _by_port(evidence: dict[str, list[int]]) -> str:
    return "; ".join(f"{port!r} on {_fmt(ks)}" for port, ks in evidence.items())


def mutated_state(node: NodeReport, ports: list, excluded: set[int],
                  changes: list[StateChange]) -> tuple[list[Hazard], set[str]]:
    """``mutated-after-trace`` from the watched state: module state this node's graph reads changed
    during export, and its FX replay does not reproduce what was recorded. One hazard for the node,
    with the evidence of every port; returns it and the ports it explains."""
    mine = [c for c in changes if node.name in c.nodes]
    static = {q.name for q in node.outputs() if q.static}
    # statistics updated from a single sample (a variance of one value) turn NaN: a recorded
    # output that is not finite is evidence too, though the FX replay computes the same NaN
    evidence = _diverging([p for p in ports if p.port not in static], excluded, nonfinite=True)
    if not mine or not evidence:
        return [], set()
    ports_hit = _ordered(node, ports, evidence)
    evidence = {p: evidence[p] for p in ports_hit}
    samples = sorted({k for ks in evidence.values() for k in ks})
    what = describe(mine)
    return [Hazard(
        "mutated-after-trace", node.name, ports_hit[0], samples,
        f"node {node.name!r}: module state that its traced graph reads was updated while LEAPP "
        f"recorded: {what}. The recorded output is not reproduced by the FX replay of the trace, or is "
        f"not finite, on {_by_port(evidence)} ({_fmt(samples)} in all): each pass was recorded with other statistics than the graph holds, "
        f"and the export uses those of compile time. Freeze that state while tracing (eval mode, no "
        f"update or train=True call between leapp.start() and compile_graph()), then trace again.",
        ports=ports_hit)], set(ports_hit)


def _live(fx) -> set[str]:
    """FX node names that depend on a placeholder (an input or a state of the node)."""
    live: set[str] = set()
    for n in fx.nodes:
        if n.op == "placeholder" or any(r in live for a in n.args for r in _REF.findall(a)):
            live.add(n.name)
    return live


def frozen_recurrent(node: NodeReport) -> list[tuple[str, list[str]]]:
    """(op, hidden-state tensors) for each recurrent op of the node fed a constant hidden state."""
    fx = node.fx
    if fx is None or not fx.nodes:
        return []
    live = _live(fx)
    out = []
    for n in fx.nodes:
        if n.op == "call_function" and _RECURRENT.search(n.target) and len(n.args) > 1:
            hx = _REF.findall(n.args[1])
            if hx and not any(r in live for r in hx):
                out.append((n.target, hx))
    return out


def undeclared_state(node: NodeReport, ports: list, excluded: set[int]) -> tuple[list[Hazard], set[str]]:
    """``undeclared-state``: a recurrent op of the node gets a constant hidden state (no input or
    state of the node reaches it) and the FX replay does not reproduce later recorded passes."""
    frozen = frozen_recurrent(node)
    if not frozen:
        return [], set()
    static = {q.name for q in node.outputs() if q.static}
    evidence = _diverging([p for p in ports if p.port not in static], excluded - {0})
    evidence = {p: [k for k in ks if k >= 1] for p, ks in evidence.items()}
    evidence = {p: ks for p, ks in evidence.items() if ks}
    if not evidence:
        return [], set()
    op, hx = frozen[0]
    ports_hit = _ordered(node, ports, evidence)
    evidence = {p: evidence[p] for p in ports_hit}
    samples = sorted({k for ks in evidence.values() for k in ks})
    tensors = ", ".join(hx)
    return [Hazard(
        "undeclared-state", node.name, ports_hit[0], samples,
        f"node {node.name!r}: the recurrent state is not declared, so the hidden state of {op} is "
        f"the frozen tensor {tensors}, a constant of the traced graph holding the value of the first "
        f"pass, and the export never carries the state from step to step. The FX replay does not "
        f"reproduce the recorded output on {_by_port(evidence)} ({_fmt(samples)} in all). Declare the state: "
        f"annotate.state_tensors({node.name!r}, {{...}}) before the forward pass and "
        f"annotate.update_state({node.name!r}, {{...}}) with the new state after it (Isaac Lab's "
        f"recurrent export recipe), then trace again.",
        ports=ports_hit)], set(ports_hit)
