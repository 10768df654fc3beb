"""``leapp_lab.replay(report, ..., engine=...)``: the sequential replay, and the same pipeline on the
engines you ship (docs/deep-checks.md, "Replay on an engine").

A composition of two leaves: ``deep`` replays (the fp32 export, then each engine's pipeline in
lockstep with it) and ``engines`` builds each ONNX node of the pipeline for the engine. A node's
build is made once per trace run and engine, from LEAPP's own ONNX artifact, calibrated (int8) on
the node's cached samples that LEAPP really recorded, and kept in the run folder
(``replay_engines/<engine>/<node>/``, with ``source.json`` naming the artifact's sha256): a replay
run again, or with more steps, reuses it. The engine's session is built once and runs every step
(no per-step rebuild: ``bench/bench_replay_engine.py``). Nodes that are not ONNX (TorchScript, pt2)
run as exported, and the entry says so.
"""
from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import numpy as np

from leapp_lab.engines.base import EngineUnavailable
from leapp_lab.deep.common import Progress, failed_reason, report_progress, resolve
from leapp_lab.deep.engine_replay import DEFAULT_MAX_NRMSE, engine_replay
from leapp_lab.deep.replay import run_replay
from leapp_lab.model.replay import EngineNode, EngineReplay, ReplayResult
from leapp_lab.model.safepaths import no_room
from leapp_lab.model.sections import save_section
from leapp_lab.model.trace import GraphReport

from .prepare_node import TraceGraphRefused

BUILDS_DIR = "replay_engines"


def _engines(engine: Any) -> list[str]:
    if engine is None:
        return []
    names = [engine] if isinstance(engine, str) else list(engine)
    from leapp_lab.engines import ENGINE_NAMES, NOT_IMPLEMENTED
    for n in names:
        if n in NOT_IMPLEMENTED:
            raise ValueError(NOT_IMPLEMENTED[n])
        if n not in ENGINE_NAMES:
            raise ValueError(f"replay: unknown engine {n!r}; choose one of: {', '.join(ENGINE_NAMES)}")
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return seen


def _sha256(p: Path) -> str:
    import hashlib

    from leapp_lab.model.safepaths import open_input
    h = hashlib.sha256()
    with open_input(p, "LEAPP's model of a node (an ONNX file)") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def calibration(graph: GraphReport, arrays: dict, node: Any, names: list[str]) -> list[dict[str, np.ndarray]]:
    """The node's cached samples as engine feeds, the values LEAPP did not really record left out."""
    from leapp_lab.model.episodes import unrecorded_pairs
    skip = unrecorded_pairs(graph, arrays)
    feeds = []
    for k in range(node.samples):
        f = {n: arrays.get(f"{node.name}/{n}/{k}/input") for n in names}
        if any(v is None for v in f.values()) or any((f"{node.name}/{n}", k) in skip for n in names):
            continue
        feeds.append({n: np.ascontiguousarray(v) for n, v in f.items()})
    return feeds


def build_node(graph: GraphReport, arrays: dict, node: Any, engine: str, say: Callable[[str], None],
               progress: Progress | None = None) -> tuple[Path, str]:
    """(engine artifact, "built here" | "reused" | "node build") of one ONNX node for ``engine``:
    the node's build of "Inside a LEAPP node" when there is one (steps/replay_reuse.py)."""
    import onnx
    from leapp_lab.engines import get_engine

    from .replay_reuse import UNTAPPED, node_build
    got = node_build(graph, node, engine)
    if got is not None:
        return got[0] / UNTAPPED, "node build"
    if not graph.graph_dir:
        raise ValueError(f"graph {graph.name!r}: its LEAPP output folder is not where the run folder "
                         f"sits (<graph folder>/leapp_lab/runs/<id>); nothing to build node {node.name!r} from")
    src = Path(graph.graph_dir) / node.artifact
    sha = _sha256(src)
    root = _builds(graph, engine, node)
    stamp = root / "source.json"
    art = root / "engine.untapped.onnx"
    if stamp.is_file() and art.is_file():
        try:
            if json.loads(stamp.read_text()).get("sha256") == sha:
                return art, "reused"
        except (OSError, ValueError, AttributeError, RecursionError):   # not a stamp: build it again
            pass
    eng = get_engine(engine)
    eng.check_available()
    from leapp_lab.onnxio.wire import check_external_data
    check_external_data(src)
    model = onnx.load(str(src))
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    feeds = calibration(graph, arrays, node, names)
    if not feeds:
        raise ValueError(f"node {node.name!r}: no recorded sample holds every input {names}: nothing to "
                         f"calibrate or check the {engine} engine with")
    if eng.precision == "int8":
        from leapp_lab.engines.feeds import check_calibration
        for note in check_calibration(feeds, src, engine):
            say(note)
    from leapp_lab.model.safepaths import make_folders, no_room_error, remove_made
    from leapp_lab.signals import commit_guard
    tmp = root.with_name(f".{root.name}.tmp-{uuid.uuid4().hex[:8]}")
    made = make_folders(tmp)
    try:
        say(f"{engine}: building node {node.name!r} from {src.name} ({len(feeds)} recorded samples"
            + (" as int8 calibration" if eng.precision == "int8" else "") + ")")
        eng.build(model, [], feeds, tmp, say, progress)
        (tmp / "source.json").write_text(json.dumps({"artifact": str(src), "sha256": sha, "engine": engine,
                                                     "calibration_samples": len(feeds)}))
        with commit_guard():
            if root.exists():
                shutil.rmtree(root)
            os.replace(tmp, root)
    except BaseException as exc:
        # a full disk is the machine's, never the engine's failure: named (exit 2), and the folders
        # this build made go with it (no replay_engines/<engine>/ that no section names)
        full = no_room_error(exc, root, probe=tmp.parent, nbytes=src.stat().st_size)
        shutil.rmtree(tmp, ignore_errors=True)
        remove_made(made)
        if full is not None:
            raise full from exc
        raise
    return art, "built here"


def _tap_probe(graph, node, engine, max_nrmse, say, progress):
    """(untapped runner, TapProbe) of a node with taps, or None when it has none or taps over time
    cannot be had here (said in the note)."""
    if not getattr(node, "taps", None):
        return None
    try:
        from .replay_taps import tap_probe
    except ImportError as exc:          # prepare --from-trace is not in this installation
        say(f"taps of node {node.name!r} not followed over time: {exc}")
        return None
    from leapp_lab.model.episodes import captured_steps
    root = _builds(graph, engine, node)
    tier = "a" if captured_steps(graph) else "b"
    return tap_probe(graph, node, engine, root, [p.name for p in node.inputs()], tier, max_nrmse, say, progress)


def _named(progress: Progress | None, what: str) -> Progress | None:
    """A build's progress (compile's bare 'calibrate', 'run' stages, one call per sample: the CLI
    printed 'leapp-lab run: calibrate' five times over) said with the engine, node and count."""
    if progress is None:
        return None
    return lambda stage, done, total: progress(f"{what}: {stage} {done}/{total}", done, total)


def node_runners(graph: GraphReport, arrays: dict, engine: str, say: Callable[[str], None],
                 progress: Progress | None = None, max_nrmse: float = DEFAULT_MAX_NRMSE,
                 probes: dict | None = None) -> tuple[dict[str, Any], list[EngineNode], float]:
    """(activated runners of the ONNX nodes, where every node runs, build seconds). A node with taps
    runs its tapped build's untapped engine, and its TapProbe goes into ``probes``."""
    from leapp_lab.engines import get_engine
    runners, infos = {}, []
    t0 = time.perf_counter()
    for node in graph.nodes:
        progress_node = _named(progress, f"replay on {engine}: node {node.name}")
        # taps never change where a node runs: a TorchScript / pt2 node runs as exported with or without
        # them (it ran on the engine, through its tapped re-export, only when it had taps)
        onnx_node = (node.backend or "").startswith("onnx") and bool(node.artifact)
        got = (_tap_probe(graph, node, engine, max_nrmse, say, progress_node)
               if probes is not None and onnx_node else None)
        if got is not None:
            runners[node.name], probes[node.name] = got
            build = Path(got[1].tapped.artifact).parent
            from .replay_reuse import node_build
            reused = (node_build(graph, node, engine, tapped=True) or (None,))[0] == build
            infos.append(EngineNode(node.name, engine, build=str(build),
                                    source="node build (tapped)" if reused else
                                    "tapped build (prepare --from-trace, compile)"))
            continue
        backend = node.backend or ""
        if not onnx_node:
            infos.append(EngineNode(node.name, "fp32 export",
                                    note=f"exported with {backend or 'nothing'}: not an ONNX model, so it runs "
                                         f"as exported (LEAPP's runtime) in the {engine} pipeline"
                                         + ("; its taps are not followed over time (they need its engine "
                                            "build: see 'inside the nodes')" if getattr(node, "taps", None)
                                            else "")))
            continue
        art, how = build_node(graph, arrays, node, engine, say, progress_node)
        runners[node.name] = get_engine(engine).runner(art).activate()
        infos.append(EngineNode(node.name, engine, build=str(art.parent), source=how))
    return runners, infos, time.perf_counter() - t0


def run_engines(graph: GraphReport, arrays: dict, res: ReplayResult, saved: dict[str, np.ndarray],
                engines: list[str], *, steps: int | None, max_nrmse: float, teacher_forcing: bool,
                progress: Progress | None) -> None:
    """Each engine's entry into ``res.engines`` (a failure is that entry's status, never raised;
    an unusable input, such as a node graph the run folder holds that is refused, is raised)."""
    for name in engines:
        report_progress(progress, f"replay: building the pipeline for {name}", 0, 1)
        log: list[str] = []
        probes: dict = {}
        try:
            runners, infos, t_build = node_runners(graph, arrays, name, log.append, progress, max_nrmse, probes)
        except TraceGraphRefused:
            raise
        except EngineUnavailable as exc:     # TensorRT without a GPU: this machine lacks the engine
            res.engines.append(EngineReplay(engine=name, status="unavailable", reason=str(exc)))
            continue
        except Exception as exc:
            if no_room(exc) is not None:    # the disk, not the engine: exit 2 naming the path
                raise
            res.engines.append(EngineReplay(engine=name, status="failed",
                                            reason=failed_reason(f"building the pipeline for {name}", exc)))
            continue
        if not runners:
            res.engines.append(EngineReplay(engine=name, status="unavailable", nodes=infos,
                                            reason=f"no node of graph {graph.name!r} is an ONNX model: nothing "
                                                   f"runs on {name} (export a node with export_with='onnx')"))
            continue
        try:
            e, arr = engine_replay(graph, arrays, name, runners, infos, closed_loop_steps=steps, fresh=res.fresh,
                                   fresh_saved=saved, max_nrmse=max_nrmse, atol=res.atol or 1e-5,
                                   teacher_forcing=teacher_forcing, probes=probes, progress=progress)
        finally:
            for r in runners.values():
                r.deactivate()
            for p in probes.values():
                p.tapped.deactivate()
                p.reference.deactivate()
        e.timings_s["build"] = round(t_build, 6)
        e.notes[:0] = [x for x in log if "building node" in x or "preparing node" in x or "not followed" in x]
        res.engines.append(e)
        saved.update(arr)


def _builds(graph: Any, engine: str, node: Any) -> Path:
    """Where a node's engine builds for the replay go: inside the graph's run folder, under a node
    name that is a file name (a crafted report.json's '../..' would write outside it)."""
    from leapp_lab.model.errors import UnusableInput
    from leapp_lab.model.safepaths import is_file_name
    name = node.name
    if not is_file_name(name):
        raise UnusableInput(f"{graph.run_dir}: node name {name!r} in report.json is not a file name; "
                            f"this run folder was edited: trace the pipeline again")
    if not graph.run_dir and getattr(graph, "from_summary", False):
        raise UnusableInput(f"graph {graph.name!r}: the run folder the --json report names is not a "
                            f"trace run folder of this graph (moved, or the file was edited); replay "
                            f"on an engine writes its builds there: pass the run folder itself")
    return Path(graph.run_dir or graph.graph_dir) / BUILDS_DIR / engine / name


def replay(trace_report: Any, steps: int | None = None, step_fn: Callable | None = None,
           resets: Any = None, *, engine: str | list[str] | None = None, seed: int = 0,
           rtol: float | None = None, atol: float | None = None, graph: str | None = None,
           max_nrmse: float = DEFAULT_MAX_NRMSE, teacher_forcing: bool = True,
           progress: Progress | None = None) -> ReplayResult:
    """Sequential replay of a traced graph's exported pipeline, and on engines (docs/deep-checks.md).

    ``trace_report``: a TraceReport (or a run folder path); ``graph`` names one of several.
    ``steps``: tier (a) replays the first ``steps`` captured steps (all when None); tier (b) runs
    ``steps`` fresh steps (16 when None). ``step_fn(inputs, reset=...)``: the original pipeline, one
    step; without it only tier (a) runs. ``resets``: the fresh steps at which both sides start a new
    episode (default: the middle step). ``seed``: of the fresh observations. ``rtol``/``atol``:
    default, the graph's validation tolerances.

    ``engine``: an engine name or a list (``ort``, ``ort-fp16``, ``ort-int8``, ``trt-fp32``,
    ``trt-fp16``): the pipeline's ONNX nodes built for it run the same sequences closed loop, beside
    the fp32 export; each engine is an entry of ``engines`` (steps judged by ``max_nrmse``, nrmse
    against the reference; ``teacher_forcing``: also run each engine node from the fp32 state every
    step, to split own from inherited error).

    The result is saved as ``replay.json`` / ``replay.npz`` in the graph's run folder and attached
    (``report.graph.replay``).
    """
    names = _engines(engine)
    if not (isinstance(max_nrmse, (int, float)) and max_nrmse > 0):
        raise ValueError(f"replay: max_nrmse must be a positive number, got {max_nrmse!r}")
    rep, g = resolve(trace_report, graph)
    arrays = rep.graph_arrays(g)
    res, saved = run_replay(g, arrays, steps=steps, step_fn=step_fn, resets=resets, seed=seed,
                            rtol=rtol, atol=atol, progress=progress)
    if names:
        if res.tier == "c":
            res.engines = [EngineReplay(engine=n, status="unavailable", reason=res.reason) for n in names]
        else:
            run_engines(g, arrays, res, saved, names, steps=steps, max_nrmse=float(max_nrmse),
                        teacher_forcing=teacher_forcing, progress=progress)
    return save_section(g, res, saved)
