"""A trace, then the deep checks asked for: ``leapp-lab run SCRIPT --replay ...`` and ``%%leapp_trace
NAME --exporters ...`` (docs/deep-checks.md).

The trace is the ``trace`` package's (attach mode for a script, ``leapp_lab.trace`` for a cell); the
checks are ``deep.run.run_deep``'s. The checks that trace the code again get a body from
``steps.rerun``, made *before* the first run: it starts from the random state the code started from,
and a script is run again only while its bytes are what they were.
"""
from __future__ import annotations

from typing import Any, Callable

from leapp_lab.deep.body import RandomState
from leapp_lab.deep.run import requested

__all__ = ["RandomState", "requested", "run_script", "check_traced_cell"]


def run_script(script, script_args: list[str], *, deep: dict | None = None, step_fn: Callable | None = None,
               before_checks: Callable[[Any, Any], None] | None = None, progress=None, nodes=None):
    """Run ``script`` in attach mode and return its AttachResult; with ``deep`` (``replay``,
    ``parity``, ``exporters``, ``isolate``) asking for a check, run those on the report too.
    ``before_checks(result, body)``: called between the run and the checks (the CLI checks
    ``--exporters NODE`` against the graphs and says that the script runs again). ``nodes``: a
    ``node_engines.NodeOptions``: inside each graph's nodes on its engines, after the run."""
    from leapp_lab.trace.attach import run_script as attach_run
    deep = dict(deep or {})
    hook = engines_hook(deep.pop("engines", None), progress)
    if not requested(**deep):
        result = attach_run(script, script_args)
        _nodes(result, nodes, progress)
        return result

    from leapp_lab.deep.run import run_deep

    from .rerun import ScriptBody
    start = RandomState.capture()      # the re-runs start where the script started
    # made first: the re-runs run this file, by absolute path, only while it is as it was now
    body = ScriptBody(script, script_args, random_state=start)
    result = attach_run(script, script_args)
    _nodes(result, nodes, progress)
    if before_checks is not None:
        before_checks(result, body)
    run_deep(result.report, body, step_fn=step_fn, replay_hook=hook, progress=progress, **deep)
    return result


def _nodes(result, nodes, progress) -> None:
    if nodes is not None and nodes.wanted:
        from .trace_nodes import after_trace
        after_trace(result.report, nodes, progress)


def engines_hook(engines, progress=None) -> Callable | None:
    """With ``--engine`` and ``--replay``: each graph's replay also runs on those engines
    (``steps.replay_engines``)."""
    if not engines:
        return None
    from .replay_engines import DEFAULT_MAX_NRMSE, _engines, run_engines
    names = _engines(engines)

    def hook(graph, arrays, res, saved) -> None:
        if res.status in ("failed",) or res.tier == "c":
            from leapp_lab.model.replay import EngineReplay
            res.engines = [EngineReplay(engine=n, status="unavailable", reason=res.reason) for n in names]
            return
        run_engines(graph, arrays, res, saved, names, steps=None if res.closed_loop is None else res.closed_loop.steps,
                    max_nrmse=DEFAULT_MAX_NRMSE, teacher_forcing=True, progress=progress)
    return hook


def check_traced_cell(report, run_cell: Callable[[], Any], name: str, options: dict, *, deep: dict,
                      random_state: RandomState | None, progress=None) -> None:
    """The deep checks of a ``%%leapp_trace`` cell's report; --exporters and --isolate trace the cell
    again (``run_cell``) with its ``leapp_lab.trace`` ``options``, from ``random_state``."""
    from leapp_lab.deep.run import run_deep

    from .rerun import CallableBody
    deep = dict(deep)
    hook = engines_hook(deep.pop("engines", None), progress)
    body = CallableBody(run_cell, name, options, description="the cell", random_state=random_state)
    run_deep(report, body, had_adapters=bool(options.get("patching")), replay_hook=hook, progress=progress, **deep)
