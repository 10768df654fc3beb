"""The engine replay's pipelines over one sequence, run in passes (docs/deep-checks.md, "Replay on
an engine", "Cost").

Three pipelines follow the same observations through the same resets: the fp32 export, the engine
pipeline (the runtime with the engine nodes swapped in; it carries its *own* state and feedback)
and, with teacher forcing, every engine node once more on the inputs the fp32 pipeline gave it at
each step. None of them reads another's values *during* the sequence, so each runs as one pass over
all the steps, one after the other:

1. the fp32 pass: LEAPP's own sessions; every engine node's inputs of each step kept (the tap copies
   them once, as the reference state of the teacher-forced runs);
2. the engine closed loop: only the engine pipeline runs between two of its steps, as in the
   deployed loop. Interleaved with the fp32 pipeline, each onnxruntime session's intra-op threads,
   spinning after their run, took the cores from the other session's next run (measured: an engine
   run 1.5-2x slower beside the fp32 session than alone, on a 2-core machine);
3. the teacher-forced runs: node by node, the same engine session on each step's fp32 inputs;
4. the taps probes (``taps_over_time``), when asked.

The sessions are the caller's, built once per replay and run at every step (never rebuilt); the
timings (``clock``) split each pass, and the closed loop's share spent inside the engine.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from leapp_lab.model.trace import GraphReport

from .common import Progress, report_progress
from .runtime import ExportedPipeline


class _EngineNode:
    """Stands in for a NodeManager: the engine runner on the node's inputs, torch in and out."""

    def __init__(self, name: str, runner: Any, manager: Any, clock: dict[str, float]) -> None:
        self.name, self.runner, self._m, self._clock = name, runner, manager, clock
        self.input_names = manager.input_names
        self.output_names = manager.output_names
        self.last_inputs: list[np.ndarray] = []
        missing = [n for n in self.input_names if n not in runner.input_names]
        if missing:
            raise ValueError(f"node {name!r}: the engine has no input(s) {missing} "
                             f"(its inputs: {list(runner.input_names)})")
        gone = [n for n in self.output_names if n not in runner.output_names]
        if gone:
            raise ValueError(f"node {name!r}: the engine has no output(s) {gone} "
                             f"(its outputs: {list(runner.output_names)})")
        self._outputs = list(self.output_names)

    def run_numpy(self, arrays: list[np.ndarray], keep: bool = True) -> tuple[np.ndarray, ...]:
        """The engine on ``arrays``; ``keep``: they are the pipeline's own inputs of this step
        (``last_inputs``, what the taps probe runs the closed loop on); the teacher-forced run
        passes False, so that they stay the engine pipeline's."""
        if keep:
            self.last_inputs = arrays
        t0 = time.perf_counter()
        out = self.runner.run(dict(zip(self.input_names, arrays)), self._outputs)
        self._clock["engine"] = self._clock.get("engine", 0.0) + time.perf_counter() - t0
        return tuple(out[n] for n in self._outputs)

    def __call__(self, *inputs):
        import torch
        # CPU tensors of LEAPP's runtime: their numpy views (no copy); the engine's outputs are fresh
        # arrays of its own, handed over as they are
        arrays = [np.ascontiguousarray(t.numpy(force=True)) if isinstance(t, torch.Tensor) else np.asarray(t)
                  for t in inputs]
        outs = tuple(torch.from_numpy(np.asarray(o)) for o in self.run_numpy(arrays))
        return outs[0] if len(outs) == 1 else outs

    def __getattr__(self, name: str):
        return getattr(self._m, name)


class _InputTap:
    """Wraps a node of the fp32 pipeline: keeps a copy of the inputs it was called with (teacher
    forcing), a fresh list each call (the pass keeps every step's)."""

    def __init__(self, node: Any, sink: dict[str, list[np.ndarray]], name: str) -> None:
        self._node, self._sink, self._name = node, sink, name
        self.input_names, self.output_names = node.input_names, node.output_names

    def __call__(self, *inputs):
        import torch
        self._sink[self._name] = [np.array(t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t, copy=True)
                                  for t in inputs]
        return self._node(*inputs)

    def __getattr__(self, name: str):
        return getattr(self._node, name)


class EngineReplayer:
    """The fp32 and engine pipelines of one graph (module doc)."""

    def __init__(self, graph: GraphReport, runners: dict[str, Any], teacher_forcing: bool = True,
                 probes: dict[str, Any] | None = None) -> None:
        self.graph = graph
        self.probes = dict(probes or {})      # node -> taps_over_time.TapProbe
        self.clock: dict[str, float] = {}
        self.fp32 = ExportedPipeline(graph)
        self.fp32_inputs: dict[str, list[np.ndarray]] = {}
        if teacher_forcing or self.probes:   # the fp32 pipeline's inputs of each engine node: its reference state
            self.fp32.im.nodes = {n: (_InputTap(m, self.fp32_inputs, n) if n in runners else m)
                                  for n, m in self.fp32.im.nodes.items()}
        self.eng = ExportedPipeline(graph)
        managers = dict(self.eng.im.nodes)
        self.engine_nodes: dict[str, _EngineNode] = {}
        for name, runner in runners.items():
            if name not in managers:
                raise ValueError(f"graph {graph.name!r} has no node {name!r}")
            en = _EngineNode(name, runner, managers[name]._node, self.clock)
            self.engine_nodes[name] = en
            managers[name]._node = en          # the recording wrapper stays: outputs are kept
        self.teacher_forcing = teacher_forcing
        self.outputs = self.fp32.outputs
        self.inputs = self.fp32.inputs

    def _tick(self, key: str, seconds: float) -> None:
        self.clock[key] = self.clock.get(key, 0.0) + seconds

    def run(self, tier: str, steps: int, inputs_at: Callable[[int], dict], resets: list[int],
            progress: Progress | None = None, engine: str = "engine") -> tuple[list[dict], list[dict], list[dict]]:
        """(fp32 outputs, engine outputs, teacher-forced engine outputs) of every step, each
        ``{"node/port": array}``; both pipelines start from their initial state and reset before
        every step of ``resets`` (step 0 excluded: it is the start)."""
        resets = {int(r) for r in resets if r}
        t0 = time.perf_counter()
        fp32_in: list[dict[str, list[np.ndarray]]] = []
        f_all = []
        self.fp32.reset()
        for k in range(steps):
            if k in resets:
                self.fp32.reset()
            f_all.append(self.fp32.step(inputs_at(k)))
            fp32_in.append(dict(self.fp32_inputs))
        self._tick("fp32", time.perf_counter() - t0)
        e_all, own_in = self._closed_loop(tier, steps, inputs_at, resets, progress, engine)
        tf_all: list[dict[str, np.ndarray]] = [{} for _ in range(steps)]
        if self.teacher_forcing:
            t0, c0 = time.perf_counter(), time.thread_time()
            for name, en in self.engine_nodes.items():      # one session's runs back to back
                for k in range(steps):
                    ins = fp32_in[k].get(name)
                    if ins is not None:
                        tf_all[k].update(zip((f"{name}/{p}" for p in en.output_names), en.run_numpy(ins, keep=False)))
            self._tick("teacher_forcing", time.perf_counter() - t0)
            self._tick("teacher_forcing_cpu", time.thread_time() - c0)
        if self.probes:
            t0 = time.perf_counter()
            for name, p in self.probes.items():
                if p.result.tier == tier and name in self.engine_nodes:
                    for k in range(steps):
                        if name in fp32_in[k]:
                            p.step(k, own_in[k][name], fp32_in[k][name])
            self._tick("taps", time.perf_counter() - t0)
        return f_all, e_all, tf_all

    def _closed_loop(self, tier, steps, inputs_at, resets, progress, engine):
        """The engine pipeline alone over the steps; its time in ``engine_loop`` (resets and
        progress reports left out), the engine's own runs in it in ``engine_loop_engine``, and this
        thread's CPU time in ``engine_loop_cpu`` (all of the loop's work when the engine sessions run
        on the calling thread, ``intra_op_num_threads`` 1: unlike the wall clock, it leaves out the
        time other processes held the cores)."""
        probed = [n for n in self.probes if n in self.engine_nodes]
        e_all, own_in = [], []
        loop = inside = cpu = 0.0
        self.eng.reset()
        for k in range(steps):
            report_progress(progress, f"replay on {engine}: {'captured' if tier == 'a' else 'fresh'} step "
                                      f"{k + 1}/{steps}", k, steps)
            if k in resets:
                self.eng.reset()
            x = inputs_at(k)
            e0 = self.clock.get("engine", 0.0)
            t0, c0 = time.perf_counter(), time.thread_time()
            e_all.append(self.eng.step(x))
            loop += time.perf_counter() - t0
            cpu += time.thread_time() - c0
            inside += self.clock.get("engine", 0.0) - e0
            if probed:      # the taps pass reads them later: copies of the runtime's tensors' views
                own_in.append({n: [np.array(a, copy=True) for a in self.engine_nodes[n].last_inputs]
                               for n in probed})
        self._tick("engine_loop", loop)
        self._tick("engine_loop_engine", inside)
        self._tick("engine_loop_cpu", cpu)
        return e_all, own_in
