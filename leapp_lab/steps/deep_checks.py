"""``leapp_lab.exporters(report, body)`` and ``leapp_lab.isolate(report, body)``: the deep checks that
trace a body again, on a saved trace (docs/deep-checks.md).

The checks themselves are ``leapp_lab.deep``'s (``run_exporters``, ``run_isolation``, on any
``Body``); a plain callable becomes a body that traces through ``leapp_lab.trace`` here
(``steps.rerun.as_body``), above both packages.
"""
from __future__ import annotations

from typing import Any, Iterable

from leapp_lab.deep.common import Progress, failed_reason, resolve
from leapp_lab.deep.exporters import run_exporters
from leapp_lab.deep.isolation import run_isolation
from leapp_lab.model.exporters import BACKENDS, ExporterMatrix
from leapp_lab.model.isolation import IsolationResult
from leapp_lab.model.sections import save_section

from .rerun import as_body


def exporters(trace_report: Any, body: Any, node: str = "all", backends: Iterable[str] = BACKENDS, *,
              graph: str | None = None, progress: Progress | None = None, **trace_options) -> ExporterMatrix:
    """The exporter matrix of a traced graph (docs/deep-checks.md).

    ``body``: a callable with no arguments that runs the annotated code (what was inside
    ``with leapp_lab.trace(...)``); it runs once per node and backend. ``node``: a node name, or
    "all". ``trace_options``: ``leapp_lab.trace`` options for the re-runs (default: the ones the
    report recorded; a session with adapters needs ``patching=`` again). Saved as
    ``exporters.json`` in the graph's run folder and attached (``report.graph.exporters``).
    """
    rep, g = resolve(trace_report, graph)
    try:
        b = as_body(body, g, trace_options)
        m = run_exporters([g], b, node, backends, progress)[g.name]
    except (KeyError, ValueError, TypeError):
        raise
    except Exception as exc:
        m = ExporterMatrix(status="failed", reason=failed_reason("the exporter matrix", exc))
    return save_section(g, m)


def isolate(trace_report: Any, body: Any, non_traced: list[str] | None = None, *, graph: str | None = None,
            progress: Progress | None = None, **trace_options) -> IsolationResult:
    """Isolation runs of a traced graph and the decision table's verdict (docs/deep-checks.md).

    ``body``: a callable with no arguments that runs the annotated code; it runs once per
    isolation run. ``non_traced``: the nodes to leave unexported (default: the failing nodes).
    ``trace_options``: ``leapp_lab.trace`` options for the re-runs (default: the ones the report
    recorded; a session with adapters needs ``patching=`` again). Saved as ``isolation.json`` in
    the graph's run folder and attached (``report.graph.isolation``).
    """
    rep, g = resolve(trace_report, graph)
    b = as_body(body, g, trace_options)
    try:
        res = run_isolation([g], b, non_traced,
                            had_adapters=bool(trace_options.get("patching")) or None, progress=progress)[g.name]
    except Exception as exc:
        res = IsolationResult(status="failed", reason=failed_reason("the isolation runs", exc))
    return save_section(g, res)
