"""``leapp_lab.trace(name, ...)``: one LEAPP session, captured, validated three ways, saved.

    with leapp_lab.trace("policy", save_path="out", max_cached_io=4) as t:
        for obs in observations:
            run_pipeline(obs)          # annotate.input_tensors / output_tensors as usual
    print(t.report)                    # saved in out/policy/leapp_lab/runs/<run id>/

On exit: ``leapp.stop()``, ``compile_graph(validate=False)``, a recorder around every compiled
model, LEAPP's own ``validate_all_models`` (its verdicts, plus what the exported models returned),
an FX replay of every node on every sample, hazards, and the run folder. The process is left
clean whatever happens in the body; a body that raises still gets a saved report
(status "error") and its exception is re-raised.
"""
from __future__ import annotations

import os
import warnings
from typing import Any

from leapp_lab.model.trace import TraceReport
from leapp_lab.trace import lifecycle
from leapp_lab.trace.capture import (CompileOutcome, build_graph, compile_captured, compiled_status,
                                     snapshot)
from leapp_lab.trace.node_taps import NodeTapRecorder
from leapp_lab.trace.persist import diagnose, node_extras, save_graph_run


def graph_dir_of(name: str, save_path: str) -> tuple[str, str]:
    """(graph name, output dir) exactly as ``leapp.start`` resolves them (leapp.py:53-68)."""
    norm = os.path.normpath(os.path.expanduser(name))
    name_dir, graph = os.path.split(norm)
    return graph, os.path.join(save_path, name_dir, graph)


def _jsonable_options(opts: dict) -> dict:
    out = {}
    for k, v in opts.items():
        if v is None or isinstance(v, (bool, int, float, str)):
            out[k] = v
        elif isinstance(v, (list, tuple)) and all(isinstance(x, (str, int, float)) for x in v):
            out[k] = list(v)
        elif hasattr(v, "to_dict"):
            try:
                out[k] = v.to_dict()
            except Exception:
                out[k] = repr(v)
        else:
            out[k] = repr(v)
    return out


class TraceSession:
    """``leapp_lab.trace(name, ...)``: context manager around one LEAPP session, taking every
    ``leapp.start`` / ``compile_graph`` option; ``t.report`` after the block.

    ``strict=True`` raises LEAPP's validation exception after the report is saved;
    ``validate=False`` skips validation (the FX replay is still recorded).
    """

    def __init__(self, name: str, save_path: str = ".", max_cached_io: int = 5,
                 validate: bool = True, rtol: float = 1e-3, atol: float = 1e-5,
                 strict: bool = False, dry_run: bool = False, non_traced=(),
                 global_patching: bool = True, patching=None, verbose: bool = False,
                 visualize: bool = False, graph_configs=None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"leapp_lab.trace: the graph name must be a non-empty string, got {name!r}")
        self.name = name
        self.start_options = dict(save_path=os.fspath(save_path), verbose=verbose, dry_run=dry_run,
                                  non_traced=list(non_traced) if non_traced else None,
                                  max_cached_io=max_cached_io, global_patching=global_patching,
                                  patching=patching)
        self.compile_options = dict(visualize=visualize, verbose=verbose, validate=validate,
                                    rtol=rtol, atol=atol, strict=strict, graph_configs=graph_configs)
        self.graph_name, self.graph_dir = graph_dir_of(name, os.fspath(save_path))
        self.report: TraceReport | None = None
        self.result: Any = None            # what compile_graph would have returned
        self.capture = lifecycle.LogCapture()
        self._started = False
        self._adapters = None              # trace.adapters.AdapterCapture of the patching= list
        self._taps = NodeTapRecorder()     # tap() calls reached inside the nodes

    # -- context manager ---------------------------------------------------------------------
    def __enter__(self) -> "TraceSession":
        import leapp
        if lifecycle.session_open():     # a session someone else left open (a crashed cell)
            warnings.warn("leapp_lab.trace: a LEAPP session was still open (leapp.start() without "
                          "stop(), e.g. from a cell that raised); it was reset before starting "
                          f"{self.name!r}", RuntimeWarning, stacklevel=2)
            lifecycle.hard_reset()
        from .adapters import AdapterCapture
        self._adapters = AdapterCapture(self.start_options["patching"])   # keeps each adapter's arguments
        try:
            leapp.start(self.name, **{**self.start_options, "patching": self._adapters.patching})
        except BaseException:
            lifecycle.hard_reset()
            raise
        self._started = True
        self.graph_dir = lifecycle.manager().get_save_path() or self.graph_dir  # as LEAPP resolved it
        self._taps.install()
        from .hazard_state import StateWatch
        self._watch = StateWatch.begin()
        self.capture.attach()
        if not self.start_options["verbose"]:
            lifecycle.quiet_console()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._taps.uninstall()      # the body is over: no tap belongs to this session any more
        try:
            pending = self._finish(exc)
        finally:
            self.capture.detach()
            lifecycle.loud_console()
            refused = self.report is None or self.report.graph.status in ("refused", "error")
            if refused or lifecycle.session_open() or lifecycle.manager().patcher.installed:
                lifecycle.hard_reset()   # also frees nodes a refused compile left "tracing"
        if exc is None and pending is not None:
            raise pending
        return False  # the body's exception (if any) propagates

    # -- the work ------------------------------------------------------------------------------
    def _finish(self, body_exc: BaseException | None) -> BaseException | None:
        import leapp

        if body_exc is not None:
            fatal = self.capture.fatal_messages()
            status = "refused" if fatal else "error"
            # an exception without a message (KeyboardInterrupt, raise RuntimeError()): its name alone
            msg = fatal[-1] if fatal else f"{type(body_exc).__name__}" + (f": {body_exc}" if str(body_exc) else "")
            partial = CompileOutcome(snap=snapshot(lifecycle.manager()))  # before reset drops them
            lifecycle.hard_reset()
            self._save(partial, status, msg)
            return None

        from .hazard_state import state_changes
        self._changes = state_changes(getattr(self, "_watch", None))
        outcome, refusal = None, None
        try:
            leapp.stop()
        except Exception as exc:
            status, msg, refusal = "refused", f"{type(exc).__name__}: {exc}", exc
        else:
            outcome = compile_captured(leapp.compile_graph, self.capture, **self.compile_options)
            self.result = outcome.result
            status, msg = compiled_status(outcome, self.capture.records,
                                          self.start_options["dry_run"])
        lifecycle.flush_file_log()
        self._save(outcome, status, msg)
        # what compile_graph would have raised (a refused compile, or strict=True's validation
        # failure), now that the report exists
        return refusal if outcome is None else outcome.raised

    def _save(self, outcome: CompileOutcome | None, status: str, msg: str | None) -> None:
        """Build the graph report from what LEAPP holds now, diagnose it, commit its run folder."""
        co = self.compile_options
        graph, arrays = build_graph(self.graph_name, self.graph_dir, outcome, self.capture.records,
                                    status=status, error=msg, rtol=co["rtol"], atol=co["atol"],
                                    options=_jsonable_options({**self.start_options, **co}),
                                    taps=self._taps)
        graph.state_changes = list(getattr(self, "_changes", None) or [])
        diagnose(graph, arrays)
        from .adapters import after_trace
        from leapp_lab.model.sections import save_section
        adapters = after_trace(self._adapters, graph, co["rtol"], co["atol"])  # + adapter-mismatch
        self.report = save_graph_run(graph, arrays, **node_extras(graph, outcome, self._taps))
        if adapters is not None:
            save_section(graph, adapters)


# ``leapp_lab.trace(name, ...)`` is the session itself: one signature, one set of defaults.
trace = TraceSession
