"""The exported pipeline of a trace run, driven through ``leapp.InferenceManager``.

LEAPP's runtime has three quirks this wrapper absorbs (notes §5):

- ``run_policy`` returns only the pipeline outputs; an output consumed by feedback (a recurrent
  state, an action fed back) is missing. Every node is wrapped so that *all* node outputs of each
  step are kept.
- ``reset()`` zeroes every tensor it holds *in place*, the caller's input tensors included (it
  stores them by reference). Inputs are always handed over as private copies and outputs copied out
  at once.
- A YAML with a ``backend: null`` node (dry run, ``non_traced``, ``export_with=None``) cannot be
  loaded at all: such a graph has no replay, and says so.

The models are read from the graph folder, where LEAPP wrote them; a later trace of the same graph
name overwrites them, so the YAML must still be the run's copy byte for byte and every model must
still have the sha256 the run recorded.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np

from leapp_lab.model.trace import GraphReport
from leapp_lab.numerics.checks import to_numpy
from leapp_lab.model.runs import sha256_of
from leapp_lab.model.safepaths import (check_input_file, is_file_name, present, read_input_bytes,
                                       read_input_text)
from leapp_lab.model.safepaths.recognise import json_limit

from .common import Unavailable


class _RecordingNode:
    """Stands in for one NodeManager in ``InferenceManager.nodes``: same call, outputs kept."""

    def __init__(self, name: str, node: Any, sink: dict[str, np.ndarray]) -> None:
        self._name, self._node, self._sink = name, node, sink
        self.input_names = node.input_names
        self.output_names = node.output_names

    def __call__(self, *inputs):
        out = self._node(*inputs)
        outs = (out,) if len(self.output_names) == 1 else tuple(out)
        for port, value in zip(self.output_names, outs):
            self._sink[f"{self._name}/{port}"] = to_numpy(value)
        return out

    def __getattr__(self, name: str):
        return getattr(self._node, name)


@contextlib.contextmanager
def _quiet_leapp():
    """LEAPP's console handler (bound at the last start()) stays quiet while the runtime loads,
    and LEAPP's records do not reach the root logger either: once onnxruntime's quantize_static has
    called logging.basicConfig (an int8 engine), every runtime load printed "WARNING:leapp:CUDA
    execution provider not available. Falling back to CPU." on a CPU machine."""
    import logging
    import warnings
    from leapp.utils.logging import _get_logger
    h = getattr(_get_logger(), "console_handler", None)
    old = h.level if h is not None else None
    lg = logging.getLogger("leapp")
    propagate, lg.propagate = lg.propagate, False
    if h is not None:
        h.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        lg.propagate = propagate
        if h is not None:
            h.setLevel(old)


def check_loadable(graph: GraphReport) -> Path:
    """The YAML to load, or Unavailable with the reason and what to do."""
    if graph.status != "compiled":
        raise Unavailable(f"graph {graph.name!r} was not compiled (status {graph.status}); "
                          f"there is no exported pipeline to run")
    null = [n.name for n in graph.nodes if not n.backend]
    if null:
        raise Unavailable(
            f"node(s) {', '.join(repr(n) for n in null)} of graph {graph.name!r} were not exported "
            f"(dry run, non_traced or export_with=None): their YAML entry has backend null, which "
            f"leapp.InferenceManager cannot load. Export every node to replay the pipeline")
    if not graph.graph_dir or not graph.yaml_file:
        raise Unavailable(f"graph {graph.name!r} has no YAML to load (it was never written)")
    yaml_now = Path(graph.graph_dir) / f"{graph.name}.yaml"
    if not present(yaml_now):
        raise Unavailable(f"{yaml_now} is gone; trace the graph again")
    # every file LEAPP's loader opens is checked first: a FIFO among them would block it for ever
    check_input_file(yaml_now, "LEAPP's graph YAML", json_limit())
    for n in graph.nodes:
        if n.artifact and is_file_name(n.artifact) and present(Path(graph.graph_dir) / n.artifact):
            check_input_file(Path(graph.graph_dir) / n.artifact, f"LEAPP's model of node {n.name!r}")
    if graph.run_dir:
        saved = Path(graph.run_dir) / graph.yaml_file
        if present(saved) and (read_input_bytes(saved, "the run's copy of LEAPP's graph YAML", json_limit())
                               != read_input_bytes(yaml_now, "LEAPP's graph YAML", json_limit())):
            raise Unavailable(
                f"{yaml_now} is not the YAML of this run any more (a later trace of graph "
                f"{graph.name!r} overwrote it); trace again, or replay the latest run")
        hashes = Path(graph.run_dir) / "models.sha256"
        if present(hashes):
            for line in read_input_text(hashes, "the run's list of model hashes", json_limit()).splitlines():
                digest, _, rel = line.partition("  ")
                p = Path(graph.graph_dir) / rel
                if present(p):
                    check_input_file(p, f"a model of graph {graph.name!r}")
                if not p.is_file() or sha256_of(p) != digest:
                    raise Unavailable(
                        f"{p} is not the model of this run any more (missing or another sha256: a "
                        f"later trace of graph {graph.name!r} overwrote it); trace again")
    return yaml_now


class ExportedPipeline:
    """One InferenceManager over a trace run's artifacts; ``step`` returns every node output."""

    def __init__(self, graph: GraphReport) -> None:
        yaml_path = check_loadable(graph)
        from leapp import InferenceManager
        try:
            with _quiet_leapp():
                self.im = InferenceManager(str(yaml_path))
        except Exception as exc:
            raise Unavailable(f"leapp.InferenceManager could not load {yaml_path}: "
                              f"{type(exc).__name__}: {exc}") from None
        self.graph = graph
        self.outputs_now: dict[str, np.ndarray] = {}
        self.im.nodes = {n: _RecordingNode(n, m, self.outputs_now) for n, m in self.im.nodes.items()}
        pipe = self.im.pipeline
        self.inputs: list[str] = list(self.im.inputs)
        self.feedback: list[tuple[str, str]] = [(src, dst) for src, dsts in
                                                (pipe.get("feedback_flow") or {}).items() for dst in dsts]
        self.outputs: list[str] = [f"{n}/{p}" for n, m in self.im.nodes.items() for p in m.output_names]
        self._held = False

    @contextlib.contextmanager
    def quiet(self):
        """LEAPP's console quiet and torch's autograd off for a whole sequence (entered once, not
        at every step: a long replay)."""
        import torch
        with _quiet_leapp(), torch.no_grad():
            self._held = True
            try:
                yield self
            finally:
                self._held = False

    def _quiet(self):
        return contextlib.nullcontext() if self._held else _quiet_leapp()

    def _no_grad(self):
        import torch
        return contextlib.nullcontext() if self._held else torch.no_grad()

    def reset(self) -> None:
        """Back to LEAPP's saved initial values (what a deployed runtime does at an episode start)."""
        with self._quiet():
            self.im.reset()

    def step(self, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
        """One run_policy on private copies of ``inputs``; every node output as numpy."""
        import torch
        missing = [k for k in self.inputs if k not in inputs]
        if missing:
            raise ValueError(f"no value for the pipeline input(s) {missing}")
        feed = {}
        for k in self.inputs:
            v = inputs[k]
            t = v.detach().clone() if isinstance(v, torch.Tensor) else torch.from_numpy(np.array(v, copy=True))
            feed[k] = t
        self.outputs_now.clear()
        with self._no_grad(), self._quiet():
            self.im.run_policy(feed)
        return dict(self.outputs_now)

    def value(self, key: str) -> np.ndarray:
        """The current value of a node input, e.g. a feedback input before the next step."""
        node, port = key.split("/", 1)
        return to_numpy(self.im.value_dict[node][port])
