"""Compile one LEAPP graph so that everything LEAPP compared can be kept, then turn it into a
GraphReport plus its arrays.

LEAPP's ``validate_all_models`` deletes each compiled model when it is done with it (notes §2-3),
so ``compile_captured`` compiles with ``validate=False``, wraps every compiled model with a
recorder (the exported outputs of each sample) and every node's ``validate_compiled_model`` (its
verdict and hint, kept even when ``strict=True`` makes LEAPP raise), then runs LEAPP's own
validator with the caller's rtol/atol/strict. What the caller of ``compile_graph`` would have
seen (the verdict dict, True, or LEAPP's exception) is kept in ``CompileOutcome``.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from leapp_lab.model.semantics import PortSemantics
from leapp_lab.model.trace import Edge, GraphReport, LogRecord, NodeReport, PortInfo
from leapp_lab.trace import lifecycle
from leapp_lab.numerics.checks import sample_check, to_numpy
from leapp_lab.trace.fxinfo import fx_graph


class Recorder:
    """Transparent stand-in for a compiled model: returns what it returns, remembers it."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.calls: list[tuple] = []

    def __call__(self, *args):
        r = self.fn(*args)
        self.calls.append(r if isinstance(r, tuple) else (r,))
        return r

    def __getattr__(self, name):  # anything else LEAPP may read from the model
        return getattr(self.fn, name)


@dataclass
class NodeSnap:
    """A node as it was right before compile: ONNX renames ports and drops inputs during compile."""
    node: Any
    inputs: list        # [(TensorDescription, traced name)]
    outputs: list
    names: dict         # id(td) -> traced name


def snapshot(mgr) -> dict[str, NodeSnap]:
    out = {}
    for name, node in mgr.get_nodes().items():
        ins = [(td, td.name) for td in list(getattr(node, "inputs", []) or [])]
        outs = [(td, td.name) for td in list(getattr(node, "outputs", []) or [])]
        out[name] = NodeSnap(node, ins, outs, {id(td): n for td, n in ins + outs})
    return out


@dataclass
class CompileOutcome:
    snap: dict[str, NodeSnap] = field(default_factory=dict)
    compiled: bool = False               # LEAPP's compile_graph(validate=False) returned
    compile_error: BaseException | None = None
    validated: bool = False              # LEAPP's validator ran
    recorders: dict[str, Recorder] = field(default_factory=dict)
    node_results: dict[str, Any] = field(default_factory=dict)   # (passed, hint) | Exception
    result: Any = None                   # what compile_graph returns to its caller
    raised: BaseException | None = None  # what compile_graph raises to its caller
    validation_log: tuple[int, int] = (0, 0)   # record index range of the validation phase


def compile_captured(original: Callable, capture: lifecycle.LogCapture, *, visualize=False,
                     verbose=None, validate=True, rtol=1e-3, atol=1e-5, strict=False,
                     graph_configs=None) -> CompileOutcome:
    mgr = lifecycle.manager()
    out = CompileOutcome(snap=snapshot(mgr))
    quiet = not verbose
    try:
        with lifecycle.exporter_noise_suppressed(quiet):
            original(visualize=visualize, verbose=verbose, validate=False, rtol=rtol, atol=atol,
                     strict=False, graph_configs=graph_configs)
    except Exception as exc:
        out.compile_error = out.raised = exc
        return out
    out.compiled = True
    if not validate or mgr.is_dry_run():
        out.result = True
        return out

    results: dict[str, Any] = {}
    nodes = mgr.get_nodes()
    for name, node in nodes.items():
        backend = node.export_backend
        if getattr(backend, "compiled_model", None) is not None:
            out.recorders[name] = backend.compiled_model = Recorder(backend.compiled_model)

        def wrapped(*a, _f=node.validate_compiled_model, _n=name, **kw):
            try:
                r = _f(*a, **kw)
            except Exception as exc:
                results[_n] = exc
                raise
            results[_n] = r
            return r
        node.validate_compiled_model = wrapped
    start = len(capture.records)
    try:
        with lifecycle.exporter_noise_suppressed(quiet):
            out.result = mgr.validate_all_models(rtol=rtol, atol=atol, strict=strict)
    except Exception as exc:   # strict=True: LEAPP's own exception, after every artifact exists
        out.raised = exc
        out.result = {n: (r[0] if isinstance(r, tuple) else r) for n, r in results.items()}
    finally:
        for node in nodes.values():
            node.__dict__.pop("validate_compiled_model", None)
        out.validation_log = (start, len(capture.records))
    out.validated = True
    out.node_results = results
    return out


def compiled_status(outcome: CompileOutcome, records: list[LogRecord],
                    dry_run: bool) -> tuple[str, str | None]:
    """(status, message) of a session that reached compile_graph: "refused" when LEAPP's compile
    raised, or when it logged a FATAL outside the validation phase (strict validation's own verdict
    is not a refusal) that the script swallowed; else "compiled" / "dry-run"."""
    if outcome.compile_error is not None:
        e = outcome.compile_error
        return "refused", f"{type(e).__name__}: {e}"
    lo, hi = outcome.validation_log
    fatal = [r.message for i, r in enumerate(records)
             if r.levelno == lifecycle.FATAL and not (lo <= i < hi)]
    if fatal:
        return "refused", fatal[-1]
    return ("dry-run" if dry_run else "compiled"), None


# -- turning the live LEAPP objects into a report ------------------------------------------------

def _sample_value(td, k: int):
    if k == 0:
        return td.value
    cv = getattr(td, "cached_values", None) or []
    return cv[k - 1] if k - 1 < len(cv) else None


def _static_attr(name: str) -> str:
    # LEAPP stores each declared static output as a buffer of this name on the traced module and
    # returns it through a get_attr node (TracedTensorNode._create_io_helper, to="static")
    return f"_static_{name}".replace(".", "_")


def _static_attrs(gm) -> set[str]:
    graph = getattr(gm, "graph", None)
    if graph is None:
        return set()
    return {str(n.target) for n in graph.nodes
            if n.op == "get_attr" and str(n.target).startswith("_static_")}


def _n_samples(node) -> int:
    return 1 + int(getattr(node, "_cache_write_idx", 0) or 0)


def _fail_marks(records: list[LogRecord], node: str) -> tuple[set, set]:
    """(port, sample) pairs and whole samples LEAPP's validator logged as failing for ``node``."""
    ports, whole = set(), set()
    pre = f"{node}/"
    pat = re.compile(r"^(?P<port>.+?) sample (?P<k>\d+): (Mismatch detected|NaN/Inf detected!)")
    cnt = re.compile(rf"^{re.escape(node)} sample (?P<k>\d+): Output count mismatch")
    for r in records:
        if r.level != "ERROR":
            continue
        if r.message.startswith(pre):
            m = pat.match(r.message[len(pre):])
            if m:
                ports.add((m.group("port"), int(m.group("k"))))
                continue
        m = cnt.match(r.message)
        if m:
            whole.add(int(m.group("k")))
    return ports, whole


def _relpath(p: str | None, base: str | None) -> str | None:
    if not p:
        return None
    if base:
        try:
            return os.path.relpath(os.path.abspath(p), os.path.abspath(base))
        except ValueError:
            pass
    return p


def _edges_from_pipeline(pipe: dict) -> tuple[list[Edge], list[str], list[str]]:
    edges = []
    for kind, key in (("data", "data_flow"), ("feedback", "feedback_flow")):
        for src, dsts in (pipe.get(key) or {}).items():
            for dst in dsts or []:
                edges.append(Edge(src=str(src), dst=str(dst), kind=kind))
    gin = [f"{n}/{p}" for n, ps in (pipe.get("inputs") or {}).items() for p in ps]
    gout = [f"{n}/{p}" for n, ps in (pipe.get("outputs") or {}).items() for p in ps]
    return edges, gin, gout


def _edges_from_nodes(snap: dict[str, NodeSnap]) -> list[Edge]:
    """Before (or without) compile: the producer recorded on each input, as LEAPP would wire it."""
    edges = []
    for name, s in snap.items():
        node = s.node
        for td, _ in s.inputs:
            src = getattr(td, "source_node", None)
            port = getattr(td, "port", None)
            if src is None or port is None:
                continue
            fb = getattr(src, "node_index", -1) >= getattr(node, "node_index", -1)
            edges.append(Edge(src=f"{src.name}/{port}", dst=f"{name}/{td.name}",
                              kind="feedback" if fb else "data"))
        for i, o in (getattr(node, "state_feedback_pairs", lambda: ())() or ()):
            edges.append(Edge(src=f"{name}/{o.name}", dst=f"{name}/{i.name}", kind="feedback"))
    seen, uniq = set(), []
    for e in edges:
        if (e.src, e.dst) not in seen:
            seen.add((e.src, e.dst))
            uniq.append(e)
    return uniq


def build_graph(name: str, graph_dir: str | None, outcome: CompileOutcome | None,
                records: list[LogRecord], *, status: str, error: str | None = None,
                rtol: float = 1e-3, atol: float = 1e-5, options: dict | None = None,
                replay_fx: bool = True, taps: Any = None) -> tuple[GraphReport, dict[str, np.ndarray]]:
    """GraphReport + arrays from the live nodes of the manager (or the pre-compile snapshot).

    ``taps``: the session's ``node_taps.NodeTapRecorder``: each node's taps, and its problems
    logged (section "leapp_lab taps")."""
    import torch

    mgr = lifecycle.manager()
    g = GraphReport(name=name, graph_dir=os.path.abspath(graph_dir) if graph_dir else None,
                    status=status, error=error, options=dict(options or {}), log=list(records))
    arrays: dict[str, np.ndarray] = {}
    snap = outcome.snap if outcome and outcome.snap else snapshot(mgr)

    compiled = bool(outcome and outcome.compiled)
    pipe = getattr(mgr, "detected_pipeline", None) if compiled else None
    if pipe:
        g.edges, g.graph_inputs, g.graph_outputs = _edges_from_pipeline(pipe)
    else:
        g.edges = _edges_from_nodes(snap)
    src_of = {e.dst: e for e in g.edges}

    val_records = records[outcome.validation_log[0]:outcome.validation_log[1]] if outcome else []
    ordered = sorted(snap.items(), key=lambda kv: getattr(kv[1].node, "node_index", 0))
    for idx, (nname, s) in enumerate(ordered):
        node = s.node
        ni = getattr(node, "node_index", idx)
        nr = NodeReport(name=nname, index=int(ni) if isinstance(ni, int) and ni >= 0 else idx,
                        backend=None if getattr(node, "backend", None) in (None, "None")
                        else str(node.backend))
        nr.artifact = _relpath(getattr(node, "model_path", None), graph_dir)
        nr.sha256 = getattr(node, "sha256sum", None)
        nr.dropped_inputs = sorted(str(x) for x in (getattr(node, "trimmed_inputs", None) or ()))
        nr.samples = _n_samples(node)
        if taps is not None:
            nr.taps = taps.node_taps(nname)
        state = set(getattr(node, "state_names", None) or [])
        ins_now = list(getattr(node, "inputs", []) or [])
        outs_now = list(getattr(node, "outputs", []) or [])
        static = _static_attrs(getattr(node, "m", None))
        for direction, tds in (("in", ins_now), ("out", outs_now)):
            for td in tds:
                traced = s.names.get(id(td), td.name)
                p = PortInfo(name=td.name, direction=direction, dtype=str(td.dtype),
                             shape=[int(x) for x in td.shape] if td.shape is not None else None,
                             role="state" if traced in state else "data",
                             traced_name=traced if traced != td.name else None,
                             semantics=_semantics(td))
                if direction == "out" and _static_attr(traced) in static:
                    p.static = True
                if direction == "in":
                    e = src_of.get(f"{nname}/{td.name}")
                    if e is not None:
                        p.source, p.feedback = e.src, e.kind == "feedback"
                nr.ports.append(p)
        gm = getattr(node, "m", None)
        try:
            nr.fx = fx_graph(gm)
        except Exception as exc:  # never lose the report over a graph we cannot describe
            nr.fx = None
            g.log.append(LogRecord("ERROR", 40, f"leapp_lab: cannot describe the FX graph of "
                                                f"{nname}: {exc}", "leapp_lab"))

        # verdict
        res = outcome.node_results.get(nname) if outcome else None
        if outcome is None or not outcome.validated:
            nr.verdict = "skipped"
        elif isinstance(res, BaseException):
            nr.verdict, nr.error = "error", f"{type(res).__name__}: {res}"
        elif nname not in outcome.recorders:
            nr.verdict = "skipped"        # no compiled model: LEAPP skips and says True
        elif res is None:
            nr.verdict = "skipped"
        else:
            nr.verdict = "pass" if res[0] else "fail"
        if status in ("refused", "error") and error and f"model {nname}:" in error:
            nr.verdict, nr.error = "error", error
        g.nodes.append(nr)

        if status not in ("compiled", "dry-run"):
            continue
        # arrays and per-sample checks
        rec = outcome.recorders.get(nname) if outcome else None
        fail_ports, fail_whole = _fail_marks(val_records, nname)
        fx_inputs = {traced: td for td, traced in s.inputs}
        placeholders = [n.target for n in gm.graph.nodes if n.op == "placeholder"] if gm is not None else []
        for k in range(nr.samples):
            for td in ins_now:
                v = to_numpy(_sample_value(td, k))
                if v is not None:
                    arrays[f"{nname}/{td.name}/{k}/input"] = v
            fx_out = None
            if replay_fx and gm is not None and all(p in fx_inputs for p in placeholders):
                try:
                    with torch.no_grad():
                        r = gm(*[_sample_value(fx_inputs[p], k) for p in placeholders])
                    fx_out = r if isinstance(r, (tuple, list)) else (r,)
                except Exception as exc:
                    g.log.append(LogRecord("ERROR", 40, f"leapp_lab: FX replay of {nname} sample "
                                                        f"{k} raised {type(exc).__name__}: {exc}",
                                           "leapp_lab"))
            exported = rec.calls[k] if rec is not None and k < len(rec.calls) else None
            for i, td in enumerate(outs_now):
                port = td.name
                recorded = to_numpy(_sample_value(td, k))
                exp = to_numpy(exported[i]) if exported is not None and i < len(exported) else None
                fxv = to_numpy(fx_out[i]) if fx_out is not None and i < len(fx_out) else None
                base = f"{nname}/{port}/{k}"
                for key, v in (("recorded", recorded), ("exported", exp), ("fx", fxv)):
                    if v is not None:
                        arrays[f"{base}/{key}"] = v
                if nr.verdict == "pass":
                    passed = True
                elif exp is not None and nr.verdict in ("fail", "error"):
                    passed = (port, k) not in fail_ports and k not in fail_whole
                elif nr.verdict == "fail":
                    passed = False   # the exported model produced nothing for this sample
                else:
                    passed = None    # not validated (skipped, or after the exception)
                g.checks.append(sample_check(nname, port, k, recorded=recorded, exported=exp,
                                             fx=fxv, passed=passed, rtol=rtol, atol=atol,
                                             semantics=_semantics(td)))

    if taps is not None:
        g.log.extend(taps.log_records())
    if outcome is not None and outcome.validated and isinstance(outcome.result, dict):
        g.leapp_result = {n: (v if isinstance(v, bool) else f"{type(v).__name__}: {v}")
                          for n, v in outcome.result.items()}
    g.verdict = graph_verdict(g)
    return g, arrays


def _semantics(td) -> PortSemantics | None:
    """The port's declared TensorSemantics (kind, element_names, TemporalAxis period, extras)."""
    try:
        return PortSemantics.from_leapp(td.get_semantics())
    except Exception:      # an older/other LEAPP without semantics: the port simply has none
        return None


def graph_verdict(g: GraphReport) -> str:
    if g.status in ("refused", "error"):
        return "error"
    vs = [n.verdict for n in g.nodes]
    if "error" in vs:
        return "error"
    if "fail" in vs:
        return "fail"
    if "pass" in vs:
        return "pass"
    return "skipped"
