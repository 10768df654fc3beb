"""Replay on an engine: the exported pipeline with its ONNX nodes run by an engine, closed loop,
step by step beside the fp32 export, from the same initial state and through the same resets
(docs/deep-checks.md, "Replay on an engine").

This module runs the sequences; it never builds an engine. Its caller (``leapp_lab.steps``) hands
it one *runner* per node it built (duck-typed like ``leapp_lab.engines.base.Runner``: activated,
``input_names``, ``output_names``, ``run(feed) -> {name: array}``), so ``deep`` and ``engines`` stay
apart. Nodes without a runner (TorchScript, pt2) run as exported, through LEAPP's runtime.

Three pipelines follow the same observations through the same resets: the fp32 export
(``InferenceManager`` as exported), the engine pipeline (the same runtime with the engine nodes
swapped in; it carries its *own* state and feedback), and, with ``teacher_forcing``, every engine
node once more on the inputs the fp32 pipeline gave that node at each step (its *reference* state
and upstream values). ``engine_passes`` runs them, one pass each over the sequence; this module
compares their values step by step. For each output:

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

from .common import Progress, Unavailable, diff_numbers, failed_reason
from .engine_passes import EngineReplayer
from .growth import trend_text
from leapp_lab.model.numfmt import fmt

DEFAULT_MAX_NRMSE = 0.01


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
    f_all, e_all, tf_all = rp.run(tier, steps, inputs_at, resets, progress, engine)
    for k, (f, e, tf) in enumerate(zip(f_all, e_all, tf_all)):
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
    feedback = bool(rp.fp32.feedback)
    for s in run.outputs:
        if s.max_abs is None:
            continue
        where = f"first beyond nrmse {max_nrmse:g} at step {s.first_fail_step}" if s.first_fail_step is not None \
            else f"within nrmse {max_nrmse:g} at every step"
        line = f"{s.output}: max |diff| {fmt(s.max_abs)} (step {s.max_step}), {where}"
        if feedback:            # without feedback the steps are independent: no trend to fit
            line += f"; error {trend_text(s.growth_per_step, s.trend)}"
        if s.own_error_max is not None and s.inherited_error_max is not None:
            carried = s.inherited_error_max > s.own_error_max
            if feedback:
                line += (f"; own error (a step from the fp32 state) up to {fmt(s.own_error_max)}, inherited "
                         f"through the state and upstream up to {fmt(s.inherited_error_max)}: "
                         + ("the error is carried by the state (state-carried)" if carried else
                            "each step's own error dominates"))
            else:
                line += (f"; own error (the node fed the fp32 inputs) up to {fmt(s.own_error_max)}, inherited "
                         f"from upstream nodes up to {fmt(s.inherited_error_max)}: "
                         + ("the error comes from upstream (upstream-carried)" if carried else
                            "the node's own error dominates"))
        if s.worst_element:
            line += f"; worst element {s.worst_element}"
        run.notes.append(line)
    if not feedback:
        run.notes.append("the graph has no feedback: nothing is carried from step to step; every "
                         "step's error is its own (and its upstream nodes')")


def _compare_tiers(res: EngineReplay) -> None:
    """A note when fresh observations make each step's own error much larger than the recorded
    ones do: the engine meets values beyond those it was built (calibrated) on."""
    if res.closed_loop is None or res.fresh is None or "int8" not in res.engine:
        return          # fp16 has no calibration: larger fresh inputs just give a larger rounding error
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
