"""The bodies a deep check traces again: a callable (``leapp_lab.trace``) or a script (attach mode).

``leapp_lab.deep.body`` says what a re-run is (``Body``: fresh session, own folder, the original
random state, ``leapp.start`` and ``export_with`` overrides, the output kept quiet); the two bodies
here run one through the ``trace`` package, which is why they live above both leaves.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

from leapp_lab.deep.body import Body, RandomState, Rerun, export_override, quiet_output, trace_options
from leapp_lab.model.messages import error_text
from leapp_lab.model.trace import GraphReport


class CallableBody(Body):
    """A zero-argument callable running the annotate loop, traced with ``leapp_lab.trace``."""

    def __init__(self, fn: Callable[[], Any], name: str, options: dict | None = None,
                 description: str | None = None, random_state: RandomState | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"body must be a callable with no arguments that runs the annotated "
                            f"code, got {type(fn).__name__}")
        self.fn, self.name = fn, name
        self.options = dict(options or {})
        self.description = description or f"{getattr(fn, '__name__', 'body')}()"
        self.random_state = random_state

    def run(self, save_path, start_overrides=None, backends=None) -> Rerun:
        from leapp_lab.trace.session import TraceSession
        opts = {**self.options, **(start_overrides or {})}
        opts.update(save_path=str(save_path), strict=False, verbose=False)
        out = Rerun()
        self._prepare()
        t0 = time.perf_counter()
        session = None
        t_body = None
        with quiet_output():
            try:
                session = TraceSession(self.name, **opts)
                with export_override(backends), session:
                    self.fn()
                    t_body = time.perf_counter()
            except Exception as exc:
                out.error = error_text(exc)
        t1 = time.perf_counter()
        out.time_s = t1 - t0
        out.export_s = (t1 - t_body) if t_body is not None else None
        if session is not None and session.report is not None:
            out.graphs = list(session.report.graphs)
        return out


class ScriptBody(Body):
    """An export script run again in attach mode (``leapp-lab run``), ``leapp.start`` options
    overridden and every graph it compiles written under ``save_path``.

    Made before the script's first run: the script is then run again by its absolute path (a
    script that changes the working folder cannot make a same-named file run instead), and only
    while its content is what it was (docs/safety.md, the code-execution rule)."""

    def __init__(self, script: str | os.PathLike, argv: list[str] | None = None,
                 random_state: RandomState | None = None) -> None:
        self.script, self.argv = Path(script).resolve(), list(argv or [])
        self.sha256 = _digest(self.script)
        self.description = f"the script {self.script.name}"
        self.random_state = random_state

    def run(self, save_path, start_overrides=None, backends=None) -> Rerun:
        from leapp_lab.trace.attach import run_script
        if _digest(self.script) != self.sha256:
            from leapp_lab.model.errors import UnusableInput
            raise UnusableInput(f"{self.script}: missing or changed since leapp-lab run started (its "
                                f"sha256 differs); it is not run again")
        out = Rerun()
        self._prepare()
        t0 = time.perf_counter()
        with quiet_output(), export_override(backends):
            try:
                res = run_script(self.script, self.argv,
                                 overrides={**(start_overrides or {}), "save_path": str(save_path)})
                out.graphs = list(res.report.graphs)
                if res.script_raised and res.traceback:
                    out.error = res.traceback.strip().splitlines()[-1]
            except Exception as exc:
                out.error = error_text(exc)
        out.time_s = time.perf_counter() - t0
        return out


def _digest(path: Path) -> str | None:
    import hashlib
    from leapp_lab.model.safepaths import read_input_bytes
    try:
        return hashlib.sha256(read_input_bytes(path)).hexdigest()
    except (OSError, ValueError):       # ValueError: UnusableInput, a FIFO or a device is never read
        return None


def as_body(body: Any, graph: GraphReport, overrides: dict | None = None) -> Body:
    if isinstance(body, Body):
        return body
    return CallableBody(body, graph.name, trace_options(graph, overrides),
                        random_state=RandomState.capture())
