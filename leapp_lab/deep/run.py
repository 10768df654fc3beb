"""The deep checks a ``%%leapp_trace`` cell or ``leapp-lab run`` asked for, on every graph of
a fresh report: each check runs on its own, a failure is that section's status, never the others'.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Iterator

from leapp_lab.model.exporters import BACKENDS, ExporterMatrix
from leapp_lab.model.isolation import IsolationResult
from leapp_lab.model.safepaths import remove_path
from leapp_lab.model.sections import save_section
from leapp_lab.model.trace import TraceReport

from .body import Body
from .common import Progress, failed_reason
from .exporters import run_exporters
from .isolation import run_isolation
from .parity import run_parity
from .replay import run_replay


def requested(replay: int | None = None, parity: int | None = None, exporters: str | None = None,
              isolate: bool = False) -> bool:
    return replay is not None or parity is not None or exporters is not None or bool(isolate)


def run_deep(report: TraceReport, body: Body | None, *, replay: int | None = None,
             step_fn: Callable | None = None, parity: int | None = None, exporters: str | None = None,
             isolate: bool = False, had_adapters: bool | None = None,
             replay_hook: Callable | None = None, progress: Progress | None = None) -> TraceReport:
    """Run what was asked on ``report``'s graphs and save each section in its graph's run folder.

    ``replay``: steps (``leapp_lab.replay``); ``parity``: fresh inputs (needs ``step_fn``);
    ``exporters``: "all" or a node name; ``isolate``: the isolation runs. The last two re-run
    ``body``. ``replay_hook(graph, arrays, result, saved)``: called after each graph's replay, before
    it is saved (``leapp_lab.steps`` adds the engines' entries there). Returns ``report`` (its graphs
    now carry the sections)."""
    graphs = list(report.graphs)
    for g in graphs:
        arrays = report.graph_arrays(g)
        if replay is not None:
            try:
                res, saved = run_replay(g, arrays, steps=replay, step_fn=step_fn, progress=progress)
            except Exception as exc:        # bad arguments: the section says so
                from leapp_lab.model.replay import ReplayResult
                res, saved = ReplayResult(status="failed", reason=failed_reason("the replay", exc)), {}
            if replay_hook is not None:
                try:
                    replay_hook(g, arrays, res, saved)
                except Exception as exc:    # never the replay's own result
                    res.notes.append(failed_reason("the engine replays", exc))
            save_section(g, res, saved)
        if parity is not None:
            try:
                res, saved = run_parity(g, arrays, step_fn, n=parity, progress=progress)
            except Exception as exc:
                from leapp_lab.model.parity import ParityResult
                res, saved = ParityResult(status="failed", reason=failed_reason("the parity check", exc)), {}
            save_section(g, res, saved)
    rerun = [g for g in graphs if g.status != "error"]
    if exporters is not None:
        with _dropped_if_interrupted(graphs, "exporters"):
            if body is None or not rerun:
                for g in graphs:
                    save_section(g, ExporterMatrix(status="unavailable", reason=_why_not(body)))
            else:
                try:
                    found = run_exporters(rerun, body, exporters, BACKENDS, progress)
                except Exception as exc:
                    found = {g.name: ExporterMatrix(status="failed", reason=failed_reason("the exporter matrix", exc))
                             for g in rerun}
                for g in graphs:
                    save_section(g, found.get(g.name) or ExporterMatrix(
                        status="unavailable", reason=f"the traced code raised: {g.error}"))
    if isolate:
        with _dropped_if_interrupted(graphs, "isolation"):
            if body is None or not rerun:
                for g in graphs:
                    save_section(g, IsolationResult(status="unavailable", reason=_why_not(body)))
            else:
                try:
                    found = run_isolation(rerun, body, had_adapters=had_adapters, progress=progress)
                except Exception as exc:
                    found = {g.name: IsolationResult(status="failed", reason=failed_reason("the isolation runs", exc))
                             for g in rerun}
                for g in graphs:
                    save_section(g, found.get(g.name) or IsolationResult(
                        status="unavailable", reason=f"the traced code raised: {g.error}"))
    return report


@contextlib.contextmanager
def _dropped_if_interrupted(graphs: list, section: str) -> Iterator[None]:
    """Ctrl-C during a check that re-runs the body: its re-run folders (``<run>/<section>/``) are
    removed, unless a saved section of that graph names them, so the committed run is left as it was."""
    try:
        yield
    except BaseException as exc:
        if not isinstance(exc, Exception):
            for g in graphs:
                run = Path(g.run_dir) if g.run_dir else None
                if run is not None and run.is_dir() and not (run / f"{section}.json").exists():
                    remove_path(run / section)
        raise


def _why_not(body: Any) -> str:
    if body is None:
        return "there is no body to run again (pass the traced code as a callable)"
    return "no graph to trace again (the traced code raised before compiling one)"
