"""Replay on an engine: the exported pipeline with its ONNX nodes run by an engine, closed loop,
step by step beside the fp32 export, from the same initial state and through the same resets
(docs/deep-checks.md, "Replay on an engine").

This module runs the sequences; it never builds an engine. Its caller (``leapp_lab.steps``) hands
it one *runner* per node it built (duck-typed like ``leapp_lab.engines.base.Runner``: activated,
``input_names``, ``output_names``, ``run(feed) -> {name: array}``), so ``deep`` and ``engines`` stay
apart. Nodes without a runner (TorchScript, pt2) run as exported, through LEAPP's runtime.

Per step, three pipelines advance together on the same observations: the fp32 export
(``InferenceManager`` as exported), the engine pipeline (the same runtime with the engine nodes
swapped in; it carries its *own* state and feedback), and, with ``teacher_forcing``, every engine
node once more on the inputs the fp32 pipeline gave that node at this step (its *reference* state
and upstream values). For each output:

- ``max_abs`` / ``nrmse``: engine vs the reference (tier a: LEAPP's recorded value; tier b: the
  original pipeline, the fp32 replay's own references);
- ``fp32_max_abs`` / ``fp32_nrmse``: engine vs the fp32 export;
- ``own_error`` = max |engine(reference inputs) − fp32|: what this step's engine adds;
  ``inherited_error`` = max |engine(own inputs) − engine(reference inputs)|: what the engine's own
  state (and upstream nodes) carried in. Their sum bounds the error against fp32. A node that does
  not run on the engine adds nothing of its own (``own_error`` 0).

A step *passes* when ``nrmse`` against the reference is at most ``max_nrmse`` (1 % by default, the
verify rule; LEAPP's allclose tolerances are fp32 tolerances) and nothing is non-finite.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from leapp_lab.model.replay import EngineNode, EngineReplay, ReplayRow, ReplayRun
from leapp_lab.model.trace import GraphReport

from .common import Progress, Unavailable, diff_numbers, failed_reason, report_progress
from .growth import trend_text
from .runtime import ExportedPipeline
from leapp_lab.model.numfmt import fmt

DEFAULT_MAX_NRMSE = 0.01


class _EngineNode:
    """Stands in for a NodeManager: the engine runner on the node's inputs, torch in and out."""

    def __init__(self, name: str, runner: Any, manager: Any, clock: dict[str, float]) -> None:
        self.name, self.runner, self._m, self._clock = name, runner, manager, clock
        self.input_names = manager.input_names
        self.output_names = manager.output_names
        missing = [n for n in self.input_names if n not in runner.input_names]
        if missing:
            raise ValueError(f"node {name!r}: the engine has no input(s) {missing} "
                             f"(its inputs: {list(runner.input_names)})")
        gone = [n for n in self.output_names if n not in runner.output_names]
        if gone:
            raise ValueError(f"node {name!r}: the engine has no output(s) {gone} "
                             f"(its outputs: {list(runner.output_names)})")

    def run_numpy(self, arrays: list[np.ndarray], keep: bool = True) -> tuple[np.ndarray, ...]:
        """The engine on ``arrays``; ``keep``: they are the pipeline's own inputs of this step
        (``last_inputs``, what the taps probe runs the closed loop on); the teacher-forced run
        passes False, so that they stay the engine pipeline's."""
        if keep:
            self.last_inputs = arrays
        t0 = time.perf_counter()
        out = self.runner.run(dict(zip(self.input_names, arrays)), list(self.output_names))
        self._clock["engine"] = self._clock.get("engine", 0.0) + time.perf_counter() - t0
        return tuple(out[n] for n in self.output_names)

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
    """Wraps a node of the fp32 pipeline: keeps the inputs it was called with (teacher forcing)."""

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


def _judge(n: dict[str, Any], value, ref, max_nrmse: float) -> bool | None:
    if value is None or ref is None:
        return None
    v, r = np.asarray(value, np.float64), np.asarray(ref, np.float64)
    if v.shape != r.shape or not (np.isfinite(v).all() and np.isfinite(r).all()):
        return False
    if n["nrmse"] is None:          # an all-zero reference: only an exact match passes
        return bool(n["max_abs"] == 0)
    return bool(n["nrmse"] <= max_nrmse)


def _max_abs(a, b) -> float | None:
    if a is None or b is None or np.shape(a) != np.shape(b):
        return None
    d = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
    d = d[np.isfinite(d)]
    return float(d.max()) if d.size else None


class EngineReplayer:
    """The fp32 and engine pipelines of one graph, in lockstep (module doc)."""

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

    def reset(self) -> None:
        self.fp32.reset()
        self.eng.reset()

    def probe(self, tier: str, k: int) -> None:
        """The taps of each probed node at this step (taps_over_time; after ``step``)."""
        t0 = time.perf_counter()
        for name, p in self.probes.items():
            en = self.engine_nodes.get(name)
            if p.result.tier == tier and en is not None and name in self.fp32_inputs:
                p.step(k, en.last_inputs, self.fp32_inputs[name])
        self.clock["taps"] = self.clock.get("taps", 0.0) + time.perf_counter() - t0

    def step(self, inputs: dict[str, Any]) -> tuple[dict, dict, dict]:
        """(fp32 outputs, engine outputs, teacher-forced engine outputs) of one step."""
        t0 = time.perf_counter()
        f = self.fp32.step(inputs)
        t1 = time.perf_counter()
        e0 = self.clock.get("engine", 0.0)
        e = self.eng.step(inputs)
        t2 = time.perf_counter()
        self.clock["fp32"] = self.clock.get("fp32", 0.0) + t1 - t0
        self.clock["engine_loop"] = self.clock.get("engine_loop", 0.0) + t2 - t1
        self.clock["engine_loop_engine"] = self.clock.get("engine_loop_engine", 0.0) + self.clock.get("engine", 0.0) - e0
        tf: dict[str, np.ndarray] = {}
        if self.teacher_forcing:
            for name, en in self.engine_nodes.items():
                ins = self.fp32_inputs.get(name)
                if ins is None:
                    continue
                for port, v in zip(en.output_names, en.run_numpy(ins, keep=False)):
                    tf[f"{name}/{port}"] = np.asarray(v)
            self.clock["teacher_forcing"] = self.clock.get("teacher_forcing", 0.0) + time.perf_counter() - t2
        return f, e, tf


def _row(k: int, o: str, e, f, tf, ref, reset: bool, max_nrmse: float, engine_node: bool,
         teacher_forcing: bool, semantics) -> ReplayRow:
    from leapp_lab.model.semantics import breakdown
    if ref is None:
        row = ReplayRow(k, o, reset=reset, note="no reference value")
    elif e is None:
        row = ReplayRow(k, o, reset=reset, passed=False, note="the engine pipeline returned nothing")
    elif np.shape(e) != np.shape(ref):
        row = ReplayRow(k, o, reset=reset, passed=False,
                        note=f"shape {list(np.shape(e))} vs reference {list(np.shape(ref))}")
    else:
        n = diff_numbers(e, ref)
        row = ReplayRow(k, o, n["max_abs"], n["nrmse"], n["ref_max"], _judge(n, e, ref, max_nrmse), reset)
        row.elements, row.worst_element = breakdown(semantics, e, ref)
    nf = diff_numbers(e, f)
    row.fp32_max_abs, row.fp32_nrmse = nf["max_abs"], nf["nrmse"]
    if teacher_forcing:
        if engine_node:
            row.own_error, row.inherited_error = _max_abs(tf, f), _max_abs(e, tf)
        elif row.fp32_max_abs is not None:      # runs as exported: from the reference state it is fp32
            row.own_error, row.inherited_error = 0.0, row.fp32_max_abs
    return row


def run_sequence(rp: EngineReplayer, tier: str, steps: int, inputs_at, reference_at, resets: list[int],
                 skip: set, max_nrmse: float, atol: float, progress: Progress | None, engine: str,
                 saved: dict[str, np.ndarray]) -> ReplayRun:
    """One sequence (tier a or b) of the engine replay; ``inputs_at(k)`` -> the step's pipeline
    inputs, ``reference_at(o, k)`` -> the reference output or None; ``skip``: (output, step) pairs
    with no real reference (LEAPP's placeholders)."""
    from .replay import ElementTotals
    run = ReplayRun(tier=tier, steps=steps, resets=list(resets))
    totals = ElementTotals(rp.graph)
    node_of = {o: o.split("/", 1)[0] for o in rp.outputs}
    with rp.fp32.quiet(), rp.eng.quiet():
        _steps(rp, run, tier, steps, inputs_at, reference_at, resets, skip, max_nrmse, progress, engine,
               saved, totals, node_of)
    _finish(run, rp, totals, atol, engine, max_nrmse)
    return run


def _steps(rp, run, tier, steps, inputs_at, reference_at, resets, skip, max_nrmse, progress, engine, saved,
           totals, node_of) -> None:
    from .replay import NOT_RECORDED
    rp.reset()
    for k in range(steps):
        report_progress(progress, f"replay on {engine}: {'captured' if tier == 'a' else 'fresh'} step "
                                  f"{k + 1}/{steps}", k, steps)
        if k and k in resets:
            rp.reset()
        f, e, tf = rp.step(inputs_at(k))
        if rp.probes:
            rp.probe(tier, k)
        for o in rp.outputs:
            if o in e:
                saved[f"{engine}/{tier}/{o}/{k}/engine"] = e[o]
            if o in tf:
                saved[f"{engine}/{tier}/{o}/{k}/teacher_forced"] = tf[o]
            if (o, k) in skip:
                row = ReplayRow(k, o, reset=k in resets, note=NOT_RECORDED)
                nf = diff_numbers(e.get(o), f.get(o))
                row.fp32_max_abs, row.fp32_nrmse = nf["max_abs"], nf["nrmse"]
                run.rows.append(row)
                continue
            ref = reference_at(o, k)
            if ref is None and tier == "b":
                continue                    # step_fn does not return this output
            run.rows.append(_row(k, o, e.get(o), f.get(o), tf.get(o), ref, k in resets and k > 0, max_nrmse,
                                 node_of[o] in rp.engine_nodes, rp.teacher_forcing, rp.graph.semantics_of(o)))
            totals.add(o, e.get(o), ref)


def _finish(run: ReplayRun, rp: EngineReplayer, totals, atol: float, engine: str, max_nrmse: float) -> None:
    from .replay import _not_comparable, summarize
    _not_comparable(run)
    compared = [o for o in rp.outputs if any(r.output == o for r in run.rows)]
    summarize(run, compared, atol, bool(rp.fp32.feedback))
    totals.fill(run)
    for s in run.outputs:
        rows = [r for r in run.rows if r.output == s.output]
        own = [r.own_error for r in rows if r.own_error is not None]
        inh = [r.inherited_error for r in rows if r.inherited_error is not None]
        fp = [r.fp32_max_abs for r in rows if r.fp32_max_abs is not None]
        s.own_error_max = max(own) if own else None
        s.inherited_error_max = max(inh) if inh else None
        s.fp32_max_abs = max(fp) if fp else None
    _explain(run, rp, engine, max_nrmse)


def _explain(run: ReplayRun, rp: EngineReplayer, engine: str, max_nrmse: float) -> None:
    for s in run.outputs:
        if s.max_abs is None:
            continue
        where = f"first beyond nrmse {max_nrmse:g} at step {s.first_fail_step}" if s.first_fail_step is not None \
            else f"within nrmse {max_nrmse:g} at every step"
        line = f"{s.output}: max |diff| {fmt(s.max_abs)} (step {s.max_step}), {where}; error {trend_text(s.growth_per_step, s.trend)}"
        if s.own_error_max is not None and s.inherited_error_max is not None:
            carried = s.inherited_error_max > s.own_error_max
            line += (f"; own error (a step from the fp32 state) up to {fmt(s.own_error_max)}, inherited "
                     f"through the state and upstream up to {fmt(s.inherited_error_max)}: "
                     + ("the error is carried by the state (state-carried)" if carried else
                        "each step's own error dominates"))
        if s.worst_element:
            line += f"; worst element {s.worst_element}"
        run.notes.append(line)
    if not rp.fp32.feedback:
        run.notes.append("the graph has no feedback: nothing is carried from step to step; every "
                         "step's error is its own (and its upstream nodes')")


def _compare_tiers(res: EngineReplay) -> None:
    """A note when fresh observations make each step's own error much larger than the recorded
    ones do: the engine meets values beyond those it was built (calibrated) on."""
    if res.closed_loop is None or res.fresh is None:
        return
    a = {o.output: o.own_error_max for o in res.closed_loop.outputs if o.own_error_max}
    for o in res.fresh.outputs:
        base = a.get(o.output)
        if base and o.own_error_max and o.own_error_max > 3 * base:
            res.notes.append(
                f"{o.output}: on fresh observations a step's own error reaches {fmt(o.own_error_max)}, "
                f"{o.own_error_max / base:.1f}× its largest on the recorded ones: the {res.engine} engine "
                f"meets values beyond those it was built on (int8: its calibration ranges, taken from "
                f"the node's recorded samples); calibrate on data that covers deployment")
            return


def engine_replay(graph: GraphReport, arrays: dict, engine: str, runners: dict[str, Any],
                  node_info: list[EngineNode], *, closed_loop_steps: int | None, fresh: Any,
                  fresh_saved: dict[str, np.ndarray], max_nrmse: float = DEFAULT_MAX_NRMSE,
                  atol: float = 1e-5, teacher_forcing: bool = True, probes: dict[str, Any] | None = None,
                  progress: Progress | None = None) -> tuple[EngineReplay, dict[str, np.ndarray]]:
    """One engine's entry of the replay section (never raises: a failure is its status).

    ``fresh``: the fp32 tier (b) ReplayRun (its steps and resets) or None; ``fresh_saved``: its
    arrays (``b/<input>/<i>/input``, ``b/<output>/<i>/original``): the engine sees the same
    observations and is compared with the same originals. ``probes``: ``{node: TapProbe}`` of the
    nodes whose taps are followed over the steps (``taps_over_time``)."""
    from leapp_lab.model.episodes import captured_steps, read_resets, unrecorded_pairs
    res = EngineReplay(engine=engine, nodes=node_info, max_nrmse=max_nrmse, teacher_forcing=teacher_forcing)
    saved: dict[str, np.ndarray] = {}
    t0 = time.perf_counter()
    try:
        rp = EngineReplayer(graph, runners, teacher_forcing, probes)
    except Unavailable as exc:
        res.status, res.reason = "unavailable", str(exc)
        return res, saved
    except Exception as exc:
        res.status, res.reason = "failed", failed_reason(f"loading the {engine} pipeline", exc)
        return res, saved
    try:
        captured = captured_steps(graph)
        n = captured if closed_loop_steps is None else max(0, min(int(closed_loop_steps), captured))
        if n:
            skip = unrecorded_pairs(graph, arrays)
            resets, _, _ = read_resets(arrays, rp.fp32.feedback, n, skip)

            def inputs_a(k):
                v = {key: arrays.get(f"{key}/{k}/input") for key in rp.inputs}
                bad = [key for key, x in v.items() if x is None or (key, k) in skip]
                if bad:
                    raise Unavailable(f"the run holds no recorded value of the pipeline input(s) {bad} at step {k}")
                return v
            res.closed_loop = run_sequence(rp, "a", n, inputs_a, lambda o, k: arrays.get(f"{o}/{k}/recorded"),
                                           resets, skip, max_nrmse, atol, progress, engine, saved)
    except Unavailable as exc:
        res.closed_loop = ReplayRun(tier="a", status="unavailable", reason=str(exc))
    except Exception as exc:
        res.closed_loop = ReplayRun(tier="a", status="failed", reason=failed_reason(f"the {engine} closed loop", exc))
    if fresh is not None and fresh.status not in ("failed", "unavailable"):
        try:
            m = fresh.steps
            res.fresh = run_sequence(
                rp, "b", m, lambda k: {key: fresh_saved[f"b/{key}/{k}/input"] for key in rp.inputs},
                lambda o, k: fresh_saved.get(f"b/{o}/{k}/original"), fresh.resets, set(), max_nrmse, atol,
                progress, engine, saved)
        except Exception as exc:
            res.fresh = ReplayRun(tier="b", status="failed", reason=failed_reason(f"the {engine} fresh replay", exc))
    _compare_tiers(res)
    for p in rp.probes.values():
        if p.result.steps:
            res.taps = p.finish()
            break
    res.timings_s = {k: round(v, 6) for k, v in rp.clock.items()}
    res.timings_s["total"] = round(time.perf_counter() - t0, 6)
    st = [r.status for r in res.runs()]
    res.status = ("diverged" if "diverged" in st else "failed" if "failed" in st else
                  "unavailable" if st and all(s == "unavailable" for s in st) else "ok" if st else "unavailable")
    if res.status == "failed":
        res.reason = next(r.reason for r in res.runs() if r.status == "failed")
    elif res.status == "unavailable":
        res.reason = next((r.reason for r in res.runs() if r.reason), "no sequence to replay")
    return res, saved
