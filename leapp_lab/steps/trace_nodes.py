"""``leapp_lab.trace(name, ..., taps=, op_taps=, engines=, local=)``: the trace session, and then
inside its nodes on each engine (``steps.node_engines``), in the same call.

``TraceSession`` (the ``trace`` leaf) traces, validates and saves; this subclass adds, after LEAPP's
validation and the saved run, every exported node prepared with its taps, compiled for each engine
and verified tap by tap, and the pipeline on each engine. Without ``engines`` it is exactly the
session. What the body raised, or ``strict=True``'s validation failure, is raised as before (the
node engines of a compiled graph run first).
"""
from __future__ import annotations

import sys
from typing import Any, Iterable

from leapp_lab.trace.session import TraceSession

from .node_engines import NodeOptions, node_options, run_node_engines


def stderr_progress(prefix: str):
    def say(stage: str, done: int, total: int) -> None:
        from leapp_lab.model.messages import printable
        print(printable(f"{prefix} [{done}/{total}] {stage}"), file=sys.stderr, flush=True)
    return say


class trace(TraceSession):  # noqa: N801 - the public name, a context manager like open()
    """``leapp_lab.trace(name, save_path=".", ..., taps=None, op_taps=False, engines=(),
    local=False, progress=None)``: every ``leapp.start`` / ``compile_graph`` option of
    ``TraceSession``, plus, with ``engines``: ``taps`` (``"all"`` or tap names) and ``op_taps``
    exposed in each node's build, ``local`` error in its verify; ``progress(stage, done, total)``
    (default: quiet)."""

    def __init__(self, name: str, save_path: str = ".", *, taps: Any = None, op_taps: bool = False,
                 engines: Iterable[str] | str | None = (), local: bool = False, progress: Any = None,
                 **options: Any) -> None:
        self.node_options: NodeOptions = node_options(taps, op_taps, engines, local)
        self.node_progress = progress
        super().__init__(name, save_path, **options)

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            return super().__exit__(exc_type, exc, tb)
        finally:
            rep = self.report
            if self.node_options.wanted and rep is not None and not isinstance(exc, KeyboardInterrupt):
                after_trace(rep, self.node_options, self.node_progress)


def after_trace(report: Any, opts: NodeOptions, progress: Any = None) -> None:
    """The node engines of every compiled graph of ``report`` (a TraceReport), in place; the options
    are kept in each graph's ``options`` (``nodes``)."""
    for g in report.graphs:
        if g.status == "compiled" and g.run_dir:
            g.options = {**(g.options or {}), "nodes": opts.to_dict()}
            run_node_engines(g, opts, progress)
