"""Write one graph run: ``<graph dir>/leapp_lab/runs/<run id>/``.

LEAPP truncates ``log.txt`` and overwrites the YAML and models on every ``start()`` of the same
graph, so the run folder keeps its own copies (YAML, log.txt, initial values) and the sha256 of
every model file as it was when this run ended.
"""
from __future__ import annotations

import datetime as _dt
import shutil
import sys
from pathlib import Path

import numpy as np

from leapp_lab.model import RunFolder, lab_dir, save_npz
from leapp_lab.model.jsonio import atomic_write_text
from leapp_lab.model.runs import sha256_of
from leapp_lab.model.trace import GraphReport, LogRecord, TraceReport
from leapp_lab.fxio import store as fx_store
from leapp_lab.trace import hazards

ARRAYS_FILE = "arrays.npz"
HASHES_FILE = "models.sha256"
TAPS_FILE = "taps.npz"          # tap values per node / tap / sample (docs/schema-trace.md)


def versions() -> dict:
    from leapp_lab._compat import leapp_version
    try:
        import torch
        tv = torch.__version__
    except ImportError:  # pragma: no cover
        tv = None
    return {"leapp_version": leapp_version(), "torch_version": tv}


def new_report(graphs: list[GraphReport] | None = None, **kw) -> TraceReport:
    return TraceReport(graphs=list(graphs or []),
                       created=_dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                       **versions(), **kw)


def diagnose(graph: GraphReport, arrays: dict[str, np.ndarray]) -> None:
    """Fill ``graph.hazards``; a rule that raises is logged, never costs the user the report."""
    try:
        graph.hazards = hazards.diagnose(graph, arrays)
    except Exception as exc:
        graph.log.append(LogRecord("ERROR", 40, f"leapp_lab: hazard diagnosis failed: "
                                                f"{type(exc).__name__}: {exc}", "leapp_lab"))
        print(f"leapp_lab: hazard diagnosis failed for graph {graph.name!r}: {exc}", file=sys.stderr)


def node_extras(graph: GraphReport, outcome, recorder) -> dict:
    """The node-level files of a run (``save_graph_run`` keyword arguments): the taps' values and
    each exported node's traced graph. ``outcome``: the CompileOutcome (its pre-compile snapshot
    holds LEAPP's node objects); ``recorder``: the session's NodeTapRecorder."""
    snap = getattr(outcome, "snap", None) or {}
    live = {name: s.node for name, s in snap.items()}
    return {"tap_arrays": recorder.arrays({n.name: n.samples for n in graph.nodes}),
            "node_graphs": fx_store.collect(graph, live, recorder)}


def save_graph_run(graph: GraphReport, arrays: dict[str, np.ndarray], *,
                   log_file: str | None = None, tap_arrays: dict[str, np.ndarray] | None = None,
                   node_graphs: dict[str, tuple[dict, dict]] | None = None,
                   **report_kw) -> TraceReport:
    """Commit one run folder for ``graph`` and return its (single-graph) TraceReport.

    ``tap_arrays``: the values of the taps that fired in the nodes, ``<node>/<tap>/<sample>``;
    ``node_graphs``: the encoded traced graph of each exported node (trace/fx_store.py)."""
    if not graph.graph_dir:
        raise ValueError(f"graph {graph.name!r} has no graph directory to write its run into")
    gdir = Path(graph.graph_dir)
    report = new_report([graph], **report_kw)
    before = (graph.run_id, graph.run_dir)
    try:
        run = _commit_run(graph, gdir, report, arrays, log_file, tap_arrays, node_graphs)
    except BaseException:
        # no run folder: nothing may write into the one that was not committed (the deep checks,
        # the node builds would make runs/<id>/ again, a folder without its report.json)
        graph.run_id, graph.run_dir = before
        raise
    report.path = run.final_path
    report._arrays = dict(arrays)
    return report


def _commit_run(graph: GraphReport, gdir: Path, report: TraceReport, arrays: dict, log_file: str | None,
                tap_arrays: dict | None, node_graphs: dict | None) -> RunFolder:
    with RunFolder(lab_dir(gdir), label=graph.name) as run:
        graph.run_id = run.run_id
        graph.run_dir = str(run.final_path)
        yaml_src = gdir / f"{graph.name}.yaml"
        if graph.status in ("compiled", "dry-run") and yaml_src.is_file():
            shutil.copy2(yaml_src, run.path / yaml_src.name)
            graph.yaml_file = yaml_src.name
            iv = gdir / f"{graph.name}_initial_values.safetensors"
            if iv.is_file():
                shutil.copy2(iv, run.path / iv.name)
            png = gdir / f"{graph.name}.png"
            if graph.options.get("visualize") and png.is_file():
                shutil.copy2(png, run.path / png.name)
        src_log = Path(log_file) if log_file else gdir / "log.txt"
        if src_log.is_file():
            shutil.copy2(src_log, run.path / "log.txt")
        lines = []
        for n in graph.nodes:
            if n.artifact:
                p = gdir / n.artifact
                if p.is_file():
                    lines.append(f"{sha256_of(p)}  {n.artifact}")
        if lines:
            atomic_write_text(run.path / HASHES_FILE, "\n".join(lines) + "\n")
        save_npz(run.path / ARRAYS_FILE, arrays)
        if tap_arrays:
            save_npz(run.path / TAPS_FILE, tap_arrays)
        for n in graph.nodes:
            if n.saved_graph and n.name in (node_graphs or {}):
                fx_store.write(run.path / n.saved_graph, *node_graphs[n.name])
        report.save(run.path)
    return run
