"""The replay on engines reuses the node builds of "Inside a LEAPP node" (steps/node_engines.py).

``leapp_lab.trace(..., engines=)`` / ``--engine`` on ``%%leapp_trace`` and ``leapp-lab run`` prepare
every exported node from the trace and compile it per engine into the run folder
(``nodes/<index>/build/node.<engine>/``) before the deep checks run. When such a build exists for
the engine asked, the replay runs it instead of making its own:

- a node without taps: when the node inside the build is LEAPP's own artifact (the prepared ONNX
  is LEAPP's, or a re-export whose graph without taps is LEAPP's): ``EngineNode.source`` =
  ``node build``;
- a node with taps: when the build exposes every tap of the node (``--taps all``): it is then the
  build the replay would make itself (``prepare --from-trace`` with every tap, compiled), and it
  drives the pipeline untapped and gives the taps over time: ``node build (tapped)``.

Anything else (no build, another node or engine, a build without the taps) is built here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

UNTAPPED = "engine.untapped.onnx"


def node_build(graph: Any, node: Any, engine: str, tapped: bool = False) -> tuple[Path, Path] | None:
    """(build folder, prepared ONNX) of ``node``'s build for ``engine`` when it can stand in for the
    replay's own (module doc; ``tapped``: the build of a node with taps), else None."""
    from leapp_lab.model.build import BUILD_FILE
    from leapp_lab.model.jsonio import read_json

    from .node_engines import STEM, node_folder
    if not graph.run_dir or getattr(node, "index", None) is None:
        return None
    d = node_folder(graph, node)
    build, onnx, rec = d / f"{STEM}.{engine}", d / f"{STEM}.onnx", d / f"{STEM}.prepare" / "report.json"
    if not ((build / BUILD_FILE).is_file() and (build / UNTAPPED).is_file() and onnx.is_file() and rec.is_file()):
        return None
    try:
        prep, b = read_json(rec), read_json(build / BUILD_FILE)
    except (OSError, ValueError):
        return None
    origin = prep.get("from_trace") if isinstance(prep, dict) else None
    if not isinstance(origin, dict) or not isinstance(b, dict) or origin.get("node") != node.name:
        return None
    if b.get("engine") != engine:
        return None
    if tapped:
        man = b.get("manifest") if isinstance(b.get("manifest"), dict) else {}
        have = {t.get("name") for t in man.get("taps") or [] if isinstance(t, dict)}
        # a tap on an output under the output's name is that output's row (prepare exposes it once)
        have |= {o.get("name") for o in man.get("outputs") or [] if isinstance(o, dict)}
        return (build, onnx) if {t.name for t in node.taps} <= have else None
    return (build, onnx) if origin.get("onnx_source") == "leapp" or origin.get("same_as_leapp") is True else None
