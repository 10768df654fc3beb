"""Running a traced body again, safely, with some LEAPP options changed: what a re-run is.

The exporter matrix and the isolation runs trace the *same* code again: a Python callable
(``leapp_lab.exporters(report, body)``), the cell of ``%%leapp_trace`` or the script of
``leapp-lab run``. Every re-run

- is a fresh LEAPP session in its own output folder (``save_path``), through the same machinery as
  ``leapp_lab.trace`` / ``leapp-lab run``, so the process is left clean whatever happens;
- starts from the random state the original trace started from (torch, NumPy and ``random``; the
  caller's own state is put back afterwards), so the body sees the same random numbers;
- may override ``leapp.start`` options (``dry_run``, ``non_traced``, ``global_patching``,
  ``patching``) and one node's ``export_with`` (``annotate.output_tensors`` of that node only);
- keeps the body's printed output out of the caller's (it ran before; it is not shown again).

This module holds the protocol (``Body``, ``Rerun``), the random state and the overrides; the two
bodies that trace again (a callable through ``leapp_lab.trace``, a script through ``leapp-lab run``)
are ``leapp_lab.steps.rerun``'s: tracing is the ``trace`` package's, and deep never imports it.

State the body keeps *outside* itself (a module it mutates, a global counter) is not reset: a body
meant to be re-run builds or seeds what it uses, as an export script does.
"""
from __future__ import annotations

import contextlib
import io
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leapp_lab.model.trace import GraphReport

# export_with names as LEAPP reports the backend of a node, and back
RESOLVED = {"onnx": "onnx-dynamo", "onnx-dynamo": "onnx-dynamo", "onnx-torchscript": "onnx-torchscript",
            "jit": "jit-script", "jit-script": "jit-script", "jit-trace": "jit-trace",
            "pt2": "exported-program", "exported-program": "exported-program"}
SHORT = {"onnx-dynamo": "onnx", "onnx-torchscript": "onnx-torchscript", "jit-script": "jit",
         "jit-trace": "jit-trace", "exported-program": "pt2"}


@dataclass
class RandomState:
    """torch, NumPy and ``random`` generator states."""
    torch_state: Any = None
    numpy_state: Any = None
    python_state: Any = None

    @classmethod
    def capture(cls) -> "RandomState":
        import numpy as np
        import torch
        return cls(torch.get_rng_state(), np.random.get_state(), random.getstate())

    def restore(self) -> None:
        import numpy as np
        import torch
        if self.torch_state is not None:
            torch.set_rng_state(self.torch_state)
        if self.numpy_state is not None:
            np.random.set_state(self.numpy_state)
        if self.python_state is not None:
            random.setstate(self.python_state)


@contextlib.contextmanager
def export_override(backends: dict[str, str | None] | None):
    """``annotate.output_tensors(node, ..., export_with=...)`` uses ``backends[node]`` for the
    nodes named there (None: not exported); every other node keeps its own ``export_with``.

    ``leapp.annotate`` forwards to the ExportManager singleton's bound method, so an instance
    attribute takes its place for the duration. LEAPP checks the caller's line only in
    ``input_tensors``; ``export_with`` is read at the node's first ``output_tensors``."""
    if not backends:
        yield
        return
    import leapp
    mgr = leapp.ExportManager()
    method = type(mgr).output_tensors

    def output_tensors(node_name, tensors, static_outputs=None, **kwargs):
        if node_name in backends:
            backend = backends[node_name]
            if RESOLVED.get(kwargs.get("export_with")) != RESOLVED.get(backend):
                kwargs.pop("backend_params", None)      # another backend's parameters do not apply
            kwargs["export_with"] = backend
        return method(mgr, node_name, tensors, static_outputs=static_outputs, **kwargs)

    mgr.output_tensors = output_tensors
    try:
        yield
    finally:
        mgr.__dict__.pop("output_tensors", None)


@contextlib.contextmanager
def quiet_output():
    """The body already ran once where the user saw it: its prints are not shown again. The
    exporters also write from C++ straight to the process's stdout/stderr, so the two file
    descriptors are pointed at a scratch file too (and always put back)."""
    import sys
    import tempfile
    buf = io.StringIO()
    saved = []
    scratch = tempfile.TemporaryFile()
    try:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd in (1, 2):
            try:
                saved.append((fd, os.dup(fd)))
                os.dup2(scratch.fileno(), fd)
            except OSError:
                pass
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            yield buf
    finally:
        for fd, dup in saved:
            with contextlib.suppress(OSError):
                os.dup2(dup, fd)
                os.close(dup)
        scratch.close()


@dataclass
class Rerun:
    graphs: list[GraphReport] = field(default_factory=list)
    error: str | None = None           # the body (or LEAPP) raised
    time_s: float = 0.0
    export_s: float | None = None      # from the end of the body to the saved report


class Body:
    """Something that can be traced again: ``run(save_path, start_overrides, export_override)``."""

    description = "the body"
    random_state: RandomState | None = None

    def run(self, save_path: str | os.PathLike, start_overrides: dict | None = None,
            backends: dict[str, str | None] | None = None) -> Rerun:
        """Trace the body again under ``save_path``; ``backends``: export_with per node."""
        raise NotImplementedError

    def _prepare(self) -> None:
        if self.random_state is not None:
            self.random_state.restore()


def trace_options(graph: GraphReport, overrides: dict | None = None) -> dict:
    """The ``leapp_lab.trace`` options a graph was traced with (those its report keeps), for a
    callable body; ``overrides`` first. ``patching`` is kept only as its repr in the report, so a
    session that had adapters needs ``patching=`` again."""
    keep = ("max_cached_io", "validate", "rtol", "atol", "dry_run", "non_traced", "global_patching",
            "visualize")
    opts = {k: v for k, v in (graph.options or {}).items() if k in keep and v is not None}
    if isinstance(opts.get("non_traced"), list):
        opts["non_traced"] = tuple(opts["non_traced"])
    overrides = dict(overrides or {})
    if (graph.options or {}).get("patching") is not None and "patching" not in overrides:
        raise ValueError(
            f"graph {graph.name!r} was traced with patching={graph.options['patching']}; the report "
            f"keeps only its text: pass the same list again (patching=[...]) so the re-runs use it")
    opts.update(overrides)
    return opts


def safe_dirname(text: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"


def deep_dir(graph: GraphReport, what: str) -> Path:
    """Where the re-runs of one check of ``graph`` write: inside its run folder when it has one."""
    if graph.run_dir:
        return Path(graph.run_dir) / what
    import tempfile
    return Path(tempfile.mkdtemp(prefix=f"leapp_lab_{what}_"))


def pick_graph(graphs: list[GraphReport], name: str) -> GraphReport | None:
    return next((g for g in graphs if g.name == name), None)
