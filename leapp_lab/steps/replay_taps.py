"""A node with taps, replayed on an engine: its tapped build, so that its taps are followed over the
steps (docs/deep-checks.md, "Taps over time").

A node whose trace recorded taps (``tap(x, "name")`` inside it) is prepared from the trace with its
taps (``prepare --from-trace``: a re-export of the node's traced graph with the taps as outputs)
and compiled for the engine (``compile``), once per trace run and engine, into
``<run>/replay_engines/<engine>/<node>/taps/``. That one build then serves the replay: its
*untapped* engine runs in the pipeline (taps never change the engine being replayed; build.json
records the observer effect), its *tapped* engine and the prepared fp32 ONNX give the tap values at
every step (``deep.taps_over_time.TapProbe``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from leapp_lab.model.finding import plural
from leapp_lab.deep.taps_over_time import TapProbe
from leapp_lab.model.trace import GraphReport

TAPS_DIR = "taps"


def tapped_build(graph: GraphReport, node: Any, engine: str, root: Path, say: Callable[[str], None],
                 progress: Any = None) -> tuple[Path, Path, dict[str, str]]:
    """(build folder, prepared ONNX, ``{tap: its bound_to (or name)}`` of the bound taps
    in model order) of ``node`` for ``engine``, made once (``root/taps``) and reused while the
    trace's artifact is the same."""
    from leapp_lab.model.base import load
    from leapp_lab.model.build import BUILD_FILE
    from leapp_lab.steps.compile import compile as compile_build
    from leapp_lab.steps.prepare_node import prepare_from_trace

    from .replay_reuse import node_build
    got = node_build(graph, node, engine, tapped=True)
    if got is not None:                 # the node's tapped build of "Inside a LEAPP node"
        taps = {t.name: t.bound_to or t.name for t in load(got[0]).taps if t.binding != "unbound"}
        if taps:
            return got[0], got[1], taps
    d = root / TAPS_DIR
    onnx, npz, ref, build = d / "node.onnx", d / "node.npz", d / "node.reference.npz", d / "build"
    stamp = d / "source.json"
    key = {"run": str(graph.run_dir), "node": node.name, "engine": engine, "sha256": node.sha256,
           "taps": [t.name for t in node.taps]}
    if not (stamp.is_file() and (build / BUILD_FILE).is_file() and _same(stamp, key)):
        d.mkdir(parents=True, exist_ok=True)
        say(f"{engine}: preparing node {node.name!r} with its {plural(len(node.taps), 'tap')} from the trace")
        # prepare reports progress(stage, fraction), not the (stage, done, total) the replay is given
        prepare_from_trace(graph.run_dir, onnx, npz, ref, node=node.name, debug_taps="all")
        compile_build(onnx, engine=engine, npz=npz, out=build, progress=progress, naive_check=False)
        stamp.write_text(json.dumps(key))
    taps = {t.name: t.bound_to or t.name for t in load(build).taps if t.binding != "unbound"}   # model order
    return build, onnx, taps


def _same(stamp: Path, key: dict) -> bool:
    try:
        return json.loads(stamp.read_text()) == key
    except (OSError, ValueError):
        return False


def tap_probe(graph: GraphReport, node: Any, engine: str, root: Path, input_names: list[str], tier: str,
              max_nrmse: float, say: Callable[[str], None], progress: Any = None) -> tuple[Any, TapProbe]:
    """(the untapped engine runner for the pipeline, the probe of the node's taps); activated."""
    from leapp_lab.engines import get_engine
    from leapp_lab.engines.ort_session import OrtRunner
    build, onnx, taps = tapped_build(graph, node, engine, root, say, progress)
    untapped = get_engine(engine).runner(build / "engine.untapped.onnx").activate()
    tapped = get_engine(engine).runner(build / "engine.onnx").activate()
    reference = OrtRunner(onnx, optimize=False).activate()
    # the tapped engine's output that carries each tap: the tap's own name where the engine has it
    # (int8 'dequantize' and 'direct' bindings: bound_to is the tensor inside the graph), else
    # bound_to (a tap aliasing a model output, TensorRT's tensors)
    taps = {t: t if t in tapped.output_names else out for t, out in taps.items()}
    # a tap on an output under the output's name: prepare exposes it once, as the output
    taps.update({t.name: t.name for t in node.taps if t.name not in taps and t.name in tapped.output_names})
    usable = [t for t, out in taps.items() if out in tapped.output_names and t in reference.output_names]
    lost = [t.name for t in node.taps if t.name not in usable]
    note = (f"taps not exposed by the {engine} engine or the fp32 ONNX: {', '.join(lost)}" if lost else None)
    return untapped, TapProbe(node.name, tapped, reference, usable, input_names, tier, max_nrmse, note,
                              bound=taps)
