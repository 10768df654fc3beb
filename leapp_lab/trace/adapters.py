"""Adapter checks: each ``leapp.FunctionPatch`` replacement against the function it replaces.

``AdapterCapture(patching)`` wraps every replacement before ``leapp.start`` installs it, so the
arguments of each call made while tracing are kept (as plain tensors, at most ``MAX_CALLS`` per
adapter). After the session ``check(graph)`` runs the adapter and the original on every captured
call and on perturbed copies of it, and adds an ``adapter-mismatch`` hazard for each adapter that
disagrees (docs/hazards.md).

Perturbed copies (floating tensors and arrays only; the rest unchanged), seeded:
``noise``: ``x + 0.1·std(x)·randn``; ``scaled``: ``3·x``; ``negated``: ``−x``.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from leapp_lab.model.adapters import AdapterCase, AdapterCheck, AdapterResult
from leapp_lab.model.trace import GraphReport, Hazard

from leapp_lab.model.messages import error_text
from leapp_lab.model.numfmt import fmt

MAX_CALLS = 8
PERTURBATIONS = ("noise", "scaled", "negated")


def _qualname(fn: Any) -> str:
    mod = getattr(fn, "__module__", None) or "?"
    return f"{mod}.{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"


def _plain(x: Any) -> Any:
    """A detached copy of an argument, with LEAPP's traced wrappers taken off (no op is recorded)."""
    import torch
    try:
        from leapp.leapp_graph.datatypes.traced_data import TracedData
    except ImportError:  # pragma: no cover
        TracedData = ()
    if isinstance(x, TracedData):
        x = x.tensor if isinstance(x, torch.Tensor) else x.data
    if isinstance(x, torch.Tensor):
        t = x if type(x) is torch.Tensor else torch.Tensor.as_subclass(x, torch.Tensor)
        return torch.Tensor.clone(torch.Tensor.detach(t))
    if isinstance(x, np.ndarray):
        return np.array(x.view(np.ndarray), copy=True)
    if isinstance(x, (list, tuple)):
        out = [_plain(v) for v in x]
        return type(x)(out) if isinstance(x, list) or type(x) is tuple else tuple(out)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    try:
        return copy.deepcopy(x)
    except Exception:
        return x


def _tracing_node(args: tuple, kwargs: dict) -> str | None:
    try:
        from leapp.leapp_graph.datatypes.traced_data import TracedData
    except ImportError:  # pragma: no cover
        return None
    stack = [args, kwargs]
    while stack:
        x = stack.pop()
        if isinstance(x, TracedData):
            if x.is_tracing:
                return x.context
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
    return None


@dataclass
class _Entry:
    patch: Any
    original: Callable
    replacement: Callable
    calls: list = field(default_factory=list)      # (args, kwargs)
    nodes: list = field(default_factory=list)      # node being traced at each call
    total: int = 0
    capture_errors: list = field(default_factory=list)


class AdapterCapture:
    """Wraps the replacements of a ``patching=`` list; ``patching`` is what to hand to leapp.start."""

    def __init__(self, patching: Any) -> None:
        self.entries: list[_Entry] = []
        self.patching = patching
        if not patching:
            return
        try:
            from leapp import FunctionPatch
        except ImportError:  # pragma: no cover
            return
        try:
            items = list(patching)
        except TypeError:
            return
        wrapped = []
        for p in items:
            if not isinstance(p, FunctionPatch) or not callable(getattr(p, "replacement", None)):
                wrapped.append(p)       # LEAPP itself refuses it, with its own message
                continue
            original = getattr(p.module, p.function_name, None)
            entry = _Entry(p, original, p.replacement)
            self.entries.append(entry)
            wrapped.append(FunctionPatch(p.module, p.function_name, self._wrap(entry)))
        self.patching = wrapped

    @staticmethod
    def _wrap(entry: _Entry) -> Callable:
        repl = entry.replacement

        @functools.wraps(repl)
        def capturing(*args, **kwargs):
            entry.total += 1
            if len(entry.calls) < MAX_CALLS:
                try:
                    entry.nodes.append(_tracing_node(args, kwargs))
                    entry.calls.append((_plain(args), _plain(kwargs)))
                except Exception as exc:   # never break the user's trace over a copy
                    entry.capture_errors.append(error_text(exc))
            return repl(*args, **kwargs)
        return capturing

    def check(self, graph: GraphReport, rtol: float, atol: float, seed: int = 0) -> AdapterResult:
        """Run every adapter and its original on the captured and perturbed arguments; adds the
        ``adapter-mismatch`` hazards to ``graph.hazards``."""
        res = AdapterResult(status="ok", rtol=rtol, atol=atol)
        if not self.entries:
            res.status = "skipped"
            res.reason = "the session had no leapp.FunctionPatch in patching="
            return res
        for e in self.entries:
            res.adapters.append(_check_entry(e, rtol, atol, seed))
        if any(a.passed is False for a in res.adapters):
            res.status = "diverged"
        elif all(a.passed is None for a in res.adapters):
            res.status = "unavailable"
            res.reason = "; ".join(a.error or f"{a.function}: nothing to compare" for a in res.adapters)
        failing = [a for a in res.adapters if a.passed is False]
        if failing:
            from .hazards import sort_hazards
            graph.hazards.extend(hazard_of(a) for a in failing)
            sort_hazards(graph, graph.hazards)
        return res


def _perturbed(args: Any, how: str, gen) -> tuple[Any, bool]:
    """A perturbed copy of an argument structure; (copy, whether anything floating was changed)."""
    import torch
    changed = [False]

    def go(x):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            changed[0] = True
            if how == "noise":
                sd = float(x.double().std()) if x.numel() > 1 else 0.0
                sd = sd if np.isfinite(sd) and sd > 0 else 1.0
                return x + 0.1 * sd * torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x.dtype)
            return x * 3 if how == "scaled" else -x
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            changed[0] = True
            if how == "noise":
                sd = float(x.std()) if x.size > 1 else 0.0
                sd = sd if np.isfinite(sd) and sd > 0 else 1.0
                z = torch.randn(x.shape, generator=gen, dtype=torch.float64).numpy()
                return (x + 0.1 * sd * z).astype(x.dtype)
            return x * 3 if how == "scaled" else -x
        if isinstance(x, (list, tuple)):
            out = [go(v) for v in x]
            return type(x)(out) if isinstance(x, list) or type(x) is tuple else tuple(out)
        if isinstance(x, dict):
            return {k: go(v) for k, v in x.items()}
        return x
    out = go(args)
    return out, changed[0]


def _leaves(x: Any) -> list:
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _leaves(v)]
    if isinstance(x, dict):
        return [y for k in sorted(x, key=str) for y in _leaves(x[k])]
    return [x]


def _as_array(x: Any) -> tuple[np.ndarray | None, str]:
    from leapp_lab.numerics.checks import to_numpy
    import torch
    if isinstance(x, torch.Tensor):
        a = to_numpy(x)
        return a, str(x.dtype).replace("torch.", "")
    if isinstance(x, np.ndarray):
        return x, str(x.dtype)
    if isinstance(x, (bool, int, float, np.number, np.bool_)):
        return np.asarray(x), type(x).__name__
    return None, type(x).__name__


def compare_results(a: Any, o: Any, rtol: float, atol: float) -> AdapterCase:
    """The adapter's result ``a`` against the original's ``o`` (structure, shapes, values)."""
    case = AdapterCase(case="")
    la, lo = _leaves(a), _leaves(o)
    arrs_a = [_as_array(x) for x in la]
    arrs_o = [_as_array(x) for x in lo]
    case.adapter_shapes = [list(np.shape(x)) if x is not None else [] for x, _ in arrs_a]
    case.original_shapes = [list(np.shape(x)) if x is not None else [] for x, _ in arrs_o]
    case.adapter_dtypes = [d for _, d in arrs_a]
    case.original_dtypes = [d for _, d in arrs_o]
    if len(la) != len(lo):
        case.passed = False
        case.error = f"the adapter returns {len(la)} value(s), the original {len(lo)}"
        return case
    worst, ok = 0.0, True
    for (xa, _), (xo, _) in zip(arrs_a, arrs_o):
        if xa is None or xo is None:
            case.passed, case.error = None, "a returned value is neither a tensor, an array nor a number"
            return case
        if np.shape(xa) != np.shape(xo):
            ok = False
            continue
        fa, fo = np.asarray(xa, np.float64), np.asarray(xo, np.float64)
        fin = np.isfinite(fa) & np.isfinite(fo)
        if fin.any():
            worst = max(worst, float(np.max(np.abs(fa[fin] - fo[fin]))))
        if not np.allclose(fa, fo, rtol=rtol, atol=atol, equal_nan=True):
            ok = False
    case.max_abs = worst
    case.passed = ok
    if not ok and case.adapter_shapes != case.original_shapes:
        case.error = f"shapes differ: adapter {case.adapter_shapes}, original {case.original_shapes}"
    return case


def _run(fn: Callable, args: tuple, kwargs: dict):
    import torch
    a, k = _plain(args), _plain(kwargs)     # each side gets its own copy (in-place updates)
    with torch.no_grad():
        return fn(*a, **k)


def _check_entry(e: _Entry, rtol: float, atol: float, seed: int) -> AdapterCheck:
    import torch
    p = e.patch
    name = f"{getattr(p.module, '__name__', '?')}.{p.function_name}"
    nodes = [n for n in e.nodes if n]
    chk = AdapterCheck(function=name, replacement=_qualname(e.replacement), node=nodes[0] if nodes else None,
                       calls=e.total)
    if e.original is None:
        chk.error = f"{name} does not exist any more: nothing to compare the adapter with"
        return chk
    if not e.calls:
        chk.error = (f"the adapter was never called while tracing (LEAPP calls it only when an "
                     f"argument is being traced){'; ' + e.capture_errors[0] if e.capture_errors else ''}")
        return chk
    gen = torch.Generator().manual_seed(int(seed))
    cases = []
    for i, (args, kwargs) in enumerate(e.calls):
        cases.append((f"captured {i}", args, kwargs))
        for how in PERTURBATIONS:
            (pa, pk), changed = _perturbed((args, kwargs), how, gen)
            if changed:
                cases.append((f"perturbed {i} ({how})", pa, pk))
    for label, args, kwargs in cases:
        try:
            out_a = _run(e.replacement, args, kwargs)
        except Exception as exc:
            chk.cases.append(AdapterCase(case=label, passed=False, error=f"the adapter raised {error_text(exc, 200)}"))
            continue
        try:
            out_o = _run(e.original, args, kwargs)
        except Exception as exc:
            chk.cases.append(AdapterCase(case=label, passed=None,
                                         error=f"the original raised {error_text(exc, 200)}"))
            continue
        c = compare_results(out_a, out_o, rtol, atol)
        c.case = label
        chk.cases.append(c)
    judged = [c for c in chk.cases if c.passed is not None]
    chk.passed = all(c.passed for c in judged) if judged else None
    with_max = [c for c in chk.cases if c.max_abs is not None]
    if with_max:
        worst = max(with_max, key=lambda c: c.max_abs)
        chk.max_abs, chk.worst_case = worst.max_abs, worst.case
    if chk.passed is None and not chk.error:
        chk.error = next((c.error for c in chk.cases if c.error), None)
    return chk


def hazard_of(a: AdapterCheck) -> Hazard:
    bad = [c for c in a.cases if c.passed is False]
    where = f"node {a.node!r}: " if a.node else ""
    what = (f"max |adapter - original| = {fmt(a.max_abs)} (worst: {a.worst_case})"
            if a.max_abs is not None else (bad[0].error if bad and bad[0].error else "they differ"))
    return Hazard(
        "adapter-mismatch", a.node, None, [],
        f"{where}the FunctionPatch adapter {a.replacement} disagrees with the function it replaces, "
        f"{a.function}, on {len(bad)} of {len(a.cases)} cases ({', '.join(c.case for c in bad[:4])}"
        f"{', …' if len(bad) > 4 else ''}); {what}. While a node is traced LEAPP runs the adapter, so "
        f"the exported graph computes what the adapter computes, and validation on the first sample "
        f"compares it with the adapter's own output; on re-entries LEAPP calls the original function "
        f"again. Make the adapter compute exactly what {a.function} computes (the adapters table "
        f"lists every case).")


def after_trace(capture: "AdapterCapture | None", graph: GraphReport, rtol: float, atol: float
                ) -> AdapterResult | None:
    """The adapters section of a just-traced graph (None: the session had no adapter). Never
    raises: a check that fails says so in its status."""
    if capture is None or not capture.entries:
        return None
    try:
        return capture.check(graph, rtol, atol)
    except Exception as exc:
        from leapp_lab.model.messages import failed_reason
        return AdapterResult(status="failed", rtol=rtol, atol=atol,
                             reason=failed_reason("the adapter check", exc))
