"""Inside the nodes on an engine: every exported node of a trace prepared with its taps, compiled for
each engine and verified tap by tap (``leapp_lab.trace(..., engines=)``, ``%%leapp_trace --engine``,
``leapp-lab run SCRIPT --engine``; docs/trace.md "Inside the nodes").

Per node, in the trace's run folder (``nodes/<index>/build/``): ``prepare --from-trace`` once
(``node.onnx``, ``node.npz``, ``node.reference.npz``), ``compile`` per engine (``node.<engine>/``),
``verify`` per engine (its run under ``nodes/<index>/build/leapp_lab/runs/``). Each node gains one
``NodeEngine`` entry per engine; a step that cannot run makes that entry ``failed`` or
``unavailable`` with the reason, never the trace. Then the pipeline itself runs on each engine
(``steps.pipeline_engines``), and the run's ``report.json`` is written again with both.

``build_node_engine(run, node, engine)`` is the reusable step "build node N of this trace for
engine E" (the replay on engines and other checks call it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from leapp_lab.model.errors import InvalidOption, UserError
from leapp_lab.model.trace import GraphReport, NodeEngine

BUILD_DIR = "build"
STEM = "node"

#: progress(stage, done, total), as compile and verify report it
Progress = Callable[[str, int, int], None]


@dataclass
class NodeOptions:
    """What to do inside the nodes after a trace. ``taps``: None (no manual tap), ``["all"]`` or
    names; ``op_taps``: every intermediate value too; ``engines``: the engines to build (nothing
    happens without one); ``local``: verify's local error as well."""
    engines: list[str] = field(default_factory=list)
    taps: list[str] | None = None
    op_taps: bool = False
    local: bool = False

    @property
    def wanted(self) -> bool:
        return bool(self.engines)

    def to_dict(self) -> dict:
        return {"engines": list(self.engines), "taps": self.taps, "op_taps": self.op_taps,
                "local": self.local}


def node_options(taps: Any = None, op_taps: bool = False, engines: Iterable[str] | str | None = (),
                 local: bool = False, who: str = "leapp_lab.trace") -> NodeOptions:
    """The options checked: InvalidOption (exit 2) naming an unknown engine, or an option that means
    nothing without ``engines``."""
    from leapp_lab.engines import ENGINE_NAMES, NOT_IMPLEMENTED
    names = [engines] if isinstance(engines, str) else list(engines or ())
    for e in names:
        if e in NOT_IMPLEMENTED:
            raise InvalidOption(f"{who} --engine {e}: {NOT_IMPLEMENTED[e]}")
        if e not in ENGINE_NAMES:
            raise InvalidOption(f"{who} --engine {e}: unknown engine; choose one of {', '.join(ENGINE_NAMES)}")
    names = list(dict.fromkeys(names))
    tap_list = None if taps in (None, False, ()) else ([taps] if isinstance(taps, str) else [str(t) for t in taps])
    if tap_list is not None and any(not t for t in tap_list):
        raise InvalidOption(f"{who} --taps: an empty tap name; give all or a tap name")
    if not names:
        unusable = [f for f, on in (("--taps", tap_list is not None), ("--op-taps", op_taps),
                                    ("--local", local)) if on]
        if unusable:
            raise InvalidOption(f"{who} {' '.join(unusable)}: needs --engine ENGINE (the nodes are "
                                f"prepared, compiled for that engine and verified tap by tap)")
    return NodeOptions(names, tap_list, bool(op_taps), bool(local))


@dataclass
class NodeBuild:
    """One node of a trace prepared (``prepared``: PrepareReport) and compiled (``build``:
    BuildReport, None when ``error``); ``status``: ok | failed | unavailable."""
    node: str
    engine: str
    folder: Path
    prepared: Any = None
    build: Any = None
    status: str = "ok"
    error: str | None = None

    @property
    def onnx(self) -> Path:
        return self.folder / f"{STEM}.onnx"

    @property
    def npz(self) -> Path:
        return self.folder / f"{STEM}.npz"

    @property
    def reference(self) -> Path:
        return self.folder / f"{STEM}.reference.npz"


def _why(exc: BaseException) -> str:
    """The reason of a failed step: a user-facing error's own message, else its type too."""
    from leapp_lab.model.messages import error_text
    return str(exc) if isinstance(exc, UserError) else error_text(exc)


def node_folder(graph: GraphReport, node: Any) -> Path:
    return Path(graph.run_dir) / "nodes" / str(node.index) / BUILD_DIR


def prepare_node(graph: GraphReport, node: Any, taps: list[str] | None = None, op_taps: bool = False,
                 progress: Any = None) -> Any:
    """``prepare --from-trace`` of ``node`` into its build folder of the run (``taps``: names or
    ["all"]); returns the PrepareReport."""
    from .prepare_node import prepare_from_trace
    d = node_folder(graph, node)
    d.mkdir(parents=True, exist_ok=True)
    return prepare_from_trace(graph.run_dir, d / f"{STEM}.onnx", d / f"{STEM}.npz",
                              d / f"{STEM}.reference.npz", node=node.name, debug_taps=taps or (),
                              op_taps=op_taps, progress=progress)


def build_node_engine(run: Any, node: str, engine: str, *, taps: list[str] | None = ("all",),
                      op_taps: bool = False, prepared: Any = None, progress: Progress | None = None) -> NodeBuild:
    """Build node ``node`` of the trace ``run`` (a run folder, a TraceReport or GraphReport) for
    ``engine``: prepared from the trace with ``taps`` (unless ``prepared``, a PrepareReport of it,
    is given), compiled into ``nodes/<index>/build/node.<engine>``. Never raises for a node that
    cannot be built: the NodeBuild says failed / unavailable and why."""
    from leapp_lab.engines.base import EngineUnavailable

    from .compile import compile as compile_build
    graph = _graph_of(run)
    nr = graph.node(node)
    folder = node_folder(graph, nr)
    out = NodeBuild(node, engine, folder, prepared)
    if out.prepared is None:
        try:
            out.prepared = prepare_node(graph, nr, list(taps) if taps else None, op_taps)
        except (UserError, ValueError) as exc:
            out.status, out.error = "failed", f"prepare: {_why(exc)}"
            return out
    try:
        out.build = compile_build(out.onnx, engine=engine, npz=out.npz, out=folder / f"{STEM}.{engine}",
                                  progress=progress, naive_check=False)
    except EngineUnavailable as exc:
        out.status, out.error = "unavailable", _why(exc)
    except (UserError, ValueError, RuntimeError, OSError) as exc:
        _machine(exc)
        out.status, out.error = "failed", f"compile: {_why(exc)}"
    return out


def _machine(exc: BaseException) -> None:
    """Re-raise a write that found no room (a full disk, ``ulimit -f``): the machine's to fix, exit 2
    naming the path, never a node's failed step."""
    from leapp_lab.model.safepaths import no_room
    if no_room(exc) is not None:
        raise exc


def _graph_of(run: Any) -> GraphReport:
    if isinstance(run, GraphReport):
        return run
    from .prepare_node import trace_of, traced_node
    rep = trace_of(run)
    if isinstance(rep, (str, os.PathLike)):
        from leapp_lab.model import load
        rep = load(rep)
    return rep.graphs[0] if len(rep.graphs) == 1 else traced_node(rep).graph


def verify_node(b: NodeBuild, local: bool = False, progress: Progress | None = None) -> NodeEngine:
    """The NodeEngine entry of a build: verify it against the node's recorded reference."""
    from .verify import verify
    entry = NodeEngine(engine=b.engine, status=b.status, error=b.error)
    if b.build is None:
        return entry
    entry.build = str(Path(b.build.path).resolve())
    try:
        v = verify(b.reference, b.build.path, local=local, progress=progress)
    except (UserError, ValueError, RuntimeError, OSError) as exc:
        _machine(exc)
        entry.status, entry.error = "failed", f"verify: {_why(exc)}"
        return entry
    entry.verify_run = str(Path(v.path).resolve()) if v.path else None
    entry.first_divergent = v.first_divergent
    entry.worst_local = v.worst_local if local else None
    entry.status = "diverged" if v.first_divergent else "ok"
    return entry


def run_node_engines(graph: GraphReport, opts: NodeOptions, progress: Progress | None = None) -> dict:
    """Every exported node of ``graph`` (a compiled trace with a run folder) prepared, built for
    each engine of ``opts`` and verified; fills ``node.engines`` and ``graph.pipeline_engines``
    and writes the run's report.json again. Returns ``{(node, engine): NodeBuild}``."""
    if not opts.wanted or graph.status != "compiled" or not graph.run_dir:
        return {}
    nodes = [n for n in graph.nodes if n.backend]
    total = len(nodes) * len(opts.engines)
    say = progress or (lambda stage, d, t: None)
    builds: dict = {}
    # the node build folders this call makes: on a full disk (or Ctrl-C) they go again, since the
    # report.json that would name them is never written
    made = [node_folder(graph, nr) for nr in nodes if not node_folder(graph, nr).exists()]
    try:
        _all_nodes(graph, opts, nodes, builds, say, total)
    except BaseException:
        from leapp_lab.model.safepaths import remove_path
        for d in made:
            remove_path(d)
        raise
    return builds


def _all_nodes(graph: GraphReport, opts: NodeOptions, nodes: list, builds: dict, say, total: int) -> None:
    """The loop of :func:`run_node_engines`: each node prepared, built and verified, then the
    pipeline on each engine, and the run's report.json written again."""
    from .pipeline_engines import pipeline_engines
    done = 0
    for nr in nodes:
        nr.engines = []
        say(f"node {nr.name}: prepare from the trace", done, total)
        try:
            prepared = prepare_node(graph, nr, opts.taps, opts.op_taps)
            perr = None
        except (UserError, ValueError) as exc:
            _machine(exc)
            prepared, perr = None, f"prepare: {_why(exc)}"
        for engine in opts.engines:
            say(f"node {nr.name}: compile {engine}", done, total)
            if perr is not None:
                b = NodeBuild(nr.name, engine, node_folder(graph, nr), status="failed", error=perr)
            else:
                b = build_node_engine(graph, nr.name, engine, prepared=prepared)
            say(f"node {nr.name}: verify {engine}", done, total)
            nr.engines.append(verify_node(b, opts.local))
            builds[(nr.name, engine)] = b
            done += 1
    say("the pipeline on each engine", done, total)
    try:
        graph.pipeline_engines = pipeline_engines(graph, builds, opts.engines)
    except Exception as exc:  # noqa: BLE001 - the node entries stand; the pipeline says what failed
        _machine(exc)
        from leapp_lab.model.trace import LogRecord
        graph.pipeline_engines = []
        graph.log.append(LogRecord("ERROR", 40, f"leapp_lab: the pipeline on {', '.join(opts.engines)} "
                                                f"could not run: {_why(exc)}", "leapp_lab engines"))
    say("done", total, total)
    save_graph_report(graph)


def save_graph_report(graph: GraphReport) -> None:
    """report.json of the graph's run written again (atomically), with what was added to it."""
    from leapp_lab.model.jsonio import read_json, write_json
    p = Path(graph.run_dir) / "report.json"
    d = read_json(p)
    d["graphs"] = [graph.to_dict()]
    write_json(p, d)
