"""A node's FX graph as plain records, with the literal scalars that may be frozen live values.

A live ``.item()`` / ``float()`` leaves the traced graph: the FX code then carries the value of the
first trace as a Python float literal (``div = torch.div(obs, 2.1152193546295166)``). Module weights
land as ``get_attr`` nodes (``_tensor_constantN``, ``_buffer_*``, ``_static_*``): those are listed
as weights and never flagged.

A literal is *suspect* when it looks like a value read out of a tensor rather than typed by a
person: a float whose shortest repr needs more than 8 significant digits (typed constants such as
0.5, 1e-6, 2.0 are short; ``x.max().item()`` of a float32 tensor almost never is), and which is not
a well-known mathematical constant. Keyword arguments that configure an op (``alpha=1.0``) go
through the same test, so a short one is never flagged.
"""
from __future__ import annotations

import math
from typing import Any

from leapp_lab.model.trace import FxGraph, FxNode

_KNOWN = [math.pi, math.e, math.tau, math.sqrt(2), 1 / math.sqrt(2), math.log(2), math.log(10),
          math.pi / 2, math.pi / 4, 1 / math.pi, math.sqrt(math.pi), math.sqrt(2 / math.pi),
          math.sqrt(2 * math.pi), math.log(2 * math.pi)]
_MAX_TYPED_DIGITS = 8


def _significant_digits(x: float) -> int:
    mant = repr(abs(x)).lower().split("e")[0].replace(".", "").lstrip("0").rstrip("0")
    return len(mant)


def is_suspect_literal(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, float):
        return False
    if not math.isfinite(value) or value == 0.0:
        return False
    if _significant_digits(value) <= _MAX_TYPED_DIGITS:
        return False
    for k in _KNOWN:  # also the float32 rounding of a known constant
        for c in (k, -k):
            if value == c or abs(value - c) <= 1e-7 * abs(c):
                return False
    return True


def _target_str(target: Any) -> str:
    if isinstance(target, str):
        return target
    try:
        from torch.fx.node import _get_qualified_name
        return _get_qualified_name(target)
    except Exception:
        return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)


def _arg_str(a: Any) -> str:
    import torch.fx as fx
    if isinstance(a, fx.Node):
        return f"%{a.name}"
    if isinstance(a, (list, tuple)):
        inner = ", ".join(_arg_str(x) for x in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_arg_str(v)}" for k, v in a.items()) + "}"
    return repr(a)


def _scalars(a: Any, out: list) -> None:
    import torch.fx as fx
    if isinstance(a, fx.Node) or a is None or isinstance(a, (str, bytes)):
        return
    if isinstance(a, (list, tuple)):
        for x in a:
            _scalars(x, out)
    elif isinstance(a, dict):
        for x in a.values():
            _scalars(x, out)
    elif isinstance(a, (int, float)) and not isinstance(a, bool):
        out.append(a)


def fx_graph(gm) -> FxGraph:
    """Structure of ``gm`` (a torch.fx.GraphModule); empty when ``gm`` is None."""
    if gm is None:
        return FxGraph()
    try:
        code = gm.code
    except Exception:
        code = ""
    nodes: list[FxNode] = []
    weights: list[str] = []
    for n in gm.graph.nodes:
        args = [_arg_str(a) for a in n.args] + [f"{k}={_arg_str(v)}" for k, v in n.kwargs.items()]
        literals: list = []
        if n.op in ("call_function", "call_method", "call_module"):
            _scalars(n.args, literals)
            _scalars(n.kwargs, literals)
        # every get_attr reads a module-held tensor: weights, captured constants, buffers
        weight = n.op == "get_attr"
        if weight:
            weights.append(str(n.target))
        suspect = (not weight) and any(is_suspect_literal(v) for v in literals)
        nodes.append(FxNode(op=n.op, name=n.name, target=_target_str(n.target), args=args,
                            users=[u.name for u in n.users], literals=literals, suspect=suspect,
                            weight=weight))
    return FxGraph(code=code, nodes=nodes, weights=weights)
