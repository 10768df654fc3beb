"""Attach mode: run an unchanged LEAPP export script and capture every graph it compiles.

``leapp.start`` / ``leapp.stop`` / ``leapp.compile_graph`` are replaced, before the script runs,
everywhere they are bound (``leapp``, ``leapp.leapp`` and any module already holding them by
name), so ``from leapp import compile_graph`` inside the script gets the capturing version too.

- ``start`` runs LEAPP's own start with the script's options, then attaches a LogCapture and
  (unless ``verbose``) quiets LEAPP's console.
- ``compile_graph`` runs :func:`compile_captured` with the script's own validate/rtol/atol/strict
  (LEAPP defaults: validate=True, strict=True, visualize=True), writes the graph's run folder, and
  then returns or raises exactly what LEAPP would have: the verdict dict, ``True``, or LEAPP's
  exception (after the artifacts and the run folder exist).
- A session that never reaches ``compile_graph`` (the script crashed, or started again) becomes a
  graph with status "refused".
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leapp_lab.model.trace import GraphReport, TraceReport
from leapp_lab.trace import lifecycle
from leapp_lab.trace.capture import (CompileOutcome, build_graph, compile_captured, compiled_status,
                                     snapshot)
from leapp_lab.trace.node_taps import NodeTapRecorder
from leapp_lab.trace.persist import diagnose, new_report, node_extras, save_graph_run
from leapp_lab.trace.session import _jsonable_options

_START_DEFAULTS = dict(save_path=".", verbose=False, dry_run=False, non_traced=None,
                       max_cached_io=5, global_patching=True, patching=None)
_COMPILE_DEFAULTS = dict(visualize=True, verbose=None, validate=True, rtol=1e-3, atol=1e-5,
                         strict=True, graph_configs=None)


def _bind(defaults: dict, names: tuple, args: tuple, kwargs: dict) -> dict:
    out = dict(defaults)
    out.update(zip(names, args))
    out.update(kwargs)
    return out


@dataclass
class _Session:
    graph_name: str
    graph_dir: str
    start_options: dict
    capture: lifecycle.LogCapture
    compiled: bool = False
    adapters: Any = None         # trace.adapters.AdapterCapture of the script's patching= list
    taps: NodeTapRecorder = field(default_factory=NodeTapRecorder)   # tap() calls in the nodes
    watch: Any = None            # trace.hazard_state.StateWatch: module state at start()


@dataclass
class Attachment:
    """Collects the graphs; ``install()`` / ``uninstall()`` swap LEAPP's entry points."""
    graphs: list[GraphReport] = field(default_factory=list)
    runs: list[TraceReport] = field(default_factory=list)     # one saved report per graph
    unsaved: list[str] = field(default_factory=list)          # why a graph's run folder was not written
    session: _Session | None = None
    dirty: bool = False          # a refused session left nodes behind: hard reset at the end
    _orig: dict = field(default_factory=dict)
    _patched: list = field(default_factory=list)              # (module dict, attr, original)
    # leapp.start options forced on the script (the deep checks re-run it: dry_run, save_path, ...)
    overrides: dict = field(default_factory=dict)

    # -- patching ----------------------------------------------------------------------------
    def install(self) -> None:
        import leapp
        import leapp.leapp as ll
        self._orig = {"start": ll.start, "stop": ll.stop, "compile_graph": ll.compile_graph}
        repl = {"start": self.start, "stop": self.stop, "compile_graph": self.compile_graph}
        by_id = {id(f): name for name, f in self._orig.items()}
        for mod in list(sys.modules.values()):
            d = getattr(mod, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for attr, val in list(d.items()):
                name = by_id.get(id(val))
                if name is not None and val is self._orig[name]:
                    d[attr] = repl[name]
                    self._patched.append((d, attr, val))
        for mod in (leapp, ll):  # in case LEAPP binds them lazily
            for name in repl:
                if getattr(mod, name, None) is not repl[name]:
                    self._patched.append((mod.__dict__, name, mod.__dict__.get(name)))
                    mod.__dict__[name] = repl[name]

    def uninstall(self) -> None:
        for d, attr, val in reversed(self._patched):
            d[attr] = val
        self._patched.clear()

    # -- LEAPP entry points ------------------------------------------------------------------
    def start(self, *args, **kwargs):
        opts = _bind(_START_DEFAULTS, ("name",) + tuple(_START_DEFAULTS), args, kwargs)
        if self.overrides:
            opts.update(self.overrides)
            if "save_path" in self.overrides:   # an absolute name would override save_path
                opts["name"] = os.path.basename(os.path.normpath(str(opts["name"])))
        from .adapters import AdapterCapture
        adapters = AdapterCapture(opts.get("patching"))   # keeps each adapter's arguments
        if self.session is not None and not self.session.compiled:
            # started again before compile_graph: the previous session is lost (LEAPP resets)
            self._refuse(self.session, "leapp.start() was called again before compile_graph(); "
                                       "the earlier session was never compiled")
        elif self.session is not None:
            self.session.capture.detach()
            self.session.taps.uninstall()
        if self.overrides or adapters.entries:
            self._orig["start"](**{**opts, "patching": adapters.patching})
        else:
            self._orig["start"](*args, **kwargs)
        mgr = lifecycle.manager()
        cap = lifecycle.LogCapture()
        cap.attach()
        if not opts.get("verbose"):
            lifecycle.quiet_console()
        self.session = _Session(mgr.get_graph_name(), mgr.get_save_path(),
                                {k: v for k, v in opts.items() if k != "name"}, cap, adapters=adapters)
        self.session.taps.install()
        from .hazard_state import StateWatch
        self.session.watch = StateWatch.begin()

    def stop(self, *args, **kwargs):
        return self._orig["stop"](*args, **kwargs)

    def compile_graph(self, *args, **kwargs):
        opts = _bind(_COMPILE_DEFAULTS, tuple(_COMPILE_DEFAULTS), args, kwargs)
        s = self.session
        if s is None or s.compiled:
            # compile_graph again (LEAPP allows re-export) or without a start we saw
            mgr = lifecycle.manager()
            cap = lifecycle.LogCapture()
            cap.attach()
            if s is not None:
                s.capture.detach()
            s = self.session = _Session(mgr.get_graph_name() or "graph", mgr.get_save_path() or ".",
                                        dict(s.start_options) if s else {}, cap)
        s.taps.uninstall()           # the traced passes are over
        from .hazard_state import state_changes
        changes = state_changes(s.watch)
        outcome = compile_captured(self._orig["compile_graph"], s.capture, **opts)
        s.compiled = True
        lifecycle.flush_file_log()
        if outcome.compile_error is not None:
            self.dirty = True
        status, msg = compiled_status(outcome, s.capture.records, s.start_options.get("dry_run"))
        self._save(s, outcome, status, msg, opts, changes)
        if outcome.raised is not None:
            raise outcome.raised
        return outcome.result

    # -- graphs --------------------------------------------------------------------------------
    def _save(self, s: _Session, outcome: CompileOutcome, status: str, msg: str | None,
              compile_opts: dict, changes: list | None = None) -> None:
        graph, arrays = build_graph(s.graph_name, s.graph_dir, outcome, s.capture.records,
                                    status=status, error=msg, rtol=compile_opts.get("rtol", 1e-3),
                                    atol=compile_opts.get("atol", 1e-5),
                                    options=_jsonable_options({**s.start_options, **compile_opts}),
                                    taps=s.taps)
        graph.state_changes = list(changes or [])
        diagnose(graph, arrays)
        from .adapters import after_trace
        from leapp_lab.model.sections import save_section
        adapters = after_trace(s.adapters, graph, compile_opts.get("rtol", 1e-3),
                               compile_opts.get("atol", 1e-5))      # + adapter-mismatch hazards
        try:
            self.runs.append(save_graph_run(graph, arrays, **node_extras(graph, outcome, s.taps)))
            if adapters is not None:
                save_section(graph, adapters)
        except Exception as exc:  # an unwritable folder must not hide the other graphs
            from leapp_lab.model.safepaths import oserror_line
            why = oserror_line(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
            self.unsaved.append(f"graph {graph.name!r}: {why}")
            print(f"leapp-lab: could not write the run folder of graph {graph.name!r}: {why}",
                  file=sys.stderr)
        self.graphs.append(graph)

    def _refuse(self, s: _Session, message: str) -> None:
        s.taps.uninstall()
        partial = CompileOutcome(snap=snapshot(lifecycle.manager()))
        for node in lifecycle.manager().get_nodes().values():
            node._model_captured = True   # tensors promoted into a dead node become reusable
        s.compiled = True
        lifecycle.flush_file_log()
        fatal = s.capture.fatal_messages()
        if fatal:
            message = f"{fatal[-1]}\n({message})"
        self._save(s, partial, "refused", message, {})
        s.capture.detach()
        self.dirty = True

    def finish(self, script_exc: BaseException | None) -> None:
        """End of the script: refuse an uncompiled session, leave the process clean."""
        try:
            s = self.session
            if s is not None and not s.compiled:
                why = ("the script raised before compile_graph(): "
                       f"{type(script_exc).__name__}: {script_exc}" if script_exc is not None
                       else "the script started a LEAPP session but never called compile_graph()")
                self._refuse(s, why)
            elif s is not None:
                s.capture.detach()
                s.taps.uninstall()
        finally:
            self.uninstall()
            lifecycle.loud_console()
            if self.dirty or lifecycle.session_open() or lifecycle.manager().patcher.installed:
                lifecycle.hard_reset()


def _script_traceback(e: BaseException) -> str:
    """The script's traceback without the frames of runpy and of this wrapper."""
    import leapp_lab
    ours = (os.path.dirname(os.path.abspath(leapp_lab.__file__)), os.path.abspath(runpy.__file__))
    te = traceback.TracebackException(type(e), e, e.__traceback__)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if not (f.filename.startswith("<frozen runpy")
                                     or os.path.abspath(f.filename).startswith(ours))])
    return "".join(te.format())


@dataclass
class AttachResult:
    report: TraceReport
    script_raised: bool
    traceback: str | None = None
    unsaved: list[str] = field(default_factory=list)     # graphs whose run folder could not be written


def run_script(script: str | os.PathLike, argv: list[str] | None = None,
               overrides: dict | None = None) -> AttachResult:
    """Run ``script`` as ``__main__`` with ``sys.argv = [script, *argv]``, capturing its graphs.

    ``overrides``: ``leapp.start`` options forced on every session of the script (the deep checks'
    re-runs: ``save_path``, ``dry_run``, ``non_traced``, ``global_patching``, ``patching``)."""
    path = Path(script)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such script")
    att = Attachment(overrides=dict(overrides or {}))
    old_argv = sys.argv[:]
    sys.argv = [str(path), *(argv or [])]
    sys.path.insert(0, str(path.resolve().parent))
    exc: BaseException | None = None
    tb_text = None
    exit_code = 0
    att.install()
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code not in (None, 0):
            exc = e
            exit_code = code if isinstance(code, int) else 1
            tb_text = f"SystemExit: {code}"
    except BaseException as e:  # noqa: BLE001 - the script's own failure is data here
        exc = e
        exit_code = 1
        tb_text = _script_traceback(e)
        if isinstance(e, KeyboardInterrupt):
            att.finish(e)
            raise
    finally:
        sys.argv = old_argv
        if sys.path and sys.path[0] == str(path.resolve().parent):
            sys.path.pop(0)
    att.finish(exc)
    report = new_report(att.graphs, script=str(path), script_exit=exit_code,
                        script_error=tb_text)
    return AttachResult(report=report, script_raised=exc is not None, traceback=tb_text,
                        unsaved=list(att.unsaved))


def exit_status(result: AttachResult, no_fail: bool = False) -> int:
    """2 the script raised, or a run folder could not be written (whatever no_fail says: the
    diagnosis was not saved); else the trace verdict's (model/trace_verdict.py): 1 on a defect (a
    validation failed, a trace was refused, no graph, a requested check diverged or could not run;
    0 with no_fail), 0 otherwise."""
    from leapp_lab.model.trace_verdict import trace_verdict
    if result.script_raised or result.unsaved:
        return 2
    code = trace_verdict(result.report).exit_code
    return 0 if no_fail else code


def summary_json(report: TraceReport) -> dict[str, Any]:
    """The report as written by ``--json`` (docs/schema-trace.md); each graph with its deep-check
    sections (``replay``, ``parity``, ``adapters``, ``exporters``, ``isolation``)."""
    from leapp_lab.model.sections import SECTION_NAMES, skipped
    body = report.body()
    for g, d in zip(report.graphs, body.get("graphs", [])):
        for name in SECTION_NAMES:
            sec = g.section(name)
            d[name] = (sec if sec is not None else skipped(name)).to_dict()
    return body
