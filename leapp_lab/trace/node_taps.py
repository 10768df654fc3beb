"""``tap(x, "name")`` inside LEAPP nodes: which node each tap fired in, where, and its values.

While a traced session runs, ``NodeTapRecorder`` is the tap sink (``leapp_lab.model.tapsink``): every
``tap()`` / ``Tap`` reached by the body comes here and is returned unchanged, so LEAPP traces (and
exports) exactly what it would with ``tap`` bound to ``lambda x, name: x``. Recording never adds
an operation to the node's graph: the value is copied with torch-function dispatch off.

Which node a tap belongs to:

- on the node's first pass (LEAPP is tracing it) the value is a ``TracedTensor`` of that node; its
  FX node (``x.proxy.node``) says which value of the traced graph the tap marks;
- on a re-entry (samples 1, 2, ... that LEAPP only caches) values are plain tensors; LEAPP has no
  "current node", so the recorder wraps ``LeappNode.reentry_validate_inputs`` / ``_outputs`` (the
  node methods ``input_tensors`` / ``state_tensors`` / ``output_tensors`` call on a re-entry) to
  know which node's pass is open and which cached sample it fills. Wrapping the node methods
  rather than the ``annotate`` entry points keeps LEAPP's call-site anchor (the first frame outside
  LEAPP) on the user's line.

A tap that cannot be honoured (a duplicate name within one pass of a node, a tap outside any node,
a value that is not a traced tensor of the node) never stops the trace: it is kept as a *problem*
naming the tap and its site, logged in the report and warned about once.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from leapp_lab.model.trace import LogRecord, NodeTap

SECTION = "leapp_lab taps"


class NodeTapWarning(UserWarning):
    """A tap() inside a traced LEAPP session that leapp_lab could not attach to a node."""


@dataclass
class TapRecord:
    name: str
    site: str                         # file:line of the tap() call / the Tap module's construction
    fx_node: str | None = None        # the traced graph's value it marks (first pass only)
    values: dict[int, np.ndarray] = field(default_factory=dict)   # cached sample -> value


@dataclass
class _Pass:
    node: Any                          # the LEAPP node object
    sample: int | None                 # the cached sample this pass fills (None: beyond the cache)
    seen: dict[str, str] = field(default_factory=dict)   # tap name -> site, this pass


def _site_str(site: Any) -> str:
    from leapp_lab.model.tapsink import short_path
    file, line = getattr(site, "file", None), getattr(site, "line", None)
    if file is None:
        return str(site)
    return f"{short_path(file) if not str(file).startswith('<') else file}:{line}"


def _numpy_value(t: Any) -> np.ndarray | None:
    """A detached CPU copy of ``t`` as numpy, recorded without adding anything to a traced graph;
    None when numpy cannot hold its dtype (bfloat16, float8)."""
    import torch
    with torch._C.DisableTorchFunctionSubclass():
        plain = t.as_subclass(torch.Tensor) if type(t) is not torch.Tensor else t
        v = plain.detach().to("cpu", copy=True)
        try:
            return v.numpy()
        except TypeError:
            return None


class NodeTapRecorder:
    """The tap sink of one traced session; ``install()`` / ``uninstall()`` around the body."""

    def __init__(self) -> None:
        self.taps: dict[str, dict[str, TapRecord]] = {}    # node -> name -> record, firing order
        self.problems: list[tuple[str | None, str]] = []   # (node or None, message)
        self._said: set[str] = set()
        self._passes: list[_Pass] = []                     # re-entry passes open, innermost last
        self._first_seen: dict[str, dict[str, str]] = {}   # node -> names seen on its first pass
        self._refused: dict[str, set[str]] = {}            # node -> names refused on its first pass
        self._orig: dict[str, Any] = {}
        self._sink_cm = None
        self._site: Any = None                             # the site of the tap being recorded

    # -- installing ----------------------------------------------------------------------------
    def install(self) -> "NodeTapRecorder":
        from leapp.leapp_graph.leapp_node import LeappNode
        from leapp_lab.model.tapsink import tap_sink

        rec = self
        orig_in = LeappNode.reentry_validate_inputs
        orig_out = LeappNode.reentry_validate_outputs

        def reentry_validate_inputs(node, tensors):
            rec._open(node)
            return orig_in(node, tensors)

        def reentry_validate_outputs(node, tensors, static_tensors=None):
            try:
                return orig_out(node, tensors, static_tensors)
            finally:
                rec._close(node)

        self._orig = {"reentry_validate_inputs": orig_in, "reentry_validate_outputs": orig_out}
        LeappNode.reentry_validate_inputs = reentry_validate_inputs
        LeappNode.reentry_validate_outputs = reentry_validate_outputs
        self._sink_cm = tap_sink(self)
        self._sink_cm.__enter__()
        return self

    def uninstall(self) -> None:
        from leapp.leapp_graph.leapp_node import LeappNode
        if self._sink_cm is not None:
            self._sink_cm.__exit__(None, None, None)
            self._sink_cm = None
        for name, fn in self._orig.items():
            setattr(LeappNode, name, fn)
        self._orig = {}
        self._passes.clear()

    # -- re-entry passes -----------------------------------------------------------------------
    def _open(self, node: Any) -> None:
        if any(p.node is node for p in self._passes):
            return                          # input_tensors then state_tensors: the same pass
        idx = int(getattr(node, "_cache_write_idx", 0) or 0)
        cap = int(getattr(node, "_max_cached_io", 0) or 0)
        self._passes.append(_Pass(node, idx + 1 if idx < cap else None))

    def _close(self, node: Any) -> None:
        self._passes = [p for p in self._passes if p.node is not node]

    # -- the sink ------------------------------------------------------------------------------
    def __call__(self, x: Any, name: Any, site: Any) -> Any:
        self._site = site
        try:
            self._record(x, name, site)
        except Exception as exc:  # recording must never change what LEAPP traces
            self._problem(None, f"tap({name!r}) at {_site_str(site)}: leapp_lab could not record "
                                f"it ({type(exc).__name__}: {exc})")
        return x

    def _record(self, x: Any, name: Any, site: Any) -> None:
        import torch
        from leapp_lab.model.tapsink import name_problem

        where = _site_str(site)
        if not isinstance(name, str) or not name:
            self._problem(None, f"tap() at {where}: the name must be a non-empty string, got "
                                f"{name!r}; the tap is ignored")
            return
        bad = name_problem(name)
        if bad is not None:
            self._problem(None, f"tap(x, {name!r}) at {where}: the tap name {bad}; the tap is "
                                f"ignored")
            return
        node, sample, fx_node, seen = self._locate(x)
        if node is None:
            tracing = [n for n in self._nodes() if _first_pass(n)]
            for n in tracing:
                self._refused.setdefault(n.name, set()).add(name)
            if tracing:
                names = ", ".join(repr(n.name) for n in tracing)
                self._problem(tracing[-1].name, f"tap({name!r}) at {where}: the value is not a traced "
                              f"tensor of node {names} ({_what(x)}): it does not come from the node's "
                              f"inputs, so it is not part of the node's graph; tap a value computed "
                              f"from them. The tap is ignored")
            else:
                self._problem(None, f"tap({name!r}) at {where}: reached outside any LEAPP node (no "
                                    f"node is between annotate.input_tensors() and output_tensors()); "
                                    f"move it inside a node. The tap is ignored")
            return
        if not isinstance(x, torch.Tensor):
            self._problem(node.name, f"tap({name!r}) at {where} in node {node.name!r}: expected a "
                                     f"torch.Tensor, got {_what(x)}; the tap is ignored")
            return
        first = self._first_seen.get(node.name)
        if fx_node is None and first is not None and name not in first:
            # a re-entry: LEAPP traced the node's graph on its first pass only
            if name not in self._refused.get(node.name, set()):
                self._problem(node.name, f"tap({name!r}) at {where} in node {node.name!r}: reached on a "
                                         f"later pass but not on the node's first pass, the only one "
                                         f"LEAPP traces (a branch taken later); it marks no value of "
                                         f"the exported node and is ignored")
            return
        prev = seen.get(name)
        if prev is not None:
            again = "ran twice in one pass (a loop, or a module called twice); give each call its " \
                    "own name, e.g. f\"{name}_{{i}}\"" if prev == where else \
                    f"first at {prev}, again at {where}; tap names must be unique in a node"
            self._problem(node.name, f"duplicate tap name {name!r} in node {node.name!r}: "
                                     f"{again.replace('{name}', name)}; only the first is kept")
            return
        seen[name] = where
        recs = self.taps.setdefault(node.name, {})
        rec = recs.get(name)
        if rec is None:
            rec = recs[name] = TapRecord(name, where, fx_node)
        if sample is not None:
            v = _numpy_value(x)
            if v is None:
                self._problem(node.name, f"tap({name!r}) at {where} in node {node.name!r} has dtype "
                                         f"{str(x.dtype).replace('torch.', '')}, which numpy cannot "
                                         f"hold; cast it to float32 before tap() (x.float())")
            else:
                rec.values[sample] = v

    def _locate(self, x: Any) -> tuple[Any, int | None, str | None, dict]:
        """(node, cached sample, FX node, names seen this pass) of the pass ``x`` belongs to;
        node None when no node of this session can own it."""
        ctx = getattr(x, "context_obj", None) if _is_traced(x) else None
        if ctx is not None and _first_pass(ctx):
            proxy = getattr(x, "proxy", None)
            fx = getattr(getattr(proxy, "node", None), "name", None)
            return ctx, 0, fx, self._first_seen.setdefault(ctx.name, {})
        if self._passes:
            p = self._passes[-1]
            return p.node, p.sample, None, p.seen
        return None, None, None, {}

    def _nodes(self) -> list:
        from leapp_lab.trace import lifecycle
        return list(lifecycle.manager().get_nodes().values())

    def _problem(self, node: str | None, message: str, site: Any = None) -> None:
        if message in self._said:
            return
        self._said.add(message)
        self.problems.append((node, message))
        site = site if site is not None else self._site
        file, line = getattr(site, "file", None), getattr(site, "line", None)
        if file is not None and line is not None:   # shown at the user's tap() line
            warnings.warn_explicit(message, NodeTapWarning, str(file), int(line))
        else:
            warnings.warn(message, NodeTapWarning, stacklevel=2)

    # -- after the session ---------------------------------------------------------------------
    def node_taps(self, node: str) -> list[NodeTap]:
        return [NodeTap(name=r.name, site=r.site) for r in self.taps.get(node, {}).values()]

    def records(self, node: str) -> list[TapRecord]:
        return list(self.taps.get(node, {}).values())

    def arrays(self, samples: dict[str, int]) -> dict[str, np.ndarray]:
        """``<node>/<tap>/<sample>`` -> value, for the samples LEAPP kept of each node."""
        out = {}
        for node, recs in self.taps.items():
            n = samples.get(node, 0)
            for r in recs.values():
                for k, v in sorted(r.values.items()):
                    if k < n:
                        out[f"{node}/{r.name}/{k}"] = v
        return out

    def log_records(self) -> list[LogRecord]:
        return [LogRecord("WARNING", 30, m, SECTION) for _, m in self.problems]


def _is_traced(x: Any) -> bool:
    return type(x).__name__ == "TracedTensor" and type(x).__module__.startswith("leapp.")


def _first_pass(node: Any) -> bool:
    """LEAPP is recording the node's graph (between its first input_tensors and output_tensors)."""
    try:
        return bool(node.is_tracing)
    except Exception:
        return False


def _what(x: Any) -> str:
    if _is_traced(x):
        ctx = getattr(x, "context_obj", None)
        return f"a traced tensor of node {getattr(ctx, 'name', '?')!r}, whose trace is over"
    t = type(x)
    if t.__module__ == "torch" and t.__name__ == "Tensor":
        return "a plain torch.Tensor, e.g. a constant or a value computed outside the node"
    return f"a {t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else f"a {t.__name__}"
